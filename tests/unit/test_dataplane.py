"""The data-plane choice, pure parts (issue 30): the option's grammar, what the tunnel step is
told, the shipped programs' manifest and the install command. Runs on Python 3.6 too."""
import hashlib
import ipaddress
import json
import shlex
import subprocess

import pytest

from vpnaas.charm import status
from vpnaas.core import config, model, rotation, validation
from vpnaas.vnf import dataplane, remote


@pytest.mark.parametrize("value", ["auto", "kernel", "wireguard-go", "boringtun"])
def test_every_implementation_is_accepted_as_written(value):
    assert validation.implementation(value, "s6a-implementation") == value


@pytest.mark.parametrize("value", [None, ""])
def test_unset_is_auto(value):
    assert validation.implementation(value, "s6a-implementation") == "auto"


@pytest.mark.parametrize("value", ["boringtun\n", "boringtun\nkernel", " kernel", "kernel ", "Kernel", "KERNEL",
                                   "wireguard_go", "wg", "userspace", "boringtun-cli", "auto;reboot", "$(id)",
                                   "kernel\x00", "\u212aernel", 1, ["kernel"], "x" * 5000])
def test_anything_else_is_refused_with_a_short_printable_message(value):
    with pytest.raises(validation.InvalidValue) as e:
        validation.implementation(value, "s6a-implementation")
    text = str(e.value)
    assert text.startswith("s6a-implementation: ") and "is not one of auto, kernel, wireguard-go, boringtun" in text
    assert all(" " <= ch <= "~" for ch in text) and len(text) < 160


def _device(name="wg-s6a", implementation="auto"):
    return model.Device("s6a", 51821, ipaddress.ip_interface("10.250.1.1/30"), 1420, 25, [], "192.0.2.1",
                        name=name, implementation=implementation)


def test_parse_endpoint_carries_the_choice():
    cfg = {"s6a-listen-port": 51821, "s6a-implementation": "boringtun"}
    assert config.parse_endpoint(cfg, "s6a", "provider", "192.0.2.1").implementation == "boringtun"
    assert config.parse_endpoint({"s6a-listen-port": 51821}, "s6a", "provider", "192.0.2.1").implementation == "auto"


def test_the_default_keeps_the_fingerprint_of_the_release_before_and_a_choice_changes_it():
    auto = _device()
    assert "implementation" not in auto.as_dict()
    chosen = _device(implementation="boringtun")
    assert chosen.as_dict()["implementation"] == "boringtun"
    plan_a, plan_b = model.Plan(), model.Plan()
    plan_a.devices, plan_b.devices = [auto], [chosen]
    assert plan_a.fingerprint() != plan_b.fingerprint()


def test_a_temporary_device_runs_on_its_main_devices_implementation():
    temp = rotation._temp_device(_device(implementation="boringtun"), 51899, [])
    assert temp.name == "wr-s6a" and temp.implementation == "boringtun"


def _programs(tmp_path, names=("wireguard-go", "boringtun")):
    doc = {"programs": {}}
    for impl in names:
        data = impl.encode() * 100
        (tmp_path / dataplane.PROGRAMS[impl]).write_bytes(data)
        doc["programs"][impl] = {"sha256": hashlib.sha256(data).hexdigest(), "version": "1.2"}
    (tmp_path / dataplane.MANIFEST).write_text(json.dumps(doc))
    return dataplane.shipped(str(tmp_path))


def test_the_manifest_lists_only_programs_whose_file_is_there(tmp_path):
    assert dataplane.shipped(str(tmp_path)) == {}
    progs = _programs(tmp_path)
    assert sorted(progs) == ["boringtun", "wireguard-go"] and progs["boringtun"].version == "1.2"
    (tmp_path / "boringtun-cli").unlink()
    assert sorted(dataplane.shipped(str(tmp_path))) == ["wireguard-go"]


def test_the_step_is_told_only_the_programs_a_device_may_run_on(tmp_path):
    progs = _programs(tmp_path)
    plan = model.Plan()
    plan.devices = [_device()]
    assert dataplane.prepare_args(plan, progs) == ["wireguard-go", progs["wireguard-go"].sha256, "nokernel"]
    plan.devices = [_device(implementation="kernel")]
    assert dataplane.prepare_args(plan, progs) == []
    plan.devices = [_device(implementation="boringtun")]
    plan.temp_devices = [_device("wr-s6a", "wireguard-go")]
    assert dataplane.prepare_args(plan, progs) == ["boringtun", progs["boringtun"].sha256, "always",
                                                   "wireguard-go", progs["wireguard-go"].sha256, "always"]
    step = remote.tunnel_step(plan, "d" * 64, programs=progs)
    assert step.args[0:6] == dataplane.prepare_args(plan, progs)     # programs_check, before the facts guard


