"""lib.sh's read_whole: a file's bytes into a variable by bash itself, exactly (trailing line breaks
too), in blocks: `read -d ''` (what it replaces) reads one byte per read(2) in the bash of the VNFs'
Ubuntu 18.04 and 20.04 (4.4, 5.0; buffered only from 5.2 on). write_if_changed compares with it."""
import os
import subprocess

import pytest

VNF = os.path.join(os.path.dirname(__file__), "..", "..", "charms", "vpnaas", "vnf")

CONTENTS = ["", "a", "a\n", "a\n\n\n", "\n", "x\ny", " lead and trail \t\n", "back\\slash \\n $HOME `x` *\n",
            "".join("[Peer]\nPublicKey = {:044d}\nAllowedIPs = 10.0.{}.0/24\n\n".format(i, i % 250)
                    for i in range(400))]


def bash(script, *args):
    run = subprocess.run(["bash", "-c", 'source "$1/lib.sh"; ' + script, "/dev/null", VNF] + list(args),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert run.returncode == 0, run.stderr.decode()
    return run.stdout


@pytest.mark.parametrize("content", CONTENTS, ids=range(len(CONTENTS)))
def test_read_whole_gives_the_files_bytes_exactly(tmp_path, content):
    f = tmp_path / "f"
    f.write_bytes(content.encode())
    assert bash('read_whole v "$2"; printf "%s" "$v"', str(f)) == content.encode()


def test_a_missing_file_reads_as_empty_and_the_callers_variable_is_set(tmp_path):
    assert bash('v=old; read_whole v "$2"; printf "[%s]" "$v"', str(tmp_path / "none")) == b"[]"


@pytest.mark.parametrize("content", CONTENTS[1:], ids=range(1, len(CONTENTS)))
def test_write_if_changed_leaves_an_equal_file_and_rewrites_one_that_differs_by_a_line_break(tmp_path, content):
    f = tmp_path / "f"
    f.write_bytes(content.encode())
    os.chmod(str(f), 0o600)
    script = 'write_if_changed "$2" 600 "$3"; printf "%s" "$WRITTEN"'
    assert bash(script, str(f), content) == b"0"
    assert bash(script, str(f), content + "\n") == b"1"
    assert f.read_bytes() == (content + "\n").encode()
