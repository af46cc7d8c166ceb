"""A charm's code is its registry entry: the build writes every src/charm.py as one call,
``charm_class(<name>)``, which composes the class from the entry (description, UE, workload)."""
import os

import pytest

from bundle import CHARMS_DIR, build_charms
from vpnaas.charm import entry
from vpnaas.charm.base import VpnaasCharm
from vpnaas.charm.entry import charm_class
from vpnaas.core import registry


def test_no_charm_folder_carries_code_of_its_own():
    for name in registry.load().components:
        assert not os.path.exists(os.path.join(CHARMS_DIR, name, "src")), name
        build_charms.check_entry(name)


def test_the_entry_point_names_the_component_only():
    text = build_charms.entry_point("enb")
    compile(text, "charm.py", "exec")
    assert "main('enb')" in text and "oai_enb" not in text and "COMPONENT" not in text


@pytest.mark.parametrize("name", sorted(registry.load().components))
def test_each_class_is_composed_from_the_entry(name):
    comp = registry.load().components[name]
    cls = charm_class(name)
    assert issubclass(cls, VpnaasCharm)
    # The class names are those of the hand-written charm.py files before: ops keys the stored
    # state of a unit by them (an upgraded unit keeps its state).
    assert cls.__name__ == comp.title + "Charm"
    workload = cls.workload_type
    if comp.describe:
        assert workload.__name__ == comp.title + "Workload" and workload.component is entry.description(comp)
    else:
        assert workload.__name__ == "Workload"
    assert (getattr(workload, "ue", None) is entry.ue_description(comp)) if comp.ue else not hasattr(workload, "ue")


def test_a_charm_folder_with_code_is_refused(tmp_path, monkeypatch):
    charms = tmp_path / "charms"
    (charms / "hss" / "src").mkdir(parents=True)
    (charms / "hss" / "src" / "charm.py").write_text("# a second statement of the HSS's class\n")
    os.symlink(os.path.join(CHARMS_DIR, "vpnaas"), str(charms / "vpnaas"))
    monkeypatch.setattr(build_charms, "CHARMS_DIR", str(charms))
    with pytest.raises(build_charms.BuildError, match="charms/hss/src: a charm's code is its registry entry"):
        build_charms.check_entry("hss")


@pytest.mark.parametrize("key,value,message", [
    ("describe", "oai.lte.hss.NO_SUCH", "its describe oai.lte.hss.NO_SUCH: oai/lte/hss.py defines no NO_SUCH"),
    ("ue", "oai.lte.enb.UE", "its ue oai.lte.enb.UE: oai/lte/enb.py defines no UE"),
])
def test_an_entry_naming_what_its_modules_lack_is_refused(monkeypatch, key, value, message):
    reg = registry.load()
    name = "hss" if key == "describe" else "enb"
    changed = reg.components[name]._replace(**{key: value})
    monkeypatch.setattr(registry, "load", lambda path=registry.PATH: reg._replace(
        components=dict(reg.components, **{name: changed})))
    with pytest.raises(build_charms.BuildError, match=message):
        build_charms.check_entry(name)


def test_a_description_outside_the_components_modules_is_a_registry_error():
    import yaml

    with open(registry.PATH) as f:
        doc = yaml.safe_load(f)
    doc["components"]["hss"]["ue"] = "oai_ue.UE"
    with pytest.raises(registry.RegistryError, match="component hss: ue oai_ue is not one of its modules"):
        registry.parse(doc)


def test_the_listen_port_reaches_the_charm_by_its_option_only():
    """One route: the build writes the registry's port as the option's default; no module the
    charm runs asks the registry for it (refpoints.default_port)."""
    import ast

    from bundle import charmspec
    from vpnaas.core import refpoints

    package = os.path.join(CHARMS_DIR, "vpnaas")
    readers = []
    for name in sorted(os.listdir(package)):
        if name.endswith(".py") and name not in ("refpoints.py", "registry.py"):
            with open(os.path.join(package, name)) as f:
                tree = ast.parse(f.read())
            used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
            used |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
            if "default_port" in used:
                readers.append(name)
    assert readers == []
    for name, rp in registry.load().reference_points.items():
        spec = charmspec.charm_spec(rp.provider)
        default = spec["config"]["options"][name + "-listen-port"]["default"]
        assert default == rp.listen_port == refpoints.default_port(name)
