"""The configurations the CN5G readers (nfreader.py) and the limit checks run over: every 5G
configuration the project ships, and the largest values the charms' grammar accepts.

* ``conformance``: each charm's defaults with this folder's params.yaml;
* ``params/<file>``: each charm's defaults with what OSM hands it for each 5G NS of the bundle
  (the params file rendered as ``make deploy`` renders it, mapped through the VNFD's config
  primitive exactly as the testbed's LCM model does);
* ``max``: params.yaml with every option at the largest value the charms' validation accepts.
"""
import os
import types

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
#: The 5G NS variants whose params files are checked (sa_slices holds both slices of the NSI).
VARIANTS = ("sa", "sa_wg", "sa_slices")
#: Placeholder values for the params files' variables: valid for the grammar, no real secret.
ENV = {"MGMT_NETWORK": "mgmt", "NR_K": "0123456789abcdef0123456789abcdef", "NR_OP": "fedcba9876543210fedcba9876543210",
       "MYSQL_PASSWORD": "conformance.Db-Pass-0123"}
#: The management address LCM's placeholders are filled with (documentation range, RFC 5737).
MGMT_IP = "192.0.2.10"
#: The longest DNN the grammar accepts: 62 characters (cn5g_common.MAX_DNN), two labels.
LONGEST_DNN = "a" * 30 + "." + "b" * 31
MAX_COMMON = {"mcc": "999", "mnc": "999", "tac": 65533, "sst": 255, "sd": "ffffff", "dnn": LONGEST_DNN,
              "ue-ip-pool": "10.0.0.0/8"}
MAX = {
    "amf": dict(MAX_COMMON, **{"amf-region-id": "ff", "amf-set-id": "3ff", "amf-pointer": "3f",
                               "db-user": "u" + "_" * 30 + "z", "db-password": "P" * 63 + "9"}),
    "smf": dict(MAX_COMMON, **{"ue-mtu": 1500, "qos-5qi": 254, "session-ambr-ul": "999999Gbps",
                               "session-ambr-dl": "999999Gbps", "dns-primary": "223.255.255.254",
                               "dns-secondary": "223.255.255.253"}),
    "upf": dict(MAX_COMMON),
    "mysql": dict(MAX_COMMON, **{"imsi-first": "999999000000000", "number-of-users": 10000,
                                 "db-user": "u" + "_" * 30 + "z", "db-password": "P" * 63 + "9"}),
}


def defaults(name):
    from bundle.charmspec import charm_spec

    options = charm_spec(name)["config"]["options"]
    return {k: v.get("default") for k, v in options.items()}


def conformance_params():
    with open(os.path.join(HERE, "params.yaml")) as f:
        return yaml.safe_load(f)


def with_registry_addresses(name, config):
    """``config`` with the registry's default service address (bundle.params' rule) on each of the
    component's reference points that params.yaml names none for: a new reference point needs no
    line there."""
    from vpnaas.core import registry

    for rp, address in registry.load().default_service_addresses(name).items():
        if not config.get(rp + "-service-addresses"):
            config[rp + "-service-addresses"] = address
    return config


def conformance(name):
    params = conformance_params()
    config = defaults(name)
    config.update(params["common"])
    config.update(params.get(name) or {})
    return with_registry_addresses(name, config)


def maximal(name):
    config = conformance(name)
    config.update(MAX.get(name, {}))
    return config


def from_params(variant, names):
    """[(case label, {charm name: config})] of one NS variant: one case per NS instance (an NSI
    has one per slice), each charm's defaults with the config primitive OSM would send."""
    from testbed.emulators import lcm, nsmodel

    out = []
    for inst in nsmodel.load(variant, "/nonexistent", dict(ENV)):
        configs = {}
        for vnf in inst.vnfs:
            charm = os.path.basename(vnf.charm_dir)
            if charm in names:
                config = defaults(charm)
                # <rw_mgmt_ip> and <OSM> as LCM maps them (any management address will do here)
                filled = lcm.fill_placeholders(vnf, types.SimpleNamespace(mgmt_ip=MGMT_IP))
                config.update({k: v for k, v in filled.items() if not k.startswith("ssh-")})
                configs[charm] = config
        out.append(("params {} ({})".format(variant, inst.name), configs))
    return out


def all_cases(names):
    """[(label, {name: config})] for the charms in ``names``."""
    cases = [("conformance params", {n: conformance(n) for n in names})]
    for variant in VARIANTS:
        cases += from_params(variant, names)
    cases.append(("largest accepted values", {n: maximal(n) for n in names}))
    return cases
