"""OAI component steps as remote bash scripts: install, configure, and the start gate.

Pure module (no ops, no SSH). A component (``oai_hss``, ``oai_mme``, ``oai_spgw``, ``oai_enb``)
describes its pinned sources, build steps, configuration files and service; this module turns
that, plus validated charm config and the tunnel plan, into the scripts the charm sends over SSH
on stdin (``remote.remote_command``), and reads their reports back.

Script conventions (shared with ``remote``): every line the charm reads starts with a keyword --
``PROGRESS <n>/<m> <text>`` (progress display), ``NOTE <text>``, ``RESULT <key> <value>``,
``ERROR <text>`` (the step failed) and, in the reconcile's component part, ``COMPONENT <key>
<value>``. Every value is validated before it reaches a script and is put in with shlex.quote or
base64; secrets (LTE K/OP) only ever appear in one variable assignment and travel to the files
that need them on stdin, so they are never on a command line, in the report or in a log.
"""

import base64
import json
import shlex

from vpnaas import oai_render, validation
from vpnaas import oai_validation as ov
from vpnaas.validation import InvalidValue

PREFIX = "/usr/local/etc/oai"
SOURCE_ROOT = "/opt/oai"
STATE_DIR = "/var/lib/vpnaas/oai"
LOG_DIR = "/var/log/vpnaas"
SBIN = "/usr/local/sbin"
CLOUD_INIT_MARKER = "/var/lib/vpnaas/cloud-init-done"
CLOUD_INIT_TIMEOUT = 1800
DPKG_LOCK_TIMEOUT = 600
FETCH_TIMEOUT = 1800
#: How long the gate waits, inside one reconcile, for a handshake that is about to happen
#: (the peer was configured a moment ago): a bounded wait on the real condition, not a sleep.
GATE_HANDSHAKE_WAIT = 8

q = shlex.quote


def b64(text):
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


