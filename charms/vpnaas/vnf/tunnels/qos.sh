# shellcheck shell=bash
# The slice part of the tunnel step (core/qos.py plans it; docs/slices.md): mark the outer UDP
# packets of this VNF's tunnels with the slice's DSCP, and queue the underlay egress by DSCP.
#
# Marking selects a tunnel's outer packets by their UDP source port (the device's listen port),
# in the mangle table's POSTROUTING, so it holds for every data plane alike: the kernel module,
# wireguard-go and boringtun all send from a UDP socket bound to that port. The inner header is
# never read (a peer controls it; WireGuard copies only ECN outwards anyway).
# What it owns, and the only things it changes or removes: the chain QOS_CHAIN of the mangle
# table (and its one jump from POSTROUTING), the root qdisc of a device it recorded in
# QOS_RECORD.<dev>, and those records. Idempotent: applied only when what is there differs; a
# step killed half-way leaves a chain or a qdisc that differs from the plan (the record is
# written last), so the next run applies it again.

QOS_CHAIN=VPNAAS-QOS
QOS_RECORD=/etc/wireguard/vpnaas-qos.queue

qos_rules() {  # port:dscp...: the chain's rules as `iptables -S` prints them
  local m
  for m in "$@"; do
    printf -- '-A %s -p udp -m udp --sport %s -j DSCP --set-dscp 0x%02x\n' "$QOS_CHAIN" "${m%%:*}" "${m#*:}"
  done
}

qos_mark_family() {  # tool port:dscp...: make the tool's chain hold exactly these marks (errexit on)
  local tool=$1 want have m
  shift
  # No marks wanted (the usual case): one listing says whether a chain of ours is left to remove.
  if [ "$#" -eq 0 ]; then
    if "$tool" -w -t mangle -S "$QOS_CHAIN" >/dev/null 2>&1; then
      while "$tool" -w -t mangle -D POSTROUTING -j "$QOS_CHAIN" 2>/dev/null; do :; done
      "$tool" -w -t mangle -F "$QOS_CHAIN" && "$tool" -w -t mangle -X "$QOS_CHAIN"
      out "QOS marking removed $tool"
    fi
    return 0
  fi
  want=$(qos_rules "$@")
  have=$("$tool" -w -t mangle -S "$QOS_CHAIN" 2>/dev/null | grep -e '^-A ' || true)
  if [ "$want" = "$have" ] && "$tool" -w -t mangle -C POSTROUTING -j "$QOS_CHAIN" 2>/dev/null; then
    return 0
  fi
  "$tool" -w -t mangle -N "$QOS_CHAIN" 2>/dev/null || "$tool" -w -t mangle -F "$QOS_CHAIN"
  for m in "$@"; do
    "$tool" -w -t mangle -A "$QOS_CHAIN" -p udp -m udp --sport "${m%%:*}" -j DSCP --set-dscp "${m#*:}"
  done
  "$tool" -w -t mangle -C POSTROUTING -j "$QOS_CHAIN" 2>/dev/null || "$tool" -w -t mangle -A POSTROUTING -j "$QOS_CHAIN"
  out "QOS marking applied $tool"
}

qos_marks() {  # port:dscp...: every family this VNF has a tool for
  local m
  if ! command -v iptables >/dev/null 2>&1; then
    [ "$#" -eq 0 ] || fail "iptables is missing on the VNF: the tunnels' outer packets are not marked"
    return 0
  fi
  qos_mark_family iptables "$@"
  # (With no marks, the family's one listing in qos_mark_family is its probe too.)
  if command -v ip6tables >/dev/null 2>&1 && { [ "$#" -eq 0 ] || ip6tables -w -t mangle -S POSTROUTING >/dev/null 2>&1; }; then
    qos_mark_family ip6tables "$@"
  fi
  for m in "$@"; do out "QOS mark ${m%%:*} ${m#*:}"; done
}

qos_egress_devices() {  # host...: the devices the routes to the peers' endpoints leave by (one per line)
  local host dev
  for host in "$@"; do
    dev=$(ip -o route get "$host" 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "dev") {print $(i + 1); exit}}')
    case "$dev" in ''|*[!A-Za-z0-9_.-]*|lo) continue ;; esac
    printf '%s\n' "$dev"
  done | sort -u
}

