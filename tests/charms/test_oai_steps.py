"""The OAI steps executed: install against local git repositories, the HSS configure with stand-in
commands, the eNB's asn1c check. Everything runs in a temporary root; nothing touches the machine."""

import os
import subprocess
import textwrap

import pytest
from charms_helpers import LTE_K, LTE_OP, config_for, run_step

from vpnaas.oai import component as oai
from vpnaas.oai.lte import hss
from vpnaas.vnf import vnfscript

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org",
    # Submodules from local paths are refused by default since git 2.38.
    "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "protocol.file.allow", "GIT_CONFIG_VALUE_0": "always",
}
PULL = "git submodule foreach git pull origin master"


def git(cwd, *args):
    env = dict(os.environ, HOME=str(cwd), **GIT_ENV)
    return subprocess.run(["git", "-C", str(cwd)] + list(args), env=env, check=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE).stdout.decode().strip()


@pytest.fixture
def upstream(tmp_path):
    """An 'OAI' repository with a submodule whose upstream has only `main` and has moved on, a
    helper that pulls the submodules from master (as OAI's HSS helper does) and a build script."""
    sub = tmp_path / "sub"
    sub.mkdir()
    git(sub, "init", "-q", "-b", "main")
    (sub / "lib.c").write_text("pinned\n")
    git(sub, "add", ".")
    git(sub, "commit", "-q", "-m", "pinned")
    pinned = git(sub, "rev-parse", "HEAD")
    top = tmp_path / "oai"
    top.mkdir()
    git(top, "init", "-q", "-b", "develop")
    git(top, "submodule", "-q", "add", "file://" + str(sub), "build/git_submodules/sub")
    (top / "build" / "tools").mkdir(parents=True)
    (top / "build" / "tools" / "build_helper").write_text(textwrap.dedent("""\
        init_submodules() {{
          git submodule init
          {pull}
          pushd build/git_submodules/sub
          git pull origin master
          popd
        }}
        """).format(pull=PULL))
    script = top / "build" / "scripts" / "build_spgwc"
    script.parent.mkdir(parents=True)
    script.write_text(textwrap.dedent("""\
        #!/bin/bash
        # stand-in for OAI's build script: -I runs the helper's submodule init, the build makes the binary
        set -e
        cd "$(dirname "$0")/../.."
        case "$1" in
          -I) source build/tools/build_helper; init_submodules ;;
          -c) mkdir -p build/spgw_c/build; printf '#!/bin/sh\\n' > build/spgw_c/build/spgwc
              chmod 755 build/spgw_c/build/spgwc ;;
        esac
        """))
    os.chmod(str(script), 0o755)
    git(top, "add", ".")
    git(top, "commit", "-q", "-m", "release")
    git(top, "tag", "-a", "-m", "annotated", "2020.w36")
    commit = git(top, "rev-parse", "HEAD")
    tag_object = git(top, "rev-parse", "2020.w36")
    # Upstream drift: the submodule moves on; it has no master branch at all.
    (sub / "lib.c").write_text("drifted\n")
    git(sub, "commit", "-q", "-am", "later")
    return {"url": "file://" + str(top), "commit": commit, "tag_object": tag_object, "pinned": pinned,
            "later": git(sub, "rev-parse", "HEAD")}


def install(tmp_path, url, ref="2020.w36", stubs=None, pins=""):
    root = tmp_path / "root"
    env = dict(os.environ, HOME=str(tmp_path), OAI_STATE_DIR=str(root / "state"), OAI_LOG_DIR=str(root / "log"),
               OAI_CLOUD_INIT_MARKER=str(root / "marker"), **GIT_ENV)
    src = root / "opt" / "spgwc"
    step = vnfscript.Step([oai.LIB, "oai/install.sh"]).call(
        "oai_install", "spgwc", "SPGW-C", url, ref, 120, 2, "git",
        str(src / "build/spgw_c/build/spgwc"), str(root / "opt/bin/spgwc"), str(src), pins,
        oai.shipped_b64("oai/pin-submodules.sh"))
    rc, out, err = run_step(step, env=env, timeout=120, stubs=stubs)
    return rc, out, err, root, src


def results(out):
    return dict(line.split(" ", 2)[1:] for line in out.splitlines() if line.startswith("RESULT "))