# --------------------------------------------------------------------------- bash library
LIBRARY = (
    r"""
set -Eeuo pipefail
umask 022
export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
export DEBIAN_FRONTEND=noninteractive LC_ALL=C
out() { printf '%s\n' "$*"; }
fail() { out "ERROR $*"; exit 3; }
trap 'out "ERROR step failed (line $LINENO): $BASH_COMMAND"; exit 3' ERR
progress() { out "PROGRESS $*"; }
OAI_STATE=__STATE__
OAI_LOGS=__LOGS__
mkdir -p "$OAI_STATE" "$OAI_LOGS"
chmod 700 "$OAI_STATE"

wait_cloud_init() {  # limit: cloud-init must have finished (it installs packages and holds dpkg)
  local limit=$1 rc=0
  if command -v cloud-init >/dev/null 2>&1; then
    timeout "$limit" cloud-init status --wait >/dev/null 2>&1 || rc=$?
    [ "$rc" != 124 ] || fail "cloud-init still running after ${limit}s (see /var/log/cloud-init-output.log)"
    [ "$rc" = 0 ] || out "NOTE cloud-init finished with status $rc; checking the prerequisites here"
  else
    out "NOTE no cloud-init on this machine"
  fi
  [ -e __MARKER__ ] || out "NOTE readiness marker __MARKER__ missing; installing what is missing here"
}

dpkg_locked() {
  command -v fuser >/dev/null 2>&1 || return 1
  fuser /var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock >/dev/null 2>&1
}

wait_dpkg_lock() {  # bounded wait on the real condition (apt < 1.9 ignores DPkg::Lock::Timeout)
  local limit=$1 start=$SECONDS
  while dpkg_locked; do
    [ $((SECONDS - start)) -lt "$limit" ] \
      || fail "the dpkg lock is still held after ${limit}s (unattended-upgrades?)"
    sleep 3
  done
}

apt_get() {
  wait_dpkg_lock __LOCK__
  apt-get -q -y -o DPkg::Lock::Timeout=__LOCK__ "$@"
}

ensure_packages() {
  local p missing=""
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
  [ -n "$missing" ] || return 0
  out "NOTE installing$missing"
  apt_get update >/dev/null || fail "apt-get update failed"
  # shellcheck disable=SC2086
  apt_get install --no-install-recommends $missing >/dev/null || fail "apt-get install$missing failed"
}

fetch_source() {  # dir repo ref: the exact ref, shallow; a changed ref cleans the tree
  local dir=$1 repo=$2 ref=$3 before=""
  mkdir -p "$(dirname "$dir")"
  if [ -d "$dir/.git" ]; then
    before=$(git -C "$dir" rev-parse -q --verify HEAD 2>/dev/null || true)
  else
    rm -rf "$dir"
    git init -q "$dir"
  fi
  git -C "$dir" remote remove origin >/dev/null 2>&1 || true
  git -C "$dir" remote add origin "$repo"
  timeout __FETCH__ git -C "$dir" fetch -q --depth 1 --force origin "$ref" \
    || fail "cannot fetch $ref from $repo (network? ref exists?)"
  OAI_COMMIT=$(git -C "$dir" rev-parse FETCH_HEAD)
  if [ "$before" != "$OAI_COMMIT" ]; then
    git -C "$dir" checkout -q --force --detach FETCH_HEAD
    git -C "$dir" clean -q -ffdx
  fi
  if [ -f "$dir/.gitmodules" ]; then
    timeout __FETCH__ git -C "$dir" submodule -q update --init --recursive \
      || fail "cannot fetch the submodules of $repo"
  fi
}

run_logged() {  # log label command...: output to the log, a clear message on failure
  local log=$1 label=$2; shift 2
  out "NOTE $label: $*" >> "$log"
  if ! "$@" >> "$log" 2>&1; then
    fail "$label failed; last lines: $(tail -n 5 "$log" | tr '\n' ' ' | cut -c1-400) (full log $log)"
  fi
}

render_files() {  # spec (base64 JSON on stdin of the renderer); sets OAI_CHANGED
  local report
  report=$(printf '%s' "$1" | base64 -d | python3 "$OAI_STATE/render.py") || {
    printf '%s\n' "$report" | grep '^ERROR ' | head -n 1 | grep . || fail "rendering the configuration failed"
    exit 3
  }
  OAI_CHANGED="$OAI_CHANGED$(printf '%s' "$report" | grep '^CHANGED ' | cut -c9- | tr '\n' ' ')"
}

has_addr() {  # ip: configured on some interface of this VNF
  ip -o -4 addr show | awk '{split($4, a, "/"); print a[1]}' | grep -qxF "$1"
}

require_addr() {  # ip what
  has_addr "$1" || fail "$2 $1 is not configured on any interface of this VNF (the tunnel reconcile" \
    "puts service addresses on the dummy device; check the unit status and the *-service-addresses options)"
}

run_detached() {  # name limit body-b64: survives a dropped SSH session; a rerun attaches to it
  local name=$1 limit=$2 body=$3 pid="" rc=0 status="" err=""
  local pidf="$OAI_STATE/$name.pid" rcf="$OAI_STATE/$name.rc" log="$OAI_LOGS/oai-$name.log"
  if [ -s "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null \
     && grep -q "$name.sh" "/proc/$(cat "$pidf")/cmdline" 2>/dev/null; then
    pid=$(cat "$pidf")
    out "NOTE attaching to the $name run already in progress (pid $pid)"
  else
    printf '%s' "$body" | base64 -d > "$OAI_STATE/$name.sh"
    chmod 700 "$OAI_STATE/$name.sh"
    rm -f "$rcf"
    : > "$log"
    setsid bash -c 'bash "$1"; echo $? > "$2.tmp"; mv -f "$2.tmp" "$2"' _ "$OAI_STATE/$name.sh" "$rcf" \
      >> "$log" 2>&1 < /dev/null &
    pid=$!
    echo "$pid" > "$pidf"
  fi
  timeout "$limit" tail -n +1 -F --pid="$pid" "$log" 2>/dev/null | while IFS= read -r line; do
    case "$line" in PROGRESS\ *|NOTE\ *|RESULT\ *) out "$line" ;; esac
  done || rc=$?
  if kill -0 "$pid" 2>/dev/null && [ ! -e "$rcf" ]; then
    fail "$name still running after ${limit}s; it goes on on the VNF:" \
      "run the action again to keep waiting (log $log)"
  fi
  [ -s "$rcf" ] || fail "$name ended without an exit status (killed?); see $log"
  status=$(cat "$rcf")
  if [ "$status" != 0 ]; then
    err=$(grep -m 1 '^ERROR ' "$log" | cut -c7- || true)
    fail "${err:-$name exited with status $status} (log $log)"
  fi
}
""".replace("__STATE__", STATE_DIR)
    .replace("__LOGS__", LOG_DIR)
    .replace("__MARKER__", CLOUD_INIT_MARKER)
    .replace("__LOCK__", str(DPKG_LOCK_TIMEOUT))
    .replace("__FETCH__", str(FETCH_TIMEOUT))
)


