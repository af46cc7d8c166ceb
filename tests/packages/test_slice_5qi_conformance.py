"""The slice-5qi part of `make osm-conformance`, without OSM sources: the job (every target's config
with its NST's 5QI, the NST twins with the largest 5QI), LCM's day-1 mapping as lcm_day1 runs it
(over a stand-in LCM tree the test writes: the real one is OSM_SRC/LCM), and the report."""

import json
import os
import textwrap

import pytest
import yaml

from bundle import membership, params
from bundle.osm_conformance import __main__ as conformance
from bundle.osm_conformance import lcm_day1, report

# A stand-in with LCM's two function names and the shape of their contract (the project holds no
# LCM code): <name> placeholders from the instantiation params, INTEGER converted, missing refused.
STAND_IN_NS = textwrap.dedent('''
    class NsLcm:
        @staticmethod
        def _map_primitive_params(primitive_desc, params, instantiation_params):
            out = {}
            for p in primitive_desc.get("parameter", ()):
                value = p["value"]
                if isinstance(value, str) and value.startswith("<") and value.endswith(">"):
                    if value[1:-1] not in instantiation_params:
                        raise LcmException("Parameter {} needed".format(value))
                    value = instantiation_params[value[1:-1]]
                out[p["name"]] = int(value) if p.get("data-type") == "INTEGER" else value
            return out
''')
STAND_IN_DICT_UTILS = "def parse_yaml_strings(params):\n    return params or {}\n"


def _lcm_tree(root, old=False):
    os.makedirs(os.path.join(root, "osm_lcm", "data_utils"))
    ns = STAND_IN_NS
    if old:
        ns += "\n    def _format_additional_params(self, params):\n        return params or {}\n"
    with open(os.path.join(root, "osm_lcm", "ns.py"), "w") as f:
        f.write(ns)
    if not old:
        with open(os.path.join(root, "osm_lcm", "data_utils", "dict_utils.py"), "w") as f:
            f.write(STAND_IN_DICT_UTILS)
    return str(root)


VNFD = {"_id": "d1", "id": "oai-hss", "df": [{"lcm-operations-configuration": {"operate-vnf-op-config": {
    "day1-2": [{"id": "oai-hss", "initial-config-primitive": [{"name": "config", "parameter": [
        {"name": "ssh-hostname", "value": "<rw_mgmt_ip>"},
        {"name": "slice-5qi", "data-type": "INTEGER", "value": "<slice_5qi>"}]}]}]}}}]}


class _Db:
    def __init__(self, vnfrs):
        self.rows = {"vnfrs": {v["_id"]: v for v in vnfrs}, "vnfds": {"d1": VNFD}}

    def get_one(self, table, query):
        return self.rows[table][query["_id"]]


@pytest.mark.parametrize("old", [False, True])
def test_lcm_day1_gives_the_charm_the_members_5qi(tmp_path, old):
    lcm = lcm_day1.functions(_lcm_tree(tmp_path / "lcm", old))
    assert ("_format_additional_params" in lcm[2]) == old
    vnfrs = [{"_id": "a", "vnfd-id": "d1", "member-vnf-index-ref": "hss",
              "additionalParamsForVnf": {"slice_5qi": 90}},
             {"_id": "b", "vnfd-id": "d1", "member-vnf-index-ref": "mme", "additionalParamsForVnf": {}},
             {"_id": "c", "vnfd-id": "d1", "member-vnf-index-ref": "spgwu",
              "additionalParamsForVnf": {"slice_5qi": "90"}}]
    got = {m: (ok, msg) for m, ok, msg in lcm_day1.check(_Db(vnfrs), ["a", "b", "c"], 90, lcm)}
    assert got["hss"] == (True, "slice-5qi=90 (int)")
    assert not got["mme"][0] and "LcmException" in got["mme"][1]       # OSM refuses a missing one
    assert got["spgwu"] == (True, "slice-5qi=90 (int)")                 # INTEGER: LCM converts
    assert lcm_day1.check(_Db(vnfrs[:1]), ["a"], 3, lcm)[0][1] is False  # the value itself


def test_a_vdu_level_execution_environment_reads_the_vdus_own_params(tmp_path):
    lcm = lcm_day1.functions(_lcm_tree(tmp_path / "lcm"))
    vnfr = {"additionalParamsForVnf": {"slice_5qi": 3}, "vdur": [{"vdu-id-ref": "oai-hss",
                                                                  "additionalParams": {"slice_5qi": 82}}]}
    assert lcm_day1.charm_config(vnfr, VNFD, lcm)["slice-5qi"] == 82
    assert lcm_day1.charm_config(dict(vnfr, vdur=[]), VNFD, lcm)["slice-5qi"] == 3


