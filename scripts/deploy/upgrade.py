"""`python -m deploy upgrade --ns VARIANT`: the charms of new packages onto a running NS, each
VNF the way its OSM release can take it (docs/deploy.md, "Upgrading the charms").

What OSM does itself, read in LCM 19 (`osm_lcm/ns.py` ``update()``, CHANGE_VNFPKG, reached by
`osm ns-update --updatetype CHANGE_VNFPKG`): for the VNF instance it looks up the charm through
``get_configuration(vnfd, vnfd id)`` -- the VNF-level day1-2 entry only --, refuses the update
when the VNFD's software-version changed and the VNF has a charm, compares the old and new
charm files by hash, and upgrades the execution environment the loop over the VNF's EEs saw
last (``_ns_charm_upgrade(ee_id=...)``, N2VC ``upgrade_charm``: errored units are resolved
first, then ``application.refresh(path=...)``). So through OSM:

* a VNF whose charm is VNF-level, with its one execution environment: ``osm ns-update``;
* a VNF whose only day1-2 entry is VDU-level (the SPGW-U: one EE per scaled instance) makes
  ``get_configuration`` return None and the operation fail (TypeError), and a VNF with several
  EEs would get one of them upgraded: those are refreshed on OSM's Juju controller directly,
  `juju refresh <application> --path <charm> -m <model>`, per execution environment (the
  application and model from the NS record's ``_admin.deployed.VCA`` ee_id
  ``<model>.<application>.<machine>``), which is what LCM's N2VC does for the one it reaches;
* the `-osm10` variants (OSM 10/11) go to Juju for every VNF: osmclient v8, which those
  releases install, has no ns-update command (its click tree; newer ones have it).
  ``UPGRADE_VIA=juju`` sends every VNF there on any release.

The packages are replaced first (``nfpkg-update``: a new revision in NBI, which scale-out and
heal then deploy from). A package whose software-version differs from the onboarded one is
refused before anything changes: LCM refuses a charm upgrade with a changed software-version.
Afterwards the NS must be ready with every charm active and every tunnel up again, as after
`deploy`. Everything is repeatable: an unchanged charm is a no-op for LCM and for Juju.
"""
import os
import re
import tarfile

from deploy import prereq
from deploy.catalog import members, read_descriptor, vnfd_of
from deploy.flows import DeployError, instance_names, ns_tunnels_for, onboard_packages
from deploy.osm import Osm, flow_yaml
from deploy.runner import Progress
from deploy.wait import wait_ns_ready, wait_tunnels


class UpgradeError(Exception):
    pass


# What `juju refresh` is given, from the NS record (hostile until these accept it). Juju's own
# grammar (juju/names: IsValidModelName, IsValidApplication; the application name is checked by
# refresh's Init, the model by the client store) with our bound on the length: LCM's names are
# far shorter (the model is the NS id, 36 characters). `make osm-conformance JUJU_SRC=...` runs
# Juju's parser at these maxima (bundle.osm_conformance.juju_cli).
MODEL_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,62}\Z")
APPLICATION_NAME = re.compile(r"(?=.{1,63}\Z)[a-z][a-z0-9]*(?:-[a-z0-9]*[a-z][a-z0-9]*)*\Z")
#: A controller name the juju client knows (JUJU_CONTROLLER): its local name, as `juju controllers`
#: lists it (the client store accepts any non-empty name; ours is bounded and has no `:`).
CONTROLLER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}\Z")


def day12(vnfd):
    df = (vnfd.get("df") or [{}])[0]
    return ((df.get("lcm-operations-configuration") or {}).get("operate-vnf-op-config") or {}).get("day1-2") or []


def charm_of(vnfd, entity):
    """The charm file name of the day1-2 entry ``entity`` (the VNFD id, or a VDU id)."""
    for entry in day12(vnfd):
        if entry.get("id") == entity:
            for ee in entry.get("execution-environment-list") or []:
                if (ee.get("juju") or {}).get("charm"):
                    return ee["juju"]["charm"]
    return None


def osm_can_upgrade(vnfd, ees):
    """Whether LCM's CHANGE_VNFPKG reaches every execution environment of this VNF: its charm is
    in the VNF-level day1-2 entry and it has exactly one EE, the VNF-level one."""
    return charm_of(vnfd, vnfd["id"]) is not None and len(ees) == 1 and not ees[0].get("vdu_id")


