"""The `osm` side of the stand-in clouds (deploy.standin): osmclient over OSM's NBI and LCM, and
the proxy charms' day-2 actions, kept as state.

Only what `python -m deploy` runs is answered, each command's options checked the way osmclient
declares them (``OPTIONS``: an option it does not know fails like click's "No such option"), so
a test sees what the real client would refuse; the real check of the command lines is
osmclient's own parser (`make osm-conformance`). OSM's records come back in the shapes the
deploy tool reads (`ns-show`/`vnf-show --literal`, `ns-op-show`), and LCM 19's behaviour is
followed where the tool depends on it:

* an execution environment per member, VDU-level (one per instance) for a member whose NS
  relations name a VDU (``catalog.vdu_members``), in ``_admin.deployed.VCA`` with LCM's ee_id
  ``<model>.<application>.<machine>`` (model: the NS id);
* ``vnf-scale`` adds or removes the highest count index of that VDU; a scaled instance is
  related to nothing (LCM 19 ``_add_vca_relations`` resolves both ends to instance 0);
* ``ns-update --updatetype CHANGE_VNFPKG`` fails as LCM 19's ``update()`` does for a VNF whose
  VNFD has no VNF-level day1-2 entry (``get_configuration(vnfd, vnfd id)`` is None: TypeError)
  and for a changed software-version; otherwise the VNF's revision follows its package's.

The charms' actions answer as the shipped charm does: ``tunnel-status`` with one entry per
tunnel endpoint (addresses of instance k as ``vpnaas.core.instance`` derives them), ``add-peer``
(refused when another peer holds the key: ``charm_guard``; an older charm replaced it) and
``remove-peer`` (with ``allowed-ips``: only the peer with exactly those). ``lies`` makes an
instance report another one's key or addresses (the hostile case); ``unready`` makes a new
instance's actions fail until its day-1 would have ended.
"""
import base64
import hashlib
import ipaddress
import json
import shlex
import uuid

import yaml

from deploy.catalog import members, read_descriptor, tunnels, vdu_members, vnfd_of
from vpnaas.core import instance, refpoints

#: osmclient's options of the commands the tool runs (its click declarations): name -> flag?
OPTIONS = {
    "ns-action": {"--vnf_name": False, "--kdu_name": False, "--vdu_id": False, "--vdu_count": False,
                  "--action_name": False, "--params": False, "--params_file": False, "--timeout": False,
                  "--wait": True},
    "vnf-scale": {"--scaling-group": False, "--scale-in": True, "--scale-out": True, "--timeout": False,
                  "--wait": True},
    "ns-update": {"--updatetype": False, "--config": False, "--timeout": False, "--wait": True},
}


def wg_key(*parts):
    """A well-formed WireGuard public key (base64 of 32 bytes), the same for the same parts."""
    return base64.b64encode(hashlib.sha256("/".join(map(str, parts)).encode()).digest()).decode()


def parse_options(cmd, argv):
    """(positionals, {option: value or True}) of ``argv`` as osmclient declares ``cmd``; raises
    ValueError for an option osmclient does not have."""
    spec, pos, opts, i = OPTIONS[cmd], [], {}, 0
    while i < len(argv):
        word = argv[i]
        if word.startswith("--"):
            if word not in spec:
                raise ValueError("Error: No such option: {}".format(word))
            if spec[word]:
                opts[word] = True
            else:
                opts[word], i = argv[i + 1], i + 1
        else:
            pos.append(word)
        i += 1
    return pos, opts