def test_boringtun_not_shipped_is_a_configuration_error_naming_the_endpoint(tmp_path):
    plan = model.Plan()
    plan.devices = [_device(implementation="boringtun")]
    errors = dataplane.plan_errors(plan, _programs(tmp_path, ("wireguard-go",)))
    assert errors == ["s6a-implementation: boringtun not shipped with this charm (it was built without "
                      "build/tools/boringtun-cli: run make boringtun, then make charms)"]
    plan.devices = [_device(implementation="wireguard-go")]   # the VNF's own wireguard-go then
    assert dataplane.plan_errors(plan, {}) == []


def test_the_install_command_is_fixed_text_with_two_quoted_values():
    line = dataplane.install_command("boringtun", "a" * 64, "ubuntu")
    words = shlex.split(line)
    assert words[:4] == ["sudo", "-n", "bash", "-c"] and words[5:] == ["vpnaas-install", "boringtun", "a" * 64]
    assert shlex.split(dataplane.install_command("wireguard-go", "b" * 64, "root"))[0] == "bash"
    proc = subprocess.run(["bash", "-n", "-c", words[4]], stderr=subprocess.PIPE, universal_newlines=True)
    assert proc.returncode == 0, proc.stderr
    with pytest.raises(dataplane.DataplaneError):
        dataplane.install_command("kernel", "a" * 64, "root")


class _Session(object):
    def __init__(self, answer):
        self.answer, self.sent = answer, []

    def run(self, command, stdin, timeout):
        self.sent.append((command, stdin))
        return self.answer


def test_upload_sends_the_bytes_and_refuses_a_damaged_charm_or_a_refusal(tmp_path):
    progs = _programs(tmp_path)
    ok = _Session((0, "INSTALLED boringtun x\nDONE\n", ""))
    dataplane.upload(ok, "root", progs["boringtun"])
    assert ok.sent[0][1] == b"boringtun" * 100
    refused = _Session((3, "ERROR boringtun arrived with sha256 0000, not 1111\n", ""))
    with pytest.raises(dataplane.DataplaneError, match="arrived with sha256"):
        dataplane.upload(refused, "root", progs["boringtun"])
    (tmp_path / "boringtun-cli").write_bytes(b"tampered")
    with pytest.raises(dataplane.DataplaneError, match="does not match its manifest"):
        dataplane.upload(ok, "root", progs["boringtun"])


def test_needed_refuses_a_program_the_charm_does_not_carry(tmp_path):
    progs = _programs(tmp_path, ("boringtun",))
    assert [p.name for p in dataplane.needed(progs, ["boringtun"])] == ["boringtun"]
    assert dataplane.needed(progs, ["wireguard-go"]) is None


def test_the_report_gives_each_devices_data_plane_and_the_status_groups_them():
    obs = remote.parse_report("\n".join([
        "INIT none", "IMPL userspace /usr/local/lib/vpnaas/wireguard-go v0.0.20250522",
        "DATAPLANE wg-s6a boringtun 0.7.1", "DATAPLANE wg-s11 wireguard-go v0.0.20250522",
        "NEED boringtun", "DONE"]))
    assert obs.dataplane == {"wg-s6a": ("boringtun", "0.7.1"), "wg-s11": ("wireguard-go", "v0.0.20250522")}
    assert obs.needs == ["boringtun"]
    plan = model.Plan()
    s11 = _device("wg-s11")
    s11.endpoint = "s11"
    plan.devices = [_device(), s11]
    assert status.dataplane_note(plan, obs) == "data plane boringtun 0.7.1: s6a; wireguard-go v0.0.20250522: s11"
    obs.dataplane = {"wg-s6a": ("kernel", "1.0.0"), "wg-s11": ("kernel", "1.0.0")}
    assert status.dataplane_note(plan, obs) == ""
    with pytest.raises(remote.RemoteError):
        remote.parse_report("DATAPLANE wg-s6a userspace\nDONE\n")


def test_boringtuns_handshake_time_is_read_as_the_age_it_is():
    now = 1764000000
    assert remote.handshake_age(0, now, "boringtun") is None
    assert remote.handshake_age(3, now, "boringtun") == 3
    assert remote.handshake_age(now - 7, now, "boringtun") == 7     # a fixed boringtun, should one come
    assert remote.handshake_age(now - 7, now, "wireguard-go") == 7
    assert remote.handshake_age(3, now, "wireguard-go") == now - 3   # the others' 1970 stays as it is
    obs = remote.parse_report("\n".join([
        "NOW {}".format(now), "DATAPLANE wg-s6a boringtun 0.7.1",
        "PEER wg-s6a " + "\t".join(["k" * 43 + "=", "(none)", "(none)", "10.0.0.2/32", "4", "1", "2", "25"]),
        "DONE"]))
    assert obs.peers["wg-s6a"][0]["latest-handshake-age"] == 4
