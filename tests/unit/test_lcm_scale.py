"""The emulated LCM's scale-out/in (testbed/emulators/lcm_scale.py), point by point against LCM 19's scale() as
OSM's code has it (docs/lifecycle.md): the VIM and the VCA are recording stand-ins here; the
e2e lifecycle test runs the same functions on the namespace testbed with real charms."""
import threading

import pytest
import yaml

from testbed.emulators import lcm, lcm_scale
from vpnaas.core import instance


class Result(object):
    def __init__(self, results=None):
        self.status, self.results, self.message = "completed", results or {}, ""


class Model(object):
    def __init__(self):
        self.calls = []
        self.config = {}
        self.apps = {"spgwu"}
        self.config_gate = None       # an Event set_config waits for (concurrency check)

    def deploy(self, app, charm_dir, wait=True):
        self.calls.append(("deploy", app))
        self.apps.add(app)

    def relate(self, provider, requirer, wait=True):
        self.calls.append(("relate", provider, requirer))

    def settle(self):
        pass

    def units(self, app=None):
        return ["{}/0".format(app)]

    def set_config(self, app, values, wait=True):
        if self.config_gate is not None:
            assert self.config_gate.wait(60), "post-scale did not run while day-1 was running"
        self.calls.append(("config", app))
        self.config[app] = values

    def run_action(self, unit, name, params, wait=True):
        self.calls.append(("action", unit, name))
        return Result({"pubkey": "ssh-ed25519 AAAA"} if name == "get-ssh-public-key" else {})

    def remove_application(self, app):
        self.calls.append(("remove-application", app))
        self.apps.discard(app)


class Machine(object):
    def __init__(self, name, ip):
        self.name, self.mgmt_ip = name, ip


class Vim(object):
    def __init__(self):
        self.calls = []
        self.vnfs = {}

    def add_vnf(self, name, links, env):
        self.calls.append(("add-vnf", name, dict(links)))
        self.vnfs[name] = Machine(name, "198.18.0.{}".format(10 + len(self.vnfs)))
        return self.vnfs[name]

    def authorize(self, machine, key):
        pass

    def delete_vnf(self, name):
        self.calls.append(("delete-vnf", name))
        del self.vnfs[name]


def spgwu(maximum=3, actions=()):
    return lcm.VnfSpec("spgwu", "/charms/spgwu", {"sxab": "192.168.16.102/24", "s1u": "192.168.9.159/24"},
                       {"ssh-hostname": "<rw_mgmt_ip>", "osm-instance": "<OSM>", "sxab-service-addresses": "x"},
                       [("oai-start", {})], vdu="spgwu", member="spgwu",
                       scaling=lcm.ScalingAspect("spgwu-scale", "spgwu", 1, maximum, actions))


RELATIONS = [("spgwu:sxab", "spgwc:sxab"), ("spgwu:s1u", "enb:s1u"), ("mme:s6a", "hss:s6a")]


def test_instance_k_gets_fixed_ips_plus_k_its_own_application_and_the_same_params():
    spec = lcm_scale.scaled_spec(spgwu(), 2)
    assert (spec.name, spec.count_index, spec.links) == (
        "spgwu-z2", 2, {"sxab": "192.168.16.104/24", "s1u": "192.168.9.161/24"})
    assert spec.config == spgwu().config and spec.vdu == "spgwu"


def test_osm_parameter_is_a_yaml_flow_string_the_charm_reads_its_count_index_from():
    spec = lcm_scale.scaled_spec(spgwu(), 1)
    text = lcm.osm_params(spec, Machine("spgwu-z1", "198.18.0.9"))
    assert text.startswith("{") and "\n" not in text.split("vdu:")[0]
    doc = yaml.safe_load(text)
    assert (doc["count_index"], doc["vdu_id"], doc["member_vnf_index"]) == (1, "spgwu", "spgwu")
    assert instance.index({"osm-instance": text}) == 1
    # a VNF-level EE's <OSM> has no count_index
    vnf_level = lcm.VnfSpec("mme", "/c", {}, {})
    assert "count_index" not in yaml.safe_load(lcm.osm_params(vnf_level, Machine("mme", "1.2.3.4")))


