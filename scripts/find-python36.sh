#!/usr/bin/env bash
# Prints the path of a Python 3.6 interpreter, the Python of OSM's Ubuntu 18.04 proxy machine,
# which the shipped charm build must run on. Looks on PATH, then in pyenv's installed versions.
set -euo pipefail
works() { [ -n "$1" ] && "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 6))' 2>/dev/null; }
candidate=$(command -v python3.6 || true)
if works "$candidate"; then
  # a pyenv shim answers on PATH even when its version is not selected: resolve it
  real=$("$candidate" -c 'import sys; print(sys.executable)')
  printf '%s\n' "$real"
  exit 0
fi
pyenv_bin=$(command -v pyenv || true)
[ -n "$pyenv_bin" ] || pyenv_bin="${PYENV_ROOT:-$HOME/.pyenv}/bin/pyenv"
if [ -x "$pyenv_bin" ]; then
  for version in $("$pyenv_bin" versions --bare 2>/dev/null | grep -E '^3\.6(\.|$)' | sort -V -r); do
    candidate="$("$pyenv_bin" prefix "$version")/bin/python3.6"
    if works "$candidate"; then printf '%s\n' "$candidate"; exit 0; fi
  done
fi
echo "no Python 3.6 found: install one (e.g. 'pyenv install 3.6.15') to check the shipped 18.04 build" >&2
exit 1
