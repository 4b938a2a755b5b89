#!/usr/bin/env bash
# Compiles the TypeScript into dist/. dist/src/cli/main.js is run as an executable: its first line
# holds the Node flags nodelet runs with.
set -euo pipefail
cd "$(dirname "$0")/.."
node_modules/.bin/tsc -p tsconfig.json
chmod +x dist/src/cli/main.js
