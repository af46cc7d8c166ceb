#!/usr/bin/env bash
# What `make unit` needs from the system, for a user without root: the Debian packages the system
# lacks are downloaded (`apt-get download`, which any user may run) and unpacked (`dpkg -x`) into
# build/sysroot, where the tests find them through PATH, LD_LIBRARY_PATH and LIBRARY_PATH
# (`--env` prints those; the Makefile evaluates it). Nothing is installed and nothing outside
# build/ changes. A package the system's apt lists do not know (a machine where `apt-get update`
# never ran) is looked up in lists of its own (`apt-get update` into build/sysroot, as any user).
#
#   bash scripts/unpack-deps.sh          unpack what the system lacks (idempotent; quiet when nothing)
#   UNPACK_DEPS=all bash ...             unpack every package below even where the system has it
#                                        (the tests then use the unpacked copies: how this path is tested)
#   bash scripts/unpack-deps.sh --env    print the export lines for the unpacked tree
#
# What cannot be unpacked and used like this (a compiler, Go, Rust, a Python with venv) is named by
# scripts/check-unit-deps.sh. Without apt-get (not Debian or Ubuntu) this does nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD/build/sysroot"

lib_dirs() {
  local d
  for d in "$root"/usr/lib/*-linux-gnu "$root"/lib/*-linux-gnu "$root"/usr/lib; do
    [ -d "$d" ] && printf '%s:' "$d"
  done
  return 0
}

if [ "${1:-}" = "--env" ]; then
  libs=$(lib_dirs)
  echo "export PATH=\"$root/usr/bin:$root/usr/sbin:$root/bin:$root/sbin:\$PATH\""
  echo "export LD_LIBRARY_PATH=\"${libs}\${LD_LIBRARY_PATH:-}\""
  echo "export LIBRARY_PATH=\"${libs}\${LIBRARY_PATH:-}\""
  exit 0
fi
command -v apt-get >/dev/null && command -v dpkg >/dev/null || exit 0

all=${UNPACK_DEPS:-}
have_program() { [ "$all" != all ] && command -v "$1" >/dev/null; }
# ldconfig is in /sbin, which is not on the PATH of a user without root.
cache=$("$(command -v ldconfig || echo /sbin/ldconfig)" -p 2>/dev/null || true)
have_library() {   # a shared object the dynamic linker finds (or, for a -dev package, the link name)
  [ "$all" != all ] && grep -qF "$(printf '\t%s (' "$1")" <<< "$cache"
}

# package -> "nodeps" (a static program: nothing else to unpack) or "deps" (with what it needs that
# the system lacks). Each line: why make unit needs it.
wanted=()
# promtool: the alerting rules' unit tests and the exporter's metrics format (tests/unit/test_alert_rules.py, test_metrics.py)
have_program promtool || wanted+=("prometheus nodeps")
# amtool and a real Alertmanager: the inhibit rules (tests/unit/test_alert_rules.py)
{ have_program amtool && have_program prometheus-alertmanager; } || wanted+=("prometheus-alertmanager nodeps")
# ss: the exporter's listening socket (tests/unit/test_exporter_server.py)
have_program ss || wanted+=("iproute2 deps")
# libconfig: OAI's libconfig files parsed by libconfig itself (scripts/oai_conformance/libconfig.py)
{ have_library libconfig.so.9 || have_library libconfig.so.11; } || wanted+=("libconfig9 deps")
# the libraries make oai-conformance links the CN5G readers with (scripts/oai_conformance/nfbuild.py)
for dev in yaml-cpp spdlog fmt config++; do
  have_library "lib$dev.so" || wanted+=("lib$dev-dev deps")
done
[ "${#wanted[@]}" -gt 0 ] || exit 0

mkdir -p "$root/.unpacked" "$root/.debs"
apt_opts=()
private_lists() {
  local d="$root/.apt"
  mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
  apt_opts=(-o "Dir::State::Lists=$d/lists" -o "Dir::Cache=$d/cache" -o Debug::NoLocking=1)
  if [ ! -e "$d/lists/.updated" ]; then
    echo "unpack-deps: the system's apt lists lack a package; reading Debian's own into build/sysroot"
    apt-get -qq "${apt_opts[@]}" update
    touch "$d/lists/.updated"
  fi
}
known() { apt-cache "${apt_opts[@]}" show "$1" >/dev/null 2>&1; }
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }

packages=()
for entry in "${wanted[@]}"; do
  read -r pkg mode <<< "$entry"
  known "$pkg" || private_lists
  known "$pkg" || { echo "unpack-deps: Debian's lists have no package $pkg" >&2; continue; }
  packages+=("$pkg")
  if [ "$mode" = deps ]; then
    # What it depends on, recursively, that this system does not have.
    while read -r dep; do
      case "$dep" in "<"*|libc6|libgcc-s1|gcc-*-base|dpkg|debconf|cdebconf|install-info) continue ;; esac
      installed "$dep" || packages+=("$dep")
    done < <(apt-cache "${apt_opts[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts \
               --no-breaks --no-replaces --no-enhances "$pkg" | grep -v '^ ' | sort -u)
  fi
  if [ "$all" = all ] && [ "${pkg%-dev}" != "$pkg" ]; then
    # The library a -dev package's link name points to, unpacked beside it even where installed.
    while read -r dep; do packages+=("$dep"); done < <(apt-cache "${apt_opts[@]}" depends "$pkg" |
      sed -n 's/^ *Depends: \(lib[^ <]*\)$/\1/p' | grep -v -- '-dev$')
  fi
done

fetch=()
for pkg in $(printf '%s\n' "${packages[@]}" | sort -u); do
  [ -e "$root/.unpacked/$pkg" ] || fetch+=("$pkg")
done
[ "${#fetch[@]}" -gt 0 ] || exit 0
echo "unpack-deps: downloading ${fetch[*]} (Debian packages, unpacked into build/sysroot, nothing installed)"
(cd "$root/.debs" && apt-get -qq "${apt_opts[@]}" download "${fetch[@]}")
for pkg in "${fetch[@]}"; do
  deb=$(find "$root/.debs" -maxdepth 1 -name "${pkg}_*.deb" | sort | tail -n 1)
  [ -n "$deb" ] || { echo "unpack-deps: apt-get download gave no ${pkg}_*.deb" >&2; exit 1; }
  dpkg -x "$deb" "$root"
  touch "$root/.unpacked/$pkg"
done
rm -f "$root"/.debs/*.deb
