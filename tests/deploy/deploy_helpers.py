"""Fixtures for the deploy tests: a small but complete fake build (catalog, VNF/NS packages, NSTs,
params templates) in a temporary project root, and a helper that runs `python -m deploy` in-process
and returns the commands it printed."""

import io
import json
import os
import shlex
import sys
import tarfile

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for sub in ("scripts", "charms"):
    if os.path.join(ROOT, sub) not in sys.path:
        sys.path.insert(0, os.path.join(ROOT, sub))

# (member, vnfd id, vcpu, ram GB, disk GB) -- thesis Table 4.3
VNFS = [
    ("hss", "oai-hss", 4, 8, 20),
    ("mme", "oai-mme", 2, 4, 20),
    ("spgwc", "oai-spgwc", 3, 4, 30),
    ("spgwu", "oai-spgwu", 1, 3, 20),
    ("enb", "oai-enb", 4, 8, 20),
]
# reference point -> (provider member, requirer member)
LINKS = {
    "s6a": ("mme", "hss"),
    "s11": ("mme", "spgwc"),
    "s1c": ("mme", "enb"),
    "sxab": ("spgwu", "spgwc"),
    "s1u": ("spgwu", "enb"),
}
SECRET_K = "8baf473f2f8fd09487cccbd7097c6862"
SECRET_OP = "11111111111111111111111111111111"
SECRET_NR_K = "22222222222222222222222222222222"
SECRET_NR_OP = "33333333333333333333333333333333"
SECRET_DB = "s3cret.mysql-pass"
UE_IMSI = "208951234500001"
UE_SERVER = "10.254.1.203"  # the SPGW-U's SGi address


def vnfd(ident, vcpu, ram, disk):
    return {
        "vnfd": {
            "id": ident,
            "product-name": ident,
            "provider": "test",
            "version": "1.0",
            "mgmt-cp": "mgmt-ext",
            "vdu": [
                {
                    "id": "vm",
                    "name": "vm",
                    "sw-image-desc": "ubuntu18.04",
                    "virtual-compute-desc": "c",
                    "virtual-storage-desc": ["s"],
                }
            ],
            "virtual-compute-desc": [
                {"id": "c", "virtual-cpu": {"num-virtual-cpu": vcpu}, "virtual-memory": {"size": float(ram)}}
            ],
            "virtual-storage-desc": [{"id": "s", "size-of-storage": disk}],
            "sw-image-desc": [{"id": "ubuntu18.04", "name": "ubuntu18.04", "image": "ubuntu18.04"}],
        }
    }


def nsd(ident, vnfds, relations=True, osm10=False, links=LINKS):
    profiles = []
    for member, vnfd_id in vnfds:
        conns = [{"virtual-link-profile-id": "mgmtnet"}]
        conns += [{"virtual-link-profile-id": rp} for rp, ends in links.items() if member in ends]
        profiles.append({"id": member, "vnfd-id": vnfd_id, "virtual-link-connectivity": conns})
    rels = []
    if relations:
        for rp, (prov, req) in links.items():
            if osm10:
                rels.append(
                    {"name": rp, "entities": [{"id": prov, "endpoint": rp}, {"id": req, "endpoint": rp}]}
                )
            else:
                rels.append(
                    {
                        "name": rp,
                        "provider": {"vnf-profile-id": prov, "endpoint": rp},
                        "requirer": {"vnf-profile-id": req, "endpoint": rp},
                    }
                )
    doc = {
        "id": ident,
        "name": ident,
        "vnfd-id": [v for _, v in vnfds],
        "df": [{"id": "default-df", "vnf-profile": profiles}],
    }
    if rels:
        doc["ns-configuration"] = {"relation": rels}
    return {"nsd": {"nsd": [doc]}}


def write_package(root, folder, filename, doc):
    path = os.path.join(root, "build", "packages", folder + ".tar.gz")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = yaml.safe_dump(doc).encode()
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("{}/{}".format(folder, filename))
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        readme = b"readme"
        info = tarfile.TarInfo("{}/README.md".format(folder))
        info.size = len(readme)
        tar.addfile(info, io.BytesIO(readme))
    return os.path.relpath(path, root)


