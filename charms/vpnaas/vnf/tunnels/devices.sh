# shellcheck shell=bash
# The tunnel step's part (sourced by tunnels.sh, after lib.sh): each device made as planned: its
# key, its configuration (peer by peer), up or down.

iface_signature() {  # configuration-text: SIGNATURE set to the [Interface] settings that wg syncconf cannot change
  # Bash alone, and only the text before the first [Peer] (where those settings are): its cost
  # does not grow with the peers.
  local head=${1%%$'\n[Peer]'*} line IFS=$'\n'
  local -
  set -f
  SIGNATURE=
  for line in $head; do
    case "$line" in 'Address ='*|'MTU ='*|'Table ='*|'PreUp ='*|'PreDown ='*|'PostUp ='*|'PostDown ='*) SIGNATURE+=$line$'\n' ;; esac
  done
}

device_down() {
  if [ "${init:-}" = systemd ]; then systemctl disable --now "wg-quick@$1" >/dev/null 2>&1 || true; fi
  wg-quick down "$1" >/dev/null 2>&1 || true
  ip link del "$1" >/dev/null 2>&1 || true
}

quick_failure() {  # output daemon-log: a failed `wg-quick up`'s whole output and the daemon's log, on one line, bounded, no key
  # All of it, not its last line: which command failed, and what came before, is what tells one
  # failure from another ("Cannot find device" after a daemon that exited). wg-quick prints each
  # command it runs ("[#] wg setconf <dev> /dev/fd/63": the configuration goes through a pipe,
  # never an argument), and wg echoes a value it cannot parse between ` and ' (wireguard-tools
  # src/config.c, e.g. "Key is not the correct length or format"), which may be a private key:
  # such a value, anything shaped like a key (base64 or hex) and control characters are cut.
  # The userspace daemon's own log, where it has one (the wrapper's WG_LOG_FILE: boringtun's),
  # follows. At most the last 40 lines and 3000 bytes.
  # Cut by bash's own regular expressions (the VNFs' mawk and the project's rule: no intervals
  # in awk, sed or grep).
  local text=$1 log=$2 line kept=() joined quoted=$'`[^\']*\''
  if [ -f "$log" ]; then text+=$'\n'"daemon log: $(tail -c 4096 "$log" 2>/dev/null | tail -n 10)"; fi
  while IFS= read -r line; do
    line=${line//[^[:print:]]/ }
    while [[ $line =~ $quoted ]]; do line=${line/"${BASH_REMATCH[0]}"/(hidden)}; done
    while [[ $line =~ [A-Za-z0-9+/]{42,}={0,2} ]]; do line=${line/"${BASH_REMATCH[0]}"/(key)}; done
    while [[ $line =~ [0-9a-fA-F]{64} ]]; do line=${line/"${BASH_REMATCH[0]}"/(key)}; done
    [[ $line != *[![:space:]]* ]] || kept+=("$line")
  done < <(printf '%s\n' "$text" | tail -n 40)
  printf -v joined ' | %s' ${kept[@]+"${kept[@]}"}
  joined=${joined# | }
  if [ "${#joined}" -gt 3000 ]; then joined=${joined: -3000}; fi
  printf '%s' "$joined"
}

device_up() {  # dev implementation program: (re)start the device on that implementation
  local -a quick=(wg-quick)
  if [ "$2" != kernel ]; then
    install_wrapper   # only where a device runs on a userspace program
    quick=("$DATAPLANE_WRAPPER" "$3")
  fi
  if [ "$init" = systemd ]; then
    dataplane_dropin "$@"
    systemctl enable "wg-quick@$1" >/dev/null 2>&1
    # Stopped with what it runs on now (its old drop-in may be gone), so that a device moving
    # between implementations never runs twice.
    systemctl stop "wg-quick@$1" >/dev/null 2>&1 || true
    wg-quick down "$1" >/dev/null 2>&1 || true
    ip link del "$1" >/dev/null 2>&1 || true
    systemctl restart "wg-quick@$1"
  else
    wg-quick down "$1" >/dev/null 2>&1 || true
    ip link del "$1" >/dev/null 2>&1 || true
    local msg
    if ! msg=$("${quick[@]}" up "$1" 2>&1); then fail "wg-quick up $1 failed: $(quick_failure "$msg" "/run/wireguard/vpnaas-$1.log")"; fi
  fi
  write_if_changed "/etc/wireguard/$1.impl" 600 "$2"$'\n'
}

PQ_PSK_MARK='# PresharedKey managed by pq-psk'

pq_managed() {  # configuration-file: the peers whose preshared key pq-psk manages ("key key ..."), from the configuration file
  # The charm marks such a peer in its [Peer] section (wgconfig.py); `wg-quick strip` drops the
  # comment, so it is read from the file. The sync never sets or resets their preshared key: the
  # pq-psk daemon installs a new one at every renewal (docs/security.md).
  awk -v mark="$PQ_PSK_MARK" -F' = ' '
    /^\[/ { s = ($0 ~ /^\[Peer\]/) ? "p" : "i"; p = ""; m = 0; next }
    s == "p" && $1 == "PublicKey" { p = $2 }
    s == "p" && $0 == mark { m = 1 }
    s == "p" && p != "" && m { printf "%s ", p; m = 0 }' "$1" 2>/dev/null || true
}

wg_strip() {  # configuration-text: STRIPPED, the text as `wg-quick strip` prints it (trailing line breaks cut, as $(...) does), and MANAGED as pq_managed says of it
  # In this shell instead of `wg-quick strip <dev>` and pq_managed's awk on the file this step has
  # just written with exactly this text: wg-quick is a bash program that ran three programs of its
  # own (readlink twice, stat twice) on every session. wg-quick's own loop (wireguard-tools,
  # src/wg-quick/linux.bash parse_options): each line as `read -r` gives it (blanks around it
  # trimmed), its key the text before the first = with the comment cut and blanks trimmed,
  # compared case-insensitively (its nocasematch; LC_ALL=C: ASCII); in the [Interface] section the
  # lines of wg-quick's own settings are dropped, every other line is kept (comments too). The
  # tests hold it to wg-quick's output. MANAGED: pq_managed's rule on the raw lines (a section's
  # PublicKey, in a [Peer] section that carries PQ_PSK_MARK, whichever comes first).
  local line raw key lkey iface=0 section="" pub="" mark=0
  STRIPPED=
  MANAGED=
  while IFS= read -r raw || [ -n "$raw" ]; do
    case "$raw" in
      '['*) if [[ $raw == '[Peer]'* ]]; then section=p; else section=i; fi; pub=""; mark=0 ;;
      PublicKey|"PublicKey = "*) if [ "$section" = p ]; then pub=${raw#PublicKey}; pub=${pub# = }; pub=${pub%% = *}; fi ;;
      "$PQ_PSK_MARK") [ "$section" != p ] || mark=1 ;;
    esac
    if [ "$section" = p ] && [ -n "$pub" ] && [ "$mark" = 1 ]; then MANAGED+="$pub "; mark=0; fi
    # as `read -r` with the default IFS gives it: spaces and tabs around the line trimmed
    line=${raw#"${raw%%[!$' \t']*}"}
    line=${line%"${line##*[!$' \t']}"}
    key=${line%%#*}
    key=${key%%=*}
    key=${key#"${key%%[![:space:]]*}"}
    key=${key%"${key##*[![:space:]]}"}
    lkey=${key,,}
    [[ $lkey != "["* ]] || iface=0
    [ "$lkey" != "[interface]" ] || iface=1
    if [ "$iface" = 1 ]; then
      case "$lkey" in address|mtu|dns|table|preup|predown|postup|postdown|saveconfig) continue ;; esac
    fi
    STRIPPED+=$line$'\n'
    # Not a here-string: bash before 5.1 (Ubuntu 18.04's 4.4) backs one with a file in /tmp, and
    # this text holds the private key. printf is a builtin: the text goes through a pipe only.
  done < <(printf '%s\n' "$1")
  while [[ $STRIPPED == *$'\n' ]]; do STRIPPED=${STRIPPED%$'\n'}; done
}

keep_managed_psk() {  # dev managed-keys: the stripped configuration on stdin, each managed peer's running preshared key added
  # `wg syncconf` gives a running peer whose entry has no PresharedKey an all-zero one
  # (wireguard-tools src/setconf.c, sync_conf), and a managed peer's entry never has one: the
  # key pq-psk agreed would be gone until the daemon put it back, and for good while it does not
  # run. So each managed peer's entry carries the key it runs with. The keys go from `wg show` to
  # the caller's `wg syncconf` through pipes and bash builtins only: never an argument, a file
  # or a log line.
  local dev=$1 managed=" $2 " pub psk line cur=""
  local -A held=()
  while IFS=$'\t' read -r pub psk; do
    case "$managed" in *" $pub "*) [ "$psk" = "(none)" ] || held[$pub]=$psk ;; esac
  done < <(timeout "$WG_TIMEOUT" wg show "$dev" preshared-keys 2>/dev/null || true)
  while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in
      '['*) cur="" ;;
      PresharedKey*) if [ -n "$cur" ]; then continue; fi ;;
    esac
    printf '%s\n' "$line"
    if [[ $line =~ ^PublicKey\ =\ ([A-Za-z0-9+/]+=)$ ]] && [ -n "${held[${BASH_REMATCH[1]}]:-}" ]; then
      cur=${BASH_REMATCH[1]}
      printf 'PresharedKey = %s\n' "${held[$cur]}"
    fi
  done
}

