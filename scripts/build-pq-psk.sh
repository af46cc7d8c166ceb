#!/usr/bin/env bash
# Build the pq-psk daemon (pqpsk/: Go standard library only, crypto/mlkem; nothing downloaded)
# into build/tools/pq-psk. The charms ship it to the VNFs like wireguard-go (sha256 in the
# data plane's manifest) when a reference point's <ep>-pq-psk is on. CGO_ENABLED=0 makes it
# static (it runs on Ubuntu 18.04 as on any Linux); -trimpath and an empty build id keep this
# machine out of it. crypto/mlkem needs Go 1.24 or later.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/tools/pq-psk
src=pqpsk
if ! command -v go >/dev/null 2>&1; then
  echo "no Go toolchain: the charms ship without pq-psk (their tunnels are then classical only)"
  exit 0
fi
if [ -x "$out" ] && [ -z "$(find "$src" -newer "$out" -type f)" ]; then
  echo "pq-psk already built"; exit 0
fi
mkdir -p build/tools
(cd "$src" && CGO_ENABLED=0 GOFLAGS="-trimpath -buildvcs=false" go build -ldflags="-s -w -buildid=" -o "../$out.tmp" .)
python3 scripts/glibc_check.py --max 2.27 "$out.tmp"
mv "$out.tmp" "$out"
"$out" version
sha256sum "$out"
