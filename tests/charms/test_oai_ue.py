"""The optional UE of the eNB charm: its SIM, the actions under Harness, ue.sh in a temporary root."""

import os
import subprocess

import pytest
from charms_helpers import LTE_K, LTE_OP, config_for, run_step
from test_oai_charms import act, charm_env  # noqa: F401  (fixture)

from vpnaas.core.validation import InvalidValue
from vpnaas.oai import component as oai
from vpnaas.oai import ue_report
from vpnaas.oai.lte import ue
from vpnaas.vnf import vnfscript

UE = {"ue-imsi": "208951234500001", "ue-lte-k": LTE_K, "ue-lte-op": LTE_OP}
#: A file shaped like OAI's UE template (a PLMN list, one UE block); the values are made up.
TEMPLATE = """PLMN: {
    PLMN3: { FULLNAME="A"; SHORTNAME="A"; MNC="13"; MCC="208"; };
    PLMN4: {
           FULLNAME="B";
           SHORTNAME="B";
           MNC="93";
           MCC="208";
    };
};
UE0:
{
    USER: { IMEI="1"; PIN="1"; };
    SIM: {
        MSIN="0000000000";
        USIM_API_K="00000000000000000000000000000000";
        OPC="00000000000000000000000000000000";
        MSISDN="1";
    };
    HPLMN= "20893";
    OPLMN_LIST = ("00101", "20893");
};
"""


def test_opc_is_the_3gpp_milenage_one():
    # 3GPP TS 35.207, test set 1.
    assert ue.opc("465b5ce8b199b49faa5f0a2ee238a6bc", "cdc202d5123e20f62b6d676ac72cb318") == \
        "cd63cb71954a9f4e48a5994e37a02baf"


def test_sim_from_the_template_with_every_edit_once():
    from test_oai_scripts import _render

    v = ue.values(config_for("enb", **UE))
    entry = ue.sim_spec(v)["files"][0]
    assert entry["src"].endswith("openair3/NAS/TOOLS/ue_eurecom_test_sfr.conf") and entry["mode"] == "600"
    text, _ = _render(entry, TEMPLATE)
    assert 'MNC="95";\n           MCC="208";' in text and 'MNC="13"; MCC="208"' in text
    assert 'MSIN="1234500001";' in text and 'USIM_API_K="{}";'.format(LTE_K) in text
    assert 'OPC="{}";'.format(ue.opc(LTE_K, LTE_OP)) in text
    assert 'HPLMN= "20895";' in text and 'OPLMN_LIST = ("20895");' in text


def test_ue_values_are_checked():
    with pytest.raises(InvalidValue, match="ue-imsi: not set"):
        ue.values(config_for("enb"))
    with pytest.raises(InvalidValue, match="does not start with MCC\\+MNC 20895"):
        ue.values(config_for("enb", **dict(UE, **{"ue-imsi": "001011234500001"})))
    with pytest.raises(InvalidValue, match="ue-lte-k"):
        ue.values(config_for("enb", **dict(UE, **{"ue-lte-k": "x"})))


def test_attach_step_carries_the_keys_only_in_the_data_section():
    step = ue.attach_step(ue.values(config_for("enb", **UE)))
    code = step.program().rpartition("\n" + vnfscript.DATA_MARKER + "\n")[0]
    for secret in (LTE_K, LTE_OP, ue.opc(LTE_K, LTE_OP)):
        assert secret not in code and secret not in step.command("ubuntu")


def test_ue_actions_under_harness(charm_env):  # noqa: F811
    make, vnf = charm_env
    harness = make("enb", **UE)
    attach = act(harness, "ue-attach")
    assert attach.failed is None, attach.failed
    assert (attach.results["imsi"], attach.results["ip"]) == ("208951234500001", "12.1.1.2")
    assert "MME" in attach.results["mme-view"]
    iperf = act(harness, "ue-iperf", {"server": "10.0.9.1", "seconds": 5})
    assert iperf.failed is None, iperf.failed
    assert (iperf.results["received-mbps"], iperf.results["rtt-ms"]) == ("8.4", "21.4")
    text = str(attach.results) + str(iperf.results) + "".join(vnf.commands) + "".join(vnf.statuses)
    for secret in (LTE_K, LTE_OP, ue.opc(LTE_K, LTE_OP)):
        assert secret not in text.lower()


@pytest.mark.parametrize("ran", ["enb", "gnb"])
def test_ue_attach_without_imsi_or_with_a_bad_server_sends_nothing(charm_env, ran):  # noqa: F811
    make, vnf = charm_env
    harness = make(ran)
    sent = len(vnf.scripts)
    attach = act(harness, "ue-attach")
    assert attach.failed.startswith("ue-attach failed: ue-imsi: not set")
    iperf = act(harness, "ue-iperf", {"server": "10.0.9.1; reboot"})
    assert "server" in iperf.failed
    assert len(vnf.scripts) == sent


