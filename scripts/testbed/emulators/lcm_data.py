"""What OSM 19's LCM reads from a VNFD and an NS record when it heals or upgrades a VNF, as the
emulated LCM (``lcm_heal``, ``lcm_upgrade``) reads it: each function follows one function of LCM 19
(``seltonlucas/osm-capk@35936ae``, folder ``LCM/osm_lcm``; named in its docstring) and is tested
point by point in ``tests/unit/test_lcm_data.py``. Written here, not imported: LCM is not
installable on this machine's Python without its whole stack (juju, kubernetes, osm_common).

``vca_records`` is the ``_admin.deployed.VCA`` list of one member VNF as LCM 19 builds it at
instantiation and scale-out, with each record's application on the testbed.
"""
import yaml


class LcmException(Exception):
    """osm_lcm.lcm_utils.LcmException: what fails an LCM operation (FAILED, with its text)."""


def deep_get(target, keys, default=None):
    """lcm_utils.deep_get: nested lookup, ``default`` where a level is missing or not a dict."""
    for key in keys:
        if not isinstance(target, dict) or key not in target:
            return default
        target = target[key]
    return target


def get_configuration(vnfd, entity_id):
    """data_utils/vnfd.py get_configuration: the day1-2 entry whose id is ``entity_id`` (the
    VNFD's id for the VNF-level entry, a VDU's id for a VDU-level one), or None."""
    ops = deep_get((vnfd.get("df") or [{}])[0], ("lcm-operations-configuration", "operate-vnf-op-config"))
    if not ops:
        return None
    return next((c for c in ops.get("day1-2") or [] if c["id"] == entity_id), None)


def ee_list(config):
    """ns.py _heal_n2vc / _deploy_n2vc: the execution environments of a day1-2 entry
    (``execution-environment-list``; a bare ``juju`` entry is an NS charm's; others none)."""
    if "execution-environment-list" in config:
        return list(config.get("execution-environment-list") or [])
    if "juju" in config:
        return [config]
    return []


def vca_type(ee_item):
    """lcm_utils.py LcmBase.get_vca_info: the EE's type (None: not juju nor helm)."""
    juju = ee_item.get("juju")
    if juju:
        if juju.get("cloud") == "k8s":
            return "k8s_proxy_charm"
        if juju.get("proxy") is False or juju.get("charm") is None:
            return "native_charm"
        return "lxc_proxy_charm"
    return "helm-v3" if ee_item.get("helm-chart") else None


def sorted_initial_primitives(primitives, vca_deployed, ee_descriptor_id):
    """data_utils/vnfd.py get_ee_sorted_initial_config_primitive_list: the entry's
    initial-config-primitives of this EE in ``seq`` order; ``config`` added for an NS EE;
    ``verify-ssh-credentials`` inserted after ``config`` only when the VCA record carries an
    ``ssh-public-key`` -- which no code of LCM 19 ever writes, so never for a VNF."""
    out = [p for p in primitives or [] if p.get("execution-environment-ref", ee_descriptor_id) == ee_descriptor_id]
    out.sort(key=lambda p: int(p["seq"]))
    position = next((i for i, p in enumerate(out) if p["name"] == "config"), None)
    if not vca_deployed.get("member-vnf-index") and position is None:
        out.insert(0, {"name": "config", "parameter": []})
        position = 0
    if vca_deployed.get("member-vnf-index") and position is not None and vca_deployed.get("ssh-public-key"):
        out.insert(position + 1, {"name": "verify-ssh-credentials", "parameter": []})
    return out


def map_primitive_params(primitive, params, instantiation_params):
    """ns.py NsLcm._map_primitive_params: each parameter from ``params`` (the request), else the
    descriptor's ``value``/``default-value``; a value ``<name>`` is looked up in
    ``instantiation_params`` and is an LcmException when it is not there; dicts and lists become
    YAML flow text; INTEGER and BOOLEAN parameters are converted."""
    out = {}
    for parameter in primitive.get("parameter") or ():
        name = parameter["name"]
        if name in params:
            out[name] = params[name]
        elif "default-value" in parameter or "value" in parameter:
            out[name] = parameter["value"] if "value" in parameter else parameter["default-value"]
            value = out[name]
            if isinstance(value, str) and value.startswith("<") and value.endswith(">"):
                if value[1:-1] not in instantiation_params:
                    raise LcmException("Parameter {} needed to execute primitive {} not provided".format(
                        value, primitive["name"]))
                out[name] = instantiation_params[value[1:-1]]
        else:
            raise LcmException("Parameter {} needed to execute primitive {} not provided".format(
                name, primitive["name"]))
        if isinstance(out[name], (dict, list, tuple)):
            out[name] = yaml.safe_dump(out[name], default_flow_style=True, width=256)
        elif isinstance(out[name], str) and out[name].startswith("!!yaml "):
            out[name] = out[name][7:]
        if parameter.get("data-type") == "INTEGER":
            try:
                out[name] = int(out[name])
            except ValueError:
                raise LcmException("Parameter {} of primitive {} must be integer".format(
                    name, primitive["name"])) from None
        elif parameter.get("data-type") == "BOOLEAN":
            out[name] = str(out[name]).lower() != "false"
    if primitive["name"] == "config" and "ns_config_info" in instantiation_params:
        out["ns_config_info"] = instantiation_params["ns_config_info"]
    return out


def find_software_version(vnfd):
    """data_utils/vnfd.py find_software_version: the VNFD's software-version, "1.0" without one."""
    vnfd = vnfd.get("vnfd", vnfd)
    return vnfd.get("software-version") or "1.0"


def vdu_name(vnfd, vdu_id):
    """The ``vdu-name`` NBI writes into the VNFR's vdur: the VDU's ``name`` (its id without one)."""
    vdu = next((v for v in vnfd.get("vdu") or [] if v.get("id") == vdu_id), {})
    return vdu.get("name", vdu_id)


def vca_records(vnfd, member, instances):
    """``_admin.deployed.VCA`` for one member VNF: per instance k (count index order), the
    VNF-level entry's EEs, then each VDU's entry's EEs (ns.py instantiate() calls _deploy_n2vc
    in this order, scale() in the "SCALE-UP VCA" block the same; _deploy_n2vc appends one record
    per EE). ``instances`` maps count index -> the testbed application of that instance, which
    runs the EE the testbed deploys (``bundle.descriptors.day12``: the VNF-level one if there
    is one); a record of another EE has ``ee_id`` None (the testbed deploys one EE per VM)."""
    records = []
    vnf_level = get_configuration(vnfd, vnfd["id"])
    for k in sorted(instances):
        entries = [(None, vnf_level)] + [(v["id"], get_configuration(vnfd, v["id"])) for v in vnfd.get("vdu") or []]
        deployed = False
        for vdu_id, config in entries:
            if not config:
                continue
            for ee in ee_list(config):
                kind = vca_type(ee)
                if kind is None:
                    continue
                ee_id = None
                if not deployed and kind != "helm-v3":
                    ee_id, deployed = instances[k], True
                records.append({"member-vnf-index": member, "vdu_id": vdu_id, "vdu_count_index": k,
                                "ee_descriptor_id": ee.get("id"), "vnfd_id": vnfd["id"], "type": kind,
                                "ee_id": ee_id, "vdu_name": vdu_name(vnfd, vdu_id) if vdu_id else None})
    return records
