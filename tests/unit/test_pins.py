"""tests/pins.yaml, the one place the shipped bundle's content is pinned: what the registry and
the NS memberships give (bundle/membership.py, which every other test derives its expectations
from) is exactly what the pin file says, and the built descriptors carry exactly that."""
import os

import pytest
import yaml

from bundle import charmspec, descriptors, membership
from vpnaas.core import registry

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
with open(os.path.join(ROOT, "tests", "pins.yaml")) as f:
    PINS = yaml.safe_load(f)


def test_the_registry_is_as_pinned():
    reg = registry.load()
    assert {n: [rp.provider, rp.requirer] for n, rp in reg.reference_points.items()} == PINS["reference-points"]
    assert list(reg.reference_points) == list(PINS["reference-points"])
    assert [n for n, rp in reg.reference_points.items() if rp.plane == "user"] == PINS["user-plane"]
    assert [n for n, rp in reg.reference_points.items() if rp.labelled] == PINS["labelled"]
    assert [c.name for c in reg.with_vnfd()] == PINS["vnf-packages"]
    assert charmspec.charm_names() == PINS["charms"]


def test_each_ns_variant_is_as_pinned():
    spec = membership.variants()
    assert list(spec["ns-variants"]) == list(PINS["ns"])
    for variant, pinned in PINS["ns"].items():
        members, tunnels = membership.of_variant(variant, spec)
        assert {"members": members, "tunnels": tunnels} == pinned, variant


@pytest.fixture(scope="module")
def built():
    return descriptors.load_bundle()


def test_the_built_nsds_have_the_derived_members_and_relations(built):
    """The NSD, derived from its source and the members line, checked against the derivation from
    the registry and the members line alone (every variant, the OSM 10 forms too)."""
    for variant, entry in built.variants.items():
        if entry["kind"] != "ns":
            continue
        nsd = built.nsd(entry["nsd_ids"][0]).body
        members, tunnels = membership.of_variant(variant)
        assert [p["id"] for p in nsd["df"][0]["vnf-profile"]] == members, variant
        assert [r["name"] for r in (nsd.get("ns-configuration") or {}).get("relation", [])] == tunnels, variant
        assert len(nsd["vnfd-id"]) == len(members), variant


def test_a_profile_outside_the_members_line_is_refused(monkeypatch):
    spec = membership.variants()
    spec["members"]["eps"] = ["hss", "mme", "spgwc", "spgwu"]
    monkeypatch.setattr(descriptors, "load_yaml", lambda rel, _real=descriptors.load_yaml: (
        spec if rel == descriptors.VARIANTS_FILE else _real(rel)))
    with pytest.raises(descriptors.DescriptorError, match="vnf-profile enb is no member of eps"):
        descriptors.load_bundle()
