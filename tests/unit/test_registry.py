"""The registry (charms/vpnaas/core/registry.yaml): what it says, and what a broken entry is told."""
import ast
import copy

import pytest
import yaml

from vpnaas.charm import entry
from vpnaas.core import refpoints, registry

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


def test_the_readers_view_of_the_registry():
    """What the registry holds is pinned in tests/pins.yaml (test_pins.py); here, what its readers
    make of any content: each component's endpoints, the labels, the defaults refpoints hands out."""
    reg = registry.load()
    for comp in reg.components:
        ends = [rp for rp in reg.reference_points.values() if comp in (rp.provider, rp.requirer)]
        assert reg.endpoints_of(comp) == ends
    assert reg.endpoints_of("wireguard-proxy") == []
    for name, rp in reg.reference_points.items():
        assert rp.label == (name if rp.labelled else "") == refpoints.address_label(name)
        assert refpoints.default_port(name) == rp.listen_port > refpoints.GENERIC_PORT
        assert refpoints.default_tunnel_network(name) == rp.tunnel_network
        assert refpoints.default_service_network(name) == rp.service_network
    assert refpoints.default_port("vpn") == refpoints.GENERIC_PORT and refpoints.default_service_network("vpn") == ""


def test_a_component_ships_its_workload_and_its_own_modules_only():
    reg = registry.load()
    oai = ["oai.addresses", "oai.component", "oai.ue_report", "oai.validation", "oai.workload"]
    assert reg.shipped_modules("enb") == oai + ["oai.lte.enb", "oai.lte.ue"]
    assert reg.shipped_modules("gnb") == oai + ["oai.cn5g.common", "oai.cn5g.gnb", "oai.cn5g.nrue"]
    assert reg.shipped_modules("wireguard-proxy") == []
    assert "oai.lte.hss" in reg.all_component_modules() and "charm.base" not in reg.all_component_modules()


def test_descriptions_resolve_to_objects_of_the_shared_package():
    reg = registry.load()
    assert entry.description(reg.components["spgwu"]).name == "spgwu"
    with pytest.raises(registry.RegistryError, match="wireguard-proxy has no description"):
        entry.description(reg.components["wireguard-proxy"])


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
    ({"reference_points__n4__binds": "smf"}, "reference point n4: binds must be one of none, provider, requirer, both"),
    ({"reference_points__s11__binds": "both"}, "reference point s11: a network function that binds by interface name "
                                               "needs the address label"),
])
def test_a_broken_entry_is_named(changes, message):
    with pytest.raises((registry.RegistryError, ValueError), match=message):
        reg = parsed(**changes)
        for comp in reg.components.values():
            if comp.describe:
                entry.description(comp)


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
                 reference_points__x9__listen_port=61898, reference_points__x9__tunnel_network="10.251.98.0/30",
                 reference_points__x9__carries="GTP-U but control", reference_points__x9__plane="control",
                 reference_points__x9__client="provider")
    monkeypatch.setattr(registry, "load", lambda path=registry.PATH: reg)
    assert not implchoice.is_user_plane("x9") and implchoice.is_user_plane("s1u")

    class Tunnel:
        refpoint, provider, requirer = "x9", "mme", "enb"
    assert measure.plan(Tunnel, {}, {}, False)["client"] == "mme"
    Tunnel.refpoint = "s11"
    assert measure.plan(Tunnel, {}, {}, False)["client"] == "enb"


#: The calls of the OAI modules that name a reference point, and where in their arguments.
RP_ARGUMENT = {"own_address": 1, "peer_address": 2, "sbi": 0, "ip": 0}
#: The mappings of oai.Addresses a module reads by reference point (``at.own["s1c"]``).
RP_MAPPINGS = ("own", "peers")


