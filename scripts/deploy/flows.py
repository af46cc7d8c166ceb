"""The three flows behind `make onboard`, `make deploy` and `make undeploy`."""

import json
import os
import time

from deploy import microstack, prereq, ue
from deploy.catalog import tunnels, vdu_members
from deploy.microstack import Site, flavors_for, images_for
from deploy.osm import Osm
from deploy.params import render_variant, vim_accounts_in
from deploy.runner import Progress
from deploy.state import State
from deploy.wait import WaitError, ns_state, poll, wait_ns_ready, wait_tunnels


class DeployError(Exception):
    pass


class Context:
    """What every flow shares: configuration, runner, catalog and the record of what was created."""

    def __init__(self, cfg, runner, catalog):
        self.cfg = cfg
        self.runner = runner
        self.catalog = catalog
        self.state = State(cfg.root, runner.dry_run)


# -- helpers -----------------------------------------------------------------------------------


def instance_names(cfg, variant):
    prefix = "{}-{}".format(cfg.get("NS_NAME_PREFIX"), variant.name)
    if len(variant.descriptor_ids) == 1:
        return [prefix]
    return ["{}-{}".format(prefix, d) for d in variant.descriptor_ids]


def variant_vnfd_ids(catalog, variant):
    return [ident for kind, ident, _ in catalog.ordered(variant.packages) if kind == "vnf"]


def sites_of(cfg, rendered_list):
    """Site numbers the variant uses: 1 always (the primary VIM_ACCOUNT), 2 when the params place a
    VNF on VIM_ACCOUNT_SITE2. Any other account name is a configuration mistake."""
    sites = [1]
    for data in rendered_list:
        for account in vim_accounts_in(data):
            if account == cfg.vim_account(1):
                continue
            if account == cfg.vim_account(2):
                if 2 not in sites:
                    sites.append(2)
                continue
            raise DeployError(
                "the params place VNFs on VIM account {!r}, which is neither VIM_ACCOUNT ({}) nor "
                "VIM_ACCOUNT_SITE2 ({})".format(account, cfg.vim_account(1), cfg.vim_account(2))
            )
    return sites


def render_all(ctx, variant):
    rendered = []
    # An NSI's config is rendered once per NST: each carries its own NST's 5QI (bundle.params).
    per_target = len(variant.params) > 1 or variant.kind == "nsi"
    for index in range(len(variant.descriptor_ids) if per_target else 1):
        rendered.append(render_variant(ctx.cfg, ctx.runner, ctx.catalog, variant, index))
    return rendered


def params_file_for(rendered, index):
    return rendered[index][0] if len(rendered) > 1 else rendered[0][0]


def ns_tunnels_for(ctx, osm, variant, names):
    """[(ns name or id, [Tunnel], nsd id)] for the NS instances of the variant. For an NSI the NS
    records are looked up in OSM (a dry run names them <nsi>.<subnet id> as NBI does)."""
    out = []
    if variant.kind == "ns":
        nsd = ctx.catalog.nsd(variant.descriptor_ids[0])
        osm.vdu_members.update(vdu_members(nsd))
        return [(names[0], tunnels(nsd), variant.descriptor_ids[0])]
    for name, nst_id in zip(names, variant.descriptor_ids):
        record = osm.show_literal("nsi", name)
        if record is None:
            for subnet in ctx.catalog.nst_doc(nst_id).get("netslice-subnet") or []:
                nsd_id = subnet["nsd-ref"]
                osm.vdu_members.update(vdu_members(ctx.catalog.nsd(nsd_id)))
                out.append(("{}.{}".format(name, subnet["id"]), tunnels(ctx.catalog.nsd(nsd_id)), nsd_id))
            continue
        for ns_id in osm.nsi_ns_ids(record):
            ns_record = osm.show_literal("ns", ns_id) or {}
            nsd_id = (ns_record.get("nsd") or {}).get("id") or ns_record.get("nsd-ref")
            if nsd_id:
                osm.vdu_members.update(vdu_members(ctx.catalog.nsd(nsd_id)))
            out.append((ns_id, tunnels(ctx.catalog.nsd(nsd_id)) if nsd_id else [], nsd_id))
    return out


# -- onboard -----------------------------------------------------------------------------------


def onboard_packages(ctx, osm, packages, progress):
    for kind, ident, path in ctx.catalog.ordered(packages):
        if not os.path.isfile(ctx.catalog.abspath(path)):
            raise DeployError("package {} is missing: run make packages".format(path))
        outcome = osm.onboard(kind, ident, path)
        progress.note("{} {} {}".format(kind, ident, outcome))