def _install_renderer():
    return "printf '%s' {} | base64 -d > \"$OAI_STATE/render.py\"\n".format(q(b64(oai_render.SOURCE)))


# --------------------------------------------------------------------------- components
class Component(object):
    """What a component charm contributes. Subclasses fill the class attributes and hooks."""

    name = ""  # hss, mme, spgwc, spgwu, enb
    title = ""  # HSS, MME, ...
    repository = ""  # pinned default source (prior-art §5)
    ref = ""
    program = ""  # file name of the built program
    workdir = ""  # empty: the directory of the built program
    env = {}
    #: Debian packages the charm's own steps need on the VNF (cloud-init normally has them).
    prerequisites = ("git", "python3", "python3-yaml", "psmisc")
    secret_keys = ()  # keys of the values dict that hold secrets

    @property
    def service(self):
        return "oai-" + self.name

    @property
    def source_dir(self):
        return "{}/{}".format(SOURCE_ROOT, self.name)

    @property
    def binary(self):
        """Stable path of the program: a link made by oai-install to what the build produced."""
        return "{}/bin/{}".format(SOURCE_ROOT, self.program)

    def binary_candidates(self):
        """Where the build may have put the program, most likely first."""
        raise NotImplementedError

    @property
    def built_marker(self):
        return "{}/{}.built".format(STATE_DIR, self.name)

    @property
    def configured_marker(self):
        return "{}/{}.configured".format(STATE_DIR, self.name)

    # -- to be provided by the component
    def build_steps(self):
        """[(label, bash)], run in the source directory; output goes to the install log."""
        raise NotImplementedError

    def config_values(self, config, plan):
        """Validated values for configure (raises InvalidValue)."""
        raise NotImplementedError

    def configure_body(self, values):
        """Bash that renders and applies the configuration (library functions available)."""
        raise NotImplementedError

    def run_argv(self, values):
        """The service's command line (list)."""
        raise NotImplementedError

    def setup_lines(self, values):
        """Bash run before every start (and at the end of configure): what does not survive a reboot."""
        return []

    def extra_files(self, values):
        """[(path, mode, content)] written by configure, e.g. the readiness check oai-<c>-ready."""
        return []

    def before_units(self):
        """systemd units the service starts after (besides the tunnels)."""
        return []


# --------------------------------------------------------------------------- values
def common_values(config):
    mcc = ov.digits(config.get("mcc"), "mcc", 3, 3)
    mnc = ov.digits(config.get("mnc"), "mnc", 2, 3)
    return {
        "realm": ov.realm(config.get("realm")),
        "mcc": mcc,
        "mnc": mnc,
        "tac": ov.integer(config.get("tac"), "tac", 1, 65533),
    }


