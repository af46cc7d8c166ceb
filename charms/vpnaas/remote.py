"""The one remote step of a reconcile: a bash script sent over SSH on stdin, and its report.

Everything the VNF must do for the tunnels happens in this one script, in one SSH session:
detect the init system and the WireGuard implementation, create missing keys (the private key
is generated and stays on the VNF), write configs whole and atomically, bring devices up or
apply peer changes with ``wg syncconf`` (existing sessions survive), sync routes, remove
devices that are no longer wanted, and report public keys and peer state. Every value is
validated before it is put in the script and is passed base64-encoded or shell-quoted; the
script is idempotent, so running it twice leaves the same state.

The report never contains the private key: only peer lines of ``wg show dump`` are read.
"""
import base64
import re
import shlex

from vpnaas import validation, wgconfig

_LIBRARY = r'''
set -Eeo pipefail   # -E: the ERR trap below also fires inside functions
umask 077
export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${PATH:-}"
out() { printf '%s\n' "$*"; }
fail() { out "ERROR $*"; exit 3; }
trap 'out "ERROR step failed (line $LINENO): $BASH_COMMAND"; exit 3' ERR
for t in wg wg-quick ip base64; do
  command -v "$t" >/dev/null 2>&1 || fail "missing-tool $t (install wireguard-tools and iproute2 on the VNF)"
done
if [ -d /run/systemd/system ]; then init=systemd; else init=none; fi
out "INIT $init"
ip link del vpnaas-probe 2>/dev/null || true   # left over if an earlier run was killed here
if ip link add vpnaas-probe type wireguard 2>/dev/null; then
  ip link del vpnaas-probe; out "IMPL kernel"
else
  ug="${WG_QUICK_USERSPACE_IMPLEMENTATION:-$(command -v wireguard-go || true)}"
  [ -n "$ug" ] && [ -x "$ug" ] \
    || fail "no-wireguard the kernel has no WireGuard module and wireguard-go is not installed"
  export WG_QUICK_USERSPACE_IMPLEMENTATION="$ug"
  ver=$("$ug" --version 2>/dev/null | head -n 1 | awk '{print $2}') || true
  out "IMPL userspace $ug ${ver:-unknown}"
fi
mkdir -p /etc/wireguard && chmod 700 /etc/wireguard
MARKER='__MARKER__'

write_file() {  # path mode base64-content: written whole, then renamed over the target
  printf '%s' "$3" | base64 -d > "$1.vpnaas-tmp"
  chmod "$2" "$1.vpnaas-tmp"
  install_file "$1.vpnaas-tmp" "$1"
}

install_file() {  # tmp target: replace target atomically, only if the content differs
  if cmp -s "$1" "$2"; then rm -f "$1"; else mv -f "$1" "$2"; fi
}

iface_signature() {  # the [Interface] settings that wg syncconf cannot change
  grep -E '^(Address|MTU|Table|PreUp|PreDown|PostDown) =' "$1" 2>/dev/null || true
}

device_down() {
  if [ "$init" = systemd ]; then systemctl disable --now "wg-quick@$1" >/dev/null 2>&1 || true; fi
  wg-quick down "$1" >/dev/null 2>&1 || true
  ip link del "$1" >/dev/null 2>&1 || true
}

device_up() {
  if [ "$init" = systemd ]; then
    systemctl enable "wg-quick@$1" >/dev/null 2>&1
    systemctl restart "wg-quick@$1"
  else
    wg-quick down "$1" >/dev/null 2>&1 || true
    ip link del "$1" >/dev/null 2>&1 || true
    local msg
    if ! msg=$(wg-quick up "$1" 2>&1); then fail "wg-quick up $1 failed: $(printf '%s' "$msg" | tail -n 1)"; fi
  fi
}

sync_routes() {  # dev, then "prefix|src" items: exactly these routes point into dev
  local dev=$1; shift
  local r p s dst rest keep fam
  for r in "$@"; do
    p=${r%%|*}; s=${r#*|}
    if [ -n "$s" ]; then ip route replace "$p" dev "$dev" src "$s"; else ip route replace "$p" dev "$dev"; fi
  done
  for fam in -4 -6; do
    # (a VNF booted without IPv6 has no -6 table: nothing to clean there)
    { ip "$fam" -o route show dev "$dev" 2>/dev/null || true; } | while read -r dst rest; do
      case " $rest " in *" proto kernel "*) continue ;; esac
      case "$dst" in
        default) if [ "$fam" = -4 ]; then dst=0.0.0.0/0; else dst=::/0; fi ;;
        */*) ;;
        *) if [ "$fam" = -4 ]; then dst="$dst/32"; else dst="$dst/128"; fi ;;
      esac
      keep=0
      for r in "$@"; do [ "${r%%|*}" = "$dst" ] && keep=1; done
      [ "$keep" = 1 ] || ip route del "$dst" dev "$dev" || true
    done
  done
}

ensure_device() {  # dev rotate(0|1) restart(0|1) body-base64 routes...
  local dev=$1 rotate=$2 restart=$3 body=$4; shift 4
  local key="/etc/wireguard/$dev.key" conf="/etc/wireguard/$dev.conf" pub priv stripped
  # A missing, empty or corrupt key (wg pubkey refuses it) is replaced by a new one.
  if [ "$rotate" = 1 ] || ! pub=$(wg pubkey < "$key" 2>/dev/null); then
    wg genkey > "$key.vpnaas-tmp"; mv -f "$key.vpnaas-tmp" "$key"
    pub=$(wg pubkey < "$key")
  fi
  out "PUBKEY $dev $pub"
  priv=$(cat "$key")
  { printf '[Interface]\nPrivateKey = %s\n' "$priv"; printf '%s' "$body" | base64 -d; } > "$conf.vpnaas-tmp"
  chmod 600 "$conf.vpnaas-tmp"
  if [ "$restart" = 0 ] && wg show "$dev" >/dev/null 2>&1 \
     && [ "$(iface_signature "$conf")" = "$(iface_signature "$conf.vpnaas-tmp")" ]; then
    install_file "$conf.vpnaas-tmp" "$conf"
    # strip first: a failure inside <(...) would go unnoticed and syncconf would apply nothing
    stripped=$(wg-quick strip "$dev")
    wg syncconf "$dev" <(printf '%s\n' "$stripped")
    sync_routes "$dev" "$@"
    out "APPLIED $dev syncconf"
  else
    install_file "$conf.vpnaas-tmp" "$conf"
    device_up "$dev"
    sync_routes "$dev" "$@"
    out "APPLIED $dev up"
  fi
}

remove_stale_devices() {  # wanted devices as arguments; only files carrying our marker are touched
  local f dev w keep
  for f in /etc/wireguard/wg-*.conf; do
    [ -e "$f" ] || continue
    grep -qxF "$MARKER" "$f" || continue
    dev=$(basename "$f" .conf); keep=0
    for w in "$@"; do [ "$w" = "$dev" ] && keep=1; done
    [ "$keep" = 1 ] && continue
    device_down "$dev"
    rm -f "$f" "/etc/wireguard/$dev.key"
    out "REMOVED $dev"
  done
}

has_handshake() {  # every peer of every named device has completed a handshake
  local dev
  for dev in "$@"; do
    wg show "$dev" latest-handshakes >/dev/null 2>&1 || return 1
    [ -n "$(wg show "$dev" peers)" ] || return 1
    wg show "$dev" latest-handshakes | awk '$2 == 0 {bad=1} END {exit bad}' || return 1
  done
}

report() {
  out "HOST $(hostname)"
  out "NOW $(date +%s)"
  local dev
  for dev in "$@"; do
    if wg show "$dev" >/dev/null 2>&1; then out "UP $dev"; else out "DOWN $dev"; continue; fi
    # Peer lines only: the first line of the dump holds the private key.
    wg show "$dev" dump | tail -n +2 | while IFS= read -r line; do out "PEER $dev $line"; done
  done
}
'''.replace("__MARKER__", wgconfig.MARKER)