def extract_charm(cfg, package, vnfd_id, charm):
    """The charm file of the VNF package, as `juju refresh --path` takes it, under build/deploy/upgrade/:
    an absolute path. Juju reads `--path` as a local charm only when it is absolute or starts
    with "." (juju core/charm/charmpath.go, isValidCharmOrBundlePath, 2.9 and 3.x): a relative
    `build/...` is looked up as a charm name instead, and the refresh fails."""
    dest_dir = os.path.join(cfg.root, "build", "deploy", "upgrade", vnfd_id)
    dest = os.path.join(dest_dir, os.path.basename(charm))
    with tarfile.open(package, "r:*") as tar:
        found = [m for m in tar.getmembers() if m.isfile() and m.name.split("/")[1:] == ["charms", charm]]
        if not found:
            raise UpgradeError("{} has no charms/{}".format(package, charm))
        os.makedirs(dest_dir, exist_ok=True)
        with tar.extractfile(found[0]) as src, open(dest + ".part", "wb") as out:
            out.write(src.read())
    os.replace(dest + ".part", dest)
    return os.path.abspath(dest)


def check_software_versions(ctx, osm, variant):
    """Refuse (before anything changes) a package whose software-version differs from the
    onboarded one's: LCM refuses such an update for a VNF with a charm."""
    changed = []
    for kind, ident, path in ctx.catalog.ordered(variant.packages):
        if kind != "vnf":
            continue
        onboarded = osm.show_literal("nfpkg", ident)
        if onboarded is None:
            continue        # not onboarded yet (or a dry run): it is created, not updated
        new = vnfd_of(read_descriptor(ctx.catalog.abspath(path))).get("software-version", "1.0")
        old = onboarded.get("software-version") or (onboarded.get("vnfd") or {}).get("software-version") or "1.0"
        if str(new) != str(old):
            changed.append("{} ({} onboarded, {} in {})".format(ident, old, new, path))
    if changed:
        raise UpgradeError("the software-version changed for {}: OSM's LCM refuses to upgrade the charm of such a "
                           "VNF (`Software version change is not supported as VNF instance ... has charm`); "
                           "keep software-version and change only the charm".format("; ".join(changed)))


def upgrade_ns(ctx, osm, juju, ns, nsd_id, via_juju, progress):
    """Upgrade the charms of one NS instance; returns [(member, how)]."""
    cfg, runner = ctx.cfg, ctx.runner
    nsd_members = members(ctx.catalog.nsd(nsd_id))
    record = osm.show_literal("ns", ns)
    vca = ((record or {}).get("_admin") or {}).get("deployed", {}).get("VCA") or []
    vnfrs = {}
    for vnfr_id in (record or {}).get("constituent-vnfr-ref") or []:
        vnfr = osm.show_literal("vnf", vnfr_id) or {}
        vnfrs[str(vnfr.get("member-vnf-index-ref"))] = vnfr
    done = []
    for member, vnfd_id in sorted(nsd_members.items()):
        vnfd = ctx.catalog.vnfd(vnfd_id)
        ees = [v for v in vca if str(v.get("member-vnf-index")) == member]
        if record is None:         # a dry run: the EEs the descriptors make
            vdu = next((e.get("id") for e in day12(vnfd) if e.get("id") != vnfd["id"]), None)
            ees = [{"member-vnf-index": member, "vdu_id": vdu, "vdu_count_index": 0,
                    "ee_id": "<model>.<application of {}{}>.<machine>".format(member, " " + vdu if vdu else ""),
                    "placeholder": True}]
        if not ees or not any(charm_of(vnfd, e.get("vdu_id") or vnfd["id"]) for e in ees):
            continue        # no charm (a VNF without WireGuard)
        if not via_juju and osm_can_upgrade(vnfd, ees):
            vnfr = vnfrs.get(member) or {}
            # osmclient's ns-update reads changeVnfPackageData as a list and sends its first item
            # to NBI as the object NBI's ns_update schema wants (sol005/ns.py update()).
            data = {"changeVnfPackageData": [{
                "vnfInstanceId": vnfr.get("_id") or "<VNF instance id of {}>".format(member),
                "vnfdId": vnfr.get("vnfd-id") or "<NBI id of VNFD {}>".format(vnfd_id)}]}
            timeout = int(cfg.seconds("UPGRADE_TIMEOUT"))
            if timeout < 300:     # NBI _check_update_ns_operation
                raise UpgradeError("UPGRADE_TIMEOUT={}: NBI refuses an ns-update timeout under 300 s".format(timeout))
            result = osm.run("ns-update", ns, "--updatetype", "CHANGE_VNFPKG", "--config", flow_yaml(data),
                             "--timeout", str(timeout), "--wait", timeout=timeout + 60, check=False)
            if not result.ok:
                raise UpgradeError("osm ns-update of {} in {} failed: {}".format(
                    member, ns, runner.redact((result.stderr or result.stdout).strip()[-500:])))
            done.append((member, "osm ns-update"))
            continue
        for ee in ees:
            charm = charm_of(vnfd, ee.get("vdu_id") or vnfd["id"])
            model, app = _model_app(ee)
            path = extract_charm(cfg, ctx.catalog.abspath(ctx.catalog.package_of("vnf", vnfd_id)), vnfd_id, charm)
            target = juju_target(cfg.get("JUJU_CONTROLLER"), model)
            runner.run([juju, "refresh", app, "--path", path, "-m", target], timeout=cfg.seconds("UPGRADE_TIMEOUT"))
        done.append((member, "juju refresh ({} execution environment(s))".format(len(ees))))
    for member, how in done:
        progress.note("{} {}: {}".format(ns, member, how))
    return done


