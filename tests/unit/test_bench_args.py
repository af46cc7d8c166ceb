"""Bad arguments to the bench and the demo: one line on stderr, exit status 2, nothing run;
the bench removes only the work directory it created. The arguments are checked in this process
(``main`` with everything it would run replaced by a failure); one run per module through
``python -m`` shows that the module's entry point is that ``main``."""
import os
import subprocess
import sys

import pytest

from testbed import bench, demo

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(module, *args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(REPO, "scripts"), os.path.join(REPO, "charms")]))
    return subprocess.run([sys.executable, "-m", module] + list(args), cwd=REPO, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=60)


@pytest.fixture
def nothing_runs(monkeypatch):
    """Whatever main would do after its arguments fails the test instead."""
    def ran(*_args, **_kw):
        raise AssertionError("an argument that should be refused got as far as running")
    for module in (bench, demo):
        monkeypatch.setattr(module, "run", ran)
        monkeypatch.setattr(module.vim, "cleanup_stale", ran)
        monkeypatch.setattr(module.os, "geteuid", lambda: 0)   # the root check comes after the arguments
        monkeypatch.setattr(module.signal, "signal", lambda *_a: None)
    monkeypatch.setattr(bench, "make_work_dir", ran)


def test_the_guard_stops_arguments_that_pass(nothing_runs, tmp_path):
    with pytest.raises(AssertionError, match="got as far as running"):
        bench.main(["--out", str(tmp_path)])
    with pytest.raises(AssertionError, match="got as far as running"):
        demo.main(["--out", str(tmp_path)])


def _main_in_process(module, args, capsys):
    with pytest.raises(SystemExit) as e:
        module.main(list(args))
    out, err = capsys.readouterr()
    return e.value.code, out, err


@pytest.mark.parametrize("args", [
    ["--sizes", ","], ["--sizes", ""], ["--sizes", "8,,32"], ["--sizes", "x"], ["--sizes", "0"],
    ["--sizes", "300"], ["--seconds", "-5"], ["--seconds", "0"], ["--rounds", "0"], ["--runs", "abc"],
    ["--only", "dataplane,nothing"], ["--only", ","], ["--paths", "wireguard"], ["--max-other-load", "-1"],
    ["--max-other-load", "nan"], ["--retries", "-1"], ["--out", "/dev/null"], ["--parallel", "-1"], ["--parallel", "x"],
])
def test_bench_bad_argument_is_one_line_and_status_2(args, nothing_runs, capsys):
    code, out, err = _main_in_process(bench, args, capsys)
    assert code == 2, err
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("testbed.bench: error: "), err


@pytest.mark.parametrize("args", [["--out", "/dev/null"], ["--seconds", "-5"], ["--pings", "0"], ["--rounds", "0"]])
def test_demo_bad_argument_is_one_line_and_status_2(args, nothing_runs, capsys):
    code, out, err = _main_in_process(demo, args, capsys)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("testbed.demo: error: "), err


@pytest.mark.parametrize("module", ["testbed.bench", "testbed.demo"])
def test_python_m_runs_that_main(module):
    proc = _run(module, "--rounds", "0")
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(module + ": error: argument --rounds"), proc.stderr


def test_good_arguments_parse(tmp_path):
    args = bench.parse_args(["--sizes", "2, 8", "--only", "control", "--paths", "ovpn-aes", "--out", str(tmp_path)])
    assert args.sizes == [2, 8] and args.parts == {"control"}
    assert args.paths == ["charm", "plain", "ovpn-aes"] or set(args.paths) == {"plain", "charm", "ovpn-aes"}


def test_work_dir_removed_only_when_it_carries_the_marker(tmp_path):
    foreign = tmp_path / "work"
    foreign.mkdir()
    (foreign / "data").write_text("not the bench's")
    bench.remove_work_dir(str(foreign))
    assert (foreign / "data").exists()
    mine = bench.make_work_dir(str(tmp_path))
    assert os.path.dirname(mine) == str(tmp_path) and mine != str(foreign)
    open(os.path.join(mine, "charm-copy"), "w").close()
    bench.remove_work_dir(mine)
    assert not os.path.exists(mine) and (foreign / "data").exists()