def test_install_pins_submodules_records_the_commit_and_reruns_as_a_no_op(tmp_path, upstream):
    rc, out, err, root, src = install(tmp_path, upstream["url"])
    assert rc == 0, out + err
    assert out.splitlines()[-1] == "DONE"
    assert "PROGRESS 1/6 waiting for cloud-init" in out and "PROGRESS 6/6 checking the build" in out
    # The annotated tag's commit, not the tag object.
    assert results(out) == {"state": "built", "commit": upstream["commit"]}
    assert upstream["commit"] != upstream["tag_object"]
    marker = (root / "state" / "spgwc.built").read_text().split()
    assert marker == [upstream["url"], "2020.w36", upstream["commit"]]
    # The helper's pull was replaced: the submodule stays at the pinned commit, and the helper
    # (which OAI's -I build step ran) no longer needs a master branch the submodule lacks.
    helper = (src / "build/tools/build_helper").read_text()
    assert PULL not in helper and "git pull" not in helper
    assert "NOTE submodule pull replaced by the charm's pinned commits in build/tools/build_helper" in out
    assert git(src / "build/git_submodules/sub", "rev-parse", "HEAD") == upstream["pinned"]
    assert (src / "build/git_submodules/sub/lib.c").read_text() == "pinned\n"
    assert os.path.realpath(str(root / "opt/bin/spgwc")) == str(src / "build/spgw_c/build/spgwc")
    # Same repository and ref again: nothing fetched or built.
    rc, out, err, root, src = install(tmp_path, upstream["url"])
    assert rc == 0 and results(out) == {"state": "unchanged", "commit": upstream["commit"]}
    assert "PROGRESS" not in out