def _model_app(ee):
    """(model, application) of an execution environment record (ee_id <model>.<application>.<machine>)."""
    parts = str(ee.get("ee_id") or "").split(".")
    model = ee.get("model") or (parts[0] if len(parts) == 3 else "")
    app = ee.get("application") or (parts[1] if len(parts) == 3 else "")
    if not model or not app:
        raise UpgradeError("execution environment of {} has no model/application: {!r}".format(
            ee.get("member-vnf-index"), ee.get("ee_id")))
    if ee.get("placeholder"):       # a dry run prints the names it cannot know as <...>
        return model, app
    if not MODEL_NAME.match(str(model)) or not APPLICATION_NAME.match(str(app)):
        raise UpgradeError("execution environment of {}: {!r} is not a Juju model and application name".format(
            ee.get("member-vnf-index"), str(ee.get("ee_id"))[:200]))
    return model, app


def juju_target(controller, model):
    """The `-m` value of `juju refresh`: ``[<controller>:]<model>``."""
    if not controller:
        return model
    if not CONTROLLER_NAME.match(controller):
        raise UpgradeError("JUJU_CONTROLLER={!r}: not a controller name ({})".format(
            controller[:100], CONTROLLER_NAME.pattern))
    return "{}:{}".format(controller, model)


def command(ctx, variant_name):
    cfg, runner = ctx.cfg, ctx.runner
    variant = ctx.catalog.variant(variant_name)
    names = instance_names(cfg, variant)
    via_juju = variant_name.endswith("_osm10") or cfg.get("UPGRADE_VIA", "").strip().lower() == "juju"
    progress = Progress(runner, 4)
    progress.step("prerequisites")
    osm_cmd, _ = prereq.check(cfg, runner, need_openstack=False, sites=())
    juju = prereq.find_juju(cfg)
    osm = Osm(runner, cfg, osm_cmd, ctx.state)
    progress.step("the variant's packages (software-version kept, then a new revision in NBI)")
    check_software_versions(ctx, osm, variant)
    onboard_packages(ctx, osm, variant.packages, progress)
    progress.step("the charms: {}".format("through Juju (UPGRADE_VIA=juju or an -osm10 variant)" if via_juju
                                          else "osm ns-update where OSM reaches the charm, Juju for the others"))
    instances = ns_tunnels_for(ctx, osm, variant, names)
    for ns, _tunnels, nsd_id in instances:
        if nsd_id is None:
            raise DeployError("{}: its NSD is unknown (is the NSI instantiated?)".format(ns))
        upgrade_ns(ctx, osm, juju, ns, nsd_id, via_juju, progress)
    progress.step("every charm active and every tunnel up again")
    wait_ns_ready(runner, progress, osm, [ns for ns, _, _ in instances], cfg)
    ns_tunnels = [(ns, t) for ns, t, _ in instances if t]
    if ns_tunnels:
        wait_tunnels(runner, progress, osm, ns_tunnels, cfg)
    runner.say("upgrade done: {} ({})".format(variant_name, ", ".join(ns for ns, _, _ in instances)))
