"""The builds the tests read are kept from one test run to the next (tests/kept_builds.py, ``kept``):
read again only while the sources are the same and the files are as the build left them."""
import os
import subprocess

import kept_builds


def _counting(calls):
    def build(out):
        calls.append(str(out))
        os.makedirs(str(out))
        with open(os.path.join(str(out), "a.charm"), "w") as f:
            f.write("built")
        return {"a": os.path.join(str(out), "a.charm")}
    return build


def test_a_kept_build_is_read_while_its_sources_and_files_are_unchanged(tmp_path, monkeypatch):
    monkeypatch.setattr(kept_builds, "KEPT", str(tmp_path / "kept"))
    key = ["1" * 64]
    monkeypatch.setattr(kept_builds, "inputs_digest", lambda: key[0])
    calls = []
    run = kept_builds.kept("charms", _counting(calls))
    first = run(tmp_path / "run1")
    assert run(tmp_path / "run2") == first and len(calls) == 1          # the same sources: read
    assert kept_builds.changed() == []
    with open(first["a"], "a") as f:                                     # a test wrote into it
        f.write("!")
    assert kept_builds.changed() == [("charms", ["a.charm"])]            # named at the run's end
    assert run(tmp_path / "run3") == first and len(calls) == 2          # built again
    assert open(first["a"]).read() == "built"
    key[0] = "2" * 64                                                    # another source
    second = run(tmp_path / "run4")
    assert len(calls) == 3 and second != first
    key[0] = "3" * 64
    run(tmp_path / "run5")
    kept = sorted(os.listdir(str(tmp_path / "kept" / "charms")))
    assert len(calls) == 4 and len([k for k in kept if not k.startswith(".")]) == kept_builds.KEEP


def test_without_git_every_run_builds(tmp_path, monkeypatch):
    monkeypatch.setattr(kept_builds, "KEPT", str(tmp_path / "kept"))
    monkeypatch.setattr(kept_builds, "inputs_digest", lambda: None)
    calls = []
    run = kept_builds.kept("charms", _counting(calls))
    run(tmp_path / "run1")
    run(tmp_path / "run2" / "x")
    assert len(calls) == 2 and not os.path.exists(str(tmp_path / "kept"))


def test_the_digest_follows_the_sources_the_builds_read_and_not_the_tests(tmp_path, monkeypatch):
    root = tmp_path / "project"
    for rel in ("charms/a.py", "tests/test_b.py", "tests/kept_builds.py", "docs/c.md", "build/tools/wireguard-go"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    (root / ".gitignore").write_text("/build/\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    monkeypatch.setattr(kept_builds, "ROOT", str(root))
    key = kept_builds.inputs_digest()
    assert key is not None and len(key) == 64
    for rel in ("tests/test_b.py", "docs/c.md"):          # no build reads them
        (root / rel).write_text("changed")
        assert kept_builds.inputs_digest() == key, rel
    for rel in ("charms/a.py", "tests/kept_builds.py", "build/tools/wireguard-go", "vnf/new.yaml"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("changed")
        assert kept_builds.inputs_digest() != key, rel
        key = kept_builds.inputs_digest()


class _Item(object):
    def __init__(self, nodeid, *fixturenames):
        self.nodeid, self.fixturenames = nodeid, list(fixturenames)


def test_the_run_order_hands_the_longest_out_first_and_the_build_users_after_the_first_of_them():
    items = [_Item("short"), _Item("uses-charms", "shipped_charms"), _Item("long"), _Item("new"),
             _Item("uses-packages", "shipped_packages"), _Item("long-build-user", "shipped_packages", "tmp_path"),
             _Item("middle")]
    last = {"short": 0.1, "long": 9.0, "middle": 2.0, "uses-charms": 1.0, "long-build-user": 6.0,
            "uses-packages": 0.5}
    order = [i.nodeid for i in kept_builds.run_order(items, ("shipped_charms", "shipped_packages"), last)]
    assert order == ["uses-packages", "long", "middle", "short", "new", "long-build-user", "uses-charms"]
    # No times yet (a first run, or no xdist): the order given, the build users as before.
    order = [i.nodeid for i in kept_builds.run_order(items, ("shipped_charms", "shipped_packages"), {})]
    assert order == ["uses-packages", "short", "long", "new", "middle", "uses-charms", "long-build-user"]
    assert [i.nodeid for i in kept_builds.run_order(items[:1], ("shipped_charms",), last)] == ["short"]


def test_the_times_are_kept_over_the_runs_before_and_an_unreadable_file_is_none(tmp_path, monkeypatch):
    monkeypatch.setattr(kept_builds, "DURATIONS", str(tmp_path / "build" / "test-durations.json"))
    assert kept_builds.last_durations() == {}
    kept_builds.record_durations({"a": 1.5, "b": 2.0})
    kept_builds.record_durations({"b": 0.5, "c": 3.0})          # a run of some files: a is kept
    assert kept_builds.last_durations() == {"a": 1.5, "b": 0.5, "c": 3.0}
    assert os.listdir(str(tmp_path / "build")) == ["test-durations.json"]
    for text in ("{not json", "[1, 2]", '{"a": "x"}'):
        (tmp_path / "build" / "test-durations.json").write_text(text)
        assert kept_builds.last_durations() == {}
