"""The VNF side compares addresses as addresses (vnf/tunnels.sh ``vpnaas_canon``): held to
Python's ``ipaddress`` over every textual form of random IPv4 and IPv6 addresses and prefixes,
IPv4-mapped ones in both spellings included, with the awk the machine has (Ubuntu's is mawk)."""
import ipaddress
import random
import shutil
import subprocess

import pytest

from vpnaas.vnf import vnfscript


def canon_program():
    out = subprocess.run(["bash", "-c", vnfscript.load("tunnels.sh") + '\nprintf "%s" "$VPNAAS_CANON_AWK"'],
                         stdout=subprocess.PIPE, check=True, universal_newlines=True).stdout
    return out + "\n{ print vpnaas_canon($1) }\n"


def forms(rng):
    """(text, expected key) pairs: every spelling a VNF or the charm may write."""
    out = []
    for _ in range(3000):
        if rng.random() < 0.3:
            a = ipaddress.IPv4Address(rng.getrandbits(32))
            length = rng.choice(["", "/32", "/24", "/0"])
            out.append((str(a) + length, "{}/{}".format(a, length[1:] or 32)))
            continue
        bits = rng.getrandbits(128)
        pick = rng.random()
        if pick < 0.25:
            bits = (0xffff << 32) | (bits & 0xffffffff)
        elif pick < 0.5:
            bits &= ~((1 << rng.randint(16, 112)) - 1) & ((1 << 128) - 1)
        elif pick < 0.6:
            bits = rng.getrandbits(16) << rng.choice([0, 16, 48, 112])
        a = ipaddress.IPv6Address(bits)
        length = rng.choice(["", "/128", "/64", "/0"])
        key = "{}/{}".format(a.exploded, length[1:] or 128)
        spellings = [str(a), a.exploded, a.compressed.upper()]
        if a.ipv4_mapped:
            spellings.append("::ffff:" + str(a.ipv4_mapped))
        out += [(s + length, key) for s in spellings]
    return out


@pytest.mark.parametrize("awk", ["awk"] + [n for n in ("mawk", "gawk", "original-awk") if shutil.which(n)])
def test_the_vnf_canonical_form_is_the_address_itself(awk):
    cases = forms(random.Random(1729))
    bad = ["1.2.3", "1.2.3.4.5", "256.1.1.1", "1::2::3", "g::1", "1:2:3:4:5:6:7:8:9", "12345::1", ":::",
           "1.2.3.4/x", "::ffff:1.2.3", "default", ""]
    text = "\n".join(c for c, _ in cases) + "\n" + "\n".join(bad) + "\n"
    got = subprocess.run([awk, canon_program()], input=text, stdout=subprocess.PIPE, check=True,
                         universal_newlines=True).stdout.splitlines()
    mismatches = [(c, want, have) for (c, want), have in zip(cases, got) if want != have]
    assert not mismatches, mismatches[:5]
    assert got[len(cases):] == [""] * len(bad)