class Ns:
    """One NS instance: its members, VNF records and execution environments."""

    def __init__(self, catalog, name, nsd_id, index):
        self.id, self.name, self.nsd_id = str(uuid.uuid4()), name, nsd_id
        nsd = catalog.nsd(nsd_id)
        self.members = members(nsd)
        self.tunnels = tunnels(nsd)
        self.vdu = vdu_members(nsd)
        self.vnfds = {m: catalog.vnfd(v) for m, v in self.members.items()}
        self.index = index                       # keeps the addresses of two NSs apart
        self.vnfr = {m: str(uuid.uuid4()) for m in self.members}
        self.instances = {m: [0] for m in self.members}
        self.revision = {m: 1 for m in self.members}

    def app(self, member, k):
        vdu = self.vdu.get(member)
        return "proxy-ee-z{}-{}-{}".format(k, member, "{}-z{}-vdu".format(vdu, k) if vdu else "vnf")

    def vca(self):
        out = []
        for member in self.members:
            for k in self.instances[member] if member in self.vdu else [0]:
                app = self.app(member, k)
                out.append({"member-vnf-index": member, "vdu_id": self.vdu.get(member), "vdu_count_index": k,
                            "vnfd_id": self.members[member], "type": "lxc_proxy_charm", "application": app,
                            "model": self.id, "ee_id": "{}.{}.{}".format(self.id, app, len(out))})
        return out

    def endpoints(self, member):
        return [(t.provider_endpoint, True, t.requirer) for t in self.tunnels if t.provider == member] + \
               [(t.requirer_endpoint, False, t.provider) for t in self.tunnels if t.requirer == member]

    def entry(self, member, k, endpoint, provider):
        """The tunnel-status entry of instance k's wg-<endpoint> (without peers)."""
        n = list(refpoints.REFERENCE_POINTS).index(endpoint) if endpoint in refpoints.REFERENCE_POINTS else 9
        slot = 10 + sorted(self.members).index(member) + 20 * self.index
        net = ipaddress.ip_network(refpoints.default_tunnel_network(endpoint) or "10.250.9.0/30")
        hosts = list(net.hosts())
        base = ipaddress.ip_interface("{}/{}".format(hosts[0 if provider else 1], net.prefixlen))
        what = "{} instance {}".format(member, k)
        service = ipaddress.ip_interface("172.16.{}.{}/32".format(n, slot))
        return {"device": refpoints.device_name(endpoint), "endpoint": endpoint, "up": True,
                "public-key": wg_key(self.id, member, k, endpoint), "listen-port": refpoints.default_port(endpoint),
                "address": str(instance.tunnel_address(base, k, what)), "temporary": False,
                "endpoint-address": instance.endpoint_host("192.168.{}.{}".format(n, slot), k, what),
                "service-addresses": [str(a) for a in instance.service_addresses([service], k, None, what)],
                "implementation": "kernel"}


