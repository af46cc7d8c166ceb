"""Every lib.sh-run OAI program on a fresh VNF: the first run with nothing present (no certificate,
no configuration, no log, no pid file, no UE interface), then the same run again, which must change
nothing. Each runs in its own user and network namespace (no root needed) where the service
addresses sit on lo as the tunnel reconcile puts them without a dummy device, with the synthetic
tree of oai_tree.py and stand-ins only for what a fresh VNF would not have (systemctl, OAI's
programs)."""

import base64
import binascii
import os
import subprocess

import oai_tree
import pytest
from charms_helpers import COMPONENTS, LTE_K, LTE_OP, config_for, run_step

from vpnaas.core import refpoints, validation
from vpnaas.oai import component as oai
from vpnaas.oai.cn5g import amf, gnb, mysql, smf, upf
from vpnaas.oai.lte import enb, hss, mme, spgw, ue
from vpnaas.vnf import vnfscript

FRESH = {"mme": mme.COMPONENT, "spgwc": spgw.SPGWC, "spgwu": spgw.SPGWU, "enb": enb.COMPONENT,
         "amf": amf.COMPONENT, "smf": smf.COMPONENT, "upf": upf.COMPONENT, "gnb": gnb.COMPONENT,
         "mysql": mysql.COMPONENT}
#: What the stand-ins of the 5G components need: MySQL's init file goes to the mysql user.
CHOWN = '#!/bin/bash\nprintf "%s\\n" "chown $*" >> "{calls}"\n'
#: ... and its run-time folder (oai-service setup's ``dir``) too: the folder, without the owner.
INSTALL_DIR = '#!/bin/bash\nprintf "%s\\n" "install $*" >> "{calls}"\nmkdir -p "${{@: -1}}"\n'
UE = {"ue-imsi": "208951234500001", "ue-lte-k": LTE_K, "ue-lte-op": LTE_OP}
IPTABLES = """#!/bin/bash
rule="${{*/ -C / -A }}"
case " $* " in
  *" -C "*) grep -qxF -- "$rule" "{rules}" 2>/dev/null ;;
  *) printf '%s\\n' "$*" >> "{rules}" ;;
esac
"""
STUB = '#!/bin/bash\nprintf "%s\\n" "$(basename "$0") $*" >> "{calls}"\n'


def own_ips(config):
    """The component's own service addresses (its ``*-service-addresses`` options), with the label
    the tunnel reconcile gives each without a dummy device (lo:vpnaas, lo:vpnaas-<ep> labelled)."""
    return [(str(a.ip), "lo:vpnaas" + ("-" + refpoints.address_label(k[:-len("-service-addresses")])
                                       if refpoints.address_label(k[:-len("-service-addresses")]) else ""))
            for k, v in sorted(config.items()) if k.endswith("-service-addresses") and v
            for a in validation.service_address_list(v, k)]


def netns_prefix(ips):
    """A user and network namespace with the addresses on lo (label lo:vpnaas, or the labelled
    reference point's) and ens3 with the default route, as on a VNF after the tunnel reconcile."""
    setup = ["ip link set lo up", "ip link add ens3 type veth peer name ens3p", "ip link set ens3 up",
             "ip addr add 10.0.0.2/24 dev ens3", "ip route add default via 10.0.0.1 dev ens3"]
    setup += ["ip addr add {}/32 dev lo label {}".format(ip, label) for ip, label in ips]
    return ["unshare", "--user", "--map-root-user", "--net", "bash", "-c",
            " && ".join(setup) + ' && exec bash "$0" "$@"']