wg_canon_lines() {  # managed-keys wanted previous dump: the canonical lines wg_peer_changes compares (files)
  # One awk for all four sources (a process each cost several on every session): "W ..." the
  # wanted stripped configuration, "R ..." the running device (its `wg show dump`), "N/O peer <key>
  # name <host:port>" the endpoints that are names in the wanted and the previous configuration
  # (a name is compared with the name it had: the running device shows only what it resolved
  # to). Per peer its preshared key (none for a peer pq-psk manages: never set, never reset),
  # keepalive, each allowed prefix, and its endpoint when that is an address literal in the
  # wanted configuration (a peer without one is reached where it last sent from). "R up" when
  # the device answered; "V <key>" for each managed peer it runs. Unsorted: the caller sorts.
  # The private keys pass through these pipes only.
  awk -v keep="$1" -v wfile="$2" -v ofile="$3" -v dfile="$4" '
    function literal(e) { return e ~ /^[0-9.]+:[0-9]+$/ || e ~ /^\[[0-9a-fA-F:.]+\]:[0-9]+$/ }
    BEGIN { n = split(keep, k, " "); for (i = 1; i <= n; i++) M[k[i]] = 1 }
    FILENAME == dfile {
      split($0, d, "\t")
      if (FNR == 1) { print "R up"; print "R key " d[1]; print "R port " d[3]; next }
      if (d[1] in M) print "V " d[1]; else print "R peer " d[1] " psk " (d[2] == "(none)" ? "none" : d[2])
      print "R peer " d[1] " keepalive " d[8]
      if (d[1] in L) print "R peer " d[1] " endpoint " d[3]
      n = split(d[4], a, ","); for (i = 1; i <= n; i++) if (a[i] != "(none)") print "R peer " d[1] " allowed " a[i]
      next
    }
    /^\[/ { s = ($0 ~ /^\[Peer\]/) ? "p" : "i"; next }
    { e = index($0, " = "); if (e == 0) next; key = substr($0, 1, e - 1); v = substr($0, e + 3) }
    FILENAME == ofile { if (s == "p" && key == "PublicKey") q = v
                        if (s == "p" && key == "Endpoint" && !literal(v)) print "O peer " q " name " v
                        next }
    s == "i" && key == "PrivateKey" { print "W key " v }
    s == "i" && key == "ListenPort" { print "W port " v }
    s == "p" && key == "PublicKey" { p = v; P[p] = 1; psk[p] = "none"; ka[p] = "off" }
    s == "p" && key == "PresharedKey" { psk[p] = v }
    s == "p" && key == "PersistentKeepalive" { ka[p] = (v == 0 ? "off" : v) }
    s == "p" && key == "Endpoint" { if (literal(v)) { L[p] = 1; print "W peer " p " endpoint " v } else print "N peer " p " name " v }
    s == "p" && key == "AllowedIPs" { n = split(v, a, /, */); for (i = 1; i <= n; i++) if (a[i] != "") print "W peer " p " allowed " a[i] }
    END { for (q in P) { if (!(q in M)) print "W peer " q " psk " psk[q]; print "W peer " q " keepalive " ka[q] } }
  ' "$2" "$3" "$4"
}

wg_peer_changes() {  # wg_canon_lines' lines, sorted, on stdin: what makes the running device the wanted one
  # One line per change, in this order: "absent" when no device answered, "key", "port <n>",
  # "set <peer> <endpoint> <keepalive> <allowed,...> <psk>" for each peer to add or change ("-":
  # leave that setting as it runs), "remove <peer>" for each peer that is not wanted, "resync"
  # for what only a whole sync can set (a preshared key), and with a new own key "void <peer>"
  # for each running managed peer (its agreed key is bound to the old one). Nothing: unchanged.
  awk '
    { side = $1 }
    side == "R" && $2 == "up" { up = 1; next }
    side == "V" { managed[++nm] = $2; next }
    side == "N" && $2 == "peer" { name[$3] = $5; next }
    side == "O" && $2 == "peer" { old[$3] = $5; next }
    $2 == "key" { key[side] = $3; next }
    $2 == "port" { port[side] = $3; next }
    $2 == "peer" {
      k = $3
      if (!((side, k) in has)) { has[side, k] = 1; if (side == "W") order[++n] = k; else rorder[++m] = k }
      if ($4 == "allowed") al[side, k] = al[side, k] "," $5
      else val[side, k, $4] = $5
    }
    END {
      if (!up) print "absent"
      if (key["W"] != key["R"]) { print "key"; for (i = 1; i <= nm; i++) print "void " managed[i] }
      if (port["W"] != port["R"]) print "port " port["W"]
      for (i = 1; i <= n; i++) {
        k = order[i]; new = !(("R", k) in has); e = "-"; ka = "-"; a = "-"; p = "-"
        if (("W", k, "endpoint") in val) { if (new || val["W", k, "endpoint"] != val["R", k, "endpoint"]) e = val["W", k, "endpoint"] }
        else if (k in name) { if (new || name[k] != old[k]) e = name[k] }
        if (new || val["W", k, "keepalive"] != val["R", k, "keepalive"]) ka = val["W", k, "keepalive"]
        if (new || al["W", k] != al["R", k]) a = (al["W", k] == "") ? "(none)" : substr(al["W", k], 2)
        # no psk line: pq-psk manages it, the sync leaves it as it runs
        if ((("W", k, "psk") in val) && val["W", k, "psk"] != (new ? "none" : val["R", k, "psk"])) p = val["W", k, "psk"]
        if (p != "-" && p != "none") { print "resync"; continue }
        if (new || e != "-" || ka != "-" || a != "-" || p != "-") print "set " k " " e " " ka " " a " " p
      }
      for (i = 1; i <= m; i++) if (!(("W", rorder[i]) in has)) print "remove " rorder[i]
    }'
}

device_changes() {  # dev managed-keys stripped-configuration previous-configuration [dump]: wg_peer_changes' lines
  # The device asked once (`wg show dump`; or its dump as the caller has just read it), everything
  # compared by two awk programs and one sort.
  if [ $# -ge 5 ]; then
    wg_canon_lines "$2" <(printf '%s\n' "$3") <(printf '%s\n' "$4") <(printf '%s\n' "$5") | LC_ALL=C sort | wg_peer_changes
    return 0
  fi
  wg_canon_lines "$2" <(printf '%s\n' "$3") <(printf '%s\n' "$4") \
    <(timeout "$WG_TIMEOUT" wg show "$1" dump 2>/dev/null || true) | LC_ALL=C sort | wg_peer_changes
}

device_sync() {  # dev stripped-configuration previous-configuration [dump managed-keys]: the running device made that configuration, peer by peer
  # Instead of `wg syncconf`, which replaces every peer's allowed IPs: the userspace
  # implementations remove and insert them one call at a time, so a packet to or from any peer in
  # between finds no peer and is lost (measured: 8-11 packets of 44,000 at 1,000 per second over
  # 1,500 syncconfs of an unchanged configuration, wireguard-go), on every spoke of a hub whenever
  # one spoke joins. Here only the peers that differ from the configuration are set (added or
  # changed: their endpoint, keepalive or allowed IPs, each only when it differs) and the peers
  # that are not in it removed, in one `wg set`; the others are not touched. Then the device is
  # compared whole once more, and synced whole only if it still differs. Sets SYNC_HOW:
  # "unchanged", "set <n>" (the changes: key, port, each peer set or removed) or "syncconf". Not for boringtun, whose
  # UAPI a partial update wedges (ensure_device gives it `wg setconf` instead). What it costs
  # does not grow with the peers that did not change: a fixed number of processes (one `wg show`,
  # two awk, one sort), and one `wg set` for what changed.
  local dev=$1 changes kind peer ep ka allowed psk n=0 whole=0 managed rekey=0
  local -a args=() removals=() voided=()
  # A peer whose preshared key pq-psk manages has no psk line on either side: never reset. The
  # caller may give them (wg_strip) and the device's `wg show dump` it has just read (one asking
  # of the device fewer: ensure_device).
  if [ $# -ge 5 ]; then
    managed=$5
    changes=$(device_changes "$dev" "$managed" "$2" "$3" "$4")
  else
    managed=$(pq_managed "/etc/wireguard/$dev.conf")
    changes=$(device_changes "$dev" "$managed" "$2" "$3")
  fi
  if [ -z "$changes" ]; then
    SYNC_HOW=unchanged
    return 0
  fi
  while read -r kind peer ep ka allowed psk; do
    case "$kind" in
      key) args+=(private-key "/etc/wireguard/$dev.key"); n=$((n + 1)); rekey=1 ;;
      port) args+=(listen-port "$peer"); n=$((n + 1)) ;;
      remove) removals+=(peer "$peer" remove); n=$((n + 1)) ;;
      # A new own key voids every preshared key pq-psk agreed on this device: a key is bound to
      # the pair of public keys, and the other end's entry for the new key starts without one.
      # Cleared in the same `wg set` as the key change, so both ends start the new pair classical
      # at once (the daemon never puts back a key agreed under the previous own key: pqpsk/daemon.go).
      void) voided+=(peer "$peer" preshared-key /dev/null) ;;
      set)
        args+=(peer "$peer")
        [ "$ep" = - ] || args+=(endpoint "$ep")
        [ "$ka" = - ] || args+=(persistent-keepalive "$ka")
        [ "$psk" = - ] || args+=(preshared-key /dev/null)
        if [ "$allowed" = "(none)" ]; then args+=(allowed-ips ""); elif [ "$allowed" != - ]; then args+=(allowed-ips "$allowed"); fi
        n=$((n + 1)) ;;
      *) whole=1 ;;   # absent (no device answered) or resync
    esac
  done <<< "$changes"
  if [ "$whole" = 0 ]; then
    timeout "$WG_TIMEOUT" wg set "$dev" "${args[@]}" "${voided[@]}" "${removals[@]}"
    # Compared whole once more; the previous names are the wanted ones now (set just above).
    if [ -z "$(device_changes "$dev" "$managed" "$2" "$2")" ]; then
      SYNC_HOW="set $n"
      return 0
    fi
  fi
  # The whole sync keeps the managed peers' running preshared keys (keep_managed_psk), except
  # with a new own key, which voids them (above).
  if [ "$rekey" = 1 ]; then managed=""; fi
  wg syncconf "$dev" <(printf '%s\n' "$2" | keep_managed_psk "$dev" "$managed")
  if [ "${#voided[@]}" -gt 0 ]; then timeout "$WG_TIMEOUT" wg set "$dev" "${voided[@]}" 2>/dev/null || true; fi
  SYNC_HOW=syncconf
}