def source(component, config):
    """(repository, ref): the charm's pinned default unless overridden in config."""
    repo = (config.get("oai-repository") or "").strip() or component.repository
    ref = (config.get("oai-ref") or "").strip() or component.ref
    return ov.repository(repo), ov.git_ref(ref)


def own_address(config, endpoint, title):
    """This VNF's service address on a reference point: the first of <ep>-service-addresses."""
    key = endpoint + "-service-addresses"
    addrs = validation.service_address_list(config.get(key) or "", key)
    v4 = [a for a in addrs if a.version == 4]
    if not v4:
        raise InvalidValue(
            "{}: not set; the {} needs its {} service address (IPv4), e.g. 172.16.6.2/32".format(
                key, title, endpoint.upper()
            )
        )
    return v4[0]


def peer_address(config, plan, endpoint, option):
    """The peer's service address on ``endpoint``: the explicit option wins (variants without
    tunnels set it), otherwise the first service prefix the related peer published."""
    explicit = (config.get(option) or "").strip()
    if explicit:
        return ov.ipv4(explicit, option)
    dev = plan.device(endpoint) if plan is not None else None
    for peer in dev.peers if dev is not None else []:
        for net in peer.allowed_ips[1:]:
            if net.version == 4 and net.prefixlen == 32:
                return str(net.network_address)
    raise InvalidValue(
        "{}: not set and the {} relation has no peer service address yet (set {} or "
        "relate {} and wait for the peer to publish)".format(option, endpoint, option, endpoint)
    )


def redact(text, secrets):
    """``text`` with every secret value replaced; for anything that leaves the charm."""
    out = text or ""
    for s in secrets:
        if s:
            for form in (s, s.lower(), s.upper()):
                out = out.replace(form, "***")
    return out


def values_secrets(component, values):
    return [values[k] for k in component.secret_keys if values.get(k)]


# --------------------------------------------------------------------------- install
def install_timeout(config):
    return ov.integer(config.get("oai-install-timeout", 7200), "oai-install-timeout", 300, 86400)


def install_plan(component, config):
    """Validated install inputs: {"repository", "ref", "timeout"}."""
    repo, ref = source(component, config)
    return {"repository": repo, "ref": ref, "timeout": install_timeout(config)}


def install_body(component, inputs):
    """The detached install script: waits, fetch, build, marker. Output goes to the install log."""
    steps = component.build_steps()
    total = 3 + len(steps) + 1
    log = "{}/oai-{}-build.log".format(LOG_DIR, component.name)
    repo, ref = inputs["repository"], inputs["ref"]
    lines = [
        LIBRARY,
        "SRC={}; REPO={}; REF={}; BUILT={}; LOG={}".format(
            q(component.source_dir), q(repo), q(ref), q(component.built_marker), q(log)
        ),
        # The marker names repository and ref: the same inputs again are a no-op.
        'if [ -s "$BUILT" ] && [ "$(cut -d" " -f1,2 "$BUILT")" = "$REPO $REF" ] && [ -x {} ]; then'.format(
            q(component.binary)
        ),
        '  out "RESULT state unchanged"; out "RESULT commit $(cut -d" " -f3 "$BUILT")"; exit 0',
        "fi",
        'progress "1/{} waiting for cloud-init"'.format(total),
        "wait_cloud_init {}".format(CLOUD_INIT_TIMEOUT),
        'progress "2/{} waiting for the dpkg lock and the prerequisites"'.format(total),
        "ensure_packages {}".format(" ".join(q(p) for p in component.prerequisites)),
        'progress "3/{} fetching {} {}"'.format(total, q(component.title), q(ref)),
        'fetch_source "$SRC" "$REPO" "$REF"',
        ': > "$LOG"',
    ]
    for i, (label, command) in enumerate(steps):
        lines.append('progress "{}/{} {}"'.format(4 + i, total, label))
        lines.append("wait_dpkg_lock {}".format(DPKG_LOCK_TIMEOUT))
        lines.append('cd "$SRC"')
        lines.append('run_logged "$LOG" {} bash -c {}'.format(q(label), q("set -eo pipefail\n" + command)))
    # The service always runs the stable path component.binary, a link to what the build made.
    candidates = " ".join(q(c) for c in component.binary_candidates())
    lines += [
        'progress "{}/{} checking the build"'.format(total, total),
        "found=''; for b in {}; do if [ -x \"$b\" ]; then found=$b; break; fi; done".format(candidates),
        '[ -n "$found" ] || fail {}'.format(
            q(
                "the build finished but none of {} exists (see {})".format(
                    ", ".join(component.binary_candidates()), log
                )
            )
        ),
        'mkdir -p {d} && ln -sfn "$found" {b}'.format(
            d=q(component.binary.rsplit("/", 1)[0]), b=q(component.binary)
        ),
        'printf "%s %s %s\\n" "$REPO" "$REF" "$OAI_COMMIT" > "$BUILT.tmp" && mv -f "$BUILT.tmp" "$BUILT"',
        'out "RESULT state built"',
        'out "RESULT commit $OAI_COMMIT"',
    ]
    return "\n".join(lines) + "\n"


