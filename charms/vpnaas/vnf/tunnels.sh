# shellcheck shell=bash
# The tunnel step of a reconcile (after lib.sh): make the VNF's WireGuard devices, routes and
# service addresses match the charm's plan, in one SSH session, and report what is there.
#
# Values arrive only as arguments, already validated by the charm's grammar (validation.py);
# the config bodies arrive base64-encoded and never contain the private key, which is generated
# here and never leaves this machine. Everything is idempotent: a second run changes nothing.
#
# What the charm owns, and the only things it ever changes or removes:
#   - /etc/wireguard/<dev>.conf files that carry MARKER, their keys and .routes files;
#   - routes with protocol number VPNAAS_PROTO (iproute2 `proto`), never a connected, static or
#     operator route: a wanted route whose prefix already has a foreign route is refused;
#   - service addresses listed in OWNED_ADDRESSES, i.e. that this charm added itself.

MARKER='# Managed by the VPNaaS charm; changes are overwritten on the next reconcile.'
VPNAAS_PROTO=148
ROUTES_HOOK=/etc/wireguard/vpnaas-routes.sh
SERVICE_HOOK=/etc/wireguard/vpnaas-service-addresses.sh
WANTED_ADDRESSES=/etc/wireguard/vpnaas-service-addresses
OWNED_ADDRESSES=/etc/wireguard/vpnaas-service-addresses.owned
SERVICE_DEVICE=vpnaas0

# --------------------------------------------------------------------------- hooks run by wg-quick too
# These two functions are also installed as scripts (PreUp/PostUp of every managed device), so
# that a reboot brings back exactly what a reconcile applies, through the same guarded code.

