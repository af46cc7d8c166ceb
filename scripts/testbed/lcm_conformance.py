"""`make lcm-conformance LCM_SRC=<dir>`: what the emulated LCM reads from the bundle's VNFDs
(``lcm_data``) against OSM 19 LCM's own functions, run here on the same descriptors.

    python -m testbed.lcm_conformance --lcm-src DIR

DIR is LCM's source folder (the one holding ``osm_lcm/``), e.g. the ``LCM`` folder of
``seltonlucas/osm-capk`` at 35936ae (an export of that tree: ``git archive``). LCM cannot be
installed here as a whole (juju, kubernetes, osm_common); the functions compared are pure:
``osm_lcm.data_utils.vnfd`` is imported as it is, and ``NsLcm._map_primitive_params`` (a static
method of ``osm_lcm/ns.py``) is compiled alone from that file's own text.

For every VNFD of every NS variant: ``get_configuration`` with the VNFD's id and with each VDU's
id; the initial primitives of every execution environment in LCM's order; every initial
primitive mapped with what a heal passes (``vdu-id``, ``count-index``, ``run-day1``,
``rw_mgmt_ip``) and with what an instantiation passes (the NS's additionalParams, ``OSM``,
``rw_mgmt_ip``) -- the values or the error, compared as text; ``find_software_version``; and
whether ``update()``'s ``"execution-environment-list" in get_configuration(vnfd, vnfd_id)`` raises.
Exit 1 on any difference, 2 without LCM sources.
"""
import argparse
import ast
import copy
import functools
import os
import sys

import yaml

from bundle import descriptors, params
from testbed.emulators import lcm_data

ENV = {"MGMT_NETWORK": "mgmt", "LTE_K": "0" * 32, "LTE_OP": "1" * 32, "NR_K": "2" * 32, "NR_OP": "3" * 32,
       "MYSQL_PASSWORD": "abcdefghijklmnop", "VIM_ACCOUNT": "vim", "VIM_ACCOUNT_SITE2": "vim2"}


class UpstreamLcmException(Exception):
    """Stands for osm_lcm.lcm_utils.LcmException (importing lcm_utils needs LCM's whole stack)."""


def load_upstream(lcm_src):
    """(osm_lcm.data_utils.vnfd, NsLcm._map_primitive_params) from ``lcm_src``."""
    sys.path.insert(0, lcm_src)
    from osm_lcm.data_utils import vnfd as upstream_vnfd
    path = os.path.join(lcm_src, "osm_lcm", "ns.py")
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "NsLcm")
    func = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "_map_primitive_params")
    func.decorator_list = []
    namespace = {"yaml": yaml, "LcmException": UpstreamLcmException}
    exec(compile(ast.fix_missing_locations(ast.Module(body=[func], type_ignores=[])), path, "exec"), namespace)
    return upstream_vnfd, namespace["_map_primitive_params"]


def outcome(fn, *args):
    """A call's result or its error, as comparable text."""
    try:
        return "ok " + yaml.safe_dump(fn(*copy.deepcopy(args)), sort_keys=True)
    except Exception as e:  # noqa: BLE001 - the error is the outcome compared
        return "error {}: {}".format(type(e).__name__.replace("Upstream", ""), e)


@functools.lru_cache(maxsize=1)
def cases():
    """[(label, vnfd, additionalParams of its member)] for every VNF of every NS variant."""
    return list(_cases())


def _cases():
    bundle = descriptors.load_bundle()
    for name, entry in sorted(bundle.variants.items()):
        if entry["kind"] != "ns":
            continue
        rendered = params.render(os.path.join(descriptors.ROOT, entry["params"]), ENV,
                                 members=descriptors.members_of(bundle, entry["descriptor_ids"][0]))
        extra = {a["member-vnf-index"]: a.get("additionalParams") or {}
                 for a in rendered.get("additionalParamsForVnf") or []}
        nsd = bundle.nsd(entry["descriptor_ids"][0]).body
        for profile in nsd["df"][0]["vnf-profile"]:
            member = profile["id"]
            yield "{}/{}".format(name, member), bundle.vnfd(profile["vnfd-id"]).body, extra.get(member, {})


