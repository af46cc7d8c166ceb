#!/usr/bin/env bash
# Build the pq-psk daemon (pqpsk/: crypto/mlkem from Go's standard library; wgctrl, WireGuard's
# Go library, for the devices, pinned with its dependencies in pqpsk/go.mod and go.sum and fetched
# from the Go module proxy like wireguard-go) into build/tools/pq-psk. The charms ship it to the
# VNFs like wireguard-go (sha256 in the data plane's manifest) when a reference point's
# <ep>-pq-psk is on. CGO_ENABLED=0 makes it
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
# Rebuilt exactly when what the build reads changed: the contents of the package's sources (a
# file deleted or renamed counts, a touch does not), the Go toolchain and this script (its
# flags). Their digest is kept beside the binary.
inputs() {
  (cd "$src" && find . -type f \( -name '*.go' ! -name '*_test.go' -o -name go.mod -o -name go.sum \) -print0 |
    LC_ALL=C sort -z | xargs -0 -r sha256sum)
  go version
  sha256sum < scripts/build-pq-psk.sh
}
digest=$(inputs | sha256sum | cut -d' ' -f1)
if [ -x "$out" ] && [ "$(cat "$out.inputs" 2>/dev/null)" = "$digest" ]; then
  echo "pq-psk already built"; exit 0
fi
mkdir -p build/tools
(cd "$src" && CGO_ENABLED=0 GOFLAGS="-trimpath -buildvcs=false" go build -ldflags="-s -w -buildid=" -o "../$out.tmp" .)
python3 scripts/glibc_check.py --max 2.27 "$out.tmp"
mv "$out.tmp" "$out"
printf '%s\n' "$digest" > "$out.inputs"
"$out" version
sha256sum "$out"
