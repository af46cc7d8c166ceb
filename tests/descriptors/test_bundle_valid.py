"""The positive side: the real sources and every generated variant validate clean."""

import subprocess
import sys

from descriptors_helpers import problems_of

from bundle import ROOT, descriptors, membership
from vpnaas.core import registry


def test_sources_and_variants_are_valid(bundle):
    assert problems_of(bundle) == []


def test_variants_are_the_required_set(bundle):
    base = list(membership.variants()["ns-variants"])      # pinned in tests/pins.yaml
    slices = ["embb", "urllc", "slices", "sa_embb", "sa_urllc", "sa_slices"]
    assert set(bundle.variants) == set(base + slices + [b + "_osm10" for b in base + slices])


def test_osm10_nsts_point_at_the_osm10_nsds(bundle):
    """OSM 10 cannot load the provider/requirer NSDs, so its NSTs must name the -osm10 ones."""
    osm10 = [n for n in bundle.nsts if n.id.endswith("-osm10")]
    assert sorted(n.id for n in osm10) == ["oai-eps-wg-embb-osm10", "oai-eps-wg-urllc-osm10",
                                           "oai-sa-wg-embb-osm10", "oai-sa-wg-urllc-osm10"]
    for nst in osm10:
        refs = [s["nsd-ref"] for s in nst.body["netslice-subnet"]]
        assert refs == [nst.id.replace("-embb", "").replace("-urllc", "")]
        assert bundle.nsd(refs[0]) is not None


def test_each_ns_variant_comes_from_its_own_source(bundle):
    """Several NSD sources (ns/variants.yaml `sources`): the 5G variants are made from the SA one,
    with the 5G members only, and relate every 5G reference point of the registry."""
    sa, sa_wg = bundle.nsd("oai-sa").body, bundle.nsd("oai-sa-wg").body
    members, tunnels = membership.of_variant("sa_wg")
    vnfd_ids = {d.source: d.id for d in bundle.sources if d.kind == "vnfd"}
    assert sa_wg["vnfd-id"] == [vnfd_ids[registry.load().components[m].vnfd] for m in members] == sa["vnfd-id"]
    assert [r["name"] for r in sa_wg["ns-configuration"]["relation"]] == tunnels
    assert "ns-configuration" not in sa
    eps = bundle.nsd("oai-eps-wg").body
    assert not set(eps["vnfd-id"]) & set(sa["vnfd-id"])
    assert {d.source for d in bundle.sources if d.kind == "nsd"} == {"ns/eps_wg_nsd.yaml", "ns/sa_wg_nsd.yaml"}
    assert bundle.variants["sa_slices"]["descriptor_ids"] == ["oai-sa-wg-embb", "oai-sa-wg-urllc"]
    assert bundle.variants["sa_slices"]["nsd_ids"] == ["oai-sa-wg"]


def test_every_generated_descriptor_has_a_unique_id(bundle):
    ids = [d.id for d in bundle.vnfs + bundle.nss + bundle.nsts]
    assert len(ids) == len(set(ids))


def test_double_resources_doubles_cpu_and_ram_only(bundle):
    doubled = [d for d in bundle.vnfs if d.id.endswith("-2x")]
    assert doubled
    for desc in doubled:
        one = bundle.vnfd(desc.id[: -len("-2x")]).body
        two = desc.body
        assert (
            two["virtual-compute-desc"][0]["virtual-cpu"]["num-virtual-cpu"]
            == 2 * one["virtual-compute-desc"][0]["virtual-cpu"]["num-virtual-cpu"]
        )
        assert (
            two["virtual-compute-desc"][0]["virtual-memory"]["size"]
            == 2 * one["virtual-compute-desc"][0]["virtual-memory"]["size"]
        )
        assert two["virtual-storage-desc"] == one["virtual-storage-desc"]
        # a VNF-level entry follows the new id; a VDU-level one (the SPGW-U's) keeps its VDU's
        assert descriptors.day12(two)["id"] == (two["id"] if descriptors.day12(one)["id"] == one["id"]
                                                else descriptors.day12(one)["id"])


def test_thesis_table_4_3_sizes(bundle):
    sizes = {
        "hss": (4, 8.0, 20),
        "mme": (2, 4.0, 20),
        "spgwc": (3, 4.0, 30),
        "spgwu": (1, 3.0, 20),
        "enb": (4, 8.0, 20),
    }
    for name, (cpu, ram, disk) in sizes.items():
        v = bundle.vnfd("oai-" + name).body
        assert v["virtual-compute-desc"][0]["virtual-cpu"]["num-virtual-cpu"] == cpu
        assert v["virtual-compute-desc"][0]["virtual-memory"]["size"] == ram
        assert v["virtual-storage-desc"][0]["size-of-storage"] == disk


def test_multisite_has_no_s6a_link_and_no_s6a_endpoint_address(bundle):
    nsd = bundle.nsd("oai-eps-wg-multisite").body
    assert "s6a" not in [vl["id"] for vl in nsd["virtual-link-desc"]]
    assert [r["name"] for r in nsd["ns-configuration"]["relation"]].count("s6a") == 1
    for vnfd_id in ("oai-hss-ms", "oai-mme-ms"):
        config = descriptors.day12(bundle.vnfd(vnfd_id).body)["initial-config-primitive"][0]
        names = [p["name"] for p in config["parameter"]]
        assert "s6a-endpoint-address" not in names and "s6a-service-addresses" in names


def test_osm10_variant_uses_entities_with_provider_first(bundle):
    rels = bundle.nsd("oai-eps-wg-osm10").body["ns-configuration"]["relation"]
    s6a = next(r for r in rels if r["name"] == "s6a")
    assert s6a == {
        "name": "s6a",
        "entities": [{"id": "mme", "endpoint": "s6a"}, {"id": "hss", "endpoint": "s6a"}],
    }


def test_no_tunnel_variants_have_no_relations(bundle):
    for nsd_id in ("oai-epc", "oai-eps"):
        assert "ns-configuration" not in bundle.nsd(nsd_id).body
    assert "enb" not in [p["id"] for p in bundle.nsd("oai-epc").body["df"][0]["vnf-profile"]]


def test_cli_exits_zero_with_summary():
    out = subprocess.run(
        [sys.executable, "-m", "bundle.validate"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": "scripts:charms", "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("validate: OK:")
