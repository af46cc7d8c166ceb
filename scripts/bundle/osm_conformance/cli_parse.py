"""Run inside a client's virtualenv: parse every command line of the corpus that is for this
client with the client's OWN parser, without executing any command.

    python cli_parse.py osmclient --tree DIR --im DIR --corpus corpus.json --out result.json
    python cli_parse.py openstackclient --corpus corpus.json --out result.json

osmclient: its click command tree as `osm` builds it (osmclient/scripts/osm.py: the `cli_osm`
group, whose commands v8 declares on it and the newest `cli()` registers from its cli_commands;
that function is run with the group's call replaced, so the registration is osmclient's own),
then click's
`make_context` for the group and for the resolved subcommand: options, arguments, types,
required and prompted options, callbacks -- everything click does before it invokes a command.
The group's own callback (which would log in to NBI) never runs. For the LCM operations
(``BODIES``) the command itself runs too, with osmclient's own client whose posts are recorded
(nothing leaves the process), and NBI's schema judges the body: the `--config` of ns-update, the
`--vdu_count` that becomes `vdu_count_index`, the `--timeout` of vnf-scale, the `--config` of
nsi-create (its slice_5qi; a `--config_file` command is parsed only: the file is the operator's).

openstackclient: `OpenStackShell` set up as its `run()` does (global options, logging, plugin
and command groups), then cliff's `find_command` and the command's own argparse parser
(`get_parser(...).parse_args`), as cliff's `run_subcommand` does before `take_action`. No
credentials are given: the shell never authenticates, so its network commands take the Neutron
form (osc-lib: no service catalog counts as "network endpoint enabled"), as on MicroStack.

This file is Python 3.8 compatible (MicroStack Ussuri's openstackclient runs there).
"""
import argparse
import contextlib
import io
import json
import logging
import os
import re
import sys


class Registered(BaseException):
    """Raised where osmclient's `cli()` would start the group: the commands are registered."""


def osm_group(tree, im):
    sys.path[:0] = [tree, im]
    import click  # noqa: F401 - the osmclient tree's click, installed in this venv
    from osmclient.scripts import osm

    if not hasattr(osm, "logger"):     # what v8's group callback sets before any command runs
        osm.logger = logging.getLogger("osmclient")
    if isinstance(getattr(osm, "cli", None), click.Group):        # the group itself
        return osm.cli
    group = osm.cli_osm

    class Registrar:
        def add_command(self, *args, **kwargs):
            group.add_command(*args, **kwargs)

        def __call__(self, *args, **kwargs):
            raise Registered()

    osm.cli_osm = Registrar()
    try:
        osm.cli()
    except Registered:
        pass
    finally:
        osm.cli_osm = group
    return group


def parse_osm(group, argv):
    """The command name osmclient resolves ``argv`` to; raises what click raises."""
    ctx = group.make_context("osm", list(argv))
    with ctx:
        name, cmd, rest = group.resolve_command(ctx, ctx.protected_args + ctx.args)
        cmd.make_context(name, rest, parent=ctx)
    return name


#: osmclient commands whose request body is made too, by running the command itself with
#: osmclient's own sol005 client whose HTTP posts are recorded (nothing is sent), and checked
#: with NBI's own schema for it (osm_nbi/validation.py).
BODIES = {"ns-action": "ns_action", "vnf-scale": "ns_scale", "ns-update": "ns_update",
          "nsi-create": "nsi_instantiate"}
#: Options naming a file on the operator's machine: a command with one is parsed, its body not made.
FILE_OPTIONS = ("--config_file",)
NS_ID = "7c9a3e3e-1d4b-4c55-9d8e-2f3b8a6b9e10"
#: A dry run's stand-in for a value only OSM knows (`<VNF instance id of hss>`): no body is made of it.
PLACEHOLDER = re.compile(r"<[^<>]+>")


def recording_client():
    """(osmclient's sol005 Client, [posted bodies]): its NS lookups answer a fixed id, its posts
    are recorded and answered with an operation id, and it never waits or logs in."""
    from osmclient import client

    c = client.Client(version=1, host="127.0.0.1", sol005=True)
    posted = []

    def post_cmd(endpoint=None, postfields_dict=None, **kwargs):
        posted.append(json.loads(json.dumps(postfields_dict)))
        return 201, json.dumps({"id": NS_ID, "nslcmop_id": NS_ID})

    c.get_token = lambda *a, **k: None
    c.ns._http.post_cmd = post_cmd
    c.ns.get = lambda name: {"_id": NS_ID, "name": name}
    c.ns._wait = lambda *a, **k: None
    c.nsi._http.post_cmd = post_cmd          # nsi-create: the NST and VIM looked up by name
    c.nsi._wait = lambda *a, **k: None
    c.nst.get = lambda name: {"_id": NS_ID, "name": name, "id": name}
    c.vim.get = lambda name: {"_id": NS_ID, "name": name}
    return c, posted


def body_of(group, argv):
    """The body osmclient's own command posts for ``argv`` (click parses, the command runs)."""
    obj, posted = recording_client()
    ctx = group.make_context("osm", list(argv), obj=obj)
    with ctx:
        name, cmd, rest = group.resolve_command(ctx, ctx.protected_args + ctx.args)
        sub = cmd.make_context(name, rest, parent=ctx)
        with sub:
            cmd.invoke(sub)
    if len(posted) != 1:
        raise RuntimeError("osmclient posted {} bodies".format(len(posted)))
    return posted[0]