def move(step, root):
    """The step with every VNF path moved into ``root`` (in arguments, base64 arguments and the
    data section), so that it runs in a temporary folder exactly as composed by the charm."""
    moves = [("/opt/oai", root + "/opt/oai"), (oai.PREFIX, root + oai.PREFIX), (oai.SBIN, root + "/sbin"),
             (oai.STATE_DIR, root + "/state"), ("/etc/cassandra", root + "/etc/cassandra"),
             ("/etc/mysql", root + "/etc/mysql"), ("/run/mysqld", root + "/run/mysqld")]

    def text(t):
        for a, b in moves:
            t = t.replace(a, b)
        return t

    def value(v):
        try:
            decoded = base64.b64decode(v, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            return text(v)
        return oai.b64(text(decoded)) if any(a in decoded for a, _ in moves) else v

    step.args = [value(a) for a in step.args]
    step.secrets = {k: value(v) for k, v in step.secrets.items()}
    return step


def env_for(root):
    return dict(os.environ, OAI_STATE_DIR=root + "/state", OAI_LOG_DIR=root + "/log", OAI_SBIN=root + "/sbin",
                OAI_PREFIX=root + oai.PREFIX, OAI_INIT="direct", OAI_RUN_DIR=root + "/run",
                OAI_HOSTS_FILE=root + "/hosts", OAI_CLOUD_INIT_MARKER=root + "/marker")


@pytest.fixture
def vnf(tmp_path):
    root = str(tmp_path / "vnf")
    for d in ("state", "run", "sbin"):
        os.makedirs(os.path.join(root, d))
    with open(root + "/hosts", "w") as f:
        f.write("127.0.0.1 localhost\n")
    return root


def built(root, comp):
    """What a completed oai-install leaves: the marker and the linked program."""
    with open("{}/state/{}.built".format(root, comp.name), "w") as f:
        f.write("{} {} 0123\n".format(comp.repository, comp.ref))
    oai_tree.executable(root + comp.binary, "#!/bin/bash\nexec -a {} sleep 30\n".format(comp.program))


def results(out):
    return [line[len("RESULT "):] for line in out.splitlines() if line.startswith("RESULT ")]


def configure(comp, config, root, stubs=None):
    values = comp.config_values(config, None)
    step = move(oai.configure_step(comp, values), root)
    return run_step(step, env=env_for(root), stubs=stubs, timeout=60, prefix=netns_prefix(own_ips(config)))


@pytest.mark.parametrize("name", sorted(FRESH))
def test_configure_on_a_fresh_vnf_then_again_changes_nothing(name, vnf, tmp_path):
    comp = FRESH[name]
    config = config_for(name, **{"sgi-interface": "ens3"} if name == "spgwu" else {})
    values = comp.config_values(config, None)
    stubs = tmp_path / "stubs"
    # The UE pool's NAT (oai-service setup): iptables as a stand-in that knows the rules it added.
    oai_tree.executable(str(stubs / "iptables"), IPTABLES.format(rules=str(tmp_path / "rules")))
    oai_tree.executable(str(stubs / "chown"), CHOWN.format(calls=str(tmp_path / "calls")))
    oai_tree.executable(str(stubs / "install"), INSTALL_DIR.format(calls=str(tmp_path / "calls")))
    oai_tree.write_tree(vnf + comp.source_dir, comp.source_dir, comp.render_spec(values))
    oai_tree.write(vnf + comp.source_dir + "/" + mysql.SCHEMA, oai_tree.USERS_DUMP)
    built(vnf, comp)
    rc, out, err = configure(comp, config, vnf, stubs)
    assert rc == 0 and out.splitlines()[-1] == "DONE", out + err
    changed = results(out)[0]
    assert changed.startswith("changed ") and changed != "changed none"
    for dst in (e["dst"] for e in comp.render_spec(values)["files"]):
        with open(vnf + dst) as f:
            assert not oai_tree.placeholders(f.read()), dst
    if name == "mme":
        # The defect of issue 25: no certificate exists before OAI's script makes one.
        assert "certificates" in changed
        assert sorted(os.listdir(vnf + oai.PREFIX + "/freeDiameter")) == [
            "mme.cacert.pem", "mme.cakey.pem", "mme.cert.pem", "mme.key.pem", "mme_fd.conf"]
    if name in ("amf", "smf", "upf"):
        # Each interface the NF binds is named by its own label (SIOCGIFADDR reads one address a name).
        with open(vnf + comp.config_path) as f:
            text = f.read()
        for rp in comp.interfaces:
            assert 'interface_name: "lo:vpnaas-{}"'.format(rp) in text, (rp, text)
        assert oct(os.stat(vnf + comp.config_path).st_mode & 0o777) == "0o600"
    if name == "mysql":
        with open(vnf + mysql.INIT_FILE) as f:
            assert "CREATE TABLE IF NOT EXISTS `oai_db`.`users`" in f.read()
    rc, out, err = configure(comp, config, vnf, stubs)
    assert rc == 0 and results(out) == ["changed none"], out + err


def test_hss_configure_on_a_fresh_vnf_then_again_changes_nothing(vnf, tmp_path):
    comp = hss.COMPONENT
    config = config_for("hss")
    values = comp.config_values(config, None)
    src = vnf + comp.source_dir
    oai_tree.write_tree(src, comp.source_dir, comp.render_spec(values))
    oai_tree.write(src + "/etc/oss.json", '{"option": {}}\n')
    oai_tree.write(src + "/src/hss_rel14/db/oai_db.cql", "CREATE KEYSPACE vhss;\n")
    oai_tree.write(vnf + "/etc/cassandra/cassandra.yaml",
                   "cluster_name: Test Cluster\nseed_provider:\n- parameters:\n  - seeds: 127.0.0.1\n")
    calls = str(tmp_path / "calls")
    stubs = tmp_path / "stubs"
    # A Cassandra that answers once started; the schema exists once loaded.
    oai_tree.executable(str(stubs / "cqlsh"), STUB.format(calls=calls) + textwrap_cqlsh(str(tmp_path)))
    oai_tree.executable(str(stubs / "service"), STUB.format(calls=calls))
    # provision.py runs OAI's user script in-process (it is Python); the others are programs.
    oai_tree.write(src + "/scripts/data_provisioning_users",
                   "import sys\nopen({!r}, 'a').write('provisioned\\n')\n".format(calls))
    for path in ("scripts/data_provisioning_mme", "src/hss_rel14/bin/make_certs.sh"):
        oai_tree.executable(src + "/" + path, STUB.format(calls=calls))
    built(vnf, comp)
    oai_tree.executable(vnf + comp.binary, STUB.format(calls=calls))
    env = dict(env_for(vnf), OAI_CASSANDRA_DATA=vnf + "/cassandra")
    step = move(oai.configure_step(comp, values), vnf)
    rc, out, err = run_step(step, env=env, stubs=stubs, timeout=60, prefix=netns_prefix(own_ips(config)))
    assert rc == 0 and out.splitlines()[-1] == "DONE", out + err
    assert "certificates" in results(out)[0] and "cassandra" in results(out)[0]
    rc, out, err = run_step(step, env=env, stubs=stubs, timeout=60, prefix=netns_prefix(own_ips(config)))
    assert rc == 0 and results(out) == ["changed none"], out + err


def textwrap_cqlsh(state):
    return ('case "$*" in *"DESCRIBE KEYSPACE"*) [ -e "{0}/schema" ] ;; *--file*) touch "{0}/schema" ;; esac\n'
            .format(state))


def test_gate_on_a_fresh_vnf_reports_and_starts_nothing(vnf):
    comp = mme.COMPONENT
    step = move(oai.add_gate(vnfscript.Step([]), comp, [], "started", 300), vnf)
    rc, out, err = run_step(step, env=env_for(vnf), timeout=30)
    assert rc == 0, out + err
    assert out.splitlines() == ["COMPONENT installed no", "COMPONENT configured no", "COMPONENT service absent",
                                "DONE"]


def test_gate_after_configure_starts_once_then_reports_running(vnf):
    comp = spgw.SPGWC
    config = config_for("spgwc")
    values = comp.config_values(config, None)
    oai_tree.write_tree(vnf + comp.source_dir, comp.source_dir, comp.render_spec(values))
    built(vnf, comp)
    assert configure(comp, config, vnf)[0] == 0
    step = move(oai.add_gate(vnfscript.Step([]), comp, [], "started", 300), vnf)
    prefix = netns_prefix(own_ips(config))
    rc, out, err = run_step(step, env=env_for(vnf), timeout=30, prefix=prefix)
    assert rc == 0 and "COMPONENT service starting" in out, out + err
    try:
        rc, out, err = run_step(step, env=env_for(vnf), timeout=30, prefix=prefix)
        assert rc == 0 and "COMPONENT service running" in out, out + err
    finally:
        stop = move(oai.add_gate(vnfscript.Step([]), comp, [], "stopped", 300), vnf)
        run_step(stop, env=env_for(vnf), timeout=30)


@pytest.mark.parametrize("name", sorted(COMPONENTS))
def test_configure_refuses_an_own_address_missing_on_the_vnf_and_changes_nothing(name, vnf):
    """The VNF-side check of every own service address (oai_configure_addresses) takes them from
    the registry (oai.address_args), whatever the component: with one of them missing on the VNF,
    configure names the component, the reference point and the address, and writes no file."""
    comp, config = COMPONENTS[name], config_for(name)
    values = comp.config_values(config, None)
    at = comp.addresses_of(values)
    ips = [at.ip(rp) for rp in at.own]
    rp = next(rp for rp in reversed(list(at.own)) if ips.count(at.ip(rp)) == 1)
    built(vnf, comp)
    step = move(oai.configure_step(comp, values), vnf)
    kept = [(ip, label) for ip, label in own_ips(config) if ip != at.ip(rp)]
    rc, out, err = run_step(step, env=env_for(vnf), timeout=60, prefix=netns_prefix(kept))
    assert rc == 3, out + err
    assert "ERROR the {} {} service address {} is not configured on any interface".format(
        comp.title, rp.upper(), at.ip(rp)) in out, out + err
    for dst in (e["dst"] for e in comp.render_spec(values)["files"]):
        assert not os.path.exists(vnf + dst), dst


def test_ue_steps_on_a_fresh_vnf_say_what_is_missing(vnf):
    """ue-iperf before any attach: no oaitun_ue1 is a state to report, not a failing command."""
    config = config_for("enb", **UE)
    iperf = move(ue.iperf_step("10.0.0.9", 2), vnf)
    rc, out, err = run_step(iperf, env=env_for(vnf), timeout=30, prefix=netns_prefix([]))
    assert rc == 3 and "ERROR the UE is not attached (no address on oaitun_ue1)" in out, out + err
    attach = move(ue.attach_step(ue.values(config)), vnf)
    rc, out, err = run_step(attach, env=env_for(vnf), timeout=30, prefix=netns_prefix([]))
    assert rc == 3 and "ERROR no " in out and "run oai-install on the eNB first" in out, out + err


def test_files_digest_of_no_file_is_a_value():
    script = vnfscript.load("lib.sh") + vnfscript.load("oai/oai-lib.sh") + (
        'a=$(files_digest /nonexistent/*.pem)\nb=$(files_digest)\n[ "$a" = "$b" ] && out same\n')
    result = subprocess.run(["bash", "-c", script], stdout=subprocess.PIPE, timeout=20)
    assert result.returncode == 0 and result.stdout == b"same\n"
