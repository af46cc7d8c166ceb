"""Run inside the conformance venv: feed the built packages and params files to OSM's own code.

    python runner.py --osm-src DIR --im-bindings DIR --job job.json --out result.json

OSM's NBI, osm_common and osmclient are imported from OSM_SRC (nothing of them is in this
project). An in-memory database (osm_common's DbMemory), a local file store (FsLocal), a message
bus that drops messages and an auth stand-in that knows one project replace NBI's services; the
topics themselves (VnfdTopic, NsdTopic, NstTopic, NsrTopic, NsLcmOpTopic, NsiTopic,
NsiLcmOpTopic) are NBI's. The order is NBI's own for each HTTP request:

* package upload: ``new()`` then ``upload_content()`` with the tar.gz (NST: the YAML);
* ns-create: ``NsrTopic.new`` then ``NsLcmOpTopic.new`` with lcmOperationType=instantiate;
* nsi-create: ``NsiTopic.new`` then ``NsiLcmOpTopic.new`` with lcmOperationType=instantiate;
* then LCM's own day-1 parameter mapping over the VNF records NBI made (lcm_day1.py): the value
  the charm's slice-5qi option gets, against the NST's 5QI (0 for an NS outside a slice);

the instantiate bodies being what osmclient's ``Ns.create`` / ``Nsi.create`` post for the params
file (bundle.osm_conformance.osmclient_body). Writes JSON {"notes": [...], "results": [{section,
name, ok, message}, ...]}.
"""

import argparse
import io
import json
import logging
import os
import re
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = "conformance"


class _NoMsg:
    def write(self, *args, **kwargs):
        return None

    def aiowrite(self, *args, **kwargs):
        return None


class _Auth:
    def get_project(self, project):
        return {"_id": PROJECT, "name": PROJECT, "quotas": {}}

    def get_project_list(self, *args, **kwargs):
        return [self.get_project(PROJECT)]


def _session():
    return {
        "username": PROJECT,
        "admin": False,
        "force": False,  # force would skip NBI's stricter checks
        "public": False,
        "project_id": [PROJECT],
        "set_project": [PROJECT],
        "method": "write",
        "allow_show_user_project_role": True,
    }


def _bridge_im_validation(osm_src):
    """NBI calls methods of the IM's Validation class; an NBI newer than the IM may call ones the
    IM does not have yet. Those are replaced by no-ops and named in the report, so the rest of the
    checks still run and the gap is visible. Returns the names replaced."""
    from osm_im.validation import Validation

    with open(os.path.join(osm_src, "NBI", "osm_nbi", "descriptor_topics.py")) as f:
        called = set(re.findall(r"\bvalidation\.(\w+)\(", f.read()))
    missing = sorted(name for name in called if not hasattr(Validation, name))
    for name in missing:
        setattr(Validation, name, lambda self, *args, **kwargs: None)
    return missing


def _import_osm(osm_src, im_bindings):
    for sub in ("osmclient", "osm-common", "NBI"):
        sys.path.insert(0, os.path.join(osm_src, sub))
    sys.path.insert(0, im_bindings)
    sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))  # scripts/, for bundle.*
    from osm_common.dbmemory import DbMemory
    from osm_common.fslocal import FsLocal
    from osm_nbi import descriptor_topics, instance_topics
    from osmclient.sol005.ns import Ns
    from osmclient.sol005.nsi import Nsi

    return DbMemory, FsLocal, descriptor_topics, instance_topics, Ns, Nsi, _bridge_im_validation(osm_src)


