"""Check the charms' reader of OSM's <OSM> (vpnaas/core/instance.py) against what LCM itself writes.

    python3 scripts/bundle/lcm_osm_params.py LCM_DIR [--vectors]

LCM_DIR is a checkout of OSM's LCM (the folder that holds ``osm_lcm/``; the project was checked
against seltonlucas/osm-capk@35936ae, folder LCM/, LCM of OSM 19). LCM's own functions run
unchanged: ``get_osm_params`` (osm_lcm/data_utils/vnfr.py) builds the <OSM> dictionary of a VNF
record and ``NsLcm._map_primitive_params`` (osm_lcm/ns.py) turns a primitive's ``<OSM>``
parameter into the text the charm's ``osm-instance`` option receives. They are taken out of their
modules by name (ast), so that LCM's other imports (osm_common, the N2VC, Kafka ...) are not
needed; nothing of LCM is copied into the project. For VNF records of every shape the bundle
meets (instances 0-63 of a VDU, VNF-level execution environments, IPv6 and numeric or spaced
interface names, many VDUs), the script checks that ``instance.index`` finds LCM's count_index and
that ``instance.read`` reads the text as PyYAML does. Exit status 0 when every case agrees, 1 on
any difference, 2 without LCM sources.
``--vectors`` prints the rendered texts as JSON (tests/unit/test_osm_params.py carries some).
"""
import ast
import json
import os
import sys

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "charms"))
from vpnaas.core import instance  # noqa: E402

PRIMITIVE = {"name": "config", "parameter": [{"name": "ssh-hostname", "value": "<rw_mgmt_ip>"},
                                             {"name": "osm-instance", "value": "<OSM>"}]}


class LcmException(Exception):
    """What _map_primitive_params raises for a missing parameter (osm_lcm.lcm_utils's)."""


def lcm_functions(lcm_dir):
    """(get_osm_params, _map_primitive_params) as LCM defines them."""
    env = {"yaml": yaml, "LcmException": LcmException}
    for path, name in (("osm_lcm/data_utils/vnfr.py", "get_osm_params"), ("osm_lcm/ns.py", "_map_primitive_params")):
        with open(os.path.join(lcm_dir, path)) as f:
            tree = ast.parse(f.read())
        node = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name), None)
        if node is None:
            raise SystemExit("{}: no function {}".format(path, name))
        node.decorator_list = []        # _map_primitive_params is a staticmethod
        exec(compile(ast.Module(body=[node], type_ignores=[]), path, "exec"), env)  # noqa: S102
    return env["get_osm_params"], env["_map_primitive_params"]


def vnfr(member, vdus, v6=False):
    """A VNF record as LCM's database holds it: ``vdus`` is [(vdu id, instances, [(interface, base ip)])]."""
    vdur = []
    for vdu, count, ifaces in vdus:
        for k in range(count):
            interfaces = []
            for n, (name, base) in enumerate(ifaces):
                net, host = base.rsplit(".", 1)
                ip = "fd00:{}::{:x}".format(n, 10 + k) if v6 and n == 0 else "{}.{}".format(net, int(host) + k)
                interfaces.append({"name": name, "ip-address": ip, "ns-vld-id": name + "-vld",
                                   "mac-address": "fa:16:3e:{:02x}:{:02x}:{:02x}".format(k, n, len(vdur) % 256)})
            vdur.append({"count-index": k, "vdu-id-ref": vdu, "ip-address": interfaces[0]["ip-address"],
                         "interfaces": interfaces})
    return {"_id": "7e1c9a34-1f0b-4d7e-8a22-5b6c7d8e9f01", "ip-address": vdur[0]["ip-address"],
            "vim-account-id": "0f1e2d3c-4b5a-6978-8695-a4b3c2d1e0f9",
            "vnfd-id": "5d4c3b2a-1908-7f6e-5d4c-3b2a19087f6e", "vnfd-ref": member + "_vnfd",
            "nsr-id-ref": "a3c5f1d2-7b1e-4c3a-9f0e-2d4b6c8e0f11", "member-vnf-index-ref": member, "vdur": vdur}


