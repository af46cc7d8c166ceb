"""The slice's 5QI: written once in each NST, derived into every nsi-create config (bundle.params),
carried by every VNFD's day-1 `config` primitive into the charms' slice-5qi option (descriptors)."""

import copy
import subprocess
import sys

import pytest
import yaml

from bundle import ROOT, descriptors, params
from bundle.validate import validate_params

ENV = {"MGMT_NETWORK": "m", "LTE_K": "0" * 32, "LTE_OP": "1" * 32, "NR_K": "0" * 32, "NR_OP": "1" * 32,
       "MYSQL_PASSWORD": "p", "VIM_ACCOUNT": "v", "VIM_ACCOUNT_SITE2": "w"}


@pytest.fixture(scope="module")
def bundle():
    return descriptors.load_bundle()


def _members(config):
    """{(subnet or None, member): additionalParams} of a rendered config."""
    if params.is_nsi(config):
        return {(s["id"], a["member-vnf-index"]): a["additionalParams"]
                for s in config["netslice-subnet"] for a in s.get("additionalParamsForVnf") or []}
    return {(None, a["member-vnf-index"]): a["additionalParams"] for a in config["additionalParamsForVnf"]}


def test_every_nsi_config_carries_its_nsts_5qi_and_nothing_else_spells_it(bundle):
    """For every NSI variant and each of its NSTs: every member of every subnet gets the NST's
    quality-of-service.id; the templates themselves never hold slice_5qi (one source)."""
    seen = set()
    for key, entry in bundle.variants.items():
        assert params.SLICE_KEY not in repr(params.load(entry["params"])), entry["params"]
        if entry["kind"] != "nsi":
            continue
        for nst_id in entry["descriptor_ids"]:
            nst = next(n for n in bundle.nsts if n.id == nst_id).body
            members = _members(params.render(entry["params"], ENV, nst=nst))
            assert members, key
            assert {m[params.SLICE_KEY] for m in members.values()} == {nst["quality-of-service"]["id"]}, nst_id
            seen.add((nst_id, nst["quality-of-service"]["id"]))
    # the four slices of the bundle and their OSM 10 twins, with the 5QIs their NSTs declare
    assert {q for _, q in seen} == {6, 3, 9, 82} and len(seen) == 8


def test_ns_configs_get_not_a_slice(bundle):
    for entry in bundle.variants.values():
        if entry["kind"] == "ns":
            members = _members(params.render(entry["params"], ENV))
            assert members and {m[params.SLICE_KEY] for m in members.values()} == {params.NOT_A_SLICE}


def test_the_derived_5qi_follows_the_nst_when_the_nst_changes(bundle):
    """Changing the NST alone changes what every member gets: nothing else re-spells it."""
    nst = copy.deepcopy(next(n for n in bundle.nsts if n.id == "oai-eps-wg-urllc").body)
    for value in sorted(params.STANDARDIZED_5QI):
        nst["quality-of-service"]["id"] = value
        members = _members(params.render("params/nsi_eps_wg.yaml", ENV, nst=nst))
        assert {m[params.SLICE_KEY] for m in members.values()} == {value}


@pytest.mark.parametrize("value", [0, 75, 91, 255, 65535, -1, "3", 3.0, True, None])
def test_an_nst_whose_5qi_is_not_standardized_is_refused(bundle, value):
    nst = copy.deepcopy(next(n for n in bundle.nsts if n.id == "oai-eps-wg-embb").body)
    nst["quality-of-service"]["id"] = value
    with pytest.raises(params.ParamsError, match="not a standardized 5QI"):
        params.render("params/nsi_eps_wg.yaml", ENV, nst=nst)


