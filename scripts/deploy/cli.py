"""Command line: python -m deploy {deploy,onboard,prepare,undeploy,scale,upgrade,measure} [--ns VARIANT]."""

import argparse
import sys

from deploy.catalog import Catalog, CatalogError
from deploy.config import Config, ConfigError
from deploy.microstack import PrepareError
from deploy.osm import OsmError
from deploy.params import ParamsError
from deploy.prereq import PrereqError
from deploy.runner import CommandError, Runner
from deploy.scale import ScaleError
from deploy.upgrade import UpgradeError
from deploy.wait import WaitError

ERRORS = (
    CatalogError,
    ConfigError,
    PrepareError,
    OsmError,
    ParamsError,
    PrereqError,
    CommandError,
    ScaleError,
    UpgradeError,
    WaitError,
)


def parser():
    p = argparse.ArgumentParser(prog="python -m deploy", description=__doc__)
    p.add_argument("--env-file", help="KEY=VALUE configuration file (default: deploy.env, or $DEPLOY_ENV)")
    p.add_argument("--catalog", help="package catalog (default build/packages/catalog.json)")
    p.add_argument(
        "--dry-run", action="store_true", help="print the commands instead of running them (DRY_RUN=1)"
    )
    sub = p.add_subparsers(dest="command")
    sub.required = True
    d = sub.add_parser("deploy", help="prepare MicroStack, register VIMs, onboard, instantiate, wait")
    d.add_argument("--ns", required=True, help="variant from the catalog (eps_wg, slices, ...)")
    o = sub.add_parser("onboard", help="onboard (or update) packages: all, or those of --ns")
    o.add_argument("--ns", help="only the packages of this variant")
    pr = sub.add_parser("prepare", help="only prepare MicroStack (images, flavors, network, rules)")
    pr.add_argument("--ns", help="for this variant (default: every VNF of the catalog, site 1)")
    u = sub.add_parser("undeploy", help="delete the instance and what deploy created")
    u.add_argument("--ns", required=True)
    u.add_argument("--keep-packages", action="store_true")
    u.add_argument("--keep-vims", action="store_true")
    u.add_argument("--keep-vim-resources", action="store_true", help="keep flavors, images, network, rules")
    sc = sub.add_parser("scale", help="scale the SPGW-U VDU out or in and peer it with its hubs (docs/deploy.md)")
    sc.add_argument("--ns", required=True, help="the deployed variant (eps_wg, eps_wg_2x, ...)")
    way = sc.add_mutually_exclusive_group(required=True)
    way.add_argument("--scale-out", dest="direction", action="store_const", const="out")
    way.add_argument("--scale-in", dest="direction", action="store_const", const="in")
    way.add_argument("--peer-only", dest="direction", action="store_const", const="peer",
                     help="peer every scaled instance with its hubs again (repair; no scaling)")
    up = sub.add_parser("upgrade", help="the charms of the packages onto the running NS: osm ns-update where OSM "
                        "can, Juju for the rest (docs/deploy.md)")
    up.add_argument("--ns", required=True, help="the deployed variant")
    m = sub.add_parser("measure", help="iperf3 + ping per interface with and without WireGuard")
    m.add_argument("--ns", required=True)
    return p


def main(argv=None, environ=None, out=None, execute=None, clock=None, sleep=None):
    from deploy import flows, measure, scale, upgrade

    args = parser().parse_args(argv)
    try:
        cfg = Config(environ=environ, env_file=args.env_file)
        if args.dry_run:
            cfg.values["DRY_RUN"] = "1"
        runner = Runner(cfg, out=out, execute=execute, clock=clock, sleep=sleep)
        if cfg.dry_run:
            runner.say(
                "DRY RUN: commands are printed, not run; reads are marked [read] and answered "
                "'does not exist' (teardown: 'exists')"
            )
        catalog = Catalog.load(cfg.root, args.catalog)
        ctx = flows.Context(cfg, runner, catalog)
        if args.command == "deploy":
            flows.deploy(ctx, args.ns)
        elif args.command == "onboard":
            flows.onboard(ctx, args.ns)
        elif args.command == "prepare":
            flows.prepare(ctx, args.ns)
        elif args.command == "undeploy":
            flows.undeploy(ctx, args.ns, args.keep_packages, args.keep_vims, args.keep_vim_resources)
        elif args.command == "scale":
            scale.command(ctx, args.ns, args.direction)
        elif args.command == "upgrade":
            upgrade.command(ctx, args.ns)
        elif args.command == "measure":
            measure.measure(ctx, args.ns)
    except ERRORS + (flows.DeployError,) as exc:
        message = str(exc)
        try:
            message = runner.redact(message)
        except NameError:
            pass
        print("error: {}".format(message), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0