qos_leaf() {  # dev minor: the qdisc inside a class: fq_codel where the kernel has it, else a short FIFO
  if tc qdisc add dev "$1" parent "1:$2" handle "$2:" fq_codel 2>/dev/null; then echo fq_codel; return 0; fi
  tc qdisc add dev "$1" parent "1:$2" handle "$2:" pfifo limit 128 && echo pfifo
}

qos_install() {  # dev kbit class...: the HTB tree of the plan on dev's egress (replacing what is there)
  local dev=$1 kbit=$2 spec minor prio rate dscps d leaf=""
  shift 2
  # Called as a condition (errexit is off there): every command says itself when it failed.
  tc qdisc del dev "$dev" root 2>/dev/null || true
  tc qdisc add dev "$dev" root handle 1: htb default 30 r2q 100 || return 1
  tc class add dev "$dev" parent 1: classid 1:1 htb rate "${kbit}kbit" ceil "${kbit}kbit" || return 1
  for spec in "$@"; do
    IFS=: read -r minor prio rate dscps <<< "$spec"
    tc class add dev "$dev" parent 1:1 classid "1:$minor" htb rate "${rate}kbit" ceil "${kbit}kbit" \
      prio "$prio" || return 1
    leaf=$(qos_leaf "$dev" "$minor") || return 1
    [ "$dscps" = "-" ] && continue
    for d in ${dscps//\// }; do
      tc filter add dev "$dev" parent 1: protocol ip prio 1 u32 match ip dsfield "$((d << 2))" 0xfc \
        flowid "1:$minor" || return 1
      tc filter add dev "$dev" parent 1: protocol ipv6 prio 2 u32 match ip6 priority "$((d << 2))" 0xfc \
        flowid "1:$minor" || return 1
    done
  done
  printf '%s' "$leaf"
}

qos_queue() {  # kbit class... -- host...: queue the egress toward the peers (no kbit: remove ours)
  local plan=() hosts=() dev rec leaf live
  while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do plan+=("$1"); shift; done
  [ "$#" -gt 0 ] && shift
  hosts=("$@")
  local wanted=""
  if [ "${#plan[@]}" -gt 0 ]; then wanted=$(qos_egress_devices "${hosts[@]}"); fi
  for rec in "$QOS_RECORD".*; do   # a device queued before and no longer wanted: ours goes
    case "$rec" in *.tmp) rm -f "$rec"; continue ;; esac
    [ -f "$rec" ] || continue
    dev=${rec#"$QOS_RECORD".}
    if ! printf '%s\n' "$wanted" | grep -qxF -- "$dev"; then
      tc qdisc del dev "$dev" root 2>/dev/null || true
      rm -f "$rec"
      out "QOS queue removed $dev"
    fi
  done
  [ -n "$wanted" ] || return 0
  while IFS= read -r dev; do
    live=$(tc qdisc show dev "$dev" 2>/dev/null | grep -c -e '^qdisc htb 1: root' || true)
    if [ "$live" = 1 ] && [ "$(head -n 1 "$QOS_RECORD.$dev" 2>/dev/null)" = "${plan[*]}" ]; then
      leaf=$(sed -n 2p "$QOS_RECORD.$dev")
    else
      leaf=$(qos_install "$dev" "${plan[@]}") || fail "the queue on $dev could not be installed (tc said why)"
      printf '%s\n%s\n' "${plan[*]}" "$leaf" > "$QOS_RECORD.$dev.tmp"
      mv -f "$QOS_RECORD.$dev.tmp" "$QOS_RECORD.$dev"
      out "QOS queue applied $dev"
    fi
    out "QOS queue $dev ${plan[0]} ${leaf:-none}"
  done <<< "$wanted"
}

qos_apply() {  # port:dscp... -- kbit class... -- host...: the slice's marking and queuing
  # (run by `isolated qos`: a failure is reported as "FAILED qos <why>", the tunnels stay)
  local marks=()
  while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do marks+=("$1"); shift; done
  [ "$#" -gt 0 ] && shift
  qos_marks "${marks[@]}"
  if ! command -v tc >/dev/null 2>&1; then
    if [ "$#" -gt 0 ] && [ "$1" != "--" ]; then fail "tc is missing on the VNF: the egress is not queued"; fi
    return 0
  fi
  qos_queue "$@"
  if [ "${#marks[@]}" -eq 0 ] && [ "${1:---}" = "--" ]; then out "QOS off"; fi
}

qos_step() {  # the tunnel step's call: qos_apply, a failure reported, never a failed tunnel
  isolated qos qos_apply "$@"
}