drain_device() {  # dev: wait (at most 1 s) until dev has sent what was routed into it
  # A key rotation moves a direction's routes off a device and, in the same step, changes that
  # device's key (phase 3) or deletes it (phase 5). A packet routed into the device just before
  # the move may still be inside the WireGuard implementation (read from its TUN, not yet
  # encrypted and sent): a new key expires the session it would have used, a deleted device drops
  # it. So wait until the device's transmitted bytes stop growing for one poll interval. A packet
  # waiting for a handshake is never sent by this device anyway: the wait is bounded.
  local before after _
  before=$(timeout "$WG_TIMEOUT" wg show "$1" transfer 2>/dev/null | awk '{s += $3} END {print s + 0}') || return 0
  for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
    sleep 0.05
    after=$(timeout "$WG_TIMEOUT" wg show "$1" transfer 2>/dev/null | awk '{s += $3} END {print s + 0}') || return 0
    [ "$after" != "$before" ] || return 0
    before=$after
  done
}

device_key() {  # dev mode(keep|fresh|copy) source-dev: the device's private key file as the mode says; its public key in PUB
  local key="/etc/wireguard/$1.key" from want meta
  if [ "$2" = copy ]; then
    # A key rotation: a temporary device takes its main device's key, or a main device the new
    # key of its temporary one. Copied only when it differs (a repeated step changes nothing),
    # and never from a key file that wg refuses.
    from="/etc/wireguard/$3.key"
    if want=$(wg pubkey < "$from" 2>/dev/null) && [ "$want" != "$(wg pubkey < "$key" 2>/dev/null || true)" ]; then
      KEY_COPIED=1
      unset "VPNAAS_STAT[$key]"
      (umask 077 && cp "$from" "$key.vpnaas-tmp")
      chmod 600 "$key.vpnaas-tmp"
      mv -f "$key.vpnaas-tmp" "$key"
    fi
  fi
  # A missing, empty or corrupt key (wg pubkey refuses it) is replaced by a new one. Made 0600
  # whatever the step's umask (an OAI component's files set 022 for the step).
  if [ "$2" = fresh ] || ! PUB=$(wg pubkey < "$key" 2>/dev/null); then
    (umask 077 && wg genkey > "$key.vpnaas-tmp")
    mv -f "$key.vpnaas-tmp" "$key"
    PUB=$(wg pubkey < "$key")
  else
    # its mode as ensure_device's stat_prefetch saw it (else asked here)
    meta=${VPNAAS_STAT[$key]:-}
    unset "VPNAAS_STAT[$key]"
    [ -n "$meta" ] || meta=$(stat -c '%s %a' -- "$key")
    [ "${meta#* }" = 600 ] || chmod 600 "$key"   # made by a release that left it to the umask
  fi
}

