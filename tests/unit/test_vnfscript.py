"""The VNF-side step runner: values reach the program only as arguments or secrets, never as code."""
import os
import re
import shutil
import subprocess

import pytest

from vpnaas.vnf import vnfscript


@pytest.fixture
def vnf_dir(tmp_path, monkeypatch):
    """A VNF script folder with the real library and a test's own step file ``t.sh``."""
    shutil.copy(os.path.join(vnfscript.VNF_DIR, "lib.sh"), str(tmp_path))
    monkeypatch.setattr(vnfscript, "VNF_DIR", str(tmp_path))
    return tmp_path


def run_locally(step, functions, vnf_dir):
    """Run the step's command as the SSH login shell would, with the program on stdin."""
    (vnf_dir / "t.sh").write_text(functions + "\n")
    step.files = ["t.sh"]
    program = step.program()
    proc = subprocess.run(["sh", "-c", step.command("root", timeout=30)], input=program,
                          cwd=str(vnf_dir), universal_newlines=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env={"PATH": "/usr/bin:/bin", "SSH_CONNECTION": "198.18.0.1 40000 198.18.0.2 22"})
    return proc


HOSTILE_ARGS = ["$(touch pwned)", "`id`", "a'b\"c", "; rm -rf /", "${IFS}x", "-n", "", "a b  c"]


@pytest.mark.parametrize("value", HOSTILE_ARGS)
def test_an_argument_arrives_as_one_literal_word(vnf_dir, value):
    step = vnfscript.Step([]).call("echo_arg", value)
    proc = run_locally(step, 'echo_arg() { printf "ARG[%s]\\n" "$1"; }', vnf_dir)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["ARG[{}]".format(value), "DONE"]
    assert step.program().endswith('\necho_arg "${1}"\nout DONE\nexit 0\n')
    assert not (vnf_dir / "pwned").exists()


@pytest.mark.parametrize("value", ["a\nb", "a\rb", "\x00", "tab\tx", "\x1b[31m", "é"])
def test_control_and_non_ascii_arguments_are_refused(value):
    with pytest.raises(vnfscript.ScriptError):
        vnfscript.Step([]).call("f", value)


def test_function_names_are_code_and_checked():
    with pytest.raises(vnfscript.ScriptError):
        vnfscript.Step([]).call("f; reboot")


def test_secret_travels_in_the_data_section_not_on_the_command_line(vnf_dir):
    step = vnfscript.Step([]).secret("LTE_K", "0123456789abcdef'$(x)").call("show")
    command = step.command("root")
    assert "0123456789abcdef" not in command
    proc = run_locally(step, 'show() { out "GOT $(secret LTE_K)"; }', vnf_dir)
    assert proc.returncode == 0, proc.stderr
    assert vnfscript.parse(proc.stdout).of("GOT") == ["0123456789abcdef'$(x)"]
    with pytest.raises(vnfscript.ScriptError):
        vnfscript.Step([]).secret("K", "a\nb")


def test_the_ssh_client_address_reaches_the_step(vnf_dir):
    step = vnfscript.Step([]).call("client")
    proc = run_locally(step, 'client() { out "CLIENT ${VPNAAS_SSH_CONNECTION%% *}"; }', vnf_dir)
    assert vnfscript.parse(proc.stdout).of("CLIENT") == ["198.18.0.1"]


def test_error_and_missing_done_fail_the_step(vnf_dir):
    with pytest.raises(vnfscript.StepError, match="boom"):
        vnfscript.parse("X 1\nERROR boom\n")
    with pytest.raises(vnfscript.StepError, match="ended early"):
        vnfscript.parse("X 1\n", rc=137)
    step = vnfscript.Step([]).call("broken")
    proc = run_locally(step, "broken() { false; }", vnf_dir)
    with pytest.raises(vnfscript.StepError, match="step failed"):
        vnfscript.parse(proc.stdout, proc.returncode, proc.stderr)


def test_scrub_removes_keys_and_control_characters():
    key = "azyyD5rPNkvOsuPWj4SCDlqUDUSnTgq8EaHEHOOuukM="
    assert vnfscript.scrub("bad {}\x1b[2J\n".format(key)) == "bad <key> [2J "


def test_oversized_arguments_are_refused_before_anything_is_sent():
    step = vnfscript.Step([]).call("f", "x" * (vnfscript.MAX_COMMAND + 1))
    with pytest.raises(vnfscript.ScriptError, match="at most"):
        step.command("root")


def test_the_command_uses_sudo_for_a_non_root_login():
    step = vnfscript.Step([]).call("f")
    assert step.command("root").startswith('env VPNAAS_SSH_CONNECTION="$SSH_CONNECTION" bash -c ')
    assert step.command("ubuntu").startswith('sudo -n env VPNAAS_SSH_CONNECTION="$SSH_CONNECTION" bash -c ')


def test_children_cannot_swallow_the_program_and_the_exit_code_comes_back(vnf_dir):
    # `cat` would eat the rest of the program from stdin if the program were run from stdin.
    step = vnfscript.Step([]).call("first").call("swallow").call("second")
    proc = run_locally(step, 'first() { out first; }\nswallow() { cat; }\nsecond() { out second; exit 7; }',
                       vnf_dir)
    assert proc.stdout.split() == ["first", "second"] and proc.returncode == 7


def test_the_timeout_stops_the_step_on_the_vnf(vnf_dir):
    import time
    (vnf_dir / "t.sh").write_text("slow() { sleep 20; out never; }\n")
    step = vnfscript.Step(["t.sh"]).call("slow")
    started = time.monotonic()
    proc = subprocess.run(["sh", "-c", step.command("root", timeout=1)], input=step.program(), cwd=str(vnf_dir),
                          universal_newlines=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    assert proc.returncode == 124 and "never" not in proc.stdout
    assert time.monotonic() - started < 10


def test_isolated_reports_a_failure_and_the_step_goes_on(vnf_dir):
    step = vnfscript.Step([]).call("isolated", "wg-a", "broken").call("isolated", "wg-b", "fine").call("after")
    proc = run_locally(step, 'broken() { false; out never; }\nfine() { out FINE; }\nafter() { out AFTER; }', vnf_dir)
    report = vnfscript.parse(proc.stdout, proc.returncode, proc.stderr)
    assert [k for k, _ in report.lines] == ["FAILED", "FINE", "AFTER"]
    assert report.of("FAILED")[0].startswith("wg-a step failed")


def test_a_step_file_gets_its_parts_in_place_of_their_source_lines():
    text = vnfscript.load("tunnels.sh")
    assert "$VPNAAS_PARTS" not in text.replace("# shellcheck source=", "")
    assert not re.search(r'^source "', text, re.M)
    parts = sorted(os.listdir(os.path.join(vnfscript.VNF_DIR, "tunnels")))
    assert parts == ["dataplane.sh", "devices.sh", "facts.sh", "hooks.sh", "pqpsk.sh", "qos.sh", "routes.sh"]
    for name in parts:
        assert vnfscript.load("tunnels/" + name).rstrip("\n") in text
    for function in ("vpnaas_routes()", "facts_guard()", "tunnels_prepare()", "device_sync()", "report()"):
        assert text.count("\n" + function + " {") == 1, function


def test_a_part_outside_the_vnf_folder_is_refused(tmp_path, monkeypatch):
    (tmp_path / "step.sh").write_text('source "$VPNAAS_PARTS/../escape.sh"\n')
    monkeypatch.setattr(vnfscript, "VNF_DIR", str(tmp_path))
    with pytest.raises(vnfscript.ScriptError):
        vnfscript.load("step.sh")
