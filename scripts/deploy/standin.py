"""Stand-in clouds: the `openstack`, `osm` and `juju` commands `python -m deploy` runs, answered
at the subprocess boundary (the ``execute`` of deploy.runner.Runner) with state, as MicroStack,
OSM and OSM's Juju controller would answer them. Nothing else of the deploy tool is replaced.

Two users: the tests of the deploy tool (tests/deploy: idempotency, waits, scaling, the hostile
instance, upgrades) and the command corpus of `make osm-conformance`
(bundle.osm_conformance.corpus), which runs every subcommand of every variant against it so
that the command lines of the branches a dry run cannot show (an existing VIM or package, the
scaled instances, the upgrade) reach osmclient's and openstackclient's own parsers too.

OpenStack: images, flavors, networks, subnets, routers and their interfaces, and security-group
rules as `-f json` prints them (the column names of python-openstackclient's
`security group rule list`). The OSM side is deploy.standin_osm.
"""
import io
import json
import os
import subprocess
import sys
import uuid

from deploy import ROOT
from deploy.catalog import Catalog
from deploy.standin_osm import OsmStandIn

#: The settings of a run against the stand-in (no secret here is real; a dry run prints them as ******).
ENV = {
    "OSM_HOSTNAME": "10.0.0.5", "OSM_CLI": "osm", "OPENSTACK_CLI": "openstack", "JUJU_CLI": "juju",
    "OS_AUTH_URL": "https://10.20.20.1:5000/v3/", "OS_USERNAME": "admin", "OS_PASSWORD": "corpus-keystone-1",
    "OS_PROJECT_NAME": "admin", "OS_USER_DOMAIN_NAME": "default", "OS_PROJECT_DOMAIN_NAME": "default",
    "OS_CACERT": "/certs/site1-cacert.pem",
    "SITE2_OS_AUTH_URL": "https://10.30.30.1:5000/v3/", "SITE2_OS_USERNAME": "admin",
    "SITE2_OS_PASSWORD": "corpus-keystone-2", "SITE2_OS_PROJECT_NAME": "admin",
    "SITE2_OS_USER_DOMAIN_NAME": "default", "SITE2_OS_PROJECT_DOMAIN_NAME": "default",
    "SITE2_OS_CACERT": "/certs/site2-cacert.pem", "SSH_KEYS": "/keys/operator.pub",
    "LTE_K": "8baf473f2f8fd09487cccbd7097c6862", "LTE_OP": "11111111111111111111111111111111",
    "NR_K": "22222222222222222222222222222222", "NR_OP": "33333333333333333333333333333333",
    "MYSQL_PASSWORD": "corpus.mysql-pass",
}


