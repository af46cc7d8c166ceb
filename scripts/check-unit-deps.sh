#!/usr/bin/env bash
# What `make unit` needs from the system besides its virtualenv, checked before any test runs:
# one line naming what to install, instead of tests that fail (or skip) one by one.
set -euo pipefail
missing=()
# The OAI conformance tests parse OAI's libconfig files with libconfig itself (its C library).
ldconfig -p 2>/dev/null | grep -qE 'libconfig\.so\.(9|11) ' || missing+=(libconfig9)
command -v awk >/dev/null || missing+=(mawk)
# The alerting rules' tests: promtool (its rule unit tests) and a real Alertmanager with amtool.
command -v promtool >/dev/null || missing+=(prometheus)
{ command -v amtool && command -v prometheus-alertmanager; } >/dev/null || missing+=(prometheus-alertmanager)
# The exporter's tests read its listening socket with ss.
command -v ss >/dev/null || missing+=(iproute2)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "make unit needs ${missing[*]}: sudo apt-get install ${missing[*]} (or sudo make deps, which installs everything)" >&2
  exit 1
fi