def test_pinned_submodule_is_the_build_helpers_commit_not_the_recorded_one(tmp_path, upstream):
    """Issue 25: OAI's build pulled master, so freeDiameter was built at master's commit of the ref's
    date, not at the commit the superproject records. With a pin, the submodule is at the pinned
    commit after the fetch and still after OAI's helper (its `git submodule update` resets to the
    recorded commit, then its rewritten pull pins again), from the superproject or from inside."""
    pin = "build/git_submodules/sub=" + upstream["later"]
    rc, out, err, root, src = install(tmp_path, upstream["url"], pins=pin)
    assert rc == 0, out + err
    sub = src / "build/git_submodules/sub"
    assert git(sub, "rev-parse", "HEAD") == upstream["later"] != upstream["pinned"]
    assert (sub / "lib.c").read_text() == "drifted\n"
    helper = (src / "build/tools/build_helper").read_text()
    assert "oai-pin-submodules" in helper and "git pull" not in helper
    assert (root / "state" / "spgwc.submodule-pins").read_text() == "build/git_submodules/sub {}\n".format(
        upstream["later"])
    # OAI's helper as its -I step runs it: back to the recorded commit, then the rewritten pulls.
    env = dict(os.environ, HOME=str(tmp_path), **GIT_ENV)
    result = subprocess.run(["bash", "-ec", "source build/tools/build_helper; git submodule -q update; "
                             "init_submodules"], cwd=str(src), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    assert result.returncode == 0, result.stdout
    assert git(sub, "rev-parse", "HEAD") == upstream["later"]
    assert b"oai-pin-submodules: build/git_submodules/sub at " in result.stdout  # inside the submodule
    # Same inputs: a no-op; other pins: rebuilt at the commits the ref records.
    rc, out, err, root, src = install(tmp_path, upstream["url"], pins=pin)
    assert rc == 0 and results(out)["state"] == "unchanged", out + err
    rc, out, err, root, src = install(tmp_path, upstream["url"], pins="")
    assert rc == 0 and results(out)["state"] == "built", out + err
    assert git(sub, "rev-parse", "HEAD") == upstream["pinned"]


def test_unneutralised_pull_fails_like_upstream(tmp_path, upstream):
    """The defect the fix removes, shown on the same repositories: the pull needs a master."""
    src = tmp_path / "plain"
    env = dict(os.environ, HOME=str(tmp_path), **GIT_ENV)
    subprocess.run(["git", "clone", "-q", "--recurse-submodules", upstream["url"], str(src)], env=env, check=True)
    result = subprocess.run(["bash", "-ec", "source build/tools/build_helper; init_submodules"], cwd=str(src),
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert result.returncode != 0 and b"master" in result.stderr


def test_install_failure_reports_the_failing_step(tmp_path, upstream):
    rc, out, err, root, src = install(tmp_path, upstream["url"], ref="no-such-ref")
    assert rc != 0
    assert "ERROR cannot fetch no-such-ref from" in out
    assert not (root / "state" / "spgwc.built").exists()


STUB = """#!/bin/bash
printf '%s %s\\n' "$(basename "$0") $*" "$PWD" >> "{calls}"
"""


@pytest.fixture
def hss_vnf(tmp_path):
    """A temporary HSS VNF: a built source tree, stand-ins for ip, cqlsh, Cassandra and OAI's programs."""
    root, stubs = tmp_path / "root", tmp_path / "stubs"
    calls = tmp_path / "calls"
    src = root / "opt" / "hss"
    for d in ("etc", "scripts", "src/hss_rel14/db", "src/hss_rel14/bin"):
        (src / d).mkdir(parents=True)
    stubs.mkdir()
    (src / "etc" / "acl.conf").write_text("ALLOW_OLD_TLS *.@REALM@\n")
    (src / "etc" / "hss_rel14_fd.conf").write_text(
        'Identity = "@HSS_FQDN@";\nRealm = "@REALM@";\n#ListenOn = "127.0.0.1";\nTLS_Cred = "@PREFIX@/x";\n')
    (src / "etc" / "hss_rel14.conf").write_text('CASSANDRA = "@cassandra_Server_IP@"\n')
    (src / "etc" / "hss_rel14.json").write_text(
        '{"fdcfg": "@PREFIX@/freeDiameter/hss_rel14_fd.conf", "originhost": "@HSS_FQDN@", "r": "@REALM@",\n'
        ' "casssrv": "@cassandra_Server_IP@", "optkey": "@OP_KEY@", "roamallow": @ROAMING_ALLOWED@,\n'
        ' "logname": "logs/hss.log", "ossfile": "conf/oss.json"}\n')
    (src / "etc" / "oss.json").write_text('{"option": {}}\n')
    (src / "src/hss_rel14/db/oai_db.cql").write_text("CREATE KEYSPACE vhss;\n")
    for path in ("scripts/data_provisioning_mme", "src/hss_rel14/bin/make_certs.sh"):
        (src / path).write_text(STUB.format(calls=calls))
        os.chmod(str(src / path), 0o755)
    (src / "scripts" / "data_provisioning_users").write_text(
        "import sys\nopen({!r}, 'a').write('provisioned ' + str(len(sys.argv)) + '\\n')\n".format(str(calls)))
    binary = root / "opt" / "bin" / "oai_hss"
    binary.parent.mkdir(parents=True)
    # The HSS: spdlog throws when logs/ is missing in the folder it starts in.
    binary.write_text(STUB.format(calls=calls) + '[ -d logs ] && [ -f conf/oss.json ] || exit 1\n')
    os.chmod(str(binary), 0o755)
    for name in ("cqlsh", "systemctl", "service"):
        (stubs / name).write_text(STUB.format(calls=calls))
    (stubs / "ip").write_text("#!/bin/sh\necho '5: vpnaas0    inet 172.16.6.129/32 scope global vpnaas0'\n")
    for f in stubs.iterdir():
        os.chmod(str(f), 0o755)
    (root / "state").mkdir(parents=True)
    (root / "state" / "hss.built").write_text("repo ref commit\n")
    return {"root": root, "stubs": stubs, "calls": calls, "src": src, "binary": binary}


def hss_step(vnf):
    """oai.configure_step for the HSS with every path moved into the temporary root."""
    comp = hss.COMPONENT
    values = comp.config_values(config_for("hss"), None)
    step = oai.configure_step(comp, values)
    root = str(vnf["root"])
    moves = [(oai.PREFIX, root + "/etc/oai"), (comp.source_dir, str(vnf["src"])), ("/etc/cassandra", root + "/cass"),
             (comp.binary, str(vnf["binary"])), (oai.SBIN, root + "/sbin")]

    def move(text):
        for a, b in moves:
            text = text.replace(a, b)
        return text

    def move_b64(value):
        return oai.b64(move(__import__("base64").b64decode(value).decode()))

    step.args = [move(a) for a in step.args]
    step.secrets = {k: move_b64(v) for k, v in step.secrets.items()}
    return step, root + "/etc/oai"


def test_hss_configure_creates_the_folders_and_starts_from_the_config_folder(hss_vnf):
    vnf = hss_vnf
    (vnf["root"] / "cass").mkdir()
    (vnf["root"] / "cass" / "cassandra.yaml").write_text(
        "cluster_name: Test Cluster\nseed_provider:\n- parameters:\n  - seeds: 127.0.0.1\n")
    step, prefix = hss_step(vnf)
    env = dict(os.environ, OAI_STATE_DIR=str(vnf["root"] / "state"), OAI_LOG_DIR=str(vnf["root"] / "log"),
               OAI_SBIN=str(vnf["root"] / "sbin"), OAI_INIT="systemd",
               OAI_CASSANDRA_DATA=str(vnf["root"] / "cassdata"))
    rc, out, err = run_step(step, env=env, stubs=vnf["stubs"], timeout=60)
    assert rc == 0, out + err
    assert os.path.isdir(prefix + "/logs") and os.path.isfile(prefix + "/conf/oss.json")
    calls = vnf["calls"].read_text().splitlines()
    loadkey = [c for c in calls if c.startswith("oai_hss ")]
    assert loadkey == ["oai_hss -j {p}/hss_rel14.json --onlyloadkey {p}".format(p=prefix)]
    assert "provisioned 21" in calls  # the script and its 20 arguments, read from stdin
    # The service starts the HSS in the same folder (oai-service run reads workdir).
    with open(prefix + "/oai-hss.service") as f:
        assert "workdir /usr/local/etc/oai\n" in f.read()
    run = open(str(vnf["root"] / "sbin" / "oai-hss-run")).read()
    assert run.endswith("oai-service run hss\n")
    with open(prefix + "/hss_rel14.json") as f:
        rendered = f.read()
    assert LTE_OP.lower() in rendered and "@" not in rendered
    assert oct(os.stat(prefix + "/hss_rel14.json").st_mode & 0o777) == "0o600"
    for text in [out, err] + calls + [open(p).read() for p in
                                      (str(vnf["root"] / "log" / "oai-hss-configure.log"),)]:
        assert LTE_K not in text and LTE_OP not in text
    assert "RESULT changed" in out and out.splitlines()[-1] == "DONE"


def test_enb_asn1c_failure_is_reported(tmp_path):
    src = tmp_path / "enb"
    (src / "cmake_targets" / "log").mkdir(parents=True)
    log = src / "cmake_targets" / "log" / "asn1c_install_log.txt"
    log.write_text("Cloning into '/tmp/asn1c'...\nfatal: unable to access 'https://gitlab.eurecom.fr/oai/asn1c.git/'\n")
    script = "\n".join([vnfscript.load("lib.sh"), vnfscript.load("oai/oai-lib.sh"),
                        vnfscript.load("oai/install.sh"), 'check_asn1c "$1"'])
    result = subprocess.run(["bash", "-c", script, "x", str(src)], stdout=subprocess.PIPE, timeout=30)
    assert result.returncode == 3
    assert b"ERROR installing asn1c failed: fatal: unable to access" in result.stdout


def test_cassandra_comes_from_the_configured_repository(tmp_path):
    from vpnaas.core.validation import InvalidValue

    comp = hss.COMPONENT
    inputs = oai.install_plan(comp, config_for("hss"))
    assert inputs.extra == ["https://debian.cassandra.apache.org", "311x",
                            "https://downloads.apache.org/cassandra/KEYS"]
    with pytest.raises(InvalidValue, match="cassandra-series"):
        oai.install_plan(comp, config_for("hss", **{"cassandra-series": "21x main\ndeb http://evil"}))
    stubs, apt = tmp_path / "stubs", tmp_path / "apt"
    stubs.mkdir()
    calls = tmp_path / "calls"
    (stubs / "curl").write_text('#!/bin/bash\nprintf "%s\\n" "-----BEGIN PGP PUBLIC KEY BLOCK-----" > "$5"\n')
    (stubs / "dpkg").write_text("#!/bin/sh\nexit 1\n")  # cassandra not installed yet
    (stubs / "fuser").write_text("#!/bin/sh\nexit 1\n")  # no dpkg lock held
    for name in ("apt-get", "systemctl", "service"):
        (stubs / name).write_text(STUB.format(calls=calls))
    for f in stubs.iterdir():
        os.chmod(str(f), 0o755)
    step = vnfscript.Step([oai.LIB, "oai/install.sh"]).call("oai_prepare_hss", *inputs.extra)
    rc, out, err = run_step(step, env=dict(os.environ, OAI_APT_DIR=str(apt), OAI_INIT="systemd"), stubs=stubs)
    assert rc == 0, out + err
    assert (apt / "sources.list.d" / "cassandra.list").read_text() == (
        "deb [signed-by={}/keyrings/apache-cassandra.asc] https://debian.cassandra.apache.org 311x main\n".format(apt))
    assert "apt-get -q -y -o DPkg::Lock::Timeout=600 install --no-install-recommends cassandra" in calls.read_text()
    assert "systemctl stop cassandra" in calls.read_text()


def test_oai_service_setup_and_run(tmp_path):
    """oai-service from the settings the charm writes: hosts, loopback aliases, NAT; the program
    started from its folder with its arguments and environment."""
    from vpnaas.oai.lte import spgw

    etc, stubs, calls = tmp_path / "etc", tmp_path / "stubs", tmp_path / "calls"
    etc.mkdir()
    stubs.mkdir()
    for name in ("ip", "sysctl", "iptables"):
        (stubs / name).write_text(STUB.format(calls=calls) + ('[ "$3" != "-C" ] || exit 1\n' if name == "iptables"
                                                               else ""))
        os.chmod(str(stubs / name), 0o755)
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 localhost\n10.9.9.9 old # vpnaas-oai\n")
    values = spgw.SPGWU.config_values(config_for("spgwu", **{"sgi-interface": "ens3"}), None)
    settings = oai.service_settings(spgw.SPGWU, values) + "host 172.55.55.101 spgwc\nloaddr 127.0.0.15/8 lo:s5c\n"
    (etc / "oai-spgwu.service").write_text(settings)
    env = dict(os.environ, OAI_PREFIX=str(etc), OAI_HOSTS_FILE=str(hosts),
               PATH="{}:{}".format(stubs, os.environ["PATH"]))
    service = tmp_path / "oai-service"
    service.write_text(vnfscript.load("oai/service.sh"))
    result = subprocess.run(["bash", str(service), "setup", "spgwu"], env=env, stderr=subprocess.PIPE, timeout=20)
    assert result.returncode == 0, result.stderr
    assert hosts.read_text() == "172.55.55.101 spgwc # vpnaas-oai\n127.0.0.1 localhost\n"
    done = [line.rsplit(" ", 1)[0] for line in calls.read_text().splitlines()]
    assert done == ["ip addr replace 127.0.0.15/8 dev lo label lo:s5c", "sysctl -q -w net.ipv4.ip_forward=1",
                    "iptables -P FORWARD ACCEPT", "iptables -t nat -C POSTROUTING -s 12.1.1.0/24 -o ens3 -j MASQUERADE",
                    "iptables -t nat -A POSTROUTING -s 12.1.1.0/24 -o ens3 -j MASQUERADE"]
    # run: the program from its folder, with its arguments and environment
    work = tmp_path / "work"
    work.mkdir()
    program = tmp_path / "program"
    program.write_text('#!/bin/bash\necho "$PWD|$*|$RFSIMULATOR"\n')
    os.chmod(str(program), 0o755)
    (etc / "oai-x.service").write_text("workdir {}\nbinary {}\narg -O\narg /etc/a b.conf\narg --rfsim\n"
                                       "env RFSIMULATOR=enb\n".format(work, program))
    result = subprocess.run(["bash", str(service), "run", "x"], env=env, stdout=subprocess.PIPE, timeout=20)
    assert result.stdout.decode() == "{}|-O /etc/a b.conf --rfsim|enb\n".format(work)
