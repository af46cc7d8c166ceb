"""The emulated VCA's end of the hook tools: a Unix socket the tool clients call, as Juju's unit
agent serves jujuc, and the tools on every hook's PATH.

``ToolServer`` answers each call in a thread of its own with the model's ``answer`` function;
``install_tools`` puts every tool on the hooks' PATH (links to the compiled client, or wrappers
that start the Python one); ``hook_base_env`` is the environment a hook starts from.
"""
import os
import shlex
import shutil
import socket
import socketserver
import sys

from testbed.emulators import hookclient

HOOK_TOOLS = ("config-get", "is-leader", "relation-ids", "relation-list", "relation-get", "relation-set",
              "status-set", "status-get", "action-get", "action-set", "action-fail", "action-log",
              "juju-log", "application-version-set", "goal-state")
#: The compiled hook-tool client `make hookclient` builds (Go); without it, hookclient.py.
COMPILED_CLIENT = os.path.join(os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..")),
                               "build", "tools", "vca-hookclient")


class ToolsError(Exception):
    pass


class _ToolHandler(socketserver.BaseRequestHandler):
    def handle(self):
        chunks = []
        while True:
            chunk = self.request.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
        try:
            tool, args, env, stdin = hookclient.parse_request(b"".join(chunks))
            code, out, err = self.server.answer(tool, args, env, stdin)
        except ValueError as e:
            code, out, err = 2, "", "ERROR {}\n".format(e)
        try:
            self.request.sendall(hookclient.answer(code, out, err))
        except (BrokenPipeError, ConnectionResetError):
            # The hook that called is gone (killed mid-call: the agent-restart fault, a hook
            # timeout); as with Juju's jujuc server, its answer has no reader.
            pass


class ToolServer(socketserver.ThreadingUnixStreamServer):
    """The model's end of the hook tools: one thread per call, answered by ``answer``.

    The listen backlog is the system's maximum, not socketserver's 5: with more than five hooks
    running, simultaneous calls overflowed it and the compiled client's connect failed with
    EAGAIN (a Unix socket refuses at once where TCP would retry); Juju's unit agents never
    refuse a hook tool."""
    daemon_threads = True
    request_queue_size = socket.SOMAXCONN

    def __init__(self, path, answer):
        self.answer = answer
        super().__init__(path, _ToolHandler)


def stop_server(server, socket_dir, wait):
    if wait:
        server.shutdown()
    server.server_close()
    shutil.rmtree(socket_dir, ignore_errors=True)


def hook_base_env(environ):
    """``environ`` as a hook starts from: without the operator's JUJU_* variables and without
    their interpreter settings. A Juju hook gets neither; with a shell's PYTHONDONTWRITEBYTECODE
    every hook would compile ops and its dependencies again (about a quarter of a CPU-second a
    hook), which no machine running Juju does."""
    return {k: v for k, v in environ.items() if not k.startswith(("JUJU_", "PYTHON"))}


def install_tools(bin_dir, client):
    """Put every hook tool on the hooks' PATH: a link to the compiled client (it takes the tool
    from its name, as jujuc does), or a wrapper that starts the Python client isolated and
    without site (-I -S), the start-up a hook pays several times."""
    if client not in ("compiled", "python"):
        raise ToolsError("unknown hook-tool client {!r}".format(client))
    if client == "compiled" and not os.access(COMPILED_CLIENT, os.X_OK):
        raise ToolsError("no compiled hook-tool client: run `make hookclient`")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hookclient.py")
    for name in HOOK_TOOLS:
        path = os.path.join(bin_dir, name)
        if os.path.lexists(path):
            os.remove(path)
        if client == "compiled":
            os.symlink(COMPILED_CLIENT, path)
            continue
        with open(path, "w") as f:
            f.write("#!/bin/sh\nexec {} -I -S {} {} \"$@\"\n".format(
                shlex.quote(sys.executable), shlex.quote(script), name))
        os.chmod(path, 0o755)