ensure_device() {  # dev key-mode key-source restart(0|1) data-name implementation: <name>_BODY (base64) in the data section
  local dev=$1 restart=$4 body
  local key="/etc/wireguard/$dev.key" conf="/etc/wireguard/$dev.conf" priv stripped wanted previous
  dataplane_resolve "${6:-auto}"
  stat_prefetch "$key" "$conf" "/etc/wireguard/$dev.impl"   # one stat for the three files compared below
  data_text body "$5_BODY"
  KEY_COPIED=0
  device_key "$dev" "$2" "$3"
  out "PUBKEY $dev $PUB"
  IFS= read -r priv < "$key" || true   # one line (wg genkey's), read without a program
  # The configuration as it must be, compared with the file before anything is written (the key
  # stays in this shell's memory: no copy of it lands anywhere but the file itself).
  printf -v wanted '[Interface]\nPrivateKey = %s\n%s' "$priv" "$body"
  # A device runs on one implementation for its whole life: another choice re-creates it (a short
  # break on this device only); the same choice never does.
  # A userspace daemon that no longer answers (WG_TIMEOUT) counts as gone: it is started again.
  # What the running peers' endpoint names were (device_sync), and its interface settings: the
  # file as it is before this step writes it, read without a program.
  previous=
  if [ -f "$conf" ]; then read_whole previous "$conf"; fi
  iface_signature "$previous"
  local was=$SIGNATURE
  iface_signature "$wanted"
  # The device asked once here (`wg show dump`: it answers when that succeeds); the sync compares
  # the same dump, unless the drain below waits before it.
  local dump=
  if [ "$restart" = 0 ] && [ "$was" = "$SIGNATURE" ] && dump=$(timeout "$WG_TIMEOUT" wg show "$dev" dump 2>/dev/null) \
     && dataplane_current "$dev" running && [ "$DP_CURRENT" = "$DP_IMPL" ]; then
    local how=syncconf
    if [ "$DP_IMPL" = boringtun ]; then
      # boringtun 0.7.1 answers the partial updates of `wg syncconf` and `wg set` with EPROTO and
      # then never answers its UAPI socket again; a whole `wg setconf` it takes. So a changed
      # configuration is set whole, and an unchanged one not at all: setconf replaces the peers,
      # whose sessions then start over with a new handshake (docs/bench.md).
      how=unchanged
      cmp -s "$conf" <(printf '%s' "$wanted") || how=setconf
    fi
    write_if_changed "$conf" 600 "$wanted"
    write_if_changed "/etc/wireguard/$dev.impl" 600 "$DP_IMPL"$'\n'
    # The routes this device lost in this step (stage_routes, the temporary device applied first)
    # carry nothing new into it; what they already carried leaves before the new key expires its session.
    if [ "$KEY_COPIED" = 1 ]; then drain_device "$dev"; fi
    # what `wg-quick strip` makes of the file just written, in this shell (wg_strip)
    wg_strip "$wanted"
    stripped=$STRIPPED
    if [ "$how" = syncconf ] && [ "$KEY_COPIED" = 1 ]; then
      device_sync "$dev" "$stripped" "$previous"   # the device asked again after the drain
      how=$SYNC_HOW
    elif [ "$how" = syncconf ]; then
      device_sync "$dev" "$stripped" "$previous" "$dump" "$MANAGED"
      how=$SYNC_HOW
    elif [ "$how" = setconf ]; then
      wg setconf "$dev" <(printf '%s\n' "$stripped")
    fi
    if [ "$how" != unchanged ]; then pq_psk_kick; fi
    apply_routes "$dev"
    dataplane_report "$dev" "$DP_IMPL"
    out "APPLIED $dev $how"
  else
    write_if_changed "$conf" 600 "$wanted"
    device_up "$dev" "$DP_IMPL" "$DP_PROGRAM"
    pq_psk_kick   # a re-created device has no preshared key: the agreed ones go back now
    # PostUp already ran the hook; once more to report what it refused.
    apply_routes "$dev"
    dataplane_report "$dev" "$DP_IMPL"
    out "APPLIED $dev up"
  fi
}

