# shellcheck shell=bash
# The tunnel step's part (sourced by tunnels.sh, after lib.sh): what wg-quick runs too: the routes
# and service-address hooks, addresses compared as addresses.

# These two functions are also installed as scripts (PreUp/PostUp of every managed device), so
# that a reboot brings back exactly what a reconcile applies, through the same guarded code.

# Addresses are compared as addresses, never as text: `ip` prints an IPv4-mapped IPv6 address as
# ::ffff:10.0.0.7 where Python before 3.13 writes ::ffff:a00:7, and a prefix that matched by text
# only would let the charm replace an operator's route. vpnaas_canon turns an address or prefix
# into one key (IPv4 dotted decimal, IPv6 all eight groups in four hex digits, always /len), and
# "" for anything else. Hand-written in POSIX awk because the VNF (Ubuntu's mawk included) has no
# address parser a shell hook can call; the tests hold it to Python's ipaddress.
# shellcheck disable=SC2089  # an awk program: its quotes are awk's
VPNAAS_CANON_AWK='
function vpnaas_hex(h,   i, v, c) {
  v = 0
  h = tolower(h)
  if (h == "" || length(h) > 4) return -1
  for (i = 1; i <= length(h); i++) {
    c = index("0123456789abcdef", substr(h, i, 1))
    if (c == 0) return -1
    v = v * 16 + c - 1
  }
  return v
}
function vpnaas_groups(text, out, n,   f, k, i, q, m) {
  if (text == "") return n
  m = split(text, f, ":")
  for (k = 1; k <= m; k++) {
    if (k == m && index(f[k], ".")) {
      if (split(f[k], q, ".") != 4) return -1
      for (i = 1; i <= 4; i++) if (q[i] !~ /^[0-9]+$/ || q[i] + 0 > 255) return -1
      out[++n] = (q[1] + 0) * 256 + q[2]
      out[++n] = (q[3] + 0) * 256 + q[4]
      continue
    }
    if ((i = vpnaas_hex(f[k])) < 0) return -1
    out[++n] = i
  }
  return n
}
function vpnaas_canon(p,   len, q, k, left, right, a, b, nl, nr, out, i, s) {
  len = ""
  if ((k = index(p, "/")) > 0) { len = substr(p, k + 1); p = substr(p, 1, k - 1) }
  if (len != "" && len !~ /^[0-9]+$/) return ""
  if (index(p, ":") == 0) {
    if (split(p, q, ".") != 4) return ""
    for (k = 1; k <= 4; k++) if (q[k] !~ /^[0-9]+$/ || q[k] + 0 > 255) return ""
    return (q[1] + 0) "." (q[2] + 0) "." (q[3] + 0) "." (q[4] + 0) "/" (len == "" ? 32 : len + 0)
  }
  if ((k = index(p, "::")) > 0) { left = substr(p, 1, k - 1); right = substr(p, k + 2) } else { left = p; right = "" }
  if (index(right, "::")) return ""
  nl = vpnaas_groups(left, a, 0)
  nr = vpnaas_groups(right, b, 0)
  if (nl < 0 || nr < 0 || (k == 0 && nl != 8) || (k > 0 && nl + nr > 7)) return ""
  for (i = 1; i <= nl; i++) out[i] = a[i]
  for (i = nl + 1; i <= 8 - nr; i++) out[i] = 0
  for (i = 1; i <= nr; i++) out[8 - nr + i] = b[i]
  s = sprintf("%04x", out[1])
  for (i = 2; i <= 8; i++) s = s ":" sprintf("%04x", out[i])
  return s "/" (len == "" ? 128 : len + 0)
}
'

vpnaas_canon_lines() {  # prefix [source] lines on stdin -> "key<TAB>prefix<TAB>source-key<TAB>source" lines
  awk "$VPNAAS_CANON_AWK"'
    NF >= 1 { k = vpnaas_canon($1); if (k == "") next
              s = ($2 == "" || $2 == "-") ? "-" : $2; sk = (s == "-") ? "-" : vpnaas_canon(s)
              if (sk == "") sk = "-"
              print k "\t" $1 "\t" sk "\t" s }'
}

vpnaas_route_table() {  # family: table main as "key<TAB>dst<TAB>src-key<TAB>line", dst as ip prints it
  # A VNF booted without IPv6 has no -6 table: nothing to list there.
  { ip "$1" route show table main 2>/dev/null || true; } | awk -v fam="$1" "$VPNAAS_CANON_AWK"'
    $1 == "nexthop" { next }   # the next hops of a multipath route: their route was the line before
    { f = 1
      if ($1 ~ /^(unicast|local|broadcast|multicast|throw|unreachable|prohibit|blackhole|nat|anycast)$/) f = 2
      d = $f
      if (d == "") next
      if (d == "default") d = (fam == "-4") ? "0.0.0.0/0" : "::/0"
      k = vpnaas_canon(d)
      if (k == "") next
      sk = "-"
      for (i = f + 1; i < NF; i++) if ($i == "src") { sk = vpnaas_canon($(i + 1)); if (sk == "") sk = "-" }
      print k "\t" d "\t" sk "\t" $0 }'
}