def onboard(ctx, variant_name=None):
    packages = (
        ctx.catalog.variant(variant_name).packages
        if variant_name
        else [p for _, _, p in ctx.catalog.all_packages()]
    )
    progress = Progress(ctx.runner, 2)
    progress.step("prerequisites")
    osm_cmd, _ = prereq.check(ctx.cfg, ctx.runner, need_openstack=False)
    progress.step("onboarding {} packages (VNFs, then NSs, then NSTs)".format(len(packages)))
    onboard_packages(ctx, Osm(ctx.runner, ctx.cfg, osm_cmd, ctx.state), packages, progress)


# -- prepare (MicroStack) ------------------------------------------------------------------------


def prepare_sites(ctx, openstack_cmd, sites, vnfd_ids, progress):
    flavors = flavors_for(ctx.cfg, ctx.catalog, vnfd_ids)
    images = images_for(ctx.catalog, vnfd_ids)
    for number in sites:
        progress.note(
            "site {} ({}): images {}, {} flavors, network {}, security group {}".format(
                number,
                ctx.cfg.vim_account(number),
                ", ".join(images) or "-",
                len(flavors),
                ctx.cfg.get("MGMT_NETWORK"),
                ctx.cfg.get("SECURITY_GROUP"),
            )
        )
        site = Site(ctx.runner, ctx.cfg, openstack_cmd, number, ctx.state)
        site.ensure_images(images)
        site.ensure_flavors(flavors)
        site.ensure_mgmt_network()
        site.ensure_security_rules()
    for line in microstack.host_settings(ctx.cfg, 2 in sites):
        ctx.runner.say("    " + line)


def prepare(ctx, variant_name=None):
    """Only the MicroStack part: for one variant, or for every VNF of the catalog."""
    if variant_name:
        variant = ctx.catalog.variant(variant_name)
        rendered = render_all(ctx, variant)
        sites = sites_of(ctx.cfg, [d for _, d in rendered])
        vnfd_ids = variant_vnfd_ids(ctx.catalog, variant)
    else:
        sites = [1]
        vnfd_ids = [item["id"] for item in ctx.catalog.vnf]
    progress = Progress(ctx.runner, 2)
    progress.step("prerequisites")
    _, openstack_cmd = prereq.check(ctx.cfg, ctx.runner, need_osm=False, sites=sites)
    progress.step("preparing MicroStack")
    prepare_sites(ctx, openstack_cmd, sites, vnfd_ids, progress)


# -- deploy ------------------------------------------------------------------------------------


def deploy(ctx, variant_name):
    cfg, runner = ctx.cfg, ctx.runner
    progress = Progress(runner, 10)
    progress.step("catalog, variant {} and its params".format(variant_name))
    variant = ctx.catalog.variant(variant_name)
    rendered = render_all(ctx, variant)
    sites = sites_of(cfg, [d for _, d in rendered])
    names = instance_names(cfg, variant)
    progress.note(
        "{} {} -> {} on VIM(s) {}".format(
            variant.kind.upper(),
            ", ".join(variant.descriptor_ids),
            ", ".join(names),
            ", ".join(cfg.vim_account(s) for s in sites),
        )
    )

    progress.step("prerequisites")
    osm_cmd, openstack_cmd = prereq.check(cfg, runner, sites=sites, need_vim_credentials=True)
    osm = Osm(runner, cfg, osm_cmd, ctx.state)

    progress.step("MicroStack: images, flavors, management network, security group")
    prepare_sites(ctx, openstack_cmd, sites, variant_vnfd_ids(ctx.catalog, variant), progress)

    progress.step("VIM accounts")
    for number in sites:
        progress.note("VIM {}".format(osm.ensure_vim(number)))

    progress.step("onboarding {} packages".format(len(variant.packages)))
    onboard_packages(ctx, osm, variant.packages, progress)

    progress.step("instantiating")
    instantiate(ctx, osm, variant, names, rendered, progress)

    progress.step("waiting for the {} to be ready and every charm active".format(variant.kind.upper()))
    if variant.kind == "ns":
        wait_ns_ready(runner, progress, osm, names, cfg)
    else:
        wait_nsi_ready(ctx, runner, progress, osm, names)

    progress.step("waiting for every tunnel to report a recent handshake (tunnel-status)")
    instances = ns_tunnels_for(ctx, osm, variant, names)
    ns_tunnels = [(ns, t) for ns, t, _ in instances if t]
    if not ns_tunnels:
        progress.note("this variant has no WireGuard tunnels")
        reports = {}
    else:
        reports = wait_tunnels(runner, progress, osm, ns_tunnels, cfg)

    progress.step("the UE: attach, the MME's view, throughput and RTT through S1-U")
    ues = run_ues(ctx, osm, instances, rendered, progress)

    progress.step("summary")
    summary = write_summary(ctx, variant, names, sites, reports, ues, progress)
    failed = ["{}: {}".format(ns, r["error"]) for ns, r in ues.items() if "error" in r]
    if failed:
        raise DeployError("the NS is up but its UE failed: " + "; ".join(failed))
    return summary