class OsmStandIn:
    def __init__(self, catalog, handshake_age=5, ready_after=2, charm_guard=True):
        self.catalog = catalog
        self.handshake_age, self.ready_after, self.charm_guard = handshake_age, ready_after, charm_guard
        self.vims = set()
        self.packages = {"nfpkg": {}, "nspkg": {}, "nst": {}}   # id -> {"_id", "revision", "software-version"}
        self.ns, self.nsi, self.ops = {}, {}, {}
        self.polls = 0
        self.peers = {}        # (ns id, member, k, endpoint) -> {key: add-peer params}
        # (member, k) -> {"key": j, "addresses": j}: instance k reports instance j's key/addresses
        self.lies = {}
        self.unready = {}      # (member, k) -> how many more actions fail (its day-1 has not ended)
        self.ue_attaches, self.ue_fails = 0, False
        self.imsi = {}         # ns id -> the UE's IMSI from the instantiation params (ue_imsi)
        self.juju = []

    # -- dispatch -------------------------------------------------------------------------------
    def __call__(self, a):
        cmd = a[0]
        if cmd == "vim-list":
            return 0, ""
        if cmd.startswith("vim-"):
            return self.vim(cmd, a)
        if cmd.split("-")[0] in self.packages:
            return self.package(cmd, a)
        if cmd in ("ns-create", "nsi-create"):
            return self.create(cmd, a)
        if cmd in ("ns-show", "nsi-show", "vnf-show"):
            return self.show(cmd, a)
        if cmd in ("ns-delete", "nsi-delete"):
            store = self.ns if cmd == "ns-delete" else self.nsi
            return (0, "") if store.pop(a[1], None) is not None else (1, "not found")
        if cmd in OPTIONS:
            try:
                pos, opts = parse_options(cmd, a[1:])
            except (ValueError, IndexError) as e:
                return 2, str(e)
            return getattr(self, cmd.replace("-", "_"))(pos, opts)
        if cmd == "ns-op-show":
            return self.op_show(a[1])
        raise AssertionError("the stand-in osm has no {}".format(a))

    def vim(self, cmd, a):
        if cmd == "vim-show":
            return (0, "x") if a[1] in self.vims else (1, "")
        if cmd == "vim-create":
            self.vims.add(a[a.index("--name") + 1])
        if cmd == "vim-delete":
            self.vims.discard(a[1])
        return 0, ""

    def package(self, cmd, a):
        kind, verb = cmd.split("-", 1)
        store = self.packages[kind]
        if verb == "show":
            if a[1] not in store:
                return 1, ""
            return 0, yaml.safe_dump(store[a[1]]) if "--literal" in a else "table"
        if verb == "delete":
            return (0, "") if store.pop(a[1], None) is not None else (1, "not found")
        path = a[a.index("--content") + 1] if verb == "update" else a[1]
        doc = read_descriptor(self.catalog.abspath(path)) if kind == "nfpkg" else None
        ident = vnfd_of(doc)["id"] if doc else self.catalog.classify(path)[1]
        entry = store.setdefault(ident, {"_id": str(uuid.uuid4()), "id": ident, "_admin": {"revision": 0}})
        entry["_admin"]["revision"] += 1
        if doc:
            entry["software-version"] = vnfd_of(doc).get("software-version", "1.0")
        return 0, entry["_id"] if verb == "create" else ""

    # -- instances ------------------------------------------------------------------------------
    def create(self, cmd, a):
        name = a[a.index("--ns_name" if cmd == "ns-create" else "--nsi_name") + 1]
        if cmd == "ns-create":
            ns = Ns(self.catalog, name, a[a.index("--nsd_name") + 1], len(self.ns) + len(self.nsi))
            self.ns[name] = ns
            self.imsi[ns.id] = self.ue_imsi_of(a)
            return 0, ns.id
        nst = self.catalog.nst_doc(a[a.index("--nst_name") + 1])
        subnets = [Ns(self.catalog, "{}.{}".format(name, s["id"]), s["nsd-ref"], len(self.ns) + len(self.nsi) + i)
                   for i, s in enumerate(nst.get("netslice-subnet") or [])]
        self.nsi[name] = {"id": str(uuid.uuid4()), "subnets": subnets}
        for ns in subnets:
            self.ns[ns.id] = ns
            self.imsi[ns.id] = self.ue_imsi_of(a)
        return 0, self.nsi[name]["id"]

    def ue_imsi_of(self, argv):
        """The ``ue_imsi`` the instantiation params give the RAN (the IMSI its UE attaches with)."""
        with open(self.catalog.abspath(argv[argv.index("--config_file") + 1])) as f:
            todo, found = [yaml.safe_load(f)], "001010000000001"
        while todo:
            item = todo.pop()
            if isinstance(item, dict):
                found = str(item.get("ue_imsi") or found)
                todo += list(item.values())
            elif isinstance(item, list):
                todo += item
        return found

    def find(self, name):
        return self.ns.get(name) or next((n for n in self.ns.values() if name in (n.id, n.name)), None)

    def ns_record(self, ns):
        self.polls += 1
        ready = self.polls >= self.ready_after
        vca = ns.vca()
        return {
            "_id": ns.id, "name": ns.name, "nsd": {"id": ns.nsd_id}, "nsd-ref": ns.nsd_id,
            "nsState": "READY" if ready else "BUILDING",
            "operational-status": "running" if ready else "init",
            "config-status": "configured" if ready else "init",
            "configurationStatus": [{"elementUnderConfiguration": v["application"],
                                     "status": "READY" if ready else "INSTALLING"} for v in vca],
            "constituent-vnfr-ref": [ns.vnfr[m] for m in ns.members],
            "_admin": {"deployed": {"VCA": vca}},
        }

    def vnfr_record(self, ns, member):
        vnfd = ns.vnfds[member]
        vdur = []
        for vdu in vnfd.get("vdu") or []:
            for k in ns.instances[member] if vdu["id"] == ns.vdu.get(member) else [0]:
                vdur.append({"vdu-id-ref": vdu["id"], "count-index": k, "status": "ACTIVE",
                             "ip-address": "192.168.222.{}".format(10 + 20 * ns.index + k)})
        package = self.packages["nfpkg"].get(vnfd["id"], {})
        return {"_id": ns.vnfr[member], "id": ns.vnfr[member], "member-vnf-index-ref": member,
                "vnfd-ref": vnfd["id"], "vnfd-id": package.get("_id", ""), "nsr-id-ref": ns.id,
                "revision": ns.revision[member], "ip-address": vdur[0]["ip-address"] if vdur else "", "vdur": vdur}

    def show(self, cmd, a):
        if cmd == "vnf-show":
            for ns in self.ns.values():
                for member, vnfr_id in ns.vnfr.items():
                    if vnfr_id == a[1]:
                        return 0, yaml.safe_dump(self.vnfr_record(ns, member))
            return 1, "not found"
        if cmd == "nsi-show":
            nsi = self.nsi.get(a[1])
            if nsi is None:
                return 1, ""
            record = dict(self.ns_record(nsi["subnets"][0]), _id=nsi["id"], name=a[1])
            record["_admin"] = {"nsrs-detailed-list": [{"nsrId": ns.id} for ns in nsi["subnets"]]}
            return 0, yaml.safe_dump(record) if "--literal" in a else "table"
        ns = self.find(a[1])
        if ns is None:
            return 1, ""
        return 0, yaml.safe_dump(self.ns_record(ns)) if "--literal" in a else "table"

    # -- LCM operations ---------------------------------------------------------------------------
    def vnf_scale(self, pos, opts):
        ns, member = self.find(pos[0]), pos[1]
        aspects = [a["id"] for a in ns.vnfds[member]["df"][0].get("scaling-aspect") or []]
        if opts.get("--scaling-group") not in aspects:
            return 1, "scaling-group-descriptor {} not found".format(opts.get("--scaling-group"))
        live = ns.instances[member]
        if opts.get("--scale-in"):
            if len(live) < 2:
                return 1, "the minimum number of instances is reached"
            k = live.pop()
            for key in [key for key in self.peers if key[:3] == (ns.id, member, k)]:
                del self.peers[key]
        else:
            live.append(len(live))
        return 0, str(uuid.uuid4())

    def ns_update(self, pos, opts):
        """LCM 19 ``update()`` with CHANGE_VNFPKG (ns.py): the charm is found through the VNF-level
        day1-2 entry only, and a changed software-version is refused for a VNF with a charm."""
        ns = self.find(pos[0])
        items = (yaml.safe_load(opts.get("--config") or "") or {}).get("changeVnfPackageData")
        if not isinstance(items, list) or not items:       # osmclient's Ns.update reads item [0]
            return 1, "failed to update ns: changeVnfPackageData must be a list (osmclient sol005/ns.py update())"
        data = items[0]
        member = next((m for m, v in ns.vnfr.items() if v == data.get("vnfInstanceId")), None)
        if opts.get("--updatetype") != "CHANGE_VNFPKG" or member is None:
            return 1, "ns-update: unknown VNF instance {!r}".format(data.get("vnfInstanceId"))
        vnfd = ns.vnfds[member]
        package = self.packages["nfpkg"][vnfd["id"]]
        if data.get("vnfdId") != package["_id"]:
            return 1, "vnfd-id {} does not match with the vnfd-id of the VNF instance".format(data.get("vnfdId"))
        day12 = vnfd["df"][0].get("lcm-operations-configuration", {}).get("operate-vnf-op-config", {}).get("day1-2", [])
        if not any(c.get("id") == vnfd["id"] for c in day12):
            return 0, yaml.safe_dump({"operationState": "FAILED", "detailed-status":
                                      "TypeError: argument of type 'NoneType' is not iterable"})
        if package.get("software-version", "1.0") != vnfd.get("software-version", "1.0"):
            return 1, "Software version change is not supported as VNF instance has charm."
        ns.revision[member] = package["_admin"]["revision"]
        return 0, str(uuid.uuid4())

    def ns_action(self, pos, opts):
        ns = self.find(pos[0])
        if ns is None:
            return 1, "ns not found"
        member = opts.get("--vnf_name")
        k = int(opts.get("--vdu_count") or 0)
        if (member in ns.vdu) != ("--vdu_id" in opts) or k not in ns.instances.get(member, []):
            return 1, "No execution environment for {} vdu {} count {}".format(member, opts.get("--vdu_id"), k)
        if self.unready.get((member, k)):
            self.unready[(member, k)] -= 1
            return 1, "ERROR: the execution environment of {} {} is not ready".format(member, k)
        op = str(uuid.uuid4())
        self.ops[op] = (ns, member, k, opts["--action_name"], json.loads(opts.get("--params") or "{}"))
        return 0, op + "\n"

    def op_show(self, op):
        ns, member, k, action, params = self.ops[op]
        try:
            detail = self.result(ns, member, k, action, params)
        except RuntimeError as e:
            return 0, yaml.safe_dump({"operationState": "FAILED", "detailed-status": str(e)})
        # LCM of some releases stores the results as their Python repr
        return 0, yaml.safe_dump({"operationState": "COMPLETED", "detailed-status": str(detail)})

    # -- the charms' actions ----------------------------------------------------------------------
    def device(self, ns, member, k, endpoint, provider, other):
        lie = self.lies.get((member, k), {})
        entry = ns.entry(member, lie.get("addresses", k), endpoint, provider)
        entry["public-key"] = wg_key(ns.id, member, lie.get("key", k), endpoint)
        peers = []
        if k == 0:          # instance 0 is related (OSM adds the NS relations)
            rel = ns.entry(other, 0, endpoint, not provider)
            peers.append({"public-key": rel["public-key"], "endpoint": "{}:{}".format(
                rel["endpoint-address"], rel["listen-port"]), "latest-handshake-age": self.handshake_age,
                "allowed-ips": [rel["address"].split("/")[0] + "/32"] + rel["service-addresses"]})
        for key, p in self.peers.get((ns.id, member, k, endpoint), {}).items():
            age = 1 if self.mutual(ns, key, entry) else None
            peers.append({"public-key": key, "endpoint": p.get("endpoint", ""),
                          "allowed-ips": p["allowed-ips"].split(","), "latest-handshake-age": age})
        entry["peers"] = [dict(p, **{"rx-bytes": 1, "tx-bytes": 1}) for p in peers]
        return entry

    def mutual(self, ns, key, entry):
        """Whether the device whose key is ``key`` holds ``entry``'s key too (a handshake happens)."""
        return any(entry["public-key"] in held for (ns_id, m, k, e), held in self.peers.items()
                   if ns_id == ns.id and wg_key(ns_id, m, k, e) == key)

    def result(self, ns, member, k, action, params):
        eps = ns.endpoints(member)
        if action == "tunnel-status":
            return {"tunnels": json.dumps([self.device(ns, member, k, e, p, o) for e, p, o in eps])}
        if action in ("add-peer", "remove-peer"):
            endpoint = params["device"]
            held = self.peers.setdefault((ns.id, member, k, endpoint), {})
            if action == "remove-peer":
                entry = held.get(params["public-key"])
                named = sorted((params.get("allowed-ips") or "").split(","))
                if entry is None or (params.get("allowed-ips") and sorted(entry["allowed-ips"].split(",")) != named):
                    raise RuntimeError("action remove-peer failed: no manual peer with that key"
                                       + (" and those allowed-ips" if entry else "") + " on wg-" + endpoint)
                del held[params["public-key"]]
                return {}
            before = held.get(params["public-key"])
            if self.charm_guard and before and before != params:
                raise RuntimeError("action add-peer failed: public-key: another manual peer of wg-{} holds "
                                   "it with other addresses".format(endpoint))
            held[params["public-key"]] = dict(params)
            provider = next(p for e, p, _ in eps if e == endpoint)
            other = next(o for e, _, o in eps if e == endpoint)
            return {"tunnel": json.dumps(self.device(ns, member, k, endpoint, provider, other))}
        return self.workload_result(action, params, self.imsi.get(ns.id, ""))

    def workload_result(self, action, params, imsi):
        if action == "ue-attach":
            self.ue_attaches += 1
            return {"result": "attached", "imsi": imsi, "ip": "12.1.1.2",
                    "interface": "oaitun_ue1", "seconds": "7", "mme-view": "not read from the eNB VNF"}
        if action == "ue-iperf":
            if self.ue_fails:
                raise RuntimeError("ue-iperf failed: the UE is not attached")
            return {"ip": "12.1.1.2", "server": params["server"], "rtt-ms": "21.4", "sent-mbps": "9.8",
                    "received-mbps": "9.6", "tunnels": "5 tunnels up"}
        command = params.get("command", "")
        if command.startswith("sh -c") and "mme-view" in command:
            return {"output": "Attached UEs   |          1      |              1              |"
                              "             0               |\n[NAS] IMSI {} attach complete\n".format(imsi)}
        words = shlex.split(command) if command else []
        if words[:1] == ["iperf3"] and "-c" in words:
            rate = 0.9e9 if words[words.index("-c") + 1].startswith("172.16.") else 20e9
            return {"output": json.dumps({"end": {
                "sum_sent": {"bits_per_second": rate, "retransmits": 3, "seconds": 600},
                "sum_received": {"bits_per_second": rate * 0.99, "seconds": 600}}})}
        if words[:1] == ["ping"]:
            return {"output": "1000 packets transmitted, 1000 received, 0% packet loss, time 1ms\n"
                              "rtt min/avg/max/mdev = 0.5/0.8/2.1/0.1 ms\n"}
        return {"output": ""}