def install_script(component, inputs):
    """The foreground script: starts (or attaches to) the detached install and follows it."""
    body = install_body(component, inputs)
    return (
        "\n".join(
            [
                LIBRARY,
                "run_detached {} {} {}".format(
                    q("install-" + component.name), inputs["timeout"], q(b64(body))
                ),
                "out DONE",
            ]
        )
        + "\n"
    )


# --------------------------------------------------------------------------- configure
def configure_script(component, values):
    """Render and apply the configuration; requires a completed install."""
    secrets = values_secrets(component, values)
    setup = render_setup_script(component, values)
    run = render_run_script(component, values)
    lines = (
        [
            LIBRARY,
            GATE_FUNCTIONS,
            "OAI_CHANGED=''",
            "[ -s {m} ] || fail {msg}".format(
                m=q(component.built_marker),
                msg=q(
                    "oai-install has not completed on this VNF (no {}): run oai-install first".format(
                        component.built_marker
                    )
                ),
            ),
            _install_renderer(),
            "mkdir -p {p} {p}/freeDiameter".format(p=q(PREFIX)),
            _put("{}/oai-{}-setup".format(SBIN, component.name), "755", setup),
            _put("{}/oai-{}-run".format(SBIN, component.name), "755", run),
        ]
        + [_put(path, mode, content) for path, mode, content in component.extra_files(values)]
        + [
            "{}/oai-{}-setup".format(SBIN, component.name),
            component.configure_body(values),
            # A running service only picks up a new configuration when it restarts: stop it here;
            # the reconcile that ends the action starts it again (after the tunnel handshake).
            'if [ -n "$OAI_CHANGED" ]; then',
            '  out "RESULT changed $OAI_CHANGED"',
            "  if {}; then {}; out 'RESULT restart needed'; fi".format(
                _running_check(component), _stop_command(component)
            ),
            "else out 'RESULT changed none'; fi",
            "date -u +%FT%TZ > {}".format(q(component.configured_marker)),
            "out DONE",
        ]
    )
    script = "\n".join(lines) + "\n"
    for s in secrets:  # defence in depth: secrets only as base64 inside assignments
        if s and s in script:
            raise InvalidValue("internal error: a secret would be sent in clear text; nothing was sent")
    return script


def _put(path, mode, content):
    """Write ``content`` to ``path`` whole and atomically, only when it changed."""
    return (
        "oai_put_tmp=$(mktemp {d}/.vpnaas.XXXXXX); printf '%s' {c} | base64 -d > \"$oai_put_tmp\"; "
        'chmod {m} "$oai_put_tmp"; if cmp -s "$oai_put_tmp" {p}; then rm -f "$oai_put_tmp"; '
        'else mv -f "$oai_put_tmp" {p}; OAI_CHANGED="$OAI_CHANGED"{p}\' \'; fi'
    ).format(d=q(path.rsplit("/", 1)[0]), c=q(b64(content)), m=mode, p=q(path))


