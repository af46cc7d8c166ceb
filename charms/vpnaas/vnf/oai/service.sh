#!/bin/bash
# oai-service: how an OAI component starts on its VNF. Installed by the VPNaaS charm as
# /usr/local/sbin/oai-service; systemd (or the charm's gate, without systemd) calls it through
# oai-<c>-prestart and oai-<c>-run.
#
#   oai-service setup <c>      what does not survive a reboot: /etc/hosts entries, loopback
#                              aliases, forwarding and the UE pool's NAT, run-time folders
#   oai-service prestart <c>   setup, then a bounded wait for a handshake on every tunnel of the
#                              component, then its readiness (the HSS: Cassandra answers CQL)
#   oai-service run <c>        the program, started from the folder its configuration assumes
#
# Everything component-specific is data the charm writes: <etc>/oai-<c>.service (by oai-configure)
# and <state>/<c>.tunnels (by every reconcile), lines of "<key> <value>"; nothing is executed
# from them.
set -u
ETC=${OAI_PREFIX:-/usr/local/etc/oai}
STATE=${OAI_STATE_DIR:-/var/lib/vpnaas/oai}
HOSTS=${OAI_HOSTS_FILE:-/etc/hosts}

values() {  # file key: every value of key, one per line
  [ -f "$1" ] || return 0
  awk -v k="$2" '$1 == k { sub(/^[^ ]+ ?/, ""); print }' "$1"
}

setup() {  # component
  local conf="$ETC/oai-$1.service" block tmp addr label pool sgi path owner
  block=$(values "$conf" host | sed 's/$/ # vpnaas-oai/')
  if [ -n "$block" ]; then
    # Our entries first, the file rewritten whole (cloud-init's manage_etc_hosts rewrites it at boot).
    tmp=$(mktemp "$(dirname "$HOSTS")/.hosts.vpnaas.XXXXXX") || return 1
    { printf '%s\n' "$block"; grep -v '# vpnaas-oai$' "$HOSTS" || true; } > "$tmp"
    chmod 644 "$tmp"
    if cmp -s "$tmp" "$HOSTS"; then rm -f "$tmp"; else mv -f "$tmp" "$HOSTS"; fi
  fi
  while read -r addr label; do
    [ -n "$addr" ] || continue
    ip addr replace "$addr" dev lo label "$label" || return 1
  done < <(values "$conf" loaddr)
  while read -r pool sgi; do
    [ -n "$pool" ] || continue
    [ -n "${sgi:-}" ] || sgi=$(ip -4 route show default | awk '{for (i = 1; i < NF; i++) if ($i == "dev") {print $(i + 1); exit}}')
    [ -n "$sgi" ] || { echo "no SGi interface (no default route; set sgi-interface)" >&2; return 1; }
    sysctl -q -w net.ipv4.ip_forward=1 || return 1
    iptables -P FORWARD ACCEPT || return 1
    # UE traffic leaves through SGi with the VNF's address (checked first: idempotent).
    iptables -t nat -C POSTROUTING -s "$pool" -o "$sgi" -j MASQUERADE 2>/dev/null \
      || iptables -t nat -A POSTROUTING -s "$pool" -o "$sgi" -j MASQUERADE || return 1
  done < <(values "$conf" nat)
  while read -r path owner; do   # a run-time folder (in /run: gone at every boot) and its owner
    [ -n "$path" ] || continue
    install -d -m 755 -o "$owner" -g "$owner" "$path" || return 1
  done < <(values "$conf" dir)
}

uapi_safe() {  # device: `wg` may ask it: a kernel device, or a userspace daemon whose UAPI socket listens
  # `wg show <dev>` deletes <dev>'s UAPI socket when connecting to it is refused, taking it for
  # stale (wireguard-tools src/ipc-uapi-unix.h), and a userspace daemon's socket refuses in the
  # instant between its bind() and listen() while the device starts (at boot wg-quick@<dev> and
  # this wait run at once); wireguard-go then exits (its ipc/uapi_linux.go) and the device's
  # start fails. So the kernel's table of Unix sockets is read first (flag 00010000: listening;
  # boringtun names its socket /var/run/wireguard//<dev>.sock), and nothing connects to it.
  # (VPNAAS_SYSFS: the tests' stand-in kernel devices)
  grep -qx DEVTYPE=wireguard "${VPNAAS_SYSFS:-/sys}/class/net/$1/uevent" 2>/dev/null && return 0
  awk -v dev="$1" '$4 == "00010000" { p = $8; gsub(/\/+/, "/", p); sub(/^\/var\/run\//, "/run/", p)
    if (p == "/run/wireguard/" dev ".sock") found = 1 } END { exit !found }' /proc/net/unix 2>/dev/null
}

handshake() {  # device: every peer has completed a handshake
  uapi_safe "$1" || return 1
  wg show "$1" latest-handshakes 2>/dev/null | awk 'NF == 2 {n++; if ($2 == 0) bad = 1} END {exit (n == 0 || bad)}'
}

prestart() {  # component
  local tunnels="$STATE/$1.tunnels" limit start missing d ip cql_limit
  local -a devs
  setup "$1" || exit 1
  limit=$(values "$tunnels" limit)
  mapfile -t devs < <(values "$tunnels" dev)
  start=$SECONDS
  while :; do
    missing=''
    for d in ${devs[@]+"${devs[@]}"}; do handshake "$d" || missing="$missing $d"; done
    [ -n "$missing" ] || break
    if [ $((SECONDS - start)) -ge "${limit:-300}" ]; then
      echo "no WireGuard handshake on$missing after ${limit:-300}s" >&2
      exit 1
    fi
    sleep 1
  done
  while read -r ip cql_limit; do
    [ -n "$ip" ] || continue
    start=$SECONDS
    until cqlsh -e 'SHOW VERSION' "$ip" >/dev/null 2>&1; do
      if [ $((SECONDS - start)) -ge "$cql_limit" ]; then echo "Cassandra not ready after ${cql_limit}s" >&2; exit 1; fi
      sleep 2
    done
  done < <(values "$ETC/oai-$1.service" cql)
}

run() {  # component
  local conf="$ETC/oai-$1.service" binary workdir e
  local -a args
  binary=$(values "$conf" binary)
  [ -n "$binary" ] || { echo "no binary in $conf (run oai-configure)" >&2; exit 1; }
  workdir=$(values "$conf" workdir)
  [ -n "$workdir" ] || workdir=$(dirname "$(readlink -f "$binary")")
  cd "$workdir" || exit 1
  while IFS= read -r e; do
    [ -n "$e" ] && export "${e%%=*}=${e#*=}"
  done < <(values "$conf" env)
  mapfile -t args < <(values "$conf" arg)
  exec "$binary" ${args[@]+"${args[@]}"}
}

case "${1:-}:${2:-}" in
  setup:?*) setup "$2" ;;
  prestart:?*) prestart "$2" ;;
  run:?*) run "$2" ;;
  *) echo "usage: oai-service setup|prestart|run <component>" >&2; exit 2 ;;
esac
