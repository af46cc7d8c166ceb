#!/usr/bin/env bash
# Build the newest wireguard-go into build/tools/wireguard-go with the Go toolchain (Go module
# proxy). The charms ship it to the VNFs (docs/architecture.md, "Data plane") and the testbed
# prefers it: it uses TUN offloads and UDP GSO/GRO and is ~3x faster than the distribution's 2022
# build. CGO_ENABLED=0 makes it static (no glibc symbol at all: it runs on Ubuntu 18.04 as on any
# Linux), and -trimpath with an empty build id keeps this machine out of it (reproducible). Without
# Go, the testbed falls back to the distribution package and the charms ship without it.
set -euo pipefail
cd "$(dirname "$0")/.."
# Module version (what `go list -m golang.zx2c4.com/wireguard@latest` gave); the binary itself
# reports v0.0.20250522.
version="${WIREGUARD_GO_VERSION:-v0.0.0-20260522210424-ecfc5a8d5446}"
out=build/tools/wireguard-go
stamp="$version static"
if [ -x "$out" ] && [ "$(cat "$out.version" 2>/dev/null)" = "$stamp" ]; then
  echo "wireguard-go $version already built"; exit 0
fi
if ! command -v go >/dev/null 2>&1; then
  echo "no Go toolchain: the testbed will use the distribution's wireguard-go ($(command -v wireguard-go || echo missing))"
  exit 0
fi
mkdir -p build/tools
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "building wireguard-go $version (Go module proxy)"
CGO_ENABLED=0 GOBIN="$tmp" GOFLAGS="-trimpath -buildvcs=false" go install -ldflags="-s -w -buildid=" \
  "golang.zx2c4.com/wireguard@$version"
python3 scripts/glibc_check.py --max 2.27 "$tmp/wireguard"
install -m 0755 "$tmp/wireguard" "$out"
echo "$stamp" > "$out.version"
"$out" --version | head -n 1
sha256sum "$out"