@pytest.mark.parametrize("action,params", [("ue-attach", {}), ("ue-iperf", {"server": "10.0.9.1"})])
def test_a_ue_report_outside_the_grammar_fails_the_action_and_shows_nothing_of_it(charm_env, action, params):  # noqa: F811
    make, vnf = charm_env
    harness = make("enb", **UE)
    emit = vnf._emit
    vnf._emit = lambda lines, on_line: emit(
        [line.replace("RESULT ip 12.1.1.2", "RESULT ip 12.1.1.256") for line in lines], on_line)
    done = act(harness, action, params)
    assert done.failed == "{} failed: the VNF's report is unreadable (ip: '12.1.1.256' is not an IP " \
                          "address)".format(action)
    assert not done.results


STUB = """#!/bin/bash
printf '%s\\n' "$(basename "$0") $*" >> "{calls}"
"""


def test_ue_sh_attaches_and_measures(tmp_path):
    """ue.sh with stand-ins: conf2uedata, the UE (gets its address after a moment), ip, ping, iperf3."""
    src, stubs, calls, state = tmp_path / "enb", tmp_path / "stubs", tmp_path / "calls", tmp_path / "state"
    build = src / "cmake_targets/lte_build_oai/build"
    tools = src / "cmake_targets/nas_sim_tools/build"
    for d in (build, tools, stubs, state, tmp_path / "run", tmp_path / "log"):
        d.mkdir(parents=True)
    (src / ue.TEMPLATE).parent.mkdir(parents=True)
    (src / ue.TEMPLATE).write_text(TEMPLATE)
    attached = tmp_path / "attached"
    (tools / "conf2uedata").write_text(STUB.format(calls=calls) + 'test -f "$2" && touch .usim.nvram0\n')
    (build / "lte-uesoftmodem").write_text(STUB.format(calls=calls) +
                                           'echo "$RFSIMULATOR" >> "{}"; sleep 1; touch "{}"; exec sleep 60\n'
                                           .format(calls, attached))
    (stubs / "ip").write_text('#!/bin/bash\n[ -e "{}" ] && echo "9: oaitun_ue1    inet 12.1.1.2/24 scope global"\n'
                              .format(attached))
    (stubs / "ping").write_text("#!/bin/sh\necho 'rtt min/avg/max/mdev = 20.1/21.4/23.0/0.9 ms'\n")
    (stubs / "iperf3").write_text('#!/bin/sh\necho \'{"end": {"sum_received": {"bits_per_second": 8400000}}}\'\n')
    enb = subprocess.Popen(["bash", "-c", "exec -a lte-softmodem sleep 60"])  # "the eNB is running"
    (tmp_path / "run" / "oai-enb.pid").write_text(str(enb.pid))
    for f in list(stubs.iterdir()) + [tools / "conf2uedata", build / "lte-uesoftmodem"]:
        os.chmod(str(f), 0o755)
    v = ue.values(config_for("enb", **UE))
    spec = ue.sim_spec(v)
    spec["files"][0]["src"] = str(src / ue.TEMPLATE)
    spec["files"][0]["dst"] = str(state / "ue.conf")
    step = vnfscript.Step([oai.LIB, "oai/ue.sh"]).secret("UE_SPEC", oai.b64_json(spec))
    step.call("oai_ue_attach", oai.shipped_b64("oai/render.py"), str(src), v.imsi, v.dl_freq, v.prb, 20)
    env = dict(os.environ, OAI_STATE_DIR=str(state), OAI_LOG_DIR=str(tmp_path / "log"),
               OAI_RUN_DIR=str(tmp_path / "run"), OAI_INIT="direct")
    try:
        rc, out, err = run_step(step, env=env, stubs=stubs, timeout=60)
        assert rc == 0, out + err
        assert "RESULT imsi 208951234500001" in out and "RESULT ip 12.1.1.2" in out
        assert oct(os.stat(str(state / "ue.conf")).st_mode & 0o777) == "0o600"
        done = calls.read_text().splitlines()
        assert done[0] == "conf2uedata -c {} -o {}".format(state / "ue.conf", build)
        assert done[1] == "lte-uesoftmodem -C 2685000000 -r 50 --rfsim --nokrnmod" and done[2] == "127.0.0.1"
        rc, out, err = run_step(ue.iperf_step("10.0.9.1", 5), env=env, stubs=stubs, timeout=60)
        assert rc == 0, out + err
        results = dict(line.split(" ", 2)[1:] for line in out.splitlines() if line.startswith("RESULT "))
        assert results["rtt-ms"] == "21.4"
        assert ue_report.iperf_figures(results["iperf3"])["received-mbps"] == 8.4
    finally:
        enb.kill()
        enb.wait()
        pid = tmp_path / "run" / "oai-ue.pid"
        if pid.exists():  # the UE stand-in this test started, by its id
            subprocess.run(["kill", "--", "-" + pid.read_text().strip()], stderr=subprocess.DEVNULL)