def _subscript_constant(node):
    """The constant key of ``x.own["s1c"]`` / ``x.peers["n11"]`` (ast of Python 3.6 to 3.11), else None."""
    if not (isinstance(node, ast.Subscript) and getattr(node.value, "attr", "") in RP_MAPPINGS):
        return None
    key = getattr(node.slice, "value", node.slice)   # 3.8 and older wrap it in ast.Index
    return key.value if isinstance(key, ast.Constant) else getattr(key, "s", None)


def test_the_oai_modules_name_only_their_components_reference_points():
    """An OAI module names a reference point where its NF's configuration binds to it or reaches a
    peer over it: each name is one of the registry's that the component is an end of (a renamed
    or removed reference point fails here, not on a VNF). Which addresses it has is the registry's
    (oai.addresses): the module only reads them by reference point."""
    import os

    reg = registry.load()
    ends = {}       # module -> the reference points of the components it describes
    for comp in reg.components.values():
        if comp.describe:
            ends.setdefault(comp.describe.rpartition(".")[0], set()).update(
                rp.name for rp in reg.endpoints_of(comp.name))
    checked = 0
    for module, its in sorted(ends.items()):
        path = os.path.join(os.path.dirname(os.path.dirname(registry.PATH)), *module.split(".")) + ".py"
        with open(path) as f:
            text = f.read()
        named = []
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "attr", getattr(node.func, "id", ""))
                at = RP_ARGUMENT.get(name)
                if at is not None and len(node.args) > at and isinstance(node.args[at], ast.Constant):
                    named.append(node.args[at].value)
            elif _subscript_constant(node) is not None:
                named.append(_subscript_constant(node))
            elif isinstance(node, ast.Assign) and [getattr(t, "id", "") for t in node.targets] == ["interfaces"]:
                named += ["interfaces"]      # the registry's binds say them (below)
        assert set(named) <= its, (module, sorted(set(named) - its))
        checked += len(named)
        if module in ("oai.cn5g.amf", "oai.cn5g.smf", "oai.cn5g.upf"):
            assert "def own_addresses" not in text, module
    # The check saw the modules' uses (19 when the configure calls stopped naming the addresses
    # they only check on the VNF: oai.address_args sends them from the registry).
    assert checked > 15
    assert {"oai.cn5g.amf", "oai.cn5g.smf", "oai.cn5g.upf"} <= set(ends)


def test_what_a_5g_nf_binds_by_interface_name_follows_the_registry(monkeypatch):
    """The reference points a CN5G NF binds by interface name (its label placeholders) are the
    registry's ``binds``, nowhere spelled in its module: in a copy of the registry where a reference
    point is renamed (n11 -> sbi, one edit), the AMF's and the SMF's follow; the AMF never binds db
    (it is MySQL's client) until the registry says so."""
    from vpnaas.oai.cn5g import amf, common, smf, upf

    shipped = {c.name: c.interfaces for c in (amf.COMPONENT, smf.COMPONENT, upf.COMPONENT)}
    assert shipped == {"amf": ("n2", "n11"), "smf": ("n4", "n11"), "upf": ("n3", "n4")}
    renamed = copy.deepcopy(DOC)
    renamed["reference-points"] = {("sbi" if k == "n11" else k): v for k, v in DOC["reference-points"].items()}
    copied = registry.parse(renamed)
    monkeypatch.setattr(registry, "load", lambda path=registry.PATH: copied)
    assert (amf.COMPONENT.interfaces, smf.COMPONENT.interfaces, upf.COMPONENT.interfaces) == (
        ("n2", "sbi"), ("n4", "sbi"), ("n3", "n4"))
    assert [common.iface(rp) for rp in amf.COMPONENT.interfaces] == ["@N2_IF@", "@SBI_IF@"]
    amf_binds_db = parsed(reference_points__db__binds="both")
    monkeypatch.setattr(registry, "load", lambda path=registry.PATH: amf_binds_db)
    assert amf.COMPONENT.interfaces == ("n2", "n11", "db")
