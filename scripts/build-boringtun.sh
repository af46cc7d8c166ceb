#!/usr/bin/env bash
# Build boringtun-cli (Cloudflare's userspace WireGuard in Rust, crates.io) into
# build/tools/boringtun-cli for the VNFs' Ubuntu 18.04: the charms ship it (docs/architecture.md,
# "Data plane") and the bench measures it beside wireguard-go.
#
# The machine has only the gnu Rust target and a newer glibc than 18.04's 2.27, so a plain cargo
# build would ask for symbols the VNF lacks. cargo-zigbuild links with zig against the glibc
# version in the target name (x86_64-unknown-linux-gnu.2.17: every symbol at most GLIBC_2.17);
# both are PyPI packages, installed into a build venv of their own at pinned versions. The crate's
# published Cargo.lock is used as it is (--locked), the paths of this machine are remapped out of
# the binary and the output is checked: no GLIBC_ symbol version above 2.27.
set -euo pipefail
cd "$(dirname "$0")/.."
version="${BORINGTUN_VERSION:-0.7.1}"
zig_version="${ZIGLANG_VERSION:-0.15.2}"
zigbuild_version="${CARGO_ZIGBUILD_VERSION:-0.24.1}"
target=x86_64-unknown-linux-gnu.2.17
stamp="$version $target"
out=build/tools/boringtun-cli
if [ -x "$out" ] && [ "$(cat "$out.version" 2>/dev/null)" = "$stamp" ]; then
  echo "boringtun-cli $version ($target) already built"; exit 0
fi
cargo=$(command -v cargo || true)
[ -z "$cargo" ] && [ -x "$HOME/.cargo/bin/cargo" ] && cargo="$HOME/.cargo/bin/cargo"
if [ -z "$cargo" ]; then
  echo "no cargo (rustup's stable toolchain): boringtun-cli not built; the charms then ship without it" >&2
  echo "and an endpoint set to boringtun is Blocked (\"boringtun not shipped\")" >&2
  exit 0
fi
PATH="$(dirname "$cargo"):$PATH"
venv=build/zigbuild-venv
if [ ! -x "$venv/bin/cargo-zigbuild" ] || [ "$(cat "$venv/.pins" 2>/dev/null)" != "$zig_version $zigbuild_version" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "ziglang==$zig_version" "cargo-zigbuild==$zigbuild_version"
  echo "$zig_version $zigbuild_version" > "$venv/.pins"
fi
PATH="$PWD/$venv/bin:$PATH"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The crate's source as crates.io publishes it (with its Cargo.lock): cargo fetches it into its
# cache through a throwaway manifest that depends on it.
mkdir -p "$tmp/fetch/src"
printf '[package]\nname = "vpnaas-fetch"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\nboringtun-cli = "=%s"\n' \
  "$version" > "$tmp/fetch/Cargo.toml"
echo 'fn main() {}' > "$tmp/fetch/src/main.rs"
(cd "$tmp/fetch" && "$cargo" fetch --quiet)
crate=$(find "${CARGO_HOME:-$HOME/.cargo}/registry/cache" -name "boringtun-cli-$version.crate" | head -n 1)
[ -n "$crate" ] || { echo "boringtun-cli-$version.crate not in cargo's cache after cargo fetch" >&2; exit 1; }
tar -xzf "$crate" -C "$tmp"
src="$tmp/boringtun-cli-$version"
echo "building boringtun-cli $version for $target (cargo-zigbuild $zigbuild_version, zig $zig_version; a few minutes)"
# Reproducible: no path of this machine in the binary, the timestamp of the crate's release.
export RUSTFLAGS="--remap-path-prefix=$src=/boringtun-cli --remap-path-prefix=${CARGO_HOME:-$HOME/.cargo}=/cargo"
export SOURCE_DATE_EPOCH=0 CARGO_INCREMENTAL=0
(cd "$src" && "$cargo" zigbuild --quiet --locked --release --target "$target" \
  --target-dir "$tmp/target")
bin="$tmp/target/x86_64-unknown-linux-gnu/release/boringtun-cli"
mkdir -p build/tools
python3 scripts/glibc_check.py --max 2.27 "$bin"
install -m 0755 "$bin" "$out"
echo "$stamp" > "$out.version"
"$out" --version | head -n 1
sha256sum "$out"