apply_device() {  # as ensure_device; a failing device never stops the others or the report
  isolated "$1" ensure_device "$@"
}

remove_stale_devices() {  # wanted devices as arguments; only files carrying our marker are touched
  local f dev w keep
  for f in /etc/wireguard/wg-*.conf /etc/wireguard/wr-*.conf; do
    [ -e "$f" ] || continue
    has_line "$f" "$MARKER" || continue
    dev=${f##*/}
    dev=${dev%.conf}
    keep=0
    for w in "$@"; do [ "$w" = "$dev" ] && keep=1; done
    [ "$keep" = 1 ] && continue
    # A temporary device whose routes just went back to its main device may still hold packets.
    case "$dev" in wr-*) drain_device "$dev" ;; esac
    device_down "$dev"
    dataplane_forget "$dev"
    rm -f "$f" "/etc/wireguard/$dev.key" "/etc/wireguard/$dev.routes"
    out "REMOVED $dev"
  done
}

uapi_safe() {  # device: `wg` may ask it: a kernel device, or a userspace daemon whose UAPI socket listens
  # `wg show <dev>` deletes <dev>'s UAPI socket when connecting to it is refused, taking it for
  # stale (wireguard-tools src/ipc-uapi-unix.h), and a userspace daemon's socket refuses in the
  # instant between its bind() and listen() while the device starts (another session's step,
  # or wg-quick@<dev> at boot); wireguard-go then exits (its ipc/uapi_linux.go) and that start
  # fails with "Cannot find device". So the kernel's table of Unix sockets is read first (flag
  # 00010000: listening; boringtun names its socket /var/run/wireguard//<dev>.sock), and
  # nothing connects to it. The same test as oai/service.sh's (a program installed on its own).
  # (VPNAAS_SYSFS: the tests' stand-in kernel devices)
  grep -qx DEVTYPE=wireguard "${VPNAAS_SYSFS:-/sys}/class/net/$1/uevent" 2>/dev/null && return 0
  awk -v dev="$1" '$4 == "00010000" { p = $8; gsub(/\/+/, "/", p); sub(/^\/var\/run\//, "/run/", p)
    if (p == "/run/wireguard/" dev ".sock") found = 1 } END { exit !found }' /proc/net/unix 2>/dev/null
}

has_handshake() {  # every peer of every named device has completed a handshake
  local dev
  for dev in "$@"; do
    uapi_safe "$dev" || return 1
    wg show "$dev" latest-handshakes >/dev/null 2>&1 || return 1
    [ -n "$(wg show "$dev" peers)" ] || return 1
    wg show "$dev" latest-handshakes | awk '$2 == 0 {bad=1} END {exit bad}' || return 1
  done
}