def spec_assignment(var, spec):
    """A JSON spec for the renderer as one base64 assignment (the only place a secret appears)."""
    return "{}={}".format(var, q(base64.b64encode(json.dumps(spec, sort_keys=True).encode()).decode()))


def hosts_lines(entries):
    """Bash that puts ``entries`` [(ip, name...)] first in /etc/hosts (rewritten whole; again at
    every start, since cloud-init's manage_etc_hosts rewrites the file at boot)."""
    block = "".join("{} {} # vpnaas-oai\n".format(ip, " ".join(names)) for ip, names in entries)
    return [
        "hosts_tmp=$(mktemp /etc/.hosts.vpnaas.XXXXXX)",
        "{{ printf '%s' {}; grep -v '# vpnaas-oai$' /etc/hosts || true; }} > \"$hosts_tmp\"".format(q(block)),
        'chmod 644 "$hosts_tmp"',
        'if cmp -s "$hosts_tmp" /etc/hosts; then rm -f "$hosts_tmp"; else mv -f "$hosts_tmp" /etc/hosts; fi',
    ]


def render_setup_script(component, values):
    lines = [
        "#!/bin/bash",
        "# Managed by the VPNaaS charm ({}): state that does not survive a reboot.".format(component.service),
        "set -eu",
    ]
    lines += component.setup_lines(values)
    return "\n".join(lines) + "\n"


def render_run_script(component, values):
    lines = [
        "#!/bin/bash",
        "# Managed by the VPNaaS charm ({}).".format(component.service),
        "cd {}".format(
            q(component.workdir)
            if component.workdir
            else '"$(dirname "$(readlink -f {})")"'.format(q(component.binary))
        ),
    ]
    lines += ["export {}={}".format(k, q(v)) for k, v in sorted(component.env.items())]
    lines.append("exec " + " ".join(q(a) for a in component.run_argv(values)))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- start gate
def _running_check(component):
    return "oai_is_running {} {}".format(q(component.service), q(component.binary))


def _stop_command(component):
    return "oai_stop {} {}".format(q(component.service), q(component.binary))


def render_prestart(component, devices, limit):
    """ExecStartPre: wait (bounded) until every tunnel the component talks over has a handshake."""
    return (
        "\n".join(
            [
                "#!/bin/bash",
                "# Managed by the VPNaaS charm: {} starts only once its tunnels have a handshake.".format(
                    component.service
                ),
                "set -u",
                "[ ! -x {s} ] || {s}".format(s=q("{}/oai-{}-setup".format(SBIN, component.name))),
                "limit={}".format(int(limit)),
                "devs=({})".format(" ".join(q(d) for d in devices)),
                'hs() { wg show "$1" latest-handshakes 2>/dev/null'
                " | awk 'NF == 2 {n++; if ($2 == 0) bad = 1} END {exit (n == 0 || bad)}'; }",
                "start=$SECONDS",
                "while :; do",
                "  missing=''",
                '  for d in ${devs[@]+"${devs[@]}"}; do hs "$d" || missing="$missing $d"; done',
                '  if [ -z "$missing" ]; then [ ! -x {r} ] || exec {r}; exit 0; fi'.format(
                    r=q("{}/oai-{}-ready".format(SBIN, component.name))
                ),
                '  if [ $((SECONDS - start)) -ge "$limit" ]; then',
                '    echo "no WireGuard handshake on$missing after ${limit}s" >&2; exit 1',
                "  fi",
                "  sleep 1",
                "done",
            ]
        )
        + "\n"
    )


