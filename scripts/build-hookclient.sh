#!/usr/bin/env bash
# Build the emulated VCA's compiled hook-tool client into build/tools/vca-hookclient (Go
# standard library only, nothing downloaded). Without Go, the VCA uses the Python client.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/tools/vca-hookclient
src=scripts/testbed/hookclient-go
if ! command -v go >/dev/null 2>&1; then
  echo "no Go toolchain: the emulated VCA uses its Python hook-tool client"
  exit 0
fi
if [ -x "$out" ] && [ -z "$(find "$src" -newer "$out" -type f)" ]; then
  echo "vca-hookclient already built"; exit 0
fi
mkdir -p build/tools
(cd "$src" && CGO_ENABLED=0 GOFLAGS=-trimpath go build -o "../../../$out.tmp" .)
mv "$out.tmp" "$out"
echo "vca-hookclient built ($out)"
