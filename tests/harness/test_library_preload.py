"""The SSH library is imported (and so compiled into the unit's charm directory) by the hooks that
follow Juju's unpacking of the charm, install and upgrade-charm, not by the unit's first session
(ssh.load_library)."""
from vpnaas.vnf import ssh


def _loads(monkeypatch):
    calls = []
    real = ssh._paramiko

    def recorded():
        calls.append(1)
        return real()
    monkeypatch.setattr(ssh, "_paramiko", recorded)
    return calls


def test_install_and_upgrade_charm_import_the_ssh_library(proxy, monkeypatch):
    for emit in (proxy.harness.charm.on.install.emit, proxy.harness.charm.on.upgrade_charm.emit):
        calls = _loads(monkeypatch)
        emit()
        assert calls == [1]


def test_other_hooks_without_a_session_do_not(proxy, monkeypatch):
    calls = _loads(monkeypatch)
    proxy.harness.charm.on.update_status.emit()
    proxy.harness.charm.on.start.emit()
    assert calls == []


def test_a_library_that_cannot_be_imported_does_not_fail_the_install(proxy, monkeypatch, caplog):
    """The warm-up is no new way for install to fail: the import error is logged (the first
    session's hook fails on it, as before the warm-up existed)."""
    def missing():
        raise ImportError("No module named 'paramiko'")
    monkeypatch.setattr(ssh, "_paramiko", missing)
    proxy.harness.charm.on.install.emit()
    assert any("SSH library cannot be imported" in r.getMessage() and r.levelname == "WARNING"
               for r in caplog.records)