def _b64(text):
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def build_script(plan, rotate=(), restart=False, component=""):
    """The whole remote script for ``plan``. ``rotate`` names devices that get a new key pair.

    ``component`` is bash a component charm adds (e.g. start its service once its tunnels have
    a handshake); it runs after the tunnels are applied, in the same session, and may report
    ``COMPONENT <key> <value>`` lines. Helpers it can use: out, fail, has_handshake <dev>..."""
    q = shlex.quote
    lines = [_LIBRARY]
    lines.append("write_file {} 700 {}".format(q(wgconfig.DUMMY_SCRIPT),
                                               q(_b64(wgconfig.render_dummy_script(plan.service_addresses)))))
    lines.append(q(wgconfig.DUMMY_SCRIPT))
    names = []
    for dev in plan.devices:
        names.append(dev.name)
        routes = ["{}|{}".format(prefix, src) for prefix, src in dev.routes()]
        lines.append(" ".join(["ensure_device", q(dev.name), "1" if dev.name in rotate else "0",
                               "1" if restart else "0", q(_b64(wgconfig.render_body(dev)))]
                              + [q(r) for r in routes]))
    lines.append(" ".join(["remove_stale_devices"] + [q(n) for n in names]))
    if component:
        lines.append(component)
    lines.append(" ".join(["report"] + [q(n) for n in names]))
    lines.append("out DONE")
    return "\n".join(lines) + "\n"


