"""The hook-tool client of the emulated VCA: what every tool on a hook's PATH runs.

Juju's jujuc does the same: it passes the tool's name, arguments and standard input to the unit
agent over a socket and reproduces the answer (stdout, stderr, exit status). It runs once per
tool call, many times per hook, so it imports nothing beyond the interpreter's built-ins
(``_socket``; no ``json``, no ``socket`` module) and runs without site (``-S``).

Request: NUL-separated UTF-8 fields: protocol "2", tool, JUJU_CONTEXT_ID (the hook run the call
belongs to, as jujuc names it to the agent), JUJU_UNIT_NAME, JUJU_RELATION_ID, JUJU_REMOTE_UNIT,
the number of arguments, the arguments, then standard input (read only when an argument says
``--file -``). Answer: exit status, stdout, stderr, NUL-separated.
"""
import _socket
import os
import sys

PROTOCOL = "2"
ENV = ("JUJU_CONTEXT_ID", "JUJU_UNIT_NAME", "JUJU_RELATION_ID", "JUJU_REMOTE_UNIT")


def _reads_stdin(args):
    return "--file=-" in args or any(a == "--file" and b == "-" for a, b in zip(args, args[1:]))


def request(tool, args, env, stdin):
    fields = [PROTOCOL, tool] + [env.get(k, "") for k in ENV] + [str(len(args))] + list(args) + [stdin]
    return "\0".join(fields).encode("utf-8", "surrogateescape")


def parse_request(data):
    """(tool, args, env, stdin) of a request; ValueError when it is not one."""
    fields = data.decode("utf-8", "surrogateescape").split("\0")
    first = 3 + len(ENV)        # index of the first argument
    if len(fields) < first + 1 or fields[0] != PROTOCOL or not fields[first - 1].isdigit() \
            or len(fields) < first + 1 + int(fields[first - 1]):
        raise ValueError("not a hook-tool request")
    n = int(fields[first - 1])
    env = {k: v for k, v in zip(ENV, fields[2:first - 1]) if v}
    return fields[1], fields[first:first + n], env, "\0".join(fields[first + n:])


def answer(code, out, err):
    return b"%d\0%s\0%s" % (code, out.encode("utf-8", "surrogateescape"), err.encode("utf-8", "surrogateescape"))


def call(path, data):
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(path)
        sock.sendall(data)
        sock.shutdown(_socket.SHUT_WR)
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        sock.close()
    code, out, err = b"".join(chunks).split(b"\0", 2)
    return int(code), out, err


def main():
    tool, args = sys.argv[1], sys.argv[2:]
    stdin = sys.stdin.read() if _reads_stdin(args) else ""
    try:
        code, out, err = call(os.environ["VPNAAS_VCA_SOCKET"], request(tool, args, os.environ, stdin))
    except (OSError, KeyError, ValueError) as e:
        sys.stderr.write("{}: the emulated VCA does not answer: {}\n".format(tool, e))
        return 1
    sys.stdout.buffer.write(out)
    sys.stderr.buffer.write(err)
    return code


if __name__ == "__main__":
    sys.exit(main())