vpnaas_routes() {  # dev: exactly the routes listed in /etc/wireguard/<dev>.routes point into dev
  # One listing of table main per family, not one query per prefix: a hub's device has two
  # routes per spoke, and this runs in every session that applies the device. A route already
  # there as wanted is left alone; only new or changed ones cost an `ip` call.
  local dev=$1 file="/etc/wireguard/$1.routes" p s fam line dst msg
  local -a f src
  local -A foreign=() ours=() wanted=()
  [ -e "$file" ] || : > "$file"
  for fam in -4 -6; do
    # A VNF booted without IPv6 has no -6 table: nothing to list there.
    while IFS= read -r line; do
      read -r -a f <<< "$line"
      case "${f[0]:-nexthop}" in
        nexthop) continue ;;   # the next hops of a multipath route: their route was the line before
        unicast|local|broadcast|multicast|throw|unreachable|prohibit|blackhole|nat|anycast) f=("${f[@]:1}") ;;
      esac
      dst=${f[0]:-}
      case "$dst" in
        "") continue ;;
        default) if [ "$fam" = -4 ]; then dst=0.0.0.0/0; else dst=::/0; fi ;;
        */*) ;;
        *) if [ "$fam" = -4 ]; then dst="$dst/32"; else dst="$dst/128"; fi ;;
      esac
      if [[ " $line " != *" proto $VPNAAS_PROTO "* ]]; then
        [ -n "${foreign[$dst]:-}" ] || foreign[$dst]=$line
      elif [[ " $line " == *" dev $dev "* ]]; then
        ours[$dst]=$line
      fi
    done < <(ip "$fam" route show table main 2>/dev/null || true)
  done
  while read -r p s; do
    [ -n "$p" ] || continue
    wanted[$p]=1
    if [ -n "${foreign[$p]:-}" ]; then
      echo "REFUSED $dev $p a route this charm did not create is in the way: ${foreign[$p]}"
      continue
    fi
    if [ -n "${ours[$p]:-}" ]; then
      if [ "$s" = - ]; then
        [[ " ${ours[$p]} " == *" src "* ]] || continue
      elif [[ " ${ours[$p]} " == *" src $s "* ]]; then
        continue
      fi
    fi
    src=()
    [ "$s" = - ] || src=(src "$s")
    case "$p" in *:*) fam=-6 ;; *) fam=-4 ;; esac
    if ! msg=$(ip "$fam" route replace "$p" dev "$dev" proto "$VPNAAS_PROTO" "${src[@]}" 2>&1); then
      echo "REFUSED $dev $p ip route: $msg"
    fi
  done < "$file"
  for dst in "${!ours[@]}"; do
    case "$dst" in 0.0.0.0/0|::/0) continue ;; esac
    [ -z "${wanted[$dst]:-}" ] || continue
    case "$dst" in *:*) fam=-6 ;; *) fam=-4 ;; esac
    ip "$fam" route del "$dst" dev "$dev" proto "$VPNAAS_PROTO" 2>/dev/null || true
  done
}

vpnaas_service_addresses() {  # exactly the wanted service addresses that this charm added are up
  local dev=lo label=() a
  touch "$WANTED_ADDRESSES"
  if ip link show dev "$SERVICE_DEVICE" >/dev/null 2>&1 || ip link add "$SERVICE_DEVICE" type dummy 2>/dev/null; then
    dev=$SERVICE_DEVICE
    ip link set dev "$dev" up
  fi
  if [ ! -e "$OWNED_ADDRESSES" ]; then
    # First run of this layout: adopt only what an earlier version of this charm put up.
    { ip -o addr show dev "$SERVICE_DEVICE" scope global 2>/dev/null || true
      ip -o -4 addr show dev lo label lo:vpnaas 2>/dev/null || true; } | awk '{print $4}' > "$OWNED_ADDRESSES"
  fi
  while read -r a; do
    [ -n "$a" ] || continue
    [ -z "$(ip -o addr show dev "$dev" to "$a" 2>/dev/null)" ] || continue   # already up (ours or not)
    label=()
    case "$a" in *:*) ;; *) [ "$dev" != lo ] || label=(label lo:vpnaas) ;; esac
    ip addr add "$a" dev "$dev" "${label[@]}"
    grep -qxF "$a" "$OWNED_ADDRESSES" || echo "$a" >> "$OWNED_ADDRESSES"
  done < "$WANTED_ADDRESSES"
  while read -r a; do
    [ -n "$a" ] || continue
    grep -qxF "$a" "$WANTED_ADDRESSES" && continue
    ip addr del "$a" dev "$dev" 2>/dev/null || true
  done < "$OWNED_ADDRESSES"
  grep -xF -f "$WANTED_ADDRESSES" "$OWNED_ADDRESSES" > "$OWNED_ADDRESSES.tmp" || true
  mv -f "$OWNED_ADDRESSES.tmp" "$OWNED_ADDRESSES"
}

install_hook() {  # path function: a script that runs the function, written from this file's own code
  {
    printf '#!/bin/bash\n%s\nset -e\n' "$MARKER"
    printf 'VPNAAS_PROTO=%s WANTED_ADDRESSES=%s OWNED_ADDRESSES=%s SERVICE_DEVICE=%s\n' \
      "$VPNAAS_PROTO" "$WANTED_ADDRESSES" "$OWNED_ADDRESSES" "$SERVICE_DEVICE"
    declare -f "$2"
    printf '%s "$@"\n' "$2"
  } > "$1.vpnaas-tmp"
  chmod 700 "$1.vpnaas-tmp"
  install_file "$1.vpnaas-tmp" "$1"
}

# --------------------------------------------------------------------------- the step's parts

tunnels_prepare() {
  require_tools wg wg-quick ip base64
  if [ -d /run/systemd/system ]; then init=systemd; else init=none; fi
  out "INIT $init"
  ip link del vpnaas-probe 2>/dev/null || true   # left over if an earlier run was killed here
  if ip link add vpnaas-probe type wireguard 2>/dev/null; then
    ip link del vpnaas-probe
    out "IMPL kernel"
  else
    local ug ver
    ug="${WG_QUICK_USERSPACE_IMPLEMENTATION:-$(command -v wireguard-go || true)}"
    if [ -z "$ug" ] || [ ! -x "$ug" ]; then
      fail "no-wireguard the kernel has no WireGuard module and wireguard-go is not installed"
    fi
    export WG_QUICK_USERSPACE_IMPLEMENTATION="$ug"
    ver=$("$ug" --version 2>/dev/null | head -n 1 | awk '{print $2}') || true
    out "IMPL userspace $ug ${ver:-unknown}"
  fi
  install_hooks
}

install_hooks() {
  mkdir -p /etc/wireguard
  chmod 700 /etc/wireguard
  install_hook "$ROUTES_HOOK" vpnaas_routes
  install_hook "$SERVICE_HOOK" vpnaas_service_addresses
}

apply_routes() {  # dev: run the routes hook now and pass on what it refused
  local line
  "$ROUTES_HOOK" "$1" | while IFS= read -r line; do out "$line"; done
}

report_facts() {  # what the route policy must never route into a tunnel, as this VNF sees it
  local ifname fam cidr rest client
  ip -o addr show | while read -r _ ifname fam cidr rest; do
    case "$ifname" in
      "$SERVICE_DEVICE") continue ;;
      wg-*) grep -qxF "$MARKER" "/etc/wireguard/$ifname.conf" 2>/dev/null && continue ;;
    esac
    case "$rest" in *" lo:vpnaas"*) continue ;; esac
    out "FACT addr $cidr"
  done
  { ip -4 route show default 2>/dev/null || true; ip -6 route show default 2>/dev/null || true; } \
    | awk '{for (i = 1; i < NF; i++) if ($i == "via") print "FACT gateway " $(i + 1)}'
  client=${VPNAAS_SSH_CONNECTION%% *}
  [ -z "$client" ] || out "FACT client $client"
  if [ -e /proc/net/if_inet6 ] && [ "$(cat /proc/sys/net/ipv6/conf/all/disable_ipv6 2>/dev/null || echo 1)" = 0 ]; then
    out "FACT ipv6 on"
  else
    out "FACT ipv6 off"
  fi
}

service_addresses() {  # address...: the wanted service addresses (PreUp of every device runs this too)
  printf '%s\n' "$@" | grep . > "$WANTED_ADDRESSES.vpnaas-tmp" || true
  chmod 600 "$WANTED_ADDRESSES.vpnaas-tmp"
  install_file "$WANTED_ADDRESSES.vpnaas-tmp" "$WANTED_ADDRESSES"
  "$SERVICE_HOOK"
}

iface_signature() {  # the [Interface] settings that wg syncconf cannot change
  grep -E '^(Address|MTU|Table|PreUp|PreDown|PostUp|PostDown) =' "$1" 2>/dev/null || true
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

ensure_device() {  # dev rotate(0|1) restart(0|1) body-base64 routes-base64 ("prefix src|-" lines)
  local dev=$1 rotate=$2 restart=$3 body=$4 routes=$5
  local key="/etc/wireguard/$dev.key" conf="/etc/wireguard/$dev.conf" pub priv stripped
  # A missing, empty or corrupt key (wg pubkey refuses it) is replaced by a new one.
  if [ "$rotate" = 1 ] || ! pub=$(wg pubkey < "$key" 2>/dev/null); then
    wg genkey > "$key.vpnaas-tmp"
    mv -f "$key.vpnaas-tmp" "$key"
    pub=$(wg pubkey < "$key")
  fi
  out "PUBKEY $dev $pub"
  write_file "/etc/wireguard/$dev.routes" 600 "$routes"
  priv=$(cat "$key")
  { printf '[Interface]\nPrivateKey = %s\n' "$priv"; printf '%s' "$body" | base64 -d; } > "$conf.vpnaas-tmp"
  chmod 600 "$conf.vpnaas-tmp"
  if [ "$restart" = 0 ] && wg show "$dev" >/dev/null 2>&1 \
     && [ "$(iface_signature "$conf")" = "$(iface_signature "$conf.vpnaas-tmp")" ]; then
    install_file "$conf.vpnaas-tmp" "$conf"
    # strip first: a failure inside <(...) would go unnoticed and syncconf would apply nothing
    stripped=$(wg-quick strip "$dev")
    wg syncconf "$dev" <(printf '%s\n' "$stripped")
    apply_routes "$dev"
    out "APPLIED $dev syncconf"
  else
    install_file "$conf.vpnaas-tmp" "$conf"
    device_up "$dev"
    # PostUp already ran the hook; once more to report what it refused.
    apply_routes "$dev"
    out "APPLIED $dev up"
  fi
}

apply_device() {  # as ensure_device; a failing device never stops the others or the report
  isolated "$1" ensure_device "$@"
}

remove_stale_devices() {  # wanted devices as arguments; only files carrying our marker are touched
  local f dev w keep
  for f in /etc/wireguard/wg-*.conf; do
    [ -e "$f" ] || continue
    grep -qxF "$MARKER" "$f" || continue
    dev=$(basename "$f" .conf)
    keep=0
    for w in "$@"; do [ "$w" = "$dev" ] && keep=1; done
    [ "$keep" = 1 ] && continue
    device_down "$dev"
    rm -f "$f" "/etc/wireguard/$dev.key" "/etc/wireguard/$dev.routes"
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

report() {  # devices...: host, time and every peer of every device (never the private key)
  out "HOST $(hostname)"
  out "NOW $(date +%s)"
  local dev line
  for dev in "$@"; do
    if wg show "$dev" >/dev/null 2>&1; then out "UP $dev"; else out "DOWN $dev"; continue; fi
    # Peer lines only: the first line of the dump holds the private key.
    wg show "$dev" dump | tail -n +2 | while IFS= read -r line; do out "PEER $dev $line"; done
  done
}
