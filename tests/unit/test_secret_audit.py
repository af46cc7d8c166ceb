"""The secret audit (testbed/measurement/secretaudit.py): secrets planted in every place a run
leaves data in (relation data, juju-log, action output, status, hook errors, the VCA's files,
report.json) and in every form (exact, raw, hex, base64 standalone and inside longer base64,
folded across lines, JSON-escaped) are found; nothing else is; memory stays bounded."""
import base64
import json
import os
import tracemalloc

import pytest

from testbed.emulators import vca
from testbed.measurement import secretaudit as sa

PSK = base64.b64encode(bytes(range(100, 132))).decode()
PRIVATE = base64.b64encode(bytes(range(1, 33))).decode()
K = "465b5ce8b199b49faa5f0a2ee238a6bc"          # 3GPP TS 35.207 test set 1
OP = "cdc202d5123e20f62b6d676ac72cb318"
PASSWORD = "Pa55.word~with^chars"
SECRETS = [sa.Secret(sa.PQ_PSK, "a wg-s6a psk", PSK), sa.Secret("wireguard-private-key", "a wg-s6a key", PRIVATE),
           sa.Secret("subscriber-k", "LTE_K", K), sa.Secret("db-password", "MYSQL_PASSWORD", PASSWORD)]


def found(data, secrets=SECRETS, block=sa.BLOCK):
    """{(kind, form)} of what one searched text yields."""
    result = sa.search(secrets, [sa.text_place("t", data)], block=block)
    return {(kind, form) for kind, _label, _place, form in result["findings"]}


def embedded(data, shift):
    """``data`` inside a longer base64 text, at byte offset ``shift`` modulo 3."""
    return base64.b64encode(b"x" * (30 + shift) + data + b"yyyy").decode()


def test_opc_is_milenage_test_set_1():
    assert sa.opc(K, OP) == "cd63cb71954a9f4e48a5994e37a02baf"


def test_param_secrets_carry_k_op_opc_and_password():
    secrets = sa.param_secrets({"LTE_K": K, "LTE_OP": OP, "MYSQL_PASSWORD": PASSWORD, "NR_K": ""})
    assert {(s.kind, s.value) for s in secrets} == {("subscriber-k", K), ("subscriber-op", OP),
                                                    ("db-password", PASSWORD),
                                                    ("subscriber-opc", "cd63cb71954a9f4e48a5994e37a02baf")}


@pytest.mark.parametrize("text, form", [
    ("psk=" + PSK, "exact"),
    ("key " + bytes(range(100, 132)).hex(), "hex"),
    ("KEY " + bytes(range(100, 132)).hex().upper(), "HEX"),
    (embedded(bytes(range(100, 132)), 0), "base64 embedded"),
    (embedded(bytes(range(100, 132)), 1), "base64 embedded"),
    (embedded(bytes(range(100, 132)), 2), "base64 embedded"),
    (base64.b64encode(PSK.encode()).decode(), "base64 of text"),
    (embedded(PSK.encode(), 2), "base64 of text embedded"),
    ("psk=" + PSK[:20] + "\n    " + PSK[20:], "exact"),                   # folded by a log
    (json.dumps("psk=" + PSK[:10] + "\n" + PSK[10:]), "exact"),          # and then JSON-escaped
])
def test_every_form_of_a_psk_is_found(text, form):
    assert (sa.PQ_PSK, form) in found(text)


def test_raw_bytes_are_found_in_a_binary_store():
    blob = os.urandom(1000) + bytes(range(100, 132)) + os.urandom(1000)
    assert (sa.PQ_PSK, "raw") in found(blob)


@pytest.mark.parametrize("text, kind", [
    ("subscriber-k: " + K, "subscriber-k"), ("k=" + K.upper(), "subscriber-k"),
    (embedded(bytes.fromhex(K), 1), "subscriber-k"),
    ("password " + PASSWORD, "db-password"), ("pw " + PASSWORD[:7] + "\n" + PASSWORD[7:], "db-password"),
    (base64.b64encode(PASSWORD.encode()).decode(), "db-password"),
    ("private " + PRIVATE, "wireguard-private-key"),
])
def test_other_kinds_are_found(text, kind):
    assert kind in {k for k, _form in found(text)}