def instantiate(ctx, osm, variant, names, rendered, progress):
    """ns-create / nsi-create for every instance that does not exist yet (idempotent)."""
    for index, (name, descriptor_id) in enumerate(zip(names, variant.descriptor_ids)):
        if osm.read("{}-show".format(variant.kind), name).ok:
            progress.note("{} {} already exists: left as it is (make undeploy to recreate)".format(variant.kind, name))
            continue
        osm.create_instance(variant.kind, name, descriptor_id, ctx.cfg.vim_account(1), params_file_for(rendered, index))
        ctx.state.set_instance(variant.name, kind=variant.kind, names=names, created_at=time.time())


def write_summary(ctx, variant, names, sites, reports, ues, progress):
    """The deploy's summary, printed and (not in a dry run) written to build/deploy/<variant>/status.json."""
    cfg, runner = ctx.cfg, ctx.runner
    seconds = None
    entry = ctx.state.instance(variant.name) or {}
    if not runner.dry_run and entry.get("created_at"):
        seconds = entry.get("seconds_to_all_tunnels_up") or round(time.time() - entry["created_at"], 1)
        ctx.state.set_instance(variant.name, seconds_to_all_tunnels_up=seconds)
    summary = {
        "variant": variant.name,
        "kind": variant.kind,
        "instances": names,
        "vim_accounts": [cfg.vim_account(s) for s in sites],
        "tunnels": reports,
        "ue": ues,
        "seconds_to_all_tunnels_up": seconds,
        "elapsed_seconds": round(progress.elapsed(), 1),
    }
    print_summary(runner, summary)
    if not runner.dry_run:
        path = os.path.join(cfg.root, "build", "deploy", variant.name, "status.json")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump(summary, f, indent=2, sort_keys=True)
        runner.say("status written to {}".format(os.path.relpath(path, cfg.root)))
    return summary


def run_ues(ctx, osm, instances, rendered, progress):
    """{ns: UE result} (deploy/ue.py); UE=0 skips it. A failing UE is recorded, not raised, so that
    the summary and status.json are written first."""
    if not ctx.cfg.flag("UE"):
        progress.note("skipped (UE=0)")
        return {}
    out = {}
    for index, (ns, ns_tunnels, _) in enumerate(instances):
        data = rendered[index][1] if len(rendered) > 1 else rendered[0][1]
        try:
            out[ns] = ue.run_ue(ctx.cfg, osm, ns, data, progress)
        except ue.UeError as exc:
            out[ns] = {"error": ctx.runner.redact(str(exc))}
            progress.note("{}: UE FAILED: {}".format(ns, out[ns]["error"]))
        out[ns]["wireguard"] = bool(ns_tunnels)
    return out


def wait_nsi_ready(ctx, runner, progress, osm, names):
    def check():
        parts, done_all = [], True
        for name in names:
            ready, failed, summary = ns_state(osm.show_literal("nsi", name))
            if failed:
                raise WaitError("NSI {} failed: {}".format(name, summary))
            done_all = done_all and ready
            parts.append("{}: {}".format(name, summary))
        return done_all, "; ".join(parts)

    poll(
        runner,
        progress,
        "NSI ready",
        check,
        ctx.cfg.seconds("NS_READY_TIMEOUT"),
        ctx.cfg.seconds("POLL_INTERVAL"),
    )
    ids = []
    for name in names:
        ids += osm.nsi_ns_ids(osm.show_literal("nsi", name))
    if ids:
        wait_ns_ready(runner, progress, osm, ids, ctx.cfg)