def remote_command(username, timeout=None):
    """The command line the SSH session runs; the script itself comes on stdin.

    The script is saved to a private temporary file first and run with stdin from /dev/null, so
    that no program it starts can swallow the rest of the script; ``timeout`` stops it on the VNF
    too (closing the channel alone would leave it running and racing the next reconcile)."""
    runner = "bash \"$f\" </dev/null"
    if timeout:
        runner = "timeout -k 5 {} {}".format(int(timeout), runner)
    inner = 'f=$(mktemp) && cat > "$f" && {}; rc=$?; rm -f "$f"; exit $rc'.format(runner)
    return ("bash -c " if username == "root" else "sudo -n bash -c ") + shlex.quote(inner)


class RemoteError(Exception):
    pass


class Observation(object):
    """What the VNF reported."""

    def __init__(self):
        self.init = ""
        self.implementation = ""
        self.implementation_detail = ""
        self.public_keys = {}
        self.up = {}
        self.peers = {}   # device -> list of dicts
        self.now = 0
        self.applied = []
        self.removed = []
        self.hostname = ""
        self.component = {}

    def handshake_ages(self, device):
        """Seconds since the latest handshake of each peer (None: never)."""
        return {p["public-key"]: p["latest-handshake-age"] for p in self.peers.get(device, [])}

    def as_tunnels(self, plan):
        """The tunnel-status document: one entry per planned device."""
        out = []
        for dev in plan.devices:
            out.append({"device": dev.name, "endpoint": dev.endpoint, "up": self.up.get(dev.name, False),
                        "public-key": self.public_keys.get(dev.name, ""), "listen-port": dev.listen_port,
                        "address": str(dev.address), "peers": self.peers.get(dev.name, [])})
        return out


_KEYLIKE = re.compile(r"[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=")


def scrub(text):
    """Remote error text with anything shaped like a WireGuard key replaced: wg echoes a value it
    cannot parse, and such text ends up in logs and the unit status."""
    return _KEYLIKE.sub("<key>", text)


def parse_report(text, rc=0, stderr=""):
    """Parse the remote step's report. ``rc`` and ``stderr`` only make a failure's message precise."""
    try:
        return _parse_report(text, rc, stderr)
    except (ValueError, IndexError) as e:
        raise RemoteError("unexpected report from the VNF: {}".format(scrub(str(e)))) from None


def _parse_report(text, rc, stderr):
    obs = Observation()
    finished = False
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "ERROR":
            raise RemoteError(scrub(rest))
        if kind == "INIT":
            obs.init = rest
        elif kind == "IMPL":
            parts = rest.split(" ")
            obs.implementation = parts[0]
            obs.implementation_detail = " ".join(parts[1:])
        elif kind == "PUBKEY":
            dev, _, key = rest.partition(" ")
            try:
                obs.public_keys[dev] = validation.public_key(key, "public key of " + dev)
            except validation.InvalidValue as e:
                raise RemoteError("the VNF reported a malformed key: {}".format(scrub(str(e)))) from None
        elif kind == "UP":
            obs.up[rest] = True
        elif kind == "DOWN":
            obs.up[rest] = False
        elif kind == "APPLIED":
            obs.applied.append(rest)
        elif kind == "REMOVED":
            obs.removed.append(rest)
        elif kind == "COMPONENT":
            key, _, value = rest.partition(" ")
            obs.component[key] = value
        elif kind == "HOST":
            obs.hostname = rest
        elif kind == "NOW":
            obs.now = int(rest)
        elif kind == "PEER":
            dev, _, dump = rest.partition(" ")
            obs.peers.setdefault(dev, []).append(_peer_from_dump(dump, obs.now))
        elif kind == "DONE":
            finished = True
    if not finished:
        last = (stderr.strip().splitlines() or text.strip().splitlines() or ["no output"])[-1]
        raise RemoteError("the remote step ended early (exit {}): {}".format(rc, scrub(last[-200:])))
    return obs


def _peer_from_dump(dump, now):
    # public-key preshared-key endpoint allowed-ips latest-handshake rx tx keepalive
    fields = dump.split("\t")
    if len(fields) < 8:
        raise RemoteError("unexpected wg dump line with {} fields".format(len(fields)))
    handshake = int(fields[4])
    return {
        "public-key": fields[0],
        "endpoint": "" if fields[2] == "(none)" else fields[2],
        "allowed-ips": [] if fields[3] == "(none)" else fields[3].split(","),
        "latest-handshake-age": (max(0, now - handshake) if handshake else None),
        "rx-bytes": int(fields[5]),
        "tx-bytes": int(fields[6]),
    }
