"""The registry (charms/vpnaas/registry.yaml): what it says, and what a broken entry is told."""
import copy

import pytest
import yaml

from vpnaas import refpoints, registry

with open(registry.PATH) as f:
    DOC = yaml.safe_load(f)


def parsed(**changes):
    doc = copy.deepcopy(DOC)
    for path, value in changes.items():
        section, name, key = path.split("__")
        section = section.replace("_", "-")
        entry = doc[section].setdefault(name, {})
        if value is None:
            entry.pop(key.replace("_", "-"), None)
        else:
            entry[key.replace("_", "-")] = value
    return registry.parse(doc)


def test_the_bundle_registry_holds_the_eps_and_the_5g_standalone_network():
    reg = registry.load()
    assert list(reg.reference_points) == ["s6a", "s11", "s1c", "sxab", "s1u", "n2", "n3", "n4", "n11", "db"]
    assert {n: (rp.provider, rp.requirer) for n, rp in reg.reference_points.items()} == {
        "s6a": ("mme", "hss"), "s11": ("mme", "spgwc"), "s1c": ("mme", "enb"),
        "sxab": ("spgwu", "spgwc"), "s1u": ("spgwu", "enb"),
        "n2": ("amf", "gnb"), "n3": ("upf", "gnb"), "n4": ("upf", "smf"), "n11": ("amf", "smf"),
        "db": ("mysql", "amf")}
    assert [c.name for c in reg.with_vnfd()] == ["hss", "mme", "spgwc", "spgwu", "enb",
                                                 "mysql", "amf", "smf", "upf", "gnb"]
    assert [rp.name for rp in reg.endpoints_of("spgwc")] == ["s11", "sxab"]
    assert [rp.name for rp in reg.endpoints_of("amf")] == ["n2", "n11", "db"]
    assert reg.endpoints_of("wireguard-proxy") == []
    # The 5G NFs bind by interface name: their service addresses are labelled, the EPS's are not.
    assert {n for n, rp in reg.reference_points.items() if rp.labelled} == {"n2", "n3", "n4", "n11", "db"}
    assert reg.reference_points["n11"].label == "n11" and reg.reference_points["s6a"].label == ""
    assert [rp.listen_port for rp in reg.reference_points.values()] == list(range(51821, 51831))


def test_refpoints_defaults_are_the_registry_values():
    assert refpoints.default_port("s11") == 51822
    assert refpoints.default_tunnel_network("sxab") == "10.250.4.0/30"
    assert refpoints.default_service_network("s1u") == "192.168.248.0/24"
    assert refpoints.default_port("vpn") == refpoints.GENERIC_PORT
    assert refpoints.default_service_network("db") == "172.16.40.0/24"
    assert refpoints.address_label("n2") == "n2" and refpoints.address_label("s1c") == ""


def test_a_component_ships_its_workload_and_its_own_modules_only():
    reg = registry.load()
    assert reg.shipped_modules("enb") == ["oai", "oai_validation", "oai_workload", "oai_enb", "oai_ue"]
    assert reg.shipped_modules("gnb") == ["oai", "oai_validation", "oai_workload", "oai_cn5g", "oai_gnb", "oai_nrue"]
    assert reg.shipped_modules("wireguard-proxy") == []
    assert "oai_hss" in reg.all_component_modules() and "charm_base" not in reg.all_component_modules()


def test_descriptions_resolve_to_objects_of_the_shared_package():
    reg = registry.load()
    assert reg.components["spgwu"].description().name == "spgwu"
    with pytest.raises(registry.RegistryError, match="wireguard-proxy has no description"):
        reg.components["wireguard-proxy"].description()


@pytest.mark.parametrize("changes,message", [
    ({"reference_points__s6a__provider": "smsf"}, "reference point s6a: provider 'smsf' is not a component"),
    ({"reference_points__n11__labelled": "yes"}, "reference point n11: labelled must be true or false"),
    ({"reference_points__sbiamf__provider": "amf", "reference_points__sbiamf__requirer": "smf",
      "reference_points__sbiamf__listen_port": 51897, "reference_points__sbiamf__tunnel_network": "10.250.97.0/30",
      "reference_points__sbiamf__labelled": True}, "a labelled name has at most 5 characters"),
    ({"reference_points__s11__listen_port": 51821}, "reference point s11: listen port 51821 is s6a's"),
    ({"reference_points__s1c__tunnel_network": "10.250.3.0/31"}, "the tunnel network needs two hosts"),
    ({"reference_points__Bad_Name__provider": "mme"}, "1-12 lower-case letters"),
    ({"reference_points__abcdefghijklm__provider": "mme"}, "1-12 lower-case letters"),
    ({"components__hss__workload": "cn5g"}, "component hss: unknown workload 'cn5g'"),
    ({"components__mme__describe": "oai_hss.COMPONENT"}, "oai_hss is not one of its modules"),
    ({"reference_points__s6a__client": "hss"}, "reference point s6a: client must be provider or requirer"),
])
def test_a_broken_entry_is_named(changes, message):
    with pytest.raises((registry.RegistryError, ValueError), match=message):
        reg = parsed(**changes)
        for comp in reg.components.values():
            if comp.describe:
                comp.description()


def test_a_document_that_is_no_mapping_is_refused():
    with pytest.raises(registry.RegistryError, match="not a mapping"):
        registry.parse(["s6a"])


@pytest.mark.parametrize("changes,message", [
    ({"reference_points__s6a__listen_port": None}, "reference point s6a: KeyError: 'listen-port'"),
    ({"reference_points__s6a__listen_port": "many"}, "reference point s6a: ValueError"),
    ({"reference_points__s6a__listen_port": 70000}, "listen port 70000 is out of range"),
    ({"reference_points__s11__tunnel_network": "10.250.2.1/30"}, "reference point s11: ValueError"),
])
def test_a_missing_or_malformed_field_is_a_registry_error(changes, message):
    with pytest.raises(registry.RegistryError, match=message):
        parsed(**changes)


def test_the_user_plane_and_the_measurement_client_are_the_registry_fields(monkeypatch):
    """implchoice's userplane group, the UE stand-in and make deploy's measure read ``plane`` and
    ``client``; a reference point added with them is taken up with no change of theirs."""
    from deploy import measure
    from testbed import implchoice

    reg = parsed(reference_points__x9__provider="mme", reference_points__x9__requirer="enb",
                 reference_points__x9__listen_port=51898, reference_points__x9__tunnel_network="10.250.98.0/30",
                 reference_points__x9__carries="GTP-U but control", reference_points__x9__plane="control",
                 reference_points__x9__client="provider")
    monkeypatch.setattr(registry, "load", lambda path=registry.PATH: reg)
    assert not implchoice.is_user_plane("x9") and implchoice.is_user_plane("s1u")

    class Tunnel:
        refpoint, provider, requirer = "x9", "mme", "enb"
    assert measure.plan(Tunnel, {}, {}, False)["client"] == "mme"
    Tunnel.refpoint = "s11"
    assert measure.plan(Tunnel, {}, {}, False)["client"] == "enb"
