"""Shared fixtures of the OAI charm tests: component configs, plans, and a fake VNF over SSH."""

import base64
import functools
import os
import subprocess

import pytest
import yaml

from bundle import params
from bundle.charmspec import charm_spec
from vpnaas.charm import entry
from vpnaas.core import model, registry
from vpnaas.core import plan as planning

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LTE_K = "8baf473f2f8fd09487cccbd7097c6862"
LTE_OP = "1006020f0a478bf6b699f15c062e42b3"
#: The 5G subscribers' keys and the AMF's database password (different from the LTE ones: a test
#: that looks for one finds where that one went).
NR_K = "465b5ce8b199b49faa5f0a2ee238a6bc"
NR_OP = "e8ed289deba952e4283b54e88e6183ca"
DB_PASSWORD = "db-pass.S3cret-0123"
SECRETS = (LTE_K, LTE_OP)
NR_SECRETS = (NR_K, NR_OP, DB_PASSWORD)
PEER_KEY = base64.b64encode(b"p" * 32).decode()
OWN_KEY = base64.b64encode(b"o" * 32).decode()

#: The OAI components, as the registry describes them (a new one is tested without a line here).
COMPONENTS = {c.name: entry.description(c) for c in registry.load().of_workload("oai")}
COMMON = {
    "realm": "ntnu.no",
    "mcc": "208",
    "mnc": "95",
    "tac": 600,
    "ssh-hostname": "10.0.0.5",
    "ssh-password": "pw",
    "ssh-username": "ubuntu",
}
CONFIGS = {
    "hss": {
        "lte-k": LTE_K,
        "lte-op": LTE_OP,
        "imsi-first": "208951234500000",
        "msisdn-first": "20895880000000",
        "number-of-users": 1024,
        "mme-address": "172.16.6.2",
    },
    "mme": {
        "hss-address": "172.16.6.129",
        "sgw-s11-address": "172.16.1.104",
        "mme-gid": 32768,
        "mme-code": 3,
    },
    "spgwc": {
        "ue-ip-pool": "12.1.1.0/24",
        "dns-primary": "10.1.1.1",
        "dns-secondary": "10.1.2.1",
    },
    "spgwu": {
        "spgwc-address": "172.55.55.101",
        "ue-ip-pool": "12.1.1.0/24",
        "sgi-interface": "",
    },
    "enb": {
        "mme-address": "192.168.247.102",
        "downlink-frequency": 2685000000,
        "prb": 50,
    },
    # The 5G standalone variant (params/sa_wg.yaml's plan).
    "mysql": {
        "amf-address": "172.16.40.132",
        "db-password": DB_PASSWORD,
        "subscriber-k": NR_K,
        "subscriber-op": NR_OP,
    },
    "amf": {
        "smf-address": "172.16.30.133",
        "mysql-address": "172.16.40.131",
        "db-password": DB_PASSWORD,
    },
    "smf": {
        "amf-address": "172.16.30.132",
        "upf-address": "172.16.20.134",
    },
    "upf": {
        "smf-address": "172.16.20.133",
    },
    "gnb": {
        "amf-address": "192.168.250.132",
    },
}


#: The NSs whose IP plan gives each component's own service addresses (``plan_addresses``).
PLANS = ("params/eps_wg.yaml", "params/sa_wg.yaml")
SERVICE_KEY = "_service_addresses"


@functools.lru_cache(maxsize=None)
def _plans():
    """{member: {option: value}} of the service addresses the ``PLANS`` name (the files only: the
    registry's defaults are added per call, so that a test's registry gives its own)."""
    out = {}
    for file in PLANS:
        for item in params.load(file)["additionalParamsForVnf"]:
            out.setdefault(item["member-vnf-index"], {}).update(
                {key[:-len(SERVICE_KEY)] + "-service-addresses": value
                 for key, value in item["additionalParams"].items() if key.endswith(SERVICE_KEY)})
    return out