SPGWU = [("spgwu-mgmt", "198.18.0.20"), ("sxab", "192.168.16.102"), ("s1u", "192.168.9.159")]
ODD = [("0", "10.0.0.5"), ("true", "10.1.0.5"), ("eth 1", "10.2.0.5"), ("it's #1", "10.3.0.5")]
FOUR = SPGWU + [("extra-net-with-a-long-name", "10.9.0.10")]


def cases():
    """(label, VNF record, VDU of the execution environment or None, its count index)."""
    out = [("spgwu instance {} of {}".format(k, k + 1), vnfr("spgwu", [("spgwu", k + 1, SPGWU)]), "spgwu", k)
           for k in range(3)]
    out.append(("vnf-level", vnfr("spgwu", [("spgwu", 2, SPGWU)]), None, 0))
    out.append(("member index 1, ipv6 mgmt, numeric interface name",
                vnfr("1", [("vdu1", 3, ODD)], v6=True), "vdu1", 2))
    for k in (9, 63):
        out.append(("instance {} of {}, four interfaces".format(k, k + 1), vnfr("spgwu", [("spgwu", k + 1, FOUR)]),
                    "spgwu", k))
    out.append(("instance 63 of four VDUs of 64", vnfr("x", [(v, 64, FOUR) for v in ("a", "b", "c", "d")]), "c", 63))
    return out


def same(ours, theirs):
    """True when instance.read's node is what PyYAML loaded: text for text, a plain scalar where
    PyYAML made a number, a boolean or null of it, and the same keys. The reader keeps every key as
    its text: a plain key PyYAML makes a number or null of (OSM writes none: its names are text,
    quoted where they look like a number) counts as the same when PyYAML reads that text as it."""
    if isinstance(theirs, dict):
        if not isinstance(ours, dict):
            return False
        by_text = {k: v for k, v in theirs.items() if isinstance(k, str)}
        others = [k for k in theirs if not isinstance(k, str)]
        mine_others = [t for t in ours if t not in by_text]
        return (all(k in ours and same(ours[k], v) for k, v in by_text.items())
                and sorted(map(repr, {_resolve(t) for t in mine_others})) == sorted(map(repr, others)))
    if isinstance(theirs, list):
        return isinstance(ours, list) and len(ours) == len(theirs) and all(map(same, ours, theirs))
    if isinstance(theirs, str):
        return isinstance(ours, instance.Scalar) and ours.text == theirs
    return isinstance(ours, instance.Scalar) and ours.plain and _resolve(ours.text) == theirs


def _resolve(text):
    """What PyYAML makes of a plain scalar's text."""
    return yaml.safe_load(text) if text.strip() else None


def main(argv):
    if len(argv) < 1 or not os.path.isdir(os.path.join(argv[0], "osm_lcm")):
        print("not run: no LCM sources (the folder holding osm_lcm/)\n" + __doc__, file=sys.stderr)
        return 2
    get_osm_params, map_params = lcm_functions(argv[0])
    vectors, failures = {}, 0
    for label, record, vdu, k in cases():
        osm = get_osm_params(record, vdu, k) if vdu else get_osm_params(record)
        text = map_params(PRIMITIVE, {}, {"OSM": osm, "rw_mgmt_ip": record["ip-address"]})["osm-instance"]
        vectors[label] = {"text": text, "count_index": osm.get("count_index", 0)}
        try:
            ok = instance.index({"osm-instance": text}) == k and same(instance.read(text), yaml.safe_load(text))
            why = "" if ok else "read differently"
        except instance.InvalidValue as e:
            ok, why = False, str(e)
        failures += not ok
        if "--vectors" not in argv:
            print("{} {} ({} characters){}".format("ok  " if ok else "FAIL", label, len(text),
                                                   ": " + why if why else ""))
    if "--vectors" in argv:
        json.dump(vectors, sys.stdout, indent=1)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
