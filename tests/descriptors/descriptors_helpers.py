"""Fixtures for the descriptor tests: a freshly loaded bundle per test, mutated in memory."""

import copy

import pytest

from bundle import descriptors, params
from bundle.validate import validate_bundle


@pytest.fixture
def bundle():
    return descriptors.load_bundle()


def find(bundle, kind, desc_id):
    items = {"vnfd": bundle.vnfs, "nsd": bundle.nss, "nst": bundle.nsts}[kind]
    return next(d for d in items if d.id == desc_id)


def day12(desc):
    return descriptors.day12(desc.body)


def problems_of(bundle, cloud_init_dir=None, params_override=None):
    """Validate ``bundle``; params_override: {params path: function(template) -> None} mutations."""
    overrides = params_override or {}

    def loader(path):
        data = params.load(path)
        if path in overrides:
            data = copy.deepcopy(data)
            overrides[path](data)
        return data

    kwargs = {"loader": loader}
    if cloud_init_dir:
        kwargs["cloud_init_dir"] = cloud_init_dir
    return [str(p) for p in validate_bundle(bundle, **kwargs)]


def assert_problem(problems, file, path, text):
    """Exactly the expected finding is present: file, path inside it and message."""
    want = "{}: {}: ".format(file, path)
    hits = [p for p in problems if p.startswith(want) and text in p]
    assert hits, "no problem '{}...{}' in:\n{}".format(want, text, "\n".join(problems) or "(none)")
