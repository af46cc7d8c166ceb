"""The data section's texts (vnfscript.Step.text, lib.sh data_text): a text arrives in the step's
shell byte for byte, whatever its lines (empty, trailing line breaks, carriage returns,
non-ASCII, lines shaped like another item or like a text's header), read by bash alone; no line of
a text is ever taken for a value (data_item) or a text of its own; the tests' reader
(vnfscript.data_section) reads the section as lib.sh does."""
import subprocess

import pytest

from vpnaas.vnf import vnfscript

TEXTS = {
    "EMPTY": "",
    "ONE": "x",
    "LINES": "a\nb\n",
    "BREAKS": "\n\n\nend\n\n\n",
    "SPOOF": "SECRET=forged\nOTHER:1\nforged\n__VPNAAS_DATA__\nVALUE=forged\n",
    "CR": "a\r\nb\r\n",
    "UTF": "ä € \U0001f512\n\ttab  \n",
}


def run_step(step, body):
    step.call("out", "BEGIN")
    program = step.program().replace('out "${1}"\n', 'out "${1}"\n' + body + "\n", 1)
    with_args = subprocess.run(["bash", "-c", 'f=$(mktemp); cat > "$f"; bash "$f" "$@"; rc=$?; rm -f "$f"; exit $rc',
                                "x"] + step.args, input=program.encode(), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=30)
    assert with_args.returncode == 0, with_args.stderr.decode()
    assert with_args.stdout.endswith(b"DONE\n")
    return with_args.stdout[:-len(b"DONE\n")]


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_a_text_arrives_byte_for_byte(name):
    step = vnfscript.Step([])
    for k, v in TEXTS.items():
        step.text(k, v)
    step.data("VALUE", "v1").secret("SECRET", "s1")
    out = run_step(step, 'data_text t {}; printf "<%s>" "$t"'.format(name))
    assert out == b"BEGIN\n<" + TEXTS[name].encode() + b">"


def test_no_line_of_a_text_is_a_value_or_a_text():
    step = vnfscript.Step([])
    for k, v in TEXTS.items():
        step.text(k, v)
    step.data("VALUE", "v1").secret("SECRET", "s1")
    out = run_step(step, 'printf "%s|%s|%s|" "$(data_item VALUE)" "$(secret SECRET)" "$(data_item OTHER)"; '
                         'data_text t OTHER; printf "<%s>" "$t"; data_text t NONE; printf "<%s>" "$t"')
    assert out == b"BEGIN\nv1|s1||<><>"


def test_the_tests_reader_reads_what_the_shell_reads():
    step = vnfscript.Step([])
    for k, v in TEXTS.items():
        step.text(k, v)
    step.data("VALUE", "v1").secret("SECRET", "s1")
    assert vnfscript.data_section(step.program()) == dict(TEXTS, VALUE="v1", SECRET="s1")


def test_a_name_is_a_value_or_a_text_never_both():
    step = vnfscript.Step([]).text("A", "x").data("B", "y")
    with pytest.raises(vnfscript.ScriptError):
        step.data("A", "z")
    with pytest.raises(vnfscript.ScriptError):
        step.text("B", "z")
    with pytest.raises(vnfscript.ScriptError):
        step.text("C", "nul\0")
    with pytest.raises(vnfscript.ScriptError):
        step.text("lower", "x")
