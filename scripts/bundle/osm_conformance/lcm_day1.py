"""LCM's own day-1 step over what NBI stored: the `config` primitive's parameters a charm receives.

Run inside the conformance venv by runner.py, after NBI's NsrTopic/NsiTopic made the VNF records.
LCM's instantiate (osm_lcm/ns.py, ``NsLcm.instantiate``) builds ``deploy_params`` of a member from
its VNF record's ``additionalParamsForVnf`` (``parse_yaml_strings``, osm_lcm/data_utils/dict_utils.py;
in the LCM of 2020 ``NsLcm._format_additional_params``), adds ``OSM`` (``get_osm_params``) and the
``rw_mgmt_ip`` of the VIM, and runs every initial-config-primitive through
``NsLcm._map_primitive_params``; the N2VC sets the charm's config from the `config` primitive's
result. The two functions are taken out of LCM's modules by name (ast), unchanged, so that LCM's
other imports (osm_common, N2VC, Kafka) are not needed; nothing of LCM is in this project. What
LCM computes from the VIM (``rw_mgmt_ip``, the ``OSM`` record) is given stand-in values here.
"""

import ast
import copy
import os

import yaml

#: What LCM learns from the VIM and its records, stood in (they do not reach slice-5qi).
VIM_FACTS = {"rw_mgmt_ip": "192.0.2.10",
             "OSM": {"count_index": 0, "member_vnf_index": "stand-in", "vdu_id": "stand-in"}}


class LcmException(Exception):
    """What LCM raises for a missing or mistyped parameter (osm_lcm.lcm_utils's)."""


def _function(path, name):
    with open(path) as f:
        tree = ast.parse(f.read())
    node = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name), None)
    if node is not None:
        node.decorator_list = []  # _map_primitive_params is a staticmethod
    return node


def functions(lcm_dir):
    """(formatter, map_primitive_params, what was used) as the LCM in ``lcm_dir`` defines them."""
    env = {"yaml": yaml, "LcmException": LcmException}
    ns_py = os.path.join(lcm_dir, "osm_lcm", "ns.py")
    dict_utils = os.path.join(lcm_dir, "osm_lcm", "data_utils", "dict_utils.py")
    found = []
    if os.path.isfile(dict_utils) and _function(dict_utils, "parse_yaml_strings") is not None:
        found.append((dict_utils, "parse_yaml_strings"))
    else:
        found.append((ns_py, "_format_additional_params"))  # a method of NsLcm before 2021
    found.append((ns_py, "_map_primitive_params"))
    for path, name in found:
        node = _function(path, name)
        if node is None:
            raise LookupError("{}: no function {}".format(path, name))
        exec(compile(ast.Module(body=[node], type_ignores=[]), path, "exec"), env)  # noqa: S102
    fmt = env[found[0][1]]
    formatter = fmt if found[0][1] == "parse_yaml_strings" else (lambda params: fmt(None, params))
    used = ", ".join("{}:{}".format(os.path.relpath(p, lcm_dir), n) for p, n in found)
    return formatter, env["_map_primitive_params"], used


def config_primitive(vnfd):
    """The day-1 `config` primitive of the VNF's execution environment (VNF or VDU level), or None."""
    df = (vnfd.get("df") or [{}])[0]
    day12 = ((df.get("lcm-operations-configuration") or {}).get("operate-vnf-op-config") or {}).get("day1-2") or []
    for entry in day12:
        for prim in entry.get("initial-config-primitive") or []:
            if prim.get("name") == "config":
                return entry["id"], prim
    return None, None


def deploy_params(vnfr, ee_id, formatter):
    """LCM's deploy_params for the EE ``ee_id``: a VDU's own additionalParams where NBI stored
    some (LCM 11+), else the VNF record's additionalParamsForVnf, with the VIM's facts."""
    source = vnfr.get("additionalParamsForVnf")
    vdur = next((v for v in vnfr.get("vdur") or [] if v.get("vdu-id-ref") == ee_id), None)
    if vdur is not None and vdur.get("additionalParams"):
        source = vdur["additionalParams"]
    out = formatter(copy.deepcopy(source)) if source else {}
    out.update(copy.deepcopy(VIM_FACTS))
    return out


def charm_config(vnfr, vnfd, lcm):
    """What LCM hands the charm with the `config` primitive of this VNF record: {option: value}."""
    formatter, map_params, _used = lcm
    ee_id, prim = config_primitive(vnfd)
    if prim is None:
        raise LookupError("vnfd {} has no day-1 config primitive".format(vnfd.get("id")))
    return map_params(prim, {}, deploy_params(vnfr, ee_id, formatter))


def check(db, vnfr_ids, expected, lcm, option="slice-5qi"):
    """[(member, ok, message)]: every new VNF record's charm gets ``option`` == ``expected`` (an int)."""
    out = []
    for vnfr_id in vnfr_ids:
        vnfr = db.get_one("vnfrs", {"_id": vnfr_id})
        vnfd = db.get_one("vnfds", {"_id": vnfr["vnfd-id"]})
        member = vnfr.get("member-vnf-index-ref")
        try:
            value = charm_config(vnfr, vnfd, lcm).get(option)
        except Exception as e:  # noqa: BLE001 - LCM's refusal is the result
            out.append((member, False, "{}: {}".format(type(e).__name__, e)))
            continue
        ok = type(value) is int and value == expected
        out.append((member, ok, "{}={!r} ({})".format(option, value, type(value).__name__)
                    + ("" if ok else ", expected {!r}".format(expected))))
    return out
