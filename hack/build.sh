#!/usr/bin/env bash
# Compiles the TypeScript into dist/, and the process runtime's launcher (C: the steps between fork
# and exec of a container are system calls Node cannot make) into dist/bin/nodelet-launch, static so
# that it runs wherever dist/ is copied. dist/src/cli/main.js is run as an executable: its first line
# holds the Node flags nodelet runs with.
set -euo pipefail
cd "$(dirname "$0")/.."
node_modules/.bin/tsc -p tsconfig.json
chmod +x dist/src/cli/main.js
mkdir -p dist/bin
launcher=src/procruntime/launcher
if [ ! -x dist/bin/nodelet-launch ] || [ -n "$(find "$launcher" -newer dist/bin/nodelet-launch)" ]; then
  gcc -static -O2 -Wall -Wextra -Werror -o dist/bin/nodelet-launch.tmp "$launcher"/*.c
  mv dist/bin/nodelet-launch.tmp dist/bin/nodelet-launch
fi
