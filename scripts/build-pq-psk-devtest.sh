#!/usr/bin/env bash
# Build the pq-psk daemon's real-device tests (pqpsk/realdevice_test.go, build tag realdevice) into
# one test binary, build/tools/pq-psk-realdevice.test, which tests/e2e/test_pq_psk_device.py runs
# as root: the end-to-end tier then needs no Go toolchain at test time, and compiles nothing as
# root into root's Go caches. Not shipped (bundle.build_charms ships named programs only).
# Rebuilt exactly when what the build reads changed: the package's sources and tests, go.mod and
# go.sum, the Go toolchain and this script.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/tools/pq-psk-realdevice.test
src=pqpsk
if ! command -v go >/dev/null 2>&1; then
  echo "no Go toolchain: the pq-psk real-device tests cannot be built (tests/e2e/test_pq_psk_device.py needs them)" >&2
  exit 1
fi
inputs() {
  (cd "$src" && find . -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) -print0 |
    LC_ALL=C sort -z | xargs -0 -r sha256sum)
  go version
  sha256sum < scripts/build-pq-psk-devtest.sh
}
digest=$(inputs | sha256sum | cut -d' ' -f1)
if [ -x "$out" ] && [ "$(cat "$out.inputs" 2>/dev/null)" = "$digest" ]; then
  echo "pq-psk real-device tests already built"; exit 0
fi
mkdir -p build/tools
(cd "$src" && CGO_ENABLED=0 GOFLAGS="-trimpath -buildvcs=false" go test -c -tags realdevice -o "../$out.tmp" .)
mv "$out.tmp" "$out"
printf '%s\n' "$digest" > "$out.inputs"
echo "built $out"
