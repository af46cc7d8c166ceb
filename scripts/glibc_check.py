"""The newest glibc symbol version an ELF binary needs, checked against a maximum.

The charms ship wireguard-go and boringtun-cli to VNFs on Ubuntu 18.04 (glibc 2.27): a binary
that needs a GLIBC_x.y above that fails there at load time ("version `GLIBC_2.34' not found"),
whatever it did on the build machine. Read from ``readelf --version-info`` (the version needs
of the dynamic section), so it works for any binary; a static binary needs none.

    python3 scripts/glibc_check.py --max 2.27 build/tools/boringtun-cli
"""
import argparse
import re
import subprocess
import sys

_VERSION = re.compile(r"\bName: GLIBC_([0-9]+(?:\.[0-9]+)*)\b")


def needed_versions(path):
    """Every GLIBC_x.y the binary's dynamic section asks for, as tuples."""
    out = subprocess.run(["readelf", "--version-info", "--wide", path], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True, check=True).stdout
    return sorted({tuple(int(p) for p in m.group(1).split(".")) for m in _VERSION.finditer(out)})


def newest(path):
    """The newest GLIBC version the binary needs, or None (static, or no glibc symbol)."""
    versions = needed_versions(path)
    return versions[-1] if versions else None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--max", required=True, help="the newest glibc allowed, e.g. 2.27 (Ubuntu 18.04)")
    p.add_argument("binaries", nargs="+")
    args = p.parse_args(argv)
    limit = tuple(int(x) for x in args.max.split("."))
    bad = 0
    for path in args.binaries:
        v = newest(path)
        shown = "GLIBC_" + ".".join(map(str, v)) if v else "no glibc symbol version (static)"
        if v and v > limit:
            print("{}: needs {} (above {})".format(path, shown, args.max), file=sys.stderr)
            bad = 1
        else:
            print("{}: {} (at most {})".format(path, shown, args.max))
    return bad


if __name__ == "__main__":
    sys.exit(main())