def test_nothing_is_found_where_nothing_is():
    other = base64.b64encode(bytes(range(50, 82))).decode()
    assert found("peer " + other + " " + PSK[:11] + " " + K[:10] + "\n" * 100) == set()


@pytest.mark.parametrize("offset", [0, 1, 17, 63])
def test_a_secret_across_block_boundaries_is_found(offset):
    text = "x" * (64 - offset) + "psk " + PSK[:5] + "\\" + "n" + PSK[5:]
    assert (sa.PQ_PSK, "exact") in found(text, block=64)


def test_a_large_stream_is_searched_in_bounded_memory():
    class Endless(object):
        """64 MiB of log lines, then the secret, never held in memory at once."""
        def __init__(self):
            self.left = 64 << 20
            self.line = b"2026-11-27 INFO juju-log relation-changed hss/0 published public-key\n" * 1000

        def read(self, n):
            if self.left is None:
                return b""
            if self.left <= 0:
                self.left = None
                return b"tail " + PSK.encode()
            self.left -= len(self.line)
            return self.line

        def close(self):
            pass

    tracemalloc.start()
    try:
        result = sa.search(SECRETS, [("big log", Endless)])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [f[0] for f in result["findings"]] == [sa.PQ_PSK]
    assert result["bytes"] > 64 << 20
    assert peak < 16 << 20, peak


def test_files_under_the_run_folder_are_searched_except_the_vnf_disks(tmp_path):
    (tmp_path / "vca-eps" / "units" / "hss-0").mkdir(parents=True)
    (tmp_path / "vca-eps" / "units" / "hss-0" / ".unit-state.db").write_bytes(b"\0" + bytes.fromhex(K) + b"\0")
    (tmp_path / "prometheus").mkdir()
    (tmp_path / "prometheus" / "wal").write_text("label=" + PSK)
    (tmp_path / "tb" / "vnf" / "hss" / "etc").mkdir(parents=True)
    (tmp_path / "tb" / "vnf" / "hss" / "etc" / "wg-s6a.key").write_text(PRIVATE)    # where it belongs
    os.link(str(tmp_path / "prometheus" / "wal"), str(tmp_path / "prometheus" / "wal.link"))
    os.symlink(str(tmp_path / "tb" / "vnf" / "hss" / "etc" / "wg-s6a.key"), str(tmp_path / "key.link"))
    audit = sa.Audit(str(tmp_path))
    audit.secrets = SECRETS
    fields = audit.finish([sa.text_place("report.json", json.dumps({"x": PASSWORD}))])
    assert fields["pq_psk_secret_found_in"] == ["file/prometheus/wal: a wg-s6a psk (exact)"]
    assert fields["secrets_found_in"]["subscriber-k"] == ["file/vca-eps/units/hss-0/.unit-state.db: LTE_K (raw)"]
    assert fields["secrets_found_in"]["db-password"] == ["report.json: MYSQL_PASSWORD (exact)"]
    assert fields["secrets_found_in"]["wireguard-private-key"] == []
    assert fields["secret_audit"]["places_searched"] == 3
    assert sa.found_any(fields) and len(sa.loud_lines(fields)) == 3


PLANTING_CHARM = r"""#!/bin/sh
# Plants the secret of $PLANT_DIR/secret in every place the VCA keeps a charm's output.
s=$(cat "$PLANT_DIR/secret")
case "$JUJU_DISPATCH_PATH" in
  hooks/*-relation-joined) relation-set "leak=$s" ;;
  hooks/config-changed) juju-log "configured $s" ; status-set active "ok $s" ;;
  hooks/update-status) juju-log "failing $s" ; exit 1 ;;
  actions/*) action-log "progress $s" ; action-set "result=$s" ;;
esac
"""


@pytest.fixture
def planting_model(tmp_path, monkeypatch):
    charm = tmp_path / "charm"
    charm.mkdir()
    (charm / "config.yaml").write_text("options: {}\n")
    (charm / "dispatch").write_text(PLANTING_CHARM)
    os.chmod(str(charm / "dispatch"), 0o755)
    monkeypatch.setenv("PLANT_DIR", str(tmp_path))
    m = vca.Model(str(tmp_path / "model"), hook_retry_min=0.01)
    yield m, charm, tmp_path
    m.close()