class Nbi:
    def __init__(self, modules, fs_dir):
        DbMemory, FsLocal, self.dt, self.it, self.Ns, self.Nsi, self.skipped = modules
        self.db = DbMemory()
        self.db.db_connect({"name": "conformance"})
        self.fs = FsLocal()
        self.fs.fs_connect({"path": fs_dir})
        args = (self.db, self.fs, _NoMsg(), _Auth())
        self.topics = {
            "vnf": self.dt.VnfdTopic(*args),
            "ns": self.dt.NsdTopic(*args),
            "nst": self.dt.NstTopic(*args),
            "nsr": self.it.NsrTopic(*args),
            "nslcmop": self.it.NsLcmOpTopic(*args),
            "nsi": self.it.NsiTopic(*args),
            "nsilcmop": self.it.NsiLcmOpTopic(*args),
        }
        self.known_vims = set()

    def upload(self, kind, path):
        topic = self.topics[kind]
        session = _session()
        _id, _ = topic.new([], session, {})
        with open(path, "rb") as f:
            data = io.BytesIO(f.read())
        if kind == "nst":
            headers = {"Content-Type": "application/yaml", "Content-Filename": os.path.basename(path)}
        else:
            headers = {"Content-Type": "application/gzip", "Content-Filename": os.path.basename(path)}
        try:
            topic.upload_content(session, _id, data, {}, headers)
        except Exception:
            self.db.del_one(topic.topic, {"_id": _id}, fail_on_empty=False)
            raise

    def _add_vim(self, name, uid):
        if uid in self.known_vims:
            return
        self.known_vims.add(uid)
        self.db.create(
            "vim_accounts",
            {
                "_id": uid,
                "name": name,
                "vim_type": "openstack",
                "_admin": {
                    "projects_read": [PROJECT],
                    "projects_write": [PROJECT],
                    "operationalState": "ENABLED",
                    "detailed-status": "",
                },
            },
        )

    def _descriptor_uuid(self, table, ident):
        found = self.db.get_list(table, {"id": ident})
        if not found:
            raise LookupError("{} {} is not onboarded (its package did not load)".format(table[:-1], ident))
        return found[0]["_id"]

    def instantiate(self, kind, target, config):
        """kind ns: target = NSD id; kind nsi: target = NST id. Raises what NBI raises."""
        from bundle.osm_conformance.osmclient_body import fake_id, request_body

        client_class = self.Ns if kind == "ns" else self.Nsi
        table = "nsds" if kind == "ns" else "nsts"
        uid = self._descriptor_uuid(table, target)
        body, seen = request_body(client_class, kind, target, "conformance-" + target, "site1", config)
        body["nsdId" if kind == "ns" else "nstId"] = uid  # the NBI id osmclient looked up by name
        for name in seen.get("vim", []):
            self._add_vim(name, fake_id("vim", name))
        session = _session()
        rollback = []
        if kind == "ns":
            _id, _ = self.topics["nsr"].new(rollback, session, dict(body))
            op = dict(body, lcmOperationType="instantiate", nsInstanceId=_id)
            self.topics["nslcmop"].new(rollback, session, op)
            self.last_ns = _id
        else:
            _id, _ = self.topics["nsi"].new(rollback, session, dict(body))
            op = dict(body, lcmOperationType="instantiate", netsliceInstanceId=_id)
            self.topics["nsilcmop"].new(rollback, session, op)
        return body


    def scaling_aspects(self, nsd_id):
        """[(member, aspect name)] of every VNF of the NSD whose VNFD has a scaling aspect."""
        nsd = self.db.get_list("nsds", {"id": nsd_id})[0]
        out = []
        for prof in nsd["df"][0].get("vnf-profile", []):
            for vnfd in self.db.get_list("vnfds", {"id": prof["vnfd-id"]}):
                out += [(prof["id"], a["name"]) for a in vnfd["df"][0].get("scaling-aspect", [])]
        return out

    def scale(self, member, aspect, scale_out):
        """`osm vnf-scale` on the NS instantiated last, as NBI takes it: osmclient's body, then
        NsLcmOpTopic.new with lcmOperationType=scale. LCM would have marked the NS instantiated
        before anybody can scale it: so does this (the only write that is not NBI's)."""
        from bundle.osm_conformance.osmclient_body import scale_body

        self.db.set_one("nsrs", {"_id": self.last_ns}, {"_admin.nsState": "INSTANTIATED"})
        body = scale_body(self.Ns, member, aspect, scale_out)
        op = dict(body, lcmOperationType="scale", nsInstanceId=self.last_ns)
        self.topics["nslcmop"].new([], _session(), op)