vpnaas_rp_loose() {  # dev: loose reverse-path filtering on one of the charm's devices
  # While a key rotation runs, a packet may arrive on this device while its source is routed into
  # the other device of the same endpoint (each direction moves on its own): strict reverse-path
  # filtering would drop it. WireGuard accepts a source only from the peer whose AllowedIPs hold
  # it, which is stricter; so loose mode (2: the kernel applies the larger of "all" and the
  # device's value, so this holds whatever the VNF's default).
  local rpf="/proc/sys/net/ipv4/conf/$1/rp_filter" v=
  if [ -w "$rpf" ]; then read -r v < "$rpf" || true; [ "$v" = 2 ] || echo 2 > "$rpf"; fi
}

vpnaas_routes() {  # dev: exactly the routes listed in /etc/wireguard/<dev>.routes point into dev
  # One listing of table main per family, not one query per prefix: a hub's device has two
  # routes per spoke, and this runs in every session that applies the device. A route already
  # there as wanted is left alone; only new or changed ones cost an `ip` call.
  local dev=$1 file="/etc/wireguard/$1.routes" key p s sk dst line fam msg f
  local -a src
  local -A foreign=() ours=() ours_dst=() ours_src=() wanted=() elsewhere=() batch=()
  [ -e "$file" ] || : > "$file"
  vpnaas_rp_loose "$dev"
  for fam in -4 -6; do
    while IFS=$'\t' read -r key dst sk line; do
      if [[ " $line " != *" proto $VPNAAS_PROTO "* ]]; then
        [ -n "${foreign[$key]:-}" ] || foreign[$key]=$line
      elif [[ " $line " == *" dev $dev "* ]]; then
        ours[$key]=$line
        ours_dst[$key]=$dst
        ours_src[$key]=$sk
      fi
    done < <(vpnaas_route_table "$fam")
  done
  # What another of the charm's devices is to hold: that device's run moves it there with `ip
  # route replace`; deleted here first, the prefix would be without a route meanwhile.
  for f in /etc/wireguard/*.routes; do
    if [ "$f" = "$file" ] || [ ! -e "$f" ]; then continue; fi
    while IFS=$'\t' read -r key _ _ _; do elsewhere[$key]=1; done < <(vpnaas_canon_lines < "$f")
  done
  while IFS=$'\t' read -r key p sk s; do
    wanted[$key]=1
    if [ -n "${foreign[$key]:-}" ]; then
      echo "REFUSED $dev $p a route this charm did not create is in the way: ${foreign[$key]}"
      continue
    fi
    if [ -n "${ours[$key]:-}" ] && [ "${ours_src[$key]}" = "$sk" ]; then
      continue
    fi
    case "$p" in *:*) fam=-6 ;; *) fam=-4 ;; esac
    # Into one `ip -batch` per family (a hub's first session adds two routes per spoke: one
    # process, not one per route), but only words that are addresses: a batch line is split by
    # ip itself, which would read a quote or a # in a word.
    if [[ $p =~ ^[0-9A-Fa-f:./]+$ ]] && [[ $s =~ ^[0-9A-Fa-f:./-]+$ ]]; then
      line="route replace $p dev $dev proto $VPNAAS_PROTO"
      [ "$s" = - ] || line+=" src $s"
      batch[$fam]+=$line$'\n'
      continue
    fi
    src=()
    [ "$s" = - ] || src=(src "$s")
    if ! msg=$(ip "$fam" route replace "$p" dev "$dev" proto "$VPNAAS_PROTO" "${src[@]}" 2>&1); then
      echo "REFUSED $dev $p ip route: $msg"
    fi
  done < <(vpnaas_canon_lines < "$file")
  for fam in -4 -6; do
    [ -n "${batch[$fam]:-}" ] || continue
    printf '%s' "${batch[$fam]}" | ip "$fam" -force -batch - >/dev/null 2>&1 && continue
    # One of them failed: each one again on its own (replace is idempotent), to say which and why.
    # Every line, not only the refused one: -force goes on past a route the kernel refuses, but
    # ip exits at an argument it cannot parse (iproute2's invarg), leaving the lines after it.
    while read -r _ _ p _ _ _ _ _ s; do
      src=()
      [ -z "$s" ] || src=(src "$s")
      if ! msg=$(ip "$fam" route replace "$p" dev "$dev" proto "$VPNAAS_PROTO" "${src[@]}" 2>&1); then
        echo "REFUSED $dev $p ip route: $msg"
      fi
    done < <(printf '%s' "${batch[$fam]}")
  done
  for key in "${!ours[@]}"; do
    case "$key" in 0.0.0.0/0|0000:0000:0000:0000:0000:0000:0000:0000/0) continue ;; esac
    if [ -n "${wanted[$key]:-}" ] || [ -n "${elsewhere[$key]:-}" ]; then continue; fi
    case "$key" in *:*) fam=-6 ;; *) fam=-4 ;; esac
    ip "$fam" route del "${ours_dst[$key]}" dev "$dev" proto "$VPNAAS_PROTO" 2>/dev/null || true
  done
}

vpnaas_service_addresses() {  # exactly the wanted service addresses that this charm added are up
  # A wanted line is "address [label]": a labelled IPv4 address (a reference point whose network
  # functions bind by interface name) goes up as <device>:<label>, lo:vpnaas-<label> on lo.
  local dev=lo label=() a key _sk _s owned
  local -A want=() own=() named=()
  [ -e "$WANTED_ADDRESSES" ] || : > "$WANTED_ADDRESSES"
  if ip link show dev "$SERVICE_DEVICE" >/dev/null 2>&1 || ip link add "$SERVICE_DEVICE" type dummy 2>/dev/null; then
    dev=$SERVICE_DEVICE
    ip link set dev "$dev" up
  fi
  if [ ! -e "$OWNED_ADDRESSES" ]; then
    # First run of this layout: adopt only what an earlier version of this charm put up.
    { ip -o addr show dev "$SERVICE_DEVICE" scope global 2>/dev/null || true
      ip -o -4 addr show dev lo label lo:vpnaas 2>/dev/null || true; } | awk '{print $4}' > "$OWNED_ADDRESSES"
    chmod 600 "$OWNED_ADDRESSES"   # whatever the step's umask (an OAI component's files set 022)
  fi
  while IFS=$'\t' read -r key a _sk _s; do want[$key]=$a; named[$key]=$_s; done < <(vpnaas_canon_lines < "$WANTED_ADDRESSES")
  while IFS=$'\t' read -r key a _sk _s; do own[$key]=$a; done < <(vpnaas_canon_lines < "$OWNED_ADDRESSES")
  for key in "${!want[@]}"; do
    a=${want[$key]}
    label=()
    case "$a" in
      *:*) ;;
      *) if [ "${named[$key]}" != - ]; then
           if [ "$dev" = lo ]; then label=(label "lo:vpnaas-${named[$key]}"); else label=(label "$dev:${named[$key]}"); fi
         elif [ "$dev" = lo ]; then label=(label lo:vpnaas); fi ;;
    esac
    if [ -n "$(ip -o addr show dev "$dev" to "$a" 2>/dev/null)" ]; then   # already up (ours or not)
      # ...then left alone, unless it is ours and lacks the label its reference point wants.
      if [ "${named[$key]}" = - ] || [ -z "${own[$key]:-}" ] \
         || [ -n "$(ip -o addr show dev "$dev" label "${label[1]}" to "$a" 2>/dev/null)" ]; then continue; fi
      ip addr del "$a" dev "$dev"
    fi
    ip addr add "$a" dev "$dev" "${label[@]}"
    own[$key]=$a
  done
  for key in "${!own[@]}"; do
    [ -z "${want[$key]:-}" ] || continue
    ip addr del "${own[$key]}" dev "$dev" 2>/dev/null || true
    unset "own[$key]"
  done
  # Written only when it changed, and compared before anything is written: a run that changes
  # nothing touches no file (and creates none beside it). This runs as a hook script too: no lib.sh.
  owned=$(for key in "${!own[@]}"; do printf '%s\n' "${own[$key]}"; done | sort)
  if [ "$owned" != "$(< "$OWNED_ADDRESSES")" ]; then
    printf '%s' "${owned:+$owned$'\n'}" > "$OWNED_ADDRESSES.tmp"
    chmod 600 "$OWNED_ADDRESSES.tmp"
    mv -f "$OWNED_ADDRESSES.tmp" "$OWNED_ADDRESSES"
  fi
}

install_hook() {  # path function: a script that runs the function, written from this file's own code
  local script
  script=$(
    printf '#!/bin/bash\n%s\nset -e\n' "$MARKER"
    printf 'VPNAAS_PROTO=%s WANTED_ADDRESSES=%s OWNED_ADDRESSES=%s SERVICE_DEVICE=%s\n' \
      "$VPNAAS_PROTO" "$WANTED_ADDRESSES" "$OWNED_ADDRESSES" "$SERVICE_DEVICE"
    # shellcheck disable=SC2090  # printed as a declaration, quoted by bash itself
    declare -p VPNAAS_CANON_AWK
    declare -f vpnaas_canon_lines vpnaas_route_table vpnaas_rp_loose "$2"
    printf '%s "$@"\n' "$2"
  )
  write_if_changed "$1" 700 "$script"$'\n'
}