def params_template(multisite=False):
    vld = [{"name": "mgmtnet", "vim-network-name": "${MGMT_NETWORK}"}]
    extra = []
    for i, (rp, (prov, req)) in enumerate(LINKS.items()):
        if multisite and rp == "s6a":
            continue
        vld.append(
            {
                "name": rp,
                "vnfd-connection-point-ref": [
                    {
                        "member-vnf-index-ref": prov,
                        "vnfd-connection-point-ref": prov + "-" + rp + "-ext",
                        "ip-address": "192.168.{}.2".format(20 + i),
                    },
                    {
                        "member-vnf-index-ref": req,
                        "vnfd-connection-point-ref": req + "-" + rp + "-ext",
                        "ip-address": "192.168.{}.3".format(20 + i),
                    },
                ],
            }
        )
    vld.append(
        {
            "name": "sgi",
            "vnfd-connection-point-ref": [
                {"member-vnf-index-ref": "spgwu", "vnfd-connection-point-ref": "spgwu-sgi-ext", "ip-address": UE_SERVER}
            ],
        }
    )
    for member, _, _, _, _ in VNFS:
        params = {"realm": "ntnu.no"}
        if member == "hss":
            params.update({"lte_k": "${LTE_K}", "lte_op": "${LTE_OP}"})
        if member == "enb":
            params.update({"ue_imsi": UE_IMSI, "ue_lte_k": "${LTE_K}", "ue_lte_op": "${LTE_OP}"})
        for i, (rp, ends) in enumerate(LINKS.items()):
            if member in ends:
                params["{}_service_addresses".format(rp)] = "172.16.{}.{}/32".format(
                    i, 2 + ends.index(member)
                )
        extra.append({"member-vnf-index": member, "additionalParams": params})
    data = {"vld": vld, "additionalParamsForVnf": extra}
    if multisite:
        data["vnf"] = [
            {"member-vnf-index": m, "vim_account": "${VIM_ACCOUNT_SITE2}" if m == "hss" else "${VIM_ACCOUNT}"}
            for m, *_ in VNFS
        ]
    return data


@pytest.fixture
def fake_root(tmp_path):
    """A project root with build/packages/catalog.json and everything it names."""
    root = str(tmp_path)
    catalog = {"vnf": [], "ns": [], "nst": [], "variants": {}}
    vnf_pkgs = {}
    for _member, ident, vcpu, ram, disk in VNFS:
        for suffix, scale in (("", 1), ("-2x", 2)):
            vid = ident + suffix
            pkg = write_package(
                root, vid + "_vnf", vid + "_vnfd.yaml", vnfd(vid, vcpu * scale, ram * scale, disk)
            )
            catalog["vnf"].append({"id": vid, "package": pkg})
            vnf_pkgs[vid] = pkg
    members = [(m, i) for m, i, *_ in VNFS]
    ns_defs = {
        "oai-eps": nsd("oai-eps", members, relations=False),
        "oai-eps-wg": nsd("oai-eps-wg", members),
        "oai-eps-wg-multisite": nsd("oai-eps-wg-multisite", members),
        "oai-eps-wg-osm10": nsd("oai-eps-wg-osm10", members, osm10=True),
    }
    for ident, doc in ns_defs.items():
        pkg = write_package(root, ident + "_ns", ident + "_nsd.yaml", doc)
        catalog["ns"].append({"id": ident, "package": pkg, "vnfd_ids": [i for _, i in members]})
    os.makedirs(os.path.join(root, "params"))
    for name, multisite in (("eps_wg", False), ("eps_wg_multisite", True)):
        with open(os.path.join(root, "params", name + ".yaml"), "w") as f:
            yaml.safe_dump(params_template(multisite), f)
    with open(os.path.join(root, "params", "nsi_eps_wg.yaml"), "w") as f:
        yaml.safe_dump(
            {
                "netslice-subnet": [
                    {
                        "id": "eps",
                        "vld": [v for v in params_template()["vld"] if v["name"] != "mgmtnet"],
                        "additionalParamsForVnf": params_template()["additionalParamsForVnf"],
                    }
                ]
            },
            f,
        )
    for nst_id, five_qi in (("embb", 6), ("urllc", 3)):
        path = os.path.join(root, "build", "packages", nst_id + "_nst.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(
                {
                    "nst": [
                        {
                            "id": nst_id,
                            "name": nst_id,
                            "quality-of-service": {"id": five_qi},
                            "netslice-subnet": [
                                {"id": "eps", "is-shared-nss": False, "nsd-ref": "oai-eps-wg"}
                            ],
                        }
                    ]
                },
                f,
            )
        catalog["nst"].append({"id": nst_id, "file": os.path.relpath(path, root), "nsd_refs": ["oai-eps-wg"]})
    base = [vnf_pkgs[i] for _, i in members]
    ns_pkg = {n["id"]: n["package"] for n in catalog["ns"]}
    nst_file = {n["id"]: n["file"] for n in catalog["nst"]}
    catalog["variants"] = {
        "eps": {
            "kind": "ns",
            "descriptor_id": "oai-eps",
            "params": "params/eps_wg.yaml",
            "packages": base + [ns_pkg["oai-eps"]],
        },
        "eps_wg": {
            "kind": "ns",
            "descriptor_id": "oai-eps-wg",
            "params": "params/eps_wg.yaml",
            "packages": base + [ns_pkg["oai-eps-wg"]],
        },
        "eps_wg_osm10": {
            "kind": "ns",
            "descriptor_id": "oai-eps-wg-osm10",
            "params": "params/eps_wg.yaml",
            "packages": base + [ns_pkg["oai-eps-wg-osm10"]],
        },
        "eps_wg_multisite": {
            "kind": "ns",
            "descriptor_id": "oai-eps-wg-multisite",
            "params": "params/eps_wg_multisite.yaml",
            "packages": base + [ns_pkg["oai-eps-wg-multisite"]],
        },
        # deliberately NST first: the deploy must still onboard VNFs, then NS, then NST
        "embb": {
            "kind": "nsi",
            "descriptor_id": "embb",
            "params": "params/nsi_eps_wg.yaml",
            "packages": [nst_file["embb"]] + base + [ns_pkg["oai-eps-wg"]],
        },
        "slices": {
            "kind": "nsi",
            "descriptor_id": ["embb", "urllc"],
            "params": "params/nsi_eps_wg.yaml",
            "packages": base + [ns_pkg["oai-eps-wg"], nst_file["embb"], nst_file["urllc"]],
        },
    }
    with open(os.path.join(root, "build", "packages", "catalog.json"), "w") as f:
        json.dump(catalog, f, indent=1)
    return root