def test_a_params_file_that_spells_the_5qi_is_refused(bundle):
    data = params.render("params/nsi_eps_wg.yaml", ENV)
    data["netslice-subnet"][0]["additionalParamsForVnf"][1]["additionalParams"][params.SLICE_KEY] = 3
    nst = next(n for n in bundle.nsts if n.id == "oai-eps-wg-urllc").body
    with pytest.raises(params.ParamsError, match="member mme: slice_5qi is derived from the NST"):
        params.with_slice_5qi(data, nst)
    ns = params.render("params/eps_wg.yaml", ENV)
    ns["additionalParamsForVnf"][0]["additionalParams"][params.SLICE_KEY] = 0
    with pytest.raises(params.ParamsError, match="slice_5qi is derived"):
        params.with_slice_5qi(ns)


def test_nsi_config_without_its_nst_is_refused_where_it_would_be_posted(bundle):
    data = params.render("params/nsi_eps_wg.yaml", ENV)
    assert params.SLICE_KEY not in repr(data)          # a template for several NSTs
    with pytest.raises(params.ParamsError, match="needs the NST"):
        params.with_slice_5qi(data)
    with pytest.raises(params.ParamsError, match="belongs to no NST"):
        params.with_slice_5qi(params.render("params/eps_wg.yaml", ENV), bundle.nsts[0].body)


def test_validate_refuses_an_nsi_config_osm_would_refuse(bundle):
    """make validate checks every params file as OSM gets it (with the 5QI); a config where the
    derivation cannot supply the <slice_5qi> placeholder is a problem, as in NBI."""
    assert not validate_params(bundle, _valid(bundle))

    def spelt(file):
        data = params.load(file)
        for sub in data.get("netslice-subnet") or []:
            sub["additionalParamsForVnf"][0]["additionalParams"][params.SLICE_KEY] = 9
        return data

    problems = [str(p) for p in validate_params(bundle, _valid(bundle), loader=spelt)]
    assert any("slice_5qi is derived from the NST" in p for p in problems), problems


def _valid(bundle):
    valid = {"vnfd": {}, "nsd": {}, "nst": {}}
    for d in bundle.vnfs + bundle.nss + bundle.nsts:
        valid[d.kind][d.id] = d
    return valid


def test_every_vnfd_config_primitive_sets_slice_5qi_from_the_params(bundle):
    """Sources and variants (OSM 10's too): the day-1 `config` primitive has slice-5qi <- <slice_5qi>,
    an INTEGER, exactly once; no source spells it (it is generated)."""
    for desc in bundle.vnfs:
        config = next(p for p in descriptors.day12(desc.body)["initial-config-primitive"] if p["name"] == "config")
        found = [p for p in config["parameter"] if p["name"] == "slice-5qi"]
        assert found == [descriptors.SLICE_5QI_PARAMETER], desc.id
    for desc in bundle.sources:
        if desc.kind == "vnfd":
            with open(str(ROOT) + "/" + desc.source) as f:
                assert "slice" not in f.read(), desc.source


def test_a_vnfd_source_that_spells_the_parameter_is_refused(bundle):
    desc = copy.deepcopy(next(d for d in bundle.sources if d.kind == "vnfd"))
    with pytest.raises(descriptors.DescriptorError, match="slice-5qi parameter is generated"):
        descriptors.add_slice_5qi(desc)


def test_the_render_command_derives_from_the_nst_file(tmp_path):
    nst = tmp_path / "nst.yaml"
    nst.write_text(open(str(ROOT) + "/nst/urllc_nst.yaml").read())
    env = dict(ENV, PYTHONPATH="{0}/scripts:{0}/charms".format(ROOT), PATH="/usr/bin:/bin")
    cmd = [sys.executable, "-m", "bundle.params", "params/nsi_eps_wg.yaml"]
    out = subprocess.run(cmd + ["--nst", str(nst)], cwd=str(ROOT), env=env, capture_output=True, text=True,
                         check=True, timeout=60).stdout
    assert {m[params.SLICE_KEY] for m in _members(yaml.safe_load(out)).values()} == {3}
    refused = subprocess.run(cmd, cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1 and "needs --nst" in refused.stderr and not refused.stdout
