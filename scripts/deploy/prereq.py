"""Prerequisites, checked before anything is changed; every missing piece is named at once."""

import os
import shutil
import sys

from deploy import ROOT

OSM_CLIENT_HELP = (
    "the `osm` CLI (osmclient) was not found. It is not on PyPI; take it from OSM's own "
    "distribution: it is installed on the OSM host by install_osm.sh, and on another Ubuntu host "
    "from OSM's Debian repository (python3-osmclient, see docs/deploy.md 'Prerequisites'). "
    "Or set OSM_CLI to its path."
)
OPENSTACK_HELP = (
    "the `openstack` CLI was not found: install python-openstackclient into the project's "
    "virtualenv with `.venv/bin/pip install -r requirements-deploy.txt` (or `make deploy-tools`), "
    "or set OPENSTACK_CLI=microstack.openstack to use MicroStack's bundled client."
)


class PrereqError(Exception):
    pass


def find_openstack(cfg, use_configured=True):
    """The openstack client: OPENSTACK_CLI (unless use_configured is false), else the
    virtualenv's (where the Makefile installs it), else the one on PATH."""
    configured = cfg.get("OPENSTACK_CLI") if use_configured else ""
    if configured:
        return shutil.which(configured, path=cfg.get("PATH") or None) or (
            configured if os.path.isfile(configured) else None
        )
    for candidate in (
        os.path.join(os.path.dirname(sys.executable), "openstack"),
        os.path.join(ROOT, ".venv", "bin", "openstack"),
    ):
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("openstack", path=cfg.get("PATH") or None)


def is_microstack_wrapper(command):
    """MicroStack's snap commands (microstack.openstack) source the local microstack.rc, which
    exports OS_AUTH_URL, OS_PASSWORD, OS_CACERT...: whatever site they are given, they act on the
    MicroStack of the machine they run on."""
    return os.path.basename(str(command or "")).startswith("microstack.")


def openstack_for_site(cfg, openstack_cmd, site):
    """The client for ``site``: site 1 uses ``openstack_cmd``; site 2 uses SITE2_OPENSTACK_CLI, or
    ``openstack_cmd`` unless that is MicroStack's wrapper, in which case the virtualenv's
    python-openstackclient (None if there is none) with site 2's explicit OS_* environment."""
    if site == 1:
        return openstack_cmd
    configured = cfg.get("SITE2_OPENSTACK_CLI")
    if configured:
        return shutil.which(configured, path=cfg.get("PATH") or None) or (
            configured if os.path.isfile(configured) else None
        )
    if not is_microstack_wrapper(openstack_cmd):
        return openstack_cmd
    found = find_openstack(cfg, use_configured=False)
    return None if found is None or is_microstack_wrapper(found) else found


def tls_problem(cfg, site, openstack_cmd):
    """An https Keystone needs the CA certificate (OS_CACERT) or an explicit OS_INSECURE=true;
    MicroStack's wrapper brings its own for the local site."""
    env = cfg.site_env(site)
    if not str(env.get("OS_AUTH_URL") or "").startswith("https:") or is_microstack_wrapper(openstack_cmd):
        return None
    if env.get("OS_CACERT") or str(env.get("OS_INSECURE") or "").lower() in ("1", "true", "yes"):
        return None
    prefix = "" if site == 1 else "SITE2_"
    return (
        "site {} uses https ({}) but neither {p}OS_CACERT nor {p}OS_INSECURE is set: copy that "
        "MicroStack's CA certificate (/var/snap/microstack/common/etc/ssl/certs/cacert.pem on its host) "
        "and set {p}OS_CACERT=<the copy>, or set {p}OS_INSECURE=true to skip verification.".format(
            site, env.get("OS_AUTH_URL"), p=prefix
        )
    )


def find_juju(cfg):
    """The juju client of OSM's VCA (JUJU_CLI; `deploy upgrade` needs it only for the charms OSM
    cannot upgrade itself). Its absence shows when it is run ("command not found")."""
    name = cfg.get("JUJU_CLI") or "juju"
    return shutil.which(name, path=cfg.get("PATH") or None) or name


def find_osm(cfg):
    return shutil.which(cfg.get("OSM_CLI") or "osm", path=cfg.get("PATH") or None)


def check(cfg, runner, need_openstack=True, need_osm=True, sites=(1,), need_vim_credentials=False):
    """Return (osm argv0, openstack argv0). Raise PrereqError naming everything missing; in a dry
    run report the same problems as warnings and carry on with the plain command names, so that
    the printed commands stay useful on a machine without the tools."""
    problems = []
    osm = openstack = None
    if need_osm:
        osm = find_osm(cfg)
        if not osm:
            problems.append(OSM_CLIENT_HELP)
        if not cfg.get("OSM_HOSTNAME"):
            problems.append("OSM_HOSTNAME is not set: the address of the OSM NBI host (osmclient reads it).")
    if need_openstack:
        openstack = find_openstack(cfg)
        if not openstack:
            problems.append(OPENSTACK_HELP)
        if openstack and 2 in sites and not openstack_for_site(cfg, openstack, 2):
            problems.append(
                "site 2 needs python-openstackclient (`make deploy-tools`) or SITE2_OPENSTACK_CLI: "
                "{} always acts on the local MicroStack, never on site 2.".format(openstack)
            )
        for site in sites:
            problem = tls_problem(cfg, site, openstack_for_site(cfg, openstack or "openstack", site))
            if problem:
                problems.append(problem)
            ok, missing = cfg.site_has_credentials(site)
            if not ok:
                problems.append(
                    "OpenStack credentials for site {} are incomplete: set {} (or {}OS_CLOUD); "
                    "MicroStack prints the admin password with `sudo snap get microstack "
                    "config.credentials.keystone-password`.".format(
                        site, ", ".join(missing), "" if site == 1 else "SITE2_"
                    )
                )
    if need_vim_credentials:
        for site in sites:
            _, missing = cfg.vim_credentials(site)
            if missing:
                problems.append(
                    "VIM account {} needs {} (or the matching {}OS_* variables).".format(
                        cfg.vim_account(site), ", ".join(missing), "" if site == 1 else "SITE2_"
                    )
                )
    osm_cmd = osm or cfg.get("OSM_CLI") or "osm"
    openstack_cmd = openstack or cfg.get("OPENSTACK_CLI") or "openstack"
    if problems:
        text = "prerequisites missing:\n  - " + "\n  - ".join(problems)
        if not cfg.dry_run:
            raise PrereqError(text)
        runner.say("warning (dry run, continuing): " + text)
        return osm_cmd, openstack_cmd
    # The tools exist: prove OSM and OpenStack answer before changing anything. Both are reads
    # through the CLIs themselves (no hand-written REST).
    if need_osm:
        result = runner.read([osm_cmd, "vim-list"], dry_present=True)
        if not result.ok:
            raise PrereqError(
                "OSM at OSM_HOSTNAME={} does not answer `osm vim-list`: {}".format(
                    cfg.get("OSM_HOSTNAME"), runner.redact((result.stderr or result.stdout).strip()[-500:])
                )
            )
    if need_openstack:
        for site in sites:
            result = runner.read(
                [openstack_for_site(cfg, openstack_cmd, site), "token", "issue", "-f", "json"],
                env=cfg.site_env(site),
                dry_present=True,
            )
            if not result.ok:
                raise PrereqError(
                    "OpenStack site {} refuses the credentials (`openstack token issue`): {}".format(
                        site, runner.redact((result.stderr or result.stdout).strip()[-500:])
                    )
                )
    return osm_cmd, openstack_cmd
