#!/usr/bin/env bash
# What `make unit` needs from the system besides its virtualenv, checked before any test runs:
# one line naming what is missing, instead of tests that fail one by one. Runs after
# scripts/unpack-deps.sh, with its environment (the Makefile evaluates `unpack-deps.sh --env`), so
# what a user without root could unpack into build/sysroot counts as there: what is named here is
# what that could not get (no apt-get, a package Debian's lists lack) or what no unpacking gives
# (a compiler, the Go and Rust toolchains, user namespaces).
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()      # Debian packages
others=()       # anything else, with how to get it

# A shared library the dynamic linker (or, for a link name, the compiler) finds: the system's, or
# one unpacked into a folder of LD_LIBRARY_PATH / LIBRARY_PATH.
# ldconfig is in /sbin, which is not on the PATH of a user without root.
cache=$("$(command -v ldconfig || echo /sbin/ldconfig)" -p 2>/dev/null || true)
have_library() {
  local d
  grep -qF "$(printf '\t%s (' "$1")" <<< "$cache" && return 0
  IFS=: read -r -a dirs <<< "${LD_LIBRARY_PATH:-}:${LIBRARY_PATH:-}"
  for d in "${dirs[@]}"; do [ -n "$d" ] && [ -e "$d/$1" ] && return 0; done
  return 1
}

# The OAI conformance tests parse OAI's libconfig files with libconfig itself (its C library).
{ have_library libconfig.so.9 || have_library libconfig.so.11; } || missing+=(libconfig9)
command -v awk >/dev/null || missing+=(mawk)
# The alerting rules' tests: promtool (its rule unit tests) and a real Alertmanager with amtool.
command -v promtool >/dev/null || missing+=(prometheus)
{ command -v amtool && command -v prometheus-alertmanager; } >/dev/null || missing+=(prometheus-alertmanager)
# The exporter's tests read its listening socket with ss.
command -v ss >/dev/null || missing+=(iproute2)
# The CN5G reader machinery compiles and links small trees (tests/charms/test_cn5g_readers.py).
for lib in yaml-cpp spdlog fmt config++; do have_library "lib$lib.so" || missing+=("lib$lib-dev"); done
command -v gcc >/dev/null && command -v g++ >/dev/null || others+=("gcc and g++ (Debian: gcc g++)")
# Without root, a CN5G reader runs in a network namespace of a user namespace of its own.
if [ "$(id -u)" != 0 ] && ! unshare -rn true 2>/dev/null; then
  others+=("user namespaces for a user without root (unshare -rn; Debian: sysctl kernel.unprivileged_userns_clone=1)")
fi
# The userspace WireGuard programs the charms ship (make wireguard-go / make boringtun ran before this).
[ -x build/tools/wireguard-go ] || others+=("build/tools/wireguard-go: make wireguard-go needs a Go toolchain (go.dev/doc/install)")
[ -x build/tools/pq-psk ] || others+=("build/tools/pq-psk: make pq-psk needs a Go toolchain, 1.24 or later (go.dev/doc/install)")
[ -x build/tools/boringtun-cli ] || others+=("build/tools/boringtun-cli: make boringtun needs cargo (rustup's stable toolchain)")

if [ "${#missing[@]}" -gt 0 ] || [ "${#others[@]}" -gt 0 ]; then
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "make unit needs ${missing[*]}, which scripts/unpack-deps.sh could not unpack into build/sysroot:" \
         "sudo apt-get install ${missing[*]} (or sudo make deps, which installs everything)" >&2
  fi
  for o in "${others[@]}"; do echo "make unit needs $o" >&2; done
  exit 1
fi