def test_what_the_vca_holds_is_searched(planting_model):
    model, charm, tmp = planting_model
    (tmp / "secret").write_text(PSK)
    model.deploy("a", str(charm))
    model.deploy("b", str(charm))
    model.relate("a:vpn", "b:vpn-peer")
    model.set_config("a", {})
    model.run_action("a/0", "tunnel-status")
    (tmp / "secret").write_text(K)
    model.run_action("b/0", "tunnel-status")
    with pytest.raises(vca.VcaError):       # the charm's own error, after Juju's retries
        model.update_status(["a/0"])
    places = list(sa.model_places(model, "vca"))
    result = sa.search(SECRETS, places)
    where = {(kind, place.split(" #")[0]) for kind, _l, place, _f in result["findings"]}
    assert (sa.PQ_PSK, "vca relation data 0 a/0") in where
    assert (sa.PQ_PSK, "vca unit a/0 log") in where
    assert (sa.PQ_PSK, "vca unit a/0 status") in where
    assert (sa.PQ_PSK, "vca action a/0 tunnel-status") in where
    assert ("subscriber-k", "vca action b/0 tunnel-status") in where
    assert ("subscriber-k", "vca unit b/0 action") in where      # the last action, as the unit holds it
    assert ("subscriber-k", "vca hook error a/0 update-status") in where


class FakeVnf(object):
    """`wg show` as a VNF answers it: two devices, one PSK shared by both ends, one "(none)"."""

    def __init__(self, answers):
        self.answers = answers

    def exec(self, argv, check=True):
        class Out(object):
            stdout = " ".join(sorted({dev for dev, _f in self.answers})) + "\n"
        return Out()

    def wg_show(self, dev, field):
        return self.answers.get((dev, field), "")


def test_vnf_secrets_read_each_device_and_skip_none():
    peer = base64.b64encode(bytes(32)).decode()
    a = FakeVnf({("wg-s6a", "private-key"): PRIVATE + "\n", ("wg-s6a", "preshared-keys"): peer + "\t" + PSK + "\n",
                 ("wg-s11", "private-key"): K + "\n", ("wg-s11", "preshared-keys"): peer + "\t(none)\n"})
    b = FakeVnf({("wg-s6a", "private-key"): base64.b64encode(bytes(range(2, 34))).decode(),
                 ("wg-s6a", "preshared-keys"): peer + "\t" + PSK + "\n"})
    secrets = sa.vnf_secrets({"a": a, "b": b})
    assert sorted(s.kind for s in secrets) == [sa.PQ_PSK, "wireguard-private-key", "wireguard-private-key"]
    psk = next(s for s in secrets if s.kind == sa.PQ_PSK)
    assert psk.value == PSK and psk.label == "a wg-s6a psk with AAAAAAAA, b wg-s6a psk with AAAAAAAA"


def test_report_fields_name_places_never_secrets():
    result = sa.search(SECRETS, [sa.text_place("relation data 3 hss/0", "x " + PSK)])
    fields = sa.report_fields(SECRETS, result)
    text = json.dumps(fields)
    assert fields["pq_psk_secret_found_in"] == ["relation data 3 hss/0: a wg-s6a psk (exact)"]
    assert set(fields["secrets_found_in"]) == set(sa.KINDS) - {sa.PQ_PSK}
    assert fields["secret_audit"]["secrets"][sa.PQ_PSK] == 1
    for s in SECRETS:
        for _name, form in sa.forms(s):
            assert form.decode("latin-1") not in text


def test_collecting_again_keeps_the_retired_keys():
    peer = base64.b64encode(bytes(32)).decode()
    old = FakeVnf({("wg-s6a", "private-key"): PRIVATE, ("wg-s6a", "preshared-keys"): peer + "\t" + PSK})
    new_key = base64.b64encode(bytes(range(40, 72))).decode()
    new = FakeVnf({("wg-s6a", "private-key"): new_key, ("wg-s6a", "preshared-keys"): peer + "\t" + PSK})
    audit = sa.Audit("/nonexistent")
    audit.collect({"a": old}, {}, {})
    audit.collect({"a": new}, {"LTE_K": K}, {})
    assert sorted(s.value for s in audit.secrets) == sorted([PRIVATE, PSK, new_key, K])
    assert next(s.label for s in audit.secrets if s.value == PSK) == "a wg-s6a psk with AAAAAAAA"
