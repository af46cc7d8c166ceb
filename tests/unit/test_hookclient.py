"""The emulated VCA's hook tools as a hook calls them: each client (the Python one always, the
compiled one where Go can build it) against a real model over its socket."""
import os
import shutil
import subprocess
import threading

import pytest

from testbed.emulators import hookclient, toolserver, vca

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLIENTS = ["python"] + (["compiled"] if shutil.which("go") else [])


@pytest.fixture(scope="session")
def compiled_client(once_per_run):
    """Build the compiled client as `make hookclient` does (a no-op when it is up to date), once per
    test run whichever worker asks first."""
    def build(_out):
        if shutil.which("go"):
            subprocess.run(["bash", os.path.join(ROOT, "scripts", "build-hookclient.sh")], check=True,
                           stdout=subprocess.DEVNULL)
        return toolserver.COMPILED_CLIENT
    return once_per_run("hookclient", build)


@pytest.fixture(params=CLIENTS)
def model(tmp_path, request, compiled_client):
    charm = tmp_path / "charm"
    charm.mkdir()
    (charm / "config.yaml").write_text("options:\n  greeting: {type: string, default: hi there}\n")
    (charm / "dispatch").write_text("#!/bin/sh\ntrue\n")
    os.chmod(str(charm / "dispatch"), 0o755)
    with vca.Model(str(tmp_path / "model"), client=request.param) as m:
        m.deploy("a", str(charm))
        m.deploy("b", str(charm))
        m.relate("a:x", "b:y")
        yield m


def tool(model, unit, argv, stdin=None, relation=None, remote=None):
    env = {"PATH": "/usr/bin:/bin", "VPNAAS_VCA_SOCKET": model.socket_path, "JUJU_UNIT_NAME": unit}
    if relation:
        env["JUJU_RELATION_ID"] = relation
    if remote:
        env["JUJU_REMOTE_UNIT"] = remote
    return subprocess.run([os.path.join(model.bin, argv[0])] + argv[1:], input=stdin, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=10)


def test_the_model_uses_the_compiled_client_when_it_is_built(tmp_path, compiled_client):
    built = os.access(compiled_client, os.X_OK)
    assert built or not shutil.which("go"), "Go is here, so `make hookclient` must have built the client"
    with vca.Model(str(tmp_path / "m")) as m:
        link = os.path.join(m.bin, "relation-list")
        if built:
            assert m.client == "compiled"
            assert os.path.realpath(link) == os.path.realpath(compiled_client)
        else:
            assert m.client == "python"
            with open(link) as f:
                assert "hookclient.py relation-list" in f.read()


def test_config_get_answers_the_units_config(model):
    done = tool(model, "a/0", ["config-get", "greeting", "--format=json"])
    assert (done.returncode, done.stdout, done.stderr) == (0, '"hi there"\n', "")


def test_yaml_on_stdin_reaches_the_remote_side(model):
    done = tool(model, "a/0", ["relation-set", "-r", "x:0", "--file", "-"], stdin="key: two words\nother: '1'\n")
    assert (done.returncode, done.stderr) == (0, "")
    got = tool(model, "b/0", ["relation-get", "-r", "y:0", "--format=json", "-", "a/0"])
    assert got.stdout == '{"key": "two words", "other": "1"}\n'
    assert model.relation_data(0)["a/0"] == {"key": "two words", "other": "1"}


def test_an_argument_stays_one_argument_whatever_it_holds(model):
    value = "semi; $(echo no) `no` 'q' \"dq\"\nsecond line \u00e9"
    assert tool(model, "a/0", ["relation-set", "-r", "x:0", "note=" + value]).returncode == 0
    got = tool(model, "b/0", ["relation-get", "note", "a/0"], relation="y:0")
    assert got.returncode == 0
    assert model.relation_data(0)["a/0"]["note"] == value


def test_a_misuse_fails_with_status_and_message_as_on_juju(model):
    done = tool(model, "a/0", ["relation-list", "--bogus"], relation="x:0")
    assert done.returncode == 2 and done.stdout == "" and "unknown option --bogus" in done.stderr
    gone = tool(model, "a/0", ["relation-get", "-r", "x:99", "-", "b/0"])
    assert gone.returncode == 2 and "relation not found" in gone.stderr


def test_relation_list_names_the_remote_units(model):
    done = tool(model, "a/0", ["relation-list", "--format=json"], relation="x:0")
    assert (done.returncode, done.stdout) == (0, '["b/0"]\n')


def test_without_the_model_a_tool_fails_and_says_so(model):
    model.close()
    done = tool(model, "a/0", ["is-leader", "--format=json"])
    assert done.returncode == 1 and "the emulated VCA does not answer" in done.stderr


@pytest.mark.parametrize("data", [b"", b"2\0is-leader", b"2\0is-leader\0c\0a/0\0\0\0x\0",
                                  b"2\0t\0c\0u\0\0\0\x035\0a", b"1\0is-leader\0a/0\0\0\0\x030\0"])
def test_a_malformed_request_is_refused(data):
    with pytest.raises(ValueError):
        hookclient.parse_request(data)


def test_many_hooks_calling_at_once_are_all_answered(model):
    """More simultaneous calls than socketserver's default backlog of 5: a refused connect
    would fail a hook (the compiled client gets EAGAIN from a full Unix socket backlog)."""
    calls = 48
    start = threading.Barrier(calls)
    done = [None] * calls

    def call(i):
        start.wait()
        done[i] = tool(model, "a/0", ["config-get", "greeting", "--format=json"])

    threads = [threading.Thread(target=call, args=(i,)) for i in range(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [(d.returncode, d.stderr) for d in done] == [(0, "")] * calls
    assert all(d.stdout == "\"hi there\"\n" for d in done)


@pytest.mark.parametrize("client", CLIENTS)
def test_each_hook_run_counts_the_tool_calls_it_made(tmp_path, client, compiled_client):
    """The client names its hook's context (JUJU_CONTEXT_ID, as jujuc does): the model counts
    calls per hook run, not per unit, so concurrent hooks of other units never mix in."""
    charm = tmp_path / "charm"
    charm.mkdir()
    (charm / "config.yaml").write_text("options:\n  n: {type: int, default: 1}\n")
    # install makes three calls, every other hook one.
    (charm / "dispatch").write_text(
        '#!/bin/sh\nconfig-get n >/dev/null\n'
        '[ "$JUJU_DISPATCH_PATH" != hooks/install ] || { is-leader; is-leader; } >/dev/null\n')
    os.chmod(str(charm / "dispatch"), 0o755)
    with vca.Model(str(tmp_path / "model"), client=client, parallel=2) as m:
        m.deploy("a", str(charm), wait=False)
        m.deploy("b", str(charm), wait=False)
        m.settle()
        runs = {(r.unit, r.hook): r.tool_calls for r in m.hook_log}
    assert runs[("a/0", "hooks/install")] == runs[("b/0", "hooks/install")] == 3
    assert {v for (unit, hook), v in runs.items() if hook != "hooks/install"} == {1}
    assert len(runs) == 8