def render_unit(component, devices):
    after = (
        ["network-online.target"]
        + ["wg-quick@{}.service".format(d) for d in devices]
        + component.before_units()
    )
    return "\n".join(
        [
            "# Managed by the VPNaaS charm.",
            "[Unit]",
            "Description=OpenAirInterface {} (VPNaaS bundle)".format(component.title),
            "Wants=network-online.target",
            "After={}".format(" ".join(after)),
            "",
            "[Service]",
            "Type=simple",
            "ExecStartPre={}/oai-{}-prestart".format(SBIN, component.name),
            "ExecStart={}/oai-{}-run".format(SBIN, component.name),
            "Restart=on-failure",
            "RestartSec=10",
            "TimeoutStartSec=infinity",
            "",
            "[Install]",
            "WantedBy=multi-user.target",
            "",
        ]
    )


GATE_FUNCTIONS = r"""
oai_mode() {
  if [ -n "${OAI_INIT:-}" ]; then echo "$OAI_INIT"
  elif [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then echo systemd
  else echo direct; fi
}
oai_pidfile() { echo "${OAI_RUN_DIR:-/run}/$1.pid"; }
oai_is_running() {  # service binary
  local pid
  if [ "$(oai_mode)" = systemd ]; then systemctl is-active --quiet "$1"; return; fi
  [ -s "$(oai_pidfile "$1")" ] || return 1
  pid=$(cat "$(oai_pidfile "$1")")
  kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qE "$1|$(basename "$2")"
}
oai_stop() {  # service binary: bounded wait for the process to go
  local pid i
  if [ "$(oai_mode)" = systemd ]; then systemctl disable --now "$1" >/dev/null 2>&1 || true; return 0; fi
  oai_is_running "$1" "$2" || { rm -f "$(oai_pidfile "$1")"; return 0; }
  pid=$(cat "$(oai_pidfile "$1")")
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$(oai_pidfile "$1")"
}
oai_start() {  # service prestart run log
  if [ "$(oai_mode)" = systemd ]; then
    systemctl reset-failed "$1" >/dev/null 2>&1 || true
    systemctl enable "$1" >/dev/null 2>&1 || return 1
    systemctl start --no-block "$1" || return 1
  else
    # No init system: run it in its own session with a pid file (not restarted at boot).
    setsid bash -c 'echo $$ > "$1"; "$2" || exit 1; exec "$3"' _ "$(oai_pidfile "$1")" "$2" "$3" \
      >> "$4" 2>&1 < /dev/null &
  fi
}
oai_put_file() {  # path mode base64: 0 when the file changed
  local tmp
  tmp=$(mktemp "$(dirname "$1")/.vpnaas.XXXXXX") || return 2
  printf '%s' "$3" | base64 -d > "$tmp"; chmod "$2" "$tmp"
  if cmp -s "$tmp" "$1"; then rm -f "$tmp"; return 1; fi
  mv -f "$tmp" "$1"
}
"""