def print_summary(runner, summary):
    runner.say("")
    runner.say(
        "{} {}: {}".format(summary["kind"].upper(), summary["variant"], ", ".join(summary["instances"]))
    )
    runner.say("  VIM accounts: {}".format(", ".join(summary["vim_accounts"])))
    for ns, report in summary["tunnels"].items():
        for rp, info in sorted(report.items()):
            ages = ", ".join("{}: {}".format(m, a) for m, a in info["ages"].items())
            runner.say(
                "  {} {:5} {:4} handshake ages (s) {}".format(ns, rp, "up" if info["up"] else "DOWN", ages)
            )
    for ns, result in sorted(summary.get("ue", {}).items()):
        for line in ue.describe(ns, result, result.get("wireguard")):
            runner.say(line)
    if summary["seconds_to_all_tunnels_up"] is not None:
        runner.say(
            "  seconds from instantiation to all tunnels up: {}".format(summary["seconds_to_all_tunnels_up"])
        )
    runner.say("  elapsed: {}".format(Progress.fmt(summary["elapsed_seconds"])))


# -- undeploy ----------------------------------------------------------------------------------


def undeploy(ctx, variant_name, keep_packages=False, keep_vims=False, keep_vim_resources=False):
    cfg, runner, state = ctx.cfg, ctx.runner, ctx.state
    variant = ctx.catalog.variant(variant_name)
    names = instance_names(cfg, variant)
    progress = Progress(runner, 5)
    progress.step("prerequisites")
    sites = [1, 2] if runner.dry_run and variant.name.endswith("multisite") else [1]
    for scope in state.data["created"]:
        if scope.startswith("site") and scope[4:].isdigit() and int(scope[4:]) not in sites:
            sites.append(int(scope[4:]))
    osm_cmd, openstack_cmd = prereq.check(cfg, runner, need_openstack=not keep_vim_resources, sites=sites)
    osm = Osm(runner, cfg, osm_cmd, state)

    progress.step("deleting {} {}".format(variant.kind.upper(), ", ".join(names)))
    for name in names:
        progress.note(
            "{} {}: {}".format(
                variant.kind, name, "deleted" if osm.delete_instance(variant.kind, name) else "not present"
            )
        )
    state.drop_instance(variant.name)
    others = sorted(state.data["instances"])  # instances of other variants still deployed

    progress.step("deleting packages (NSTs, then NSs, then VNFs)")
    if keep_packages:
        progress.note("kept (--keep-packages)")
    else:
        for kind, ident, _ in reversed(ctx.catalog.ordered(variant.packages)):
            progress.note("{} {}: {}".format(kind, ident, osm.delete_package(kind, ident)))

    progress.step("VIM accounts created by deploy")
    vims = state.created("osm", "vims")
    if runner.dry_run:  # nothing is recorded in a dry run: show what a deploy would have created
        vims = [cfg.vim_account(s) for s in sites]
    if keep_vims or others:
        progress.note(
            "kept ({})".format("--keep-vims" if keep_vims else "still used by " + ", ".join(others))
        )
    else:
        for name in vims:
            osm.delete_vim(name)

    progress.step("MicroStack resources created by deploy")
    if keep_vim_resources or others:
        progress.note(
            "kept ({})".format(
                "--keep-vim-resources" if keep_vim_resources else "still used by " + ", ".join(others)
            )
        )
        return
    for number in sites:
        delete_site_resources(ctx, Site(runner, cfg, openstack_cmd, number, state), variant)


def delete_site_resources(ctx, site, variant):
    """Delete, in dependency order, only what deploy recorded as created on this site. Images and
    the management network that existed before (MicroStack's own `test`) are never touched."""
    state, scope = ctx.state, site.scope
    flavors = state.created(scope, "flavors")
    if ctx.runner.dry_run:
        flavors = [f[0] for f in flavors_for(ctx.cfg, ctx.catalog, variant_vnfd_ids(ctx.catalog, variant))]
    for rule in state.created(scope, "security_rules"):
        site.run("security", "group", "rule", "delete", rule)
        state.forget(scope, "security_rules", rule)
    for router, subnet in state.created(scope, "router_interfaces"):
        site.run("router", "remove", "subnet", router, subnet)
        state.forget(scope, "router_interfaces", [router, subnet])
    for kind, key in (
        ("router", "routers"),
        ("subnet", "subnets"),
        ("network", "networks"),
        ("image", "images"),
    ):
        for name in state.created(scope, key):
            if site.read(kind, "show", name, "-f", "json", dry_present=True).ok:
                site.run(kind, "delete", name)
            state.forget(scope, key, name)
    for name in flavors:
        if site.read("flavor", "show", name, "-f", "json", dry_present=True).ok:
            site.run("flavor", "delete", name)
        state.forget(scope, "flavors", name)

