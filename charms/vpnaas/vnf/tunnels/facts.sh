# shellcheck shell=bash
# The tunnel step's part (sourced by tunnels.sh, after lib.sh): what the VNF reports about itself,
# and the guard that applies nothing when it changed.

fact_lines() {  # name...: what the route policy must never route into a tunnel, as this VNF sees it
  local ifname cidr rest client name v6=1 i
  local -a w
  local -A ours=()   # per device, whether its configuration is the charm's (one look each)
  while read -r _ ifname _ cidr rest; do
    case "$ifname" in
      "$SERVICE_DEVICE") continue ;;
      wg-*|wr-*)
        if [ -z "${ours[$ifname]:-}" ]; then
          ours[$ifname]=0
          if has_line "/etc/wireguard/$ifname.conf" "$MARKER"; then ours[$ifname]=1; fi
        fi
        [ "${ours[$ifname]}" = 0 ] || continue ;;
    esac
    case "$rest" in *" lo:vpnaas"*) continue ;; esac
    echo "addr $cidr"
  done < <(ip -o addr show)
  # every word after a "via" of a default route (read by bash: an awk was one program more)
  while read -r -a w; do
    for ((i = 0; i < ${#w[@]} - 1; i++)); do [ "${w[i]}" != via ] || echo "gateway ${w[i + 1]}"; done
  done < <(ip -4 route show default 2>/dev/null || true; ip -6 route show default 2>/dev/null || true)
  client=${VPNAAS_SSH_CONNECTION%% *}
  [ -z "$client" ] || echo "client $client"
  if [ -r /proc/sys/net/ipv6/conf/all/disable_ipv6 ]; then read -r v6 < /proc/sys/net/ipv6/conf/all/disable_ipv6 || v6=1; fi
  if [ -e /proc/net/if_inet6 ] && [ "$v6" = 0 ]; then
    echo "ipv6 on"
  else
    echo "ipv6 off"
  fi
  # The peers' endpoint names as this VNF resolves them (what wg would send to): a peer's prefix
  # must not capture them either. "-" when a name does not resolve.
  for name in "$@"; do
    { timeout 10 getent ahosts "$name" 2>/dev/null || true; } | awk -v n="$name" '{print "resolve " n " " $1}' \
      | sort -u | grep . || echo "resolve $name -"
  done
}

facts_guard() {  # expected-digest name...: report the facts; apply nothing unless they are as expected
  # The charm planned with the facts whose digest it passes ("-": none yet). Facts that differ
  # (first contact, a VNF rebuilt at the same address, a new gateway or address, an endpoint
  # name that resolves elsewhere) end the step here, before anything is applied: the charm plans
  # again with what the VNF reports now and sends the step again in the same login.
  local expected=$1 lines digest
  shift
  local line
  lines=$(fact_lines "$@" | sort)
  digest=$(sha256sum <<< "$lines")   # the lines, each with its line break
  digest=${digest%% *}
  while IFS= read -r line; do out "FACT $line"; done <<< "$lines"
  out "FACTS $digest"
  if [ "$expected" != "$digest" ]; then
    out "FACTS changed"
    out DONE
    exit 0
  fi
}
