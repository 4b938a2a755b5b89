#!/usr/bin/env bash
# Copies CRI v1 api.proto from the published Go module k8s.io/cri-api (at the pinned version) into proto/,
# and regenerates the TypeScript types in proto/gen/ with proto-loader-gen-types.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
. "$here/versions.sh"
dir=$(cd "$here/gomod/k8s" && GOFLAGS=-mod=mod go mod download -json "k8s.io/cri-api@$CRI_API_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
install -m 0644 "$dir/pkg/apis/runtime/v1/api.proto" "$top/proto/api.proto"
echo "$CRI_API_VERSION" > "$top/proto/VERSION"
rm -rf "$top/proto/gen"
cd "$top"
node_modules/.bin/proto-loader-gen-types --keepCase --longs=String --enums=String --defaults --oneofs \
  --grpcLib=@grpc/grpc-js --outDir=proto/gen proto/api.proto
# Our sources are ES modules resolved the Node way, which needs explicit extensions on relative imports.
find proto/gen -name '*.ts' -exec sed -i -E "s#(from '\.{1,2}/[^']*)';#\1.js';#" {} +
echo "proto/api.proto is k8s.io/cri-api $CRI_API_VERSION; types in proto/gen/"
