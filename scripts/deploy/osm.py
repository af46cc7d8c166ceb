"""OSM through the `osm` CLI only: VIM accounts, package onboarding, NS/NSI instances, actions."""

import json
import re

import yaml

#: kind -> (show, create, update, delete) sub-commands of osmclient.
PACKAGE_COMMANDS = {
    "vnf": ("nfpkg-show", "nfpkg-create", "nfpkg-update", "nfpkg-delete"),
    "ns": ("nspkg-show", "nspkg-create", "nspkg-update", "nspkg-delete"),
    "nst": ("nst-show", "nst-create", "nst-update", "nst-delete"),
}
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
DRY_OP_ID = "<op-id printed by ns-action>"


class OsmError(Exception):
    pass


def flow_yaml(data):
    """A one-line YAML mapping for --config/--params (JSON would do too; YAML is what the OSM docs
    show)."""
    return yaml.safe_dump(data, default_flow_style=True, width=10000).strip()


class Osm:
    def __init__(self, runner, cfg, osm_cmd, state):
        self.runner = runner
        self.cfg = cfg
        self.osm = osm_cmd
        self.state = state
        #: {member: VDU id} of the members whose execution environment is VDU-level (catalog.vdu_members)
        self.vdu_members = {}

    def read(self, *args, dry_present=False, timeout=None):
        return self.runner.read([self.osm] + list(args), dry_present=dry_present, timeout=timeout)

    def run(self, *args, timeout=None, check=True):
        return self.runner.run([self.osm] + list(args), timeout=timeout, check=check)

    # -- VIM accounts -------------------------------------------------------------------------
    def vim_config(self):
        return {
            "use_floating_ip": self.cfg.flag("VIM_USE_FLOATING_IP"),
            "insecure": self.cfg.flag("VIM_INSECURE"),
        }

    def ensure_vim(self, site):
        name = self.cfg.vim_account(site)
        config = flow_yaml(self.vim_config())
        if self.read("vim-show", name).ok:
            # Re-applying the same options changes nothing; it makes a hand-made account match.
            self.run("vim-update", name, "--config", config)
            return name
        (auth_url, user, password, tenant), missing = self.cfg.vim_credentials(site)
        if missing and not self.runner.dry_run:
            raise OsmError("VIM {} cannot be registered: set {}".format(name, ", ".join(missing)))
        self.run(
            "vim-create",
            "--name",
            name,
            "--account_type",
            "openstack",
            "--auth_url",
            auth_url or "<VIM_AUTH_URL>",
            "--user",
            user or "<VIM_USER>",
            "--password",
            password or "<VIM_PASSWORD>",
            "--tenant",
            tenant or "<VIM_TENANT>",
            "--config",
            config,
            "--description",
            "VPNaaS bundle site {}".format(site),
        )
        self.state.record("osm", "vims", name)
        return name

    def delete_vim(self, name):
        if self.read("vim-show", name, dry_present=True).ok:
            self.run("vim-delete", name, "--wait", timeout=self.cfg.seconds("DELETE_TIMEOUT"))
        self.state.forget("osm", "vims", name)

    # -- packages ----------------------------------------------------------------------------
    def onboard(self, kind, ident, path):
        """Create the package, or replace the content of the one with the same id."""
        show, create, update, _ = PACKAGE_COMMANDS[kind]
        if self.read(show, ident).ok:
            self.run(update, "--content", path, ident)
            return "updated"
        self.run(create, path)
        return "created"

    def delete_package(self, kind, ident):
        show, _, _, delete = PACKAGE_COMMANDS[kind]
        if not self.read(show, ident, dry_present=True).ok:
            return "absent"
        result = self.run(delete, ident, check=False)
        if not result.ok:
            # NBI refuses to delete a descriptor still used by another package or instance: keep it.
            lines = (result.stderr or result.stdout).strip().splitlines()
            self.runner.say("    kept {} {}: {}".format(kind, ident, lines[-1] if lines else "in use"))
            return "kept"
        return "deleted"

    # -- instances ---------------------------------------------------------------------------
    def show_literal(self, kind, name):
        """The ns/nsi/vnf record as a dict, or None when it does not exist (or in a dry run)."""
        result = self.read("{}-show".format(kind), name, "--literal")
        if not result.ok or not result.stdout.strip():
            return None
        try:
            data = yaml.safe_load(result.stdout)
        except yaml.YAMLError as exc:
            raise OsmError("cannot parse `osm {}-show {} --literal`: {}".format(kind, name, exc)) from None
        return data if isinstance(data, dict) else None

    def create_instance(self, kind, name, descriptor_id, vim_account, config_file):
        if kind == "ns":
            argv = ["ns-create", "--ns_name", name, "--nsd_name", descriptor_id]
        else:
            argv = ["nsi-create", "--nsi_name", name, "--nst_name", descriptor_id]
        argv += ["--vim_account", vim_account, "--config_file", config_file]
        if self.cfg.get("SSH_KEYS"):
            argv += ["--ssh_keys", self.cfg.get("SSH_KEYS")]
        self.run(*argv)

    def delete_instance(self, kind, name):
        if not self.read("{}-show".format(kind), name, dry_present=True).ok:
            return False
        self.run("{}-delete".format(kind), name, "--wait", timeout=self.cfg.seconds("DELETE_TIMEOUT"))
        return True

    def nsi_ns_ids(self, nsi_record):
        """The NS instance ids an NSI created (NBI keeps them in _admin.nsrs-detailed-list)."""
        admin = (nsi_record or {}).get("_admin") or {}
        ids = [item.get("nsrId") for item in admin.get("nsrs-detailed-list") or [] if item.get("nsrId")]
        if not ids:
            ids = [
                ref.get("nsr-ref")
                for ref in (nsi_record or {}).get("nsr-ref-list") or []
                if ref.get("nsr-ref")
            ]
        return ids

    # -- day-2 actions -------------------------------------------------------------------------
    def action(self, ns, member, primitive, params=None, timeout=None, vdu_id=None, count_index=None):
        """Run a primitive with --wait and return its results (a dict), read back with ns-op-show.
        These actions only look at the VNF, so they count as reads (a dry run prints them).
        A member whose execution environment is VDU-level (``vdu_members``: the SPGW-U, which
        scales) is addressed by its VDU and count index (instance 0 unless told)."""
        argv = ["ns-action", ns, "--vnf_name", member, "--action_name", primitive]
        vdu_id = vdu_id or self.vdu_members.get(member)
        if vdu_id:
            # osmclient's option is --vdu_count (v8 osm.py and the newest cli_commands/nslcm.py
            # ns-action); it sends it as the NBI body field vdu_count_index.
            argv += ["--vdu_id", vdu_id, "--vdu_count", str(count_index or 0)]
        if params:
            argv += ["--params", json.dumps(params, sort_keys=True)]
        argv.append("--wait")
        timeout = timeout or self.cfg.seconds("ACTION_TIMEOUT")
        result = self.read(*argv, timeout=timeout)
        if self.runner.dry_run:
            self.read("ns-op-show", DRY_OP_ID, "--literal")
            return None
        if not result.ok:
            raise OsmError(
                "ns-action {} on {} failed: {}".format(
                    primitive, member, self.runner.redact((result.stderr or result.stdout).strip()[-500:])
                )
            )
        ids = _UUID.findall(result.stdout)
        if not ids:
            raise OsmError(
                "ns-action {} on {} printed no operation id: {!r}".format(
                    primitive, member, result.stdout[-300:]
                )
            )
        op = self.read("ns-op-show", ids[-1], "--literal", timeout=timeout)
        if not op.ok:
            raise OsmError(
                "ns-op-show {} failed: {}".format(ids[-1], (op.stderr or op.stdout).strip()[-300:])
            )
        return parse_op_results(op.stdout, primitive, member)


def parse_op_results(text, primitive="", member=""):
    """The action results from `osm ns-op-show --literal`.

    LCM stores the Juju action's results as detailed-status: a mapping in the record, or its text
    (Python repr or YAML) depending on the release; all are accepted. A failed operation raises
    with OSM's own message."""
    try:
        op = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise OsmError("ns-op-show output is not YAML: {}".format(exc)) from None
    if not isinstance(op, dict):
        raise OsmError("ns-op-show output is not a mapping")
    state = str(op.get("operationState") or op.get("operation-state") or "").upper()
    detail = op.get("detailed-status")
    if state and state not in ("COMPLETED", "PARTIALLY_COMPLETED"):
        raise OsmError("action {} on {} ended {}: {}".format(primitive, member, state, detail))
    if isinstance(detail, dict):
        return detail
    if isinstance(detail, str):
        for loader in (yaml.safe_load, _literal):
            try:
                value = loader(detail)
            except Exception:  # noqa: BLE001 - any parser failure means: try the next format
                continue
            if isinstance(value, dict):
                return value
    raise OsmError("action {} on {}: no results in detailed-status {!r}".format(primitive, member, detail))


def _literal(text):
    import ast

    return ast.literal_eval(text)