def test_an_lcm_tree_without_the_function_is_refused(tmp_path):
    root = tmp_path / "lcm"
    os.makedirs(str(root / "osm_lcm"))
    (root / "osm_lcm" / "ns.py").write_text("x = 1\n")
    with pytest.raises(LookupError, match="no function _format_additional_params"):
        lcm_day1.functions(str(root))


def test_the_job_gives_each_target_its_nsts_5qi_and_a_twin_with_the_largest(tmp_path):
    """Over the real packages' catalog shape: two NSTs on one params file, and their -osm10 forms."""
    pkgs = tmp_path / "packages"
    pkgs.mkdir()
    catalog = {"vnf": [], "ns": [], "nst": [], "variants": {}}
    for nst_id, five_qi in (("oai-eps-wg-embb", 6), ("oai-eps-wg-urllc-osm10", 3)):
        body = {"id": nst_id, "quality-of-service": {"id": five_qi},
                "netslice-subnet": [{"id": "eps-wg", "nsd-ref": "oai-eps-wg"}]}
        (pkgs / (nst_id + "_nst.yaml")).write_text(yaml.safe_dump({"nst": [body]}))
        catalog["nst"].append({"id": nst_id, "file": nst_id + "_nst.yaml"})
    catalog["variants"]["slices"] = {"kind": "nsi", "params": "params/nsi_eps_wg.yaml",
                                     "descriptor_ids": ["oai-eps-wg-embb", "oai-eps-wg-urllc-osm10"]}
    (pkgs / "catalog.json").write_text(json.dumps(catalog))
    job = conformance.build_job(str(pkgs), osm_src=None, work_dir=str(tmp_path / "work"))
    item = job["params"][0]
    top = max(params.STANDARDIZED_5QI)
    assert item["slice_5qi"] == {"oai-eps-wg-embb": 6, "oai-eps-wg-embb-q90": top,
                                 "oai-eps-wg-urllc-osm10": 3, "oai-eps-wg-urllc-q90-osm10": top}
    for target, want in item["slice_5qi"].items():
        apv = item["configs"][target]["netslice-subnet"][0]["additionalParamsForVnf"]
        assert {a["additionalParams"]["slice_5qi"] for a in apv} == {want}
        assert [a["member-vnf-index"] for a in apv] == membership.of_variant("eps_wg")[0]    # ns/variants.yaml
    twins = [p for p in job["packages"] if p["id"].endswith(("-q90", "-q90-osm10"))]
    assert [t["name"] for t in twins] == ["oai-eps-wg-embb-q90_nst.yaml", "oai-eps-wg-urllc-q90-osm10_nst.yaml"]
    with open(twins[1]["path"]) as f:
        assert yaml.safe_load(f)["nst"][0]["quality-of-service"] == {"id": top}
    assert job["lcm"] == []


def test_report_counts_lcm_results_and_fails_on_an_expected_one():
    ok = {"section": "lcm", "name": "LCM (newest): member hss slice-5qi 3 <- f -> nsi x-osm10", "ok": True,
          "message": "slice-5qi=3 (int)"}
    bad = dict(ok, ok=False, message="slice-5qi=None (NoneType), expected 3")
    text, passed = report.render("newest", [ok, bad])
    assert not passed and "FAIL  lcm" in text and "1 ok, 1 failed" in text
    assert report.render("osm10", [ok, dict(bad, name="LCM (newest): member hss <- f -> nsi x")])[1]


def test_the_docs_nsi_create_lines_are_in_the_corpus(tmp_path):
    from bundle.osm_conformance import corpus

    doc = tmp_path / "doc.md"
    doc.write_text("text osm nsi-create outside a block\n```\nosm nsi-create --nsi_name a \\\n"
                   "    --nst_name b --config_file f   # a comment\nmake x\n```\n")
    assert corpus.doc_commands(str(doc)) == [["osm", "nsi-create", "--nsi_name", "a", "--nst_name", "b",
                                              "--config_file", "f"]]
    lines = corpus.doc_commands(os.path.join(str(params.ROOT), corpus.SLICES_DOC))
    assert sum(1 for a in lines if a[1] == "nsi-create" and "--config_file" in a) == 2