def gate_script(component, devices, wanted, prestart_limit):
    """The component part of every reconcile (see ``charm_base.component_script``).

    Reports what is installed/configured/running. With ``wanted == "started"`` it starts the
    service only when ``has_handshake`` holds for every tunnel device of the plan (waiting at most
    GATE_HANDSHAKE_WAIT s for a handshake in progress); otherwise it reports the devices still
    without one, and a later reconcile (relation-changed, update-status) starts it. With
    ``wanted == "stopped"`` it stops the service. It never fails the reconcile: problems are
    reported as ``COMPONENT service failed <why>``."""
    svc, c = component.service, component.name
    state = "${OAI_STATE_DIR:-%s}" % STATE_DIR
    sbin = "${OAI_SBIN:-%s}" % SBIN
    unit_dir = "${OAI_UNIT_DIR:-/etc/systemd/system}"
    log = "${OAI_LOG_DIR:-%s}/%s.log" % (LOG_DIR, svc)
    devs = " ".join(q(d) for d in devices)
    prestart = b64(render_prestart(component, devices, prestart_limit))
    unit = b64(render_unit(component, devices))
    body = r"""
oai_gate() {
  local state="__STATE__" sbin="__SBIN__" unitdir="__UNITDIR__" log="__LOG__"
  local svc=__SVC__ bin=__BIN__ wanted=__WANTED__ mode pending d i
  local devs=(__DEVS__)
  if [ -s "$state/__C__.built" ]; then out "COMPONENT installed yes"; else out "COMPONENT installed no"; fi
  if [ ! -s "$state/__C__.configured" ]; then
    out "COMPONENT configured no"; out "COMPONENT service absent"; return 0
  fi
  out "COMPONENT configured yes"
  mode=$(oai_mode); out "COMPONENT mode $mode"
  mkdir -p "$sbin" "$(dirname "$log")"
  oai_put_file "$sbin/oai-__C__-prestart" 755 __PRESTART__ || true
  if [ "$mode" = systemd ] && oai_put_file "$unitdir/$svc.service" 644 __UNIT__; then
    systemctl daemon-reload || true
  fi
  pending=""
  for d in ${devs[@]+"${devs[@]}"}; do has_handshake "$d" || pending="$pending $d"; done
  if [ "$wanted" = started ] && [ -n "$pending" ] && ! oai_is_running "$svc" "$bin"; then
    for i in $(seq 1 $((__WAIT__ * 4))); do
      pending=""
      for d in ${devs[@]+"${devs[@]}"}; do has_handshake "$d" || pending="$pending $d"; done
      [ -n "$pending" ] || break
      sleep 0.25
    done
  fi
  case "$wanted" in
    started)
      if oai_is_running "$svc" "$bin"; then out "COMPONENT service running"
      elif [ -n "$pending" ]; then out "COMPONENT service pending"; out "COMPONENT pending ${pending# }"
      elif oai_start "$svc" "$sbin/oai-__C__-prestart" "$sbin/oai-__C__-run" "$log"; then
        out "COMPONENT service starting"
      else out "COMPONENT service failed could not start $svc (see $log or journalctl -u $svc)"; fi ;;
    stopped)
      oai_stop "$svc" "$bin" || true
      out "COMPONENT service stopped" ;;
    *)
      if oai_is_running "$svc" "$bin"; then out "COMPONENT service running"
      else out "COMPONENT service stopped"; fi ;;
  esac
}
oai_gate
"""
    for k, v in (
        ("__STATE__", state),
        ("__SBIN__", sbin),
        ("__UNITDIR__", unit_dir),
        ("__LOG__", log),
        ("__SVC__", q(svc)),
        ("__BIN__", q(component.binary)),
        ("__WANTED__", q(wanted or "none")),
        ("__DEVS__", devs),
        ("__C__", c),
        ("__PRESTART__", q(prestart)),
        ("__UNIT__", q(unit)),
        ("__WAIT__", "${OAI_GATE_WAIT:-%d}" % GATE_HANDSHAKE_WAIT),
    ):
        body = body.replace(k, v)
    return GATE_FUNCTIONS + body


# --------------------------------------------------------------------------- reports
class StepFailed(Exception):
    pass


def parse_step(text):
    """{"results": {key: value}, "notes": [...], "progress": last progress}; raises StepFailed."""
    results, notes, last, done = {}, [], "", False
    for line in (text or "").splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "ERROR":
            raise StepFailed(rest.strip())
        if kind == "RESULT":
            key, _, value = rest.partition(" ")
            results[key] = value.strip()
        elif kind == "NOTE":
            notes.append(rest.strip())
        elif kind == "PROGRESS":
            last = rest.strip()
        elif kind == "DONE":
            done = True
    if not done:
        raise StepFailed("the remote step ended early{}".format(" after: " + last if last else ""))
    return {"results": results, "notes": notes, "progress": last}


def progress_text(line):
    """'PROGRESS 3/7 fetching MME x' -> ('3/7', 'fetching MME x'), or None."""
    kind, _, rest = line.partition(" ")
    if kind != "PROGRESS":
        return None
    step, _, text = rest.strip().partition(" ")
    return step, text