def _message(exc):
    text = str(exc) or type(exc).__name__
    if not isinstance(exc, (LookupError,)) and type(exc).__name__ not in (
        "EngineException",
        "ValidationError",
        "DbException",
        "FsException",
        "ClientException",
    ):
        text = "{}: {}\n{}".format(type(exc).__name__, text, traceback.format_exc(limit=6))
    return text


def _lcm_results(nbi, lcms, vnfr_ids, expected, name):
    """LCM's day-1 `config` parameters for the VNF records NBI just made (lcm_day1.py): slice-5qi."""
    from bundle.osm_conformance import lcm_day1

    out = []
    for label, lcm in lcms:
        for member, ok, message in lcm_day1.check(nbi.db, vnfr_ids, expected, lcm):
            out.append({"section": "lcm", "ok": ok, "message": message,
                        "name": "{}: member {} slice-5qi {} <- {}".format(label, member, expected, name)})
    return out


def run(job, nbi, lcms=()):
    """Every package, then every params item's targets through NBI, and LCM's day-1 mapping of
    the VNF records each instantiation made (``lcms``: [(label, lcm_day1.functions(...))])."""
    results = []
    for pkg in job["packages"]:
        try:
            nbi.upload(pkg["kind"], pkg["path"])
            results.append({"section": "package", "name": pkg["name"], "ok": True, "message": "loaded"})
        except Exception as e:  # noqa: BLE001 - OSM raises many types; every refusal is a result
            results.append({"section": "package", "name": pkg["name"], "ok": False, "message": _message(e)})
    for item in job["params"]:
        for target in item["targets"]:
            name = "{} -> {} {}".format(item["file"], item["kind"], target)
            before = {v["_id"] for v in nbi.db.get_list("vnfrs")}
            try:
                nbi.instantiate(item["kind"], target, item["configs"][target])
                results.append({"section": "params", "name": name, "ok": True, "message": "accepted"})
            except Exception as e:  # noqa: BLE001 - as above
                results.append({"section": "params", "name": name, "ok": False, "message": _message(e)})
                continue
            new = [v["_id"] for v in nbi.db.get_list("vnfrs") if v["_id"] not in before]
            results += _lcm_results(nbi, lcms, new, item["slice_5qi"][target], name)
            for member, aspect in (nbi.scaling_aspects(target) if item["kind"] == "ns" else []):
                for out in (True, False):
                    what = "{}: vnf-scale {} --scaling-group {} --scale-{}".format(
                        name, member, aspect, "out" if out else "in")
                    try:
                        nbi.scale(member, aspect, out)
                        results.append({"section": "params", "name": what, "ok": True, "message": "accepted"})
                    except Exception as e:  # noqa: BLE001 - as above
                        results.append({"section": "params", "name": what, "ok": False, "message": _message(e)})
    return results


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--osm-src", required=True)
    ap.add_argument("--im-bindings", required=True)
    ap.add_argument("--job", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.CRITICAL)
    modules = _import_osm(os.path.abspath(args.osm_src), os.path.abspath(args.im_bindings))
    with open(args.job) as f:
        job = json.load(f)
    from bundle.osm_conformance import lcm_day1

    lcms = [(entry["label"], lcm_day1.functions(entry["dir"])) for entry in job.get("lcm", [])]
    with tempfile.TemporaryDirectory(prefix="osm-conformance-fs-") as fs_dir:
        nbi = Nbi(modules, fs_dir + "/")
        stdout = sys.stdout
        sys.stdout = open(os.devnull, "w")  # osmclient prints the new id
        try:
            results = run(job, nbi, lcms)
        finally:
            sys.stdout.close()
            sys.stdout = stdout
    notes = [
        "NBI calls IM Validation.{}(), which this IM does not have: skipped".format(name)
        for name in nbi.skipped
    ] + ["{}: {}".format(label, lcm[2]) for label, lcm in lcms]
    with open(args.out, "w") as f:
        json.dump({"notes": notes, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