def _ee_list_in(get_configuration, vnfd):
    """What ns.py update() evaluates for each VCA record of the VNF (a TypeError when None)."""
    return "execution-environment-list" in get_configuration(vnfd, vnfd["id"])


def compare(upstream_vnfd, upstream_map):
    """[(label, check, ours, upstream)] of every difference, and how many checks ran."""
    diffs, checks = [], 0

    def check(label, what, ours, theirs):
        nonlocal checks
        checks += 1
        if ours != theirs:
            diffs.append((label, what, ours, theirs))

    for label, vnfd, extra in cases():
        ids = [vnfd["id"]] + [v["id"] for v in vnfd.get("vdu") or []]
        for entity in ids:
            check(label, "get_configuration " + entity, outcome(lcm_data.get_configuration, vnfd, entity),
                  outcome(upstream_vnfd.get_configuration, vnfd, entity))
        check(label, "find_software_version", lcm_data.find_software_version(vnfd),
              upstream_vnfd.find_software_version(vnfd))
        check(label, "update(): execution-environment-list in get_configuration(vnfd, vnfd_id)",
              outcome(_ee_list_in, lcm_data.get_configuration, vnfd),
              outcome(_ee_list_in, upstream_vnfd.get_configuration, vnfd))
        for entity in ids:
            config = lcm_data.get_configuration(vnfd, entity)
            for ee in lcm_data.ee_list(config) if config else []:
                record = {"member-vnf-index": "m", "vdu_id": None if entity == vnfd["id"] else entity}
                prims = config.get("initial-config-primitive")
                ours = lcm_data.sorted_initial_primitives(prims, record, ee.get("id"))
                check(label, "initial primitives of " + ee.get("id", ""), outcome(list, ours),
                      outcome(upstream_vnfd.get_ee_sorted_initial_config_primitive_list, prims, record, ee.get("id")))
                vdu_name = lcm_data.vdu_name(vnfd, (vnfd.get("vdu") or [{}])[0].get("id"))
                heal = {"vdu-id": vdu_name, "count-index": 0, "run-day1": True, "rw_mgmt_ip": "192.0.2.10"}
                start = dict(extra, OSM={"count_index": 0, "member_vnf_index": "m", "vdu_id": entity},
                             rw_mgmt_ip="192.0.2.10")
                for prim in ours:
                    for kind, given in (("heal", heal), ("instantiate", start)):
                        check(label, "{} maps {}".format(kind, prim["name"]),
                              outcome(lcm_data.map_primitive_params, prim, {}, given),
                              outcome(upstream_map, prim, {}, given))
    return diffs, checks


def main(argv=None):
    parser = argparse.ArgumentParser(prog="testbed.lcm_conformance", description=__doc__.split("\n")[0])
    parser.add_argument("--lcm-src", default="", help="LCM's source folder (holding osm_lcm/)")
    args = parser.parse_args(argv)
    if not args.lcm_src or not os.path.isfile(os.path.join(args.lcm_src, "osm_lcm", "ns.py")):
        print("not run: no LCM sources (--lcm-src DIR, the folder holding osm_lcm/ns.py)", file=sys.stderr)
        return 2
    upstream_vnfd, upstream_map = load_upstream(os.path.abspath(args.lcm_src))
    diffs, checks = compare(upstream_vnfd, upstream_map)
    for label, what, ours, theirs in diffs:
        print("DIFFERENT {} {}:\n  ours:     {}\n  upstream: {}".format(label, what, ours.strip(), theirs.strip()))
    print("lcm-conformance: {} checks, {} different".format(checks, len(diffs)))
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