def run_osmclient(args, commands):
    import click

    group = osm_group(os.path.abspath(args.tree), os.path.abspath(args.im))
    validation = None
    if args.nbi:
        sys.path.insert(0, os.path.abspath(args.nbi))
        from osm_nbi import validation
    # click 6 has no Exit (raised by an eager option such as --help in click 7+)
    refusals = (click.ClickException,) + tuple(filter(None, [getattr(click.exceptions, "Exit", None)]))
    results = []
    for i, item in commands:
        try:
            name = parse_osm(group, item["argv"])
            results.append({"index": i, "ok": True, "command": name, "message": ""})
            if (validation is not None and name in BODIES and not any(PLACEHOLDER.search(a) for a in item["argv"])
                    and not set(FILE_OPTIONS) & set(item["argv"])):
                results[-1].update(check_body(group, item["argv"], validation, BODIES[name]))
        except click.exceptions.Abort:
            results.append({"index": i, "ok": False, "command": item["argv"][0],
                            "message": "a prompted option is missing (osm would ask for it on a terminal)"})
        except refusals as e:
            text = e.format_message() if isinstance(e, click.ClickException) else "exit {}".format(e)
            results.append({"index": i, "ok": False, "command": item["argv"][0], "message": text})
    import osmclient

    return {"client": "osmclient", "click": click.__version__, "tree": os.path.abspath(args.tree),
            "module": os.path.dirname(os.path.abspath(osmclient.__file__)), "results": results}


def check_body(group, argv, validation, schema):
    """{"body": ..., "body_ok": bool, "body_message": ...} of one command: osmclient's body and
    NBI's verdict on it."""
    try:
        body = body_of(group, argv)
    except Exception as e:  # noqa: BLE001 - whatever osmclient raises is its refusal
        return {"body": None, "body_ok": False, "body_message": "osmclient: {}: {}".format(type(e).__name__, e)}
    try:
        validation.validate_input(body, getattr(validation, schema))
    except Exception as e:  # noqa: BLE001 - NBI's ValidationError (or a schema it does not have)
        return {"body": body, "body_ok": False, "body_message": "NBI {}: {}".format(schema, e)}
    return {"body": body, "body_ok": True, "body_message": ""}


def openstack_shell():
    from openstackclient import shell

    sh = shell.OpenStackShell()
    sh.stdout, sh.stderr = io.StringIO(), io.StringIO()
    first = ["token", "issue"]
    sh.command_options = first
    sh.options, remainder = sh.parser.parse_known_args(first)
    sh.configure_logging()
    sh.interactive_mode = False
    sh.initialize_app(remainder)
    return sh


def parse_openstack(sh, argv):
    """The command name openstackclient resolves ``argv`` to; raises ValueError or SystemExit."""
    _options, remainder = sh.parser.parse_known_args(list(argv))
    cmd_factory, cmd_name, sub_argv = sh.command_manager.find_command(remainder)
    cmd = cmd_factory(sh, sh.options)
    cmd.get_parser("openstack " + cmd_name).parse_args(sub_argv)
    return cmd_name


def run_openstackclient(args, commands):
    try:
        from importlib import metadata
    except ImportError:   # pragma: no cover - Python < 3.8
        metadata = None
    for key in [k for k in os.environ if k.startswith("OS_")]:
        del os.environ[key]        # no cloud: nothing may authenticate
    sh = openstack_shell()
    results = []
    for i, item in commands:
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                name = parse_openstack(sh, item["argv"])
            results.append({"index": i, "ok": True, "command": name, "message": ""})
        except SystemExit as e:
            lines = [x for x in err.getvalue().strip().splitlines() if "error:" in x] or [str(e)]
            results.append({"index": i, "ok": False, "command": " ".join(item["argv"][:3]), "message": lines[-1]})
        except ValueError as e:      # cliff: unknown command
            results.append({"index": i, "ok": False, "command": " ".join(item["argv"][:3]), "message": str(e)})
    versions = {}
    for dist in ("python-openstackclient", "osc-lib", "cliff", "openstacksdk"):
        try:
            versions[dist] = metadata.version(dist) if metadata else "?"
        except Exception:  # noqa: BLE001 - a missing distribution is shown as such
            versions[dist] = "-"
    return {"client": "openstackclient", "versions": versions, "python": sys.version.split()[0], "results": results}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("client", choices=["osmclient", "openstackclient"])
    ap.add_argument("--tree")
    ap.add_argument("--im")
    ap.add_argument("--nbi", help="NBI source: osmclient's ns-action/vnf-scale/ns-update bodies meet its schemas")
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    with open(args.corpus) as f:
        corpus = json.load(f)
    program = "osm" if args.client == "osmclient" else "openstack"
    commands = [(i, c) for i, c in enumerate(corpus["commands"]) if c["program"] == program]
    if args.client == "osmclient":
        with contextlib.redirect_stdout(io.StringIO()):
            result = run_osmclient(args, commands)
    else:
        result = run_openstackclient(args, commands)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
