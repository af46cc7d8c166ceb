"""The suite runs as one pytest session (`make test`, CI) with pytest's default import mode, in
which two test modules of the same basename in different folders cannot both be collected: the
second ends the whole run with "import file mismatch". Folder-wise runs (`make unit`, the e2e
folder alone) never see it, so this test holds the whole tree to unique basenames."""
import collections
import pathlib

TESTS = pathlib.Path(__file__).resolve().parent.parent


def test_test_module_basenames_are_unique() -> None:
    by_name = collections.defaultdict(list)
    for path in TESTS.rglob("*.py"):
        if path.name.startswith("test_") or path.name.endswith("_test.py"):
            by_name[path.name].append(str(path.relative_to(TESTS)))
    assert by_name, "no test modules found under tests/"
    clashes = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert not clashes, f"test modules sharing a basename: {clashes}"
