# shellcheck shell=bash
# The tunnel step's part (sourced by tunnels.sh, after lib.sh): the route lists and service
# addresses of a reconcile, staged before any device.

install_hooks() {
  # One stat for the folder, the hooks and the wanted addresses (service_addresses, next)
  stat_prefetch /etc/wireguard "$ROUTES_HOOK" "$SERVICE_HOOK" "$WANTED_ADDRESSES"
  private_dir /etc/wireguard 700
  install_hook "$ROUTES_HOOK" vpnaas_routes
  install_hook "$SERVICE_HOOK" vpnaas_service_addresses
}

apply_routes() {  # dev: run the routes hook now and pass on what it refused
  local line _kind dev prefix _why
  "$ROUTES_HOOK" "$1" | while IFS= read -r line; do
    out "$line"
    read -r _kind dev prefix _why <<< "$line"
    [ -z "${TUNNELS_LOG:-}" ] || printf 'refused %s %s\n' "$dev" "$prefix" >> "$TUNNELS_LOG"
  done
}

service_addresses() {  # address[=label]...: the wanted service addresses (PreUp of every device runs this too)
  local wanted="" a
  # "address label" per line (the first = only), empty arguments left out: bash alone
  for a in "$@"; do [ -z "$a" ] || wanted+="${a/=/ }"$'\n'; done
  write_if_changed "$WANTED_ADDRESSES" 600 "$wanted"
  "$SERVICE_HOOK"
}

stage_routes() {  # dev data-name ...: every planned device's route list, before any device is applied
  # So a prefix that moves between two of the charm's devices (a key rotation) is moved by the
  # device that gains it (`ip route replace`), whichever runs first: the other keeps it meanwhile.
  local f dev i
  local -a files=()
  local -A planned=()
  for ((i = 1; i < $#; i += 2)); do files+=("/etc/wireguard/${!i}.routes"); done
  [ "${#files[@]}" = 0 ] || stat_prefetch "${files[@]}"   # one stat for every device's list
  local routes
  while [ $# -ge 2 ]; do
    planned[$1]=1
    data_text routes "$2_ROUTES"
    write_if_changed "/etc/wireguard/$1.routes" 600 "$routes"
    # Before any route moves: the device that loses a route may still receive from it.
    vpnaas_rp_loose "$1"
    shift 2
  done
  # A device that is going away holds nothing any more: it protects no route of another.
  for f in /etc/wireguard/wg-*.routes /etc/wireguard/wr-*.routes; do
    [ -s "$f" ] || continue
    dev=${f##*/}
    dev=${dev%.routes}
    [ -n "${planned[$dev]:-}" ] || : > "$f"
  done
}