class StandInClouds:
    def __init__(self, root, catalog=None, handshake_age=5, ready_after=2, charm_guard=True):
        self.root = root
        self.catalog = Catalog.load(root, catalog)
        self.calls = []        # [argv with the program's base name], in order
        self.envs = []         # the environment overrides of each call (site 2's OS_*)
        # (site, kind) -> {name: data}; MicroStack creates `external` at init on both sites
        self.os = {(1, "network"): {"external": {}}, (2, "network"): {"external": {}}}
        self.rules = {1: [], 2: []}
        self.router_ifaces = set()
        self.osm = OsmStandIn(self.catalog, handshake_age, ready_after, charm_guard)

    # the knobs the tests turn on the OSM side
    @property
    def ue_attaches(self):
        return self.osm.ue_attaches

    @property
    def ue_fails(self):
        return self.osm.ue_fails

    @ue_fails.setter
    def ue_fails(self, value):
        self.osm.ue_fails = value

    def __call__(self, argv, env=None, timeout=None, **kw):
        assert timeout and timeout > 0, "every command needs a bounded timeout"
        argv = [os.path.basename(argv[0])] + list(argv[1:])
        self.calls.append(argv)
        self.envs.append(dict(env or {}))
        site = 2 if (env or {}).get("OS_AUTH_URL", "").startswith("https://10.30.30.") else 1
        if argv[0] in ("openstack", "microstack.openstack"):
            rc, out = self.openstack(site, argv[1:])
        elif argv[0] == "juju":
            rc, out = self.juju(argv[1:])
        else:
            rc, out = self.osm(argv[1:])
        return subprocess.CompletedProcess(argv, rc, out if rc == 0 else "", "" if rc == 0 else out or "not found")

    def juju(self, a):
        """`juju refresh APP --path DIR -m MODEL`: the application's charm is replaced."""
        self.osm.juju.append(a)
        if a[:1] != ["refresh"]:
            return 1, "ERROR unrecognized command: juju {}".format(a[0] if a else "")
        model = a[a.index("-m") + 1] if "-m" in a else ""
        apps = {v["application"] for ns in self.osm.ns.values() for v in ns.vca() if v["model"] == model.split(":")[-1]}
        app = next((w for w in a[1:] if not w.startswith("-") and w in apps), None)
        if app is None:
            return 1, "ERROR application not found in model {}".format(model)
        path = a[a.index("--path") + 1] if "--path" in a[:-1] else ""
        # Juju's local-charm reader (core/charm/charmpath.go, isValidCharmOrBundlePath) takes
        # only an absolute path or one starting with "."; anything else is a charm name to it.
        if not (path.startswith(".") or os.path.isabs(path)) or not os.path.isfile(path):
            return 1, 'ERROR cannot resolve charm or bundle "{}": not a local charm path'.format(path)
        return 0, "Added local charm {}, revision 2, to the model".format(app)

    def openstack(self, site, a):
        if a[:2] == ["token", "issue"]:
            return 0, "{}"
        if a[:3] == ["security", "group", "rule"]:
            return self.rule(site, a[3:])
        if a[:2] == ["port", "list"]:
            key = (site, a[a.index("--router") + 1], a[a.index("--fixed-ip") + 1].split("=")[1])
            return 0, json.dumps([{"ID": "p"}] if key in self.router_ifaces else [])
        kind, verb = a[0], a[1]
        store = self.os.setdefault((site, kind), {})
        if verb == "show":
            return (0, json.dumps(store[a[2]])) if a[2] in store else (1, "")
        if verb == "create":
            data = {"name": a[-1]}
            if kind == "flavor":
                data.update(vcpus=int(a[a.index("--vcpus") + 1]), ram=int(a[a.index("--ram") + 1]),
                            disk=int(a[a.index("--disk") + 1]))
            store[a[-1]] = data
            return 0, json.dumps(data)
        if verb == "add":
            self.router_ifaces.add((site, a[-2], a[-1]))
            return 0, ""
        if verb in ("set", "delete", "remove"):
            if verb == "delete":
                store.pop(a[2], None)
            return 0, ""
        raise AssertionError("the stand-in openstack has no {}".format(a))

    def rule(self, site, a):
        if a[0] == "list":
            return 0, json.dumps(self.rules[site])
        if a[0] == "delete":
            self.rules[site] = [r for r in self.rules[site] if r["ID"] != a[1]]
            return 0, ""
        rid = str(uuid.uuid4())
        value = lambda opt, default="": a[a.index(opt) + 1] if opt in a else default  # noqa: E731
        self.rules[site].append({
            "ID": rid, "IP Protocol": value("--protocol"), "Port Range": value("--dst-port"),
            "IP Range": value("--remote-ip", "0.0.0.0/0"), "Ethertype": value("--ethertype", "IPv4"),
            "Direction": "ingress", "Remote Security Group": None, "Description": value("--description"),
        })
        return 0, json.dumps({"id": rid})


# -- running the tool against it ----------------------------------------------------------------
class Clock:
    """Time that passes only when the tool sleeps: the waits end at once, and a timeout is reached."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def run_env(root, bindir, **extra):
    """ENV for a run in ``root`` (project_root) with the dummy clients of ``bindir``."""
    env = dict(ENV, DEPLOY_ROOT=root, DEPLOY_ENV=os.path.join(root, "none.env"), PATH=bindir,
               IMAGE=os.path.join(root, "bionic.img"), IMAGE_2204=os.path.join(root, "jammy.img"))
    env.update(extra)
    return env


def project_root(tmp, packages_dir):
    """A throw-away project root: the project's params/ and the built packages, and dummy
    programs on PATH (the tool looks its clients up; the stand-in answers in their place)."""
    os.makedirs(os.path.join(tmp, "build"))
    os.symlink(os.path.join(ROOT, "params"), os.path.join(tmp, "params"))
    os.symlink(os.path.abspath(packages_dir), os.path.join(tmp, "build", "packages"))
    bindir = os.path.join(tmp, "bin")
    os.makedirs(bindir)
    for name in ("osm", "openstack", "juju"):
        path = os.path.join(bindir, name)
        with open(path, "w") as f:
            f.write("#!/bin/sh\nexit 99\n")
        os.chmod(path, 0o755)
    for name in ("bionic.img", "jammy.img", "none.env"):
        open(os.path.join(tmp, name), "w").close()
    return bindir


def run_tool(root, argv, env, execute=None, clock=None):
    """(exit code, printed text, error text) of `python -m deploy <argv>` in-process."""
    from deploy.cli import main

    out, err, old = io.StringIO(), io.StringIO(), sys.stderr
    sys.stderr = err
    try:
        code = main(list(argv), environ=env, out=out, execute=execute or _no_subprocess,
                    clock=clock, sleep=clock.sleep if clock else None)
    finally:
        sys.stderr = old
    return code, out.getvalue(), err.getvalue()


def _no_subprocess(argv, **kwargs):
    raise RuntimeError("a dry run executed {}".format(argv))
