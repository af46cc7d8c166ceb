#!/usr/bin/env bash
# Build boringtun (Cloudflare's userspace WireGuard in Rust) into build/tools/boringtun-cli with
# cargo from crates.io, as `make wireguard-go` does for wireguard-go. The bench measures it beside
# wireguard-go (lower added latency, lower throughput). Without cargo the bench skips it.
set -euo pipefail
cd "$(dirname "$0")/.."
version="${BORINGTUN_VERSION:-0.7.1}"
out=build/tools/boringtun-cli
if [ -x "$out" ] && [ "$(cat "$out.version" 2>/dev/null)" = "$version" ]; then
  echo "boringtun-cli $version already built"; exit 0
fi
cargo=$(command -v cargo || true)
[ -z "$cargo" ] && [ -x "$HOME/.cargo/bin/cargo" ] && cargo="$HOME/.cargo/bin/cargo"
if [ -z "$cargo" ]; then
  echo "no cargo: the bench will skip boringtun"
  exit 0
fi
mkdir -p build/tools
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "building boringtun-cli $version (crates.io; a few minutes)"
"$cargo" install --quiet --locked --root "$tmp" boringtun-cli --version "$version"
install -m 0755 "$tmp/bin/boringtun-cli" "$out"
echo "$version" > "$out.version"
"$out" --version | head -n 1
