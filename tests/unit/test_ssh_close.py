"""vpnaas.vnf.ssh._close: a session's end does not wait for paramiko's transport thread to notice
the close at its 0.1 s read timeout: the connection is shut down first, which wakes the thread
with an end of file; then the client is closed and the thread joined (bounded)."""
import socket

from vpnaas.vnf import ssh


class _Sock(object):
    def __init__(self, calls, fail=False):
        self.calls, self.fail = calls, fail

    def shutdown(self, how):
        self.calls.append(("shutdown", how))
        if self.fail:
            raise OSError(107, "Transport endpoint is not connected")


class _Transport(object):
    def __init__(self, calls, sock):
        self.calls, self.sock = calls, sock

    def join(self, timeout):
        self.calls.append(("join", timeout))


class _Client(object):
    def __init__(self, transport):
        self.transport = transport

    def get_transport(self):
        return self.transport

    def close(self):
        self.transport.calls.append(("close",))


def test_the_connection_is_shut_down_before_the_close_and_the_thread_joined():
    calls = []
    ssh._close(_Client(_Transport(calls, _Sock(calls))))
    assert calls == [("shutdown", socket.SHUT_RDWR), ("close",), ("join", ssh.CLOSE_JOIN_TIMEOUT)]


def test_a_connection_already_gone_is_closed_and_joined_all_the_same():
    calls = []
    ssh._close(_Client(_Transport(calls, _Sock(calls, fail=True))))
    assert [c[0] for c in calls] == ["shutdown", "close", "join"]


def test_a_client_without_a_transport_is_only_closed():
    class NoTransport(object):
        closed = False

        def get_transport(self):
            return None

        def close(self):
            self.closed = True
    client = NoTransport()
    ssh._close(client)
    assert client.closed