def plan_addresses(name):
    """``name``'s ``<rp>-service-addresses`` for each of its reference points: the shipped IP plan's
    (``PLANS``) where it names them, else the registry's default, as a params file gets it
    (bundle.params.with_service_addresses): a new reference point needs no line here."""
    named = dict(_plans().get(name, {}))
    defaults = params.with_service_addresses(name, {})
    for key, value in defaults.items():
        named.setdefault(key[:-len(SERVICE_KEY)] + "-service-addresses", value)
    return named


@functools.lru_cache(maxsize=None)
def _spec(name):
    """charm_spec(name), read once per test process (it parses a dozen YAML files); read only."""
    return charm_spec(name)


def config_for(name, **overrides):
    """The charm's defaults (merged spec) + the EPS-with-WireGuard values (its service addresses:
    ``plan_addresses``) + overrides."""
    spec = _spec(name)["config"]["options"]
    cfg = {k: v.get("default") for k, v in spec.items()}
    cfg.update(COMMON)
    cfg.update(plan_addresses(name))
    cfg.update(CONFIGS[name])
    cfg.update(overrides)
    return cfg


def plan_with_peer(endpoint, role, peer_service="172.16.6.2/32"):
    """A plan with one tunnel endpoint whose related unit published ``peer_service``."""
    ep = model.TunnelEndpoint(endpoint, role)
    bag = {
        "vpnaas-schema": "1",
        "public-key": PEER_KEY,
        "endpoint": "192.168.8.2:51821",
        "tunnel-address": "10.250.1.1/30",
        "service-prefixes": peer_service,
    }
    return planning.build_plan(
        {
            "ssh-hostname": "10.0.0.5",
            "tunnel-mtu": 1420,
            "persistent-keepalive": 25,
            "{}-listen-port".format(endpoint): 51821,
            "{}-service-addresses".format(endpoint): "172.16.6.129/32",
        },
        [ep],
        {endpoint: [{"peer/0": bag}]},
        {},
    )


def run_step(step, env=None, tmp=None, timeout=60, stubs=None, prefix=()):
    """Run a vnfscript.Step locally like the VNF does (program in a file, values as arguments);
    returns (rc, stdout, stderr).

    lib.sh sets its own PATH, so stand-in commands (``stubs``: a folder of executables) are
    made shell functions through BASH_ENV, which bash reads before the program. ``prefix`` runs
    the program under a wrapper (e.g. a namespace) that ends in ``bash "$0" "$@"``."""
    import tempfile

    env = dict(os.environ if env is None else env)
    with tempfile.NamedTemporaryFile("w", suffix=".sh", dir=tmp, delete=False) as f:
        f.write(step.program())
    if stubs:
        rc_file = os.path.join(str(stubs), ".bash_env")
        with open(rc_file, "w") as rc:
            for name in sorted(os.listdir(str(stubs))):
                if not name.startswith("."):
                    rc.write('{}() {{ "{}" "$@"; }}\n'.format(name, os.path.join(str(stubs), name)))
        env["BASH_ENV"] = rc_file
    try:
        argv = list(prefix) + [f.name] if prefix else ["bash", f.name]
        result = subprocess.run(argv + step.args, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    finally:
        os.unlink(f.name)
    return result.returncode, result.stdout.decode(), result.stderr.decode()


def bash_syntax_ok(script):
    result = subprocess.run(
        ["bash", "-n"], input=script.encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    return result.returncode == 0, result.stderr.decode()


@functools.lru_cache(maxsize=None)
def load_charm_class(name):
    """The charm class a built charm's src/charm.py runs: composed from the registry entry."""
    from vpnaas.charm.entry import charm_class

    return charm_class(name)


@functools.lru_cache(maxsize=None)
def _spec_texts(name):
    spec = _spec(name)
    return yaml.safe_dump(spec["metadata"]), yaml.safe_dump(spec["config"]), yaml.safe_dump(spec["actions"])


def harness_for(name):
    from ops.testing import Harness

    meta, config, actions = _spec_texts(name)
    return Harness(load_charm_class(name), meta=meta, config=config, actions=actions)


@pytest.fixture(params=sorted(COMPONENTS))
def component_name(request):
    return request.param