def base_env(root, **extra):
    env = {
        "DEPLOY_ROOT": root,
        "DEPLOY_ENV": os.path.join(root, "none.env"),
        "PATH": "/nonexistent",
        "OSM_HOSTNAME": "10.0.0.5",
        "OS_AUTH_URL": "https://10.20.20.1:5000/v3/",
        "OS_USERNAME": "admin",
        "OS_PASSWORD": "s3cret-keystone",
        "OS_PROJECT_NAME": "admin",
        "OS_CACERT": "/certs/site1-cacert.pem",
        "SITE2_OS_AUTH_URL": "https://10.30.30.1:5000/v3/",
        "SITE2_OS_USERNAME": "admin",
        "SITE2_OS_PASSWORD": "s3cret-site2",
        "SITE2_OS_PROJECT_NAME": "admin",
        "SITE2_OS_CACERT": "/certs/site2-cacert.pem",
        "IMAGE": "/images/bionic-server-cloudimg-amd64.img",
        "LTE_K": SECRET_K,
        "LTE_OP": SECRET_OP,
        "NR_K": SECRET_NR_K,
        "NR_OP": SECRET_NR_OP,
        "MYSQL_PASSWORD": SECRET_DB,
        "OSM_CLI": "osm",
        "OPENSTACK_CLI": "openstack",
    }
    # An empty env file so that no deploy.env of the developer's checkout leaks into tests.
    open(env["DEPLOY_ENV"], "w").close()
    env.update(extra)
    return env


class Printed:
    """The commands a run printed: (kind, argv) with kind 'run' or 'read'."""

    def __init__(self, text):
        self.text = text
        self.commands = []
        for line in text.splitlines():
            if line.startswith("+ [read] "):
                self.commands.append(("read", shlex.split(line[len("+ [read] ") :])))
            elif line.startswith("+ download "):
                self.commands.append(("download", line.split()[2:]))
            elif line.startswith("+ "):
                self.commands.append(("run", shlex.split(line[2:])))

    def runs(self, *prefix):
        return [
            argv
            for kind, argv in self.commands
            if kind == "run" and _strip_env(argv)[: len(prefix)] == list(prefix)
        ]

    def reads(self, *prefix):
        return [
            argv
            for kind, argv in self.commands
            if kind == "read" and _strip_env(argv)[: len(prefix)] == list(prefix)
        ]


def _strip_env(argv):
    """Drop a leading `env -u X A=B` prefix (site 2 commands)."""
    if not argv or argv[0] != "env":
        return argv
    i = 1
    while i < len(argv):
        if argv[i] == "-u":
            i += 2
        elif "=" in argv[i]:
            i += 1
        else:
            break
    return argv[i:]


def no_subprocess(*args, **kwargs):
    raise AssertionError("a dry run must not execute anything: {}".format(args[0] if args else kwargs))


@pytest.fixture
def dry_run(fake_root):
    """dry_run(*argv, **env) -> (exit code, Printed, stderr text)."""
    from deploy.cli import main

    def run(*argv, root=None, **extra):
        root = root or fake_root
        out = io.StringIO()
        err = io.StringIO()
        old = sys.stderr
        sys.stderr = err
        try:
            code = main(
                list(argv), environ=base_env(root, DRY_RUN="1", **extra), out=out, execute=no_subprocess
            )
        finally:
            sys.stderr = old
        return code, Printed(out.getvalue()), err.getvalue()

    return run