def test_scale_out_creates_vm_and_application_relates_nothing_and_runs_day1_with_its_own_values():
    vim, model = Vim(), Model()
    spec = lcm_scale.scaled_spec(spgwu(), 1)
    report = lcm_scale.scale_out(vim, model, spec, RELATIONS)
    assert vim.calls == [("add-vnf", "spgwu-z1", {"sxab": "192.168.16.103/24", "s1u": "192.168.9.160/24"})]
    assert ("deploy", "spgwu-z1") in model.calls
    assert not [c for c in model.calls if c[0] == "relate"], "LCM 19 never relates a scaled EE"
    assert lcm_scale.related_ends(RELATIONS, spec) == RELATIONS[:2]
    config = model.config["spgwu-z1"]
    assert config["ssh-hostname"] == "198.18.0.10" and instance.index(config) == 1
    assert [c[2] for c in model.calls if c[0] == "action"] == [
        "generate-ssh-key", "get-ssh-public-key", "verify-ssh-credentials", "oai-start"]
    assert report.config_done_at is not None


def test_post_scale_out_runs_while_the_new_day1_runs_and_knows_nothing_of_the_new_vm():
    vim, model = Vim(), Model()
    model.config_gate = threading.Event()
    seen = []

    def post_scale(primitive, info):
        seen.append((primitive, yaml.safe_load(info)))
        model.config_gate.set()      # the new EE's config primitive was waiting for this
    spec = lcm_scale.scaled_spec(spgwu(actions=[("post-scale-out", "scaled")]), 1)
    lcm_scale.scale_out(vim, model, spec, RELATIONS, post_scale=post_scale)
    assert seen == [("scaled", {"scaling_group_name": "spgwu-scale", "vdu": [], "kdu": [],
                                "scaling_direction": "OUT"})]


def test_scale_in_takes_the_highest_instance_destroys_its_application_then_its_vm():
    vim, model = Vim(), Model()
    vnfm = lcm_scale.Vnfm(vim, model, [spgwu(maximum=3)], RELATIONS)
    vnfm.scale("spgwu", "spgwu-scale", True)
    vnfm.scale("spgwu", "spgwu-scale", True)
    assert vnfm.instances("spgwu") == [0, 1, 2]
    with pytest.raises(lcm_scale.ScaleRefused, match="limit of 3"):
        vnfm.scale("spgwu", "spgwu-scale", True)
    with pytest.raises(lcm_scale.ScaleRefused, match="no scaling aspect"):
        vnfm.scale("spgwu", "other", True)
    model.calls.clear()
    vim.calls.clear()
    vnfm.scale("spgwu", "spgwu-scale", False)
    assert vnfm.instances("spgwu") == [0, 1]
    assert model.calls == [("remove-application", "spgwu-z2")] and vim.calls == [("delete-vnf", "spgwu-z2")]
    vnfm.scale("spgwu", "spgwu-scale", False)
    with pytest.raises(lcm_scale.ScaleRefused, match="minimum"):
        vnfm.scale("spgwu", "spgwu-scale", False)


def test_a_day2_action_reaches_the_instance_by_count_index():
    vim, model = Vim(), Model()
    vnfm = lcm_scale.Vnfm(vim, model, [spgwu()], RELATIONS)
    vnfm.scale("spgwu", "spgwu-scale", True)
    vnfm.action("spgwu", "tunnel-status", {}, count_index=1)
    vnfm.action("spgwu", "tunnel-status", {})
    assert [c[1] for c in model.calls[-2:]] == ["spgwu-z1/0", "spgwu/0"]


def test_without_cloud_init_the_new_vm_gets_no_execution_environment():
    """LCM 19 appends the VCA to deploy only inside ``if cloud_init_text:``."""
    vim, model = Vim(), Model()
    spec = spgwu()
    spec.scaling.cloud_init = False
    report = lcm_scale.scale_out(vim, model, lcm_scale.scaled_spec(spec, 1), RELATIONS)
    assert [c[0] for c in vim.calls] == ["add-vnf"] and model.calls == [] and report.config_done_at is None
