# shellcheck shell=bash
# shellcheck source-path=SCRIPTDIR
# The tunnel step of a reconcile (after lib.sh): make the VNF's WireGuard devices, routes and
# service addresses match the charm's plan, in one SSH session, and report what is there.
#
# Values arrive only as arguments, already validated by the charm's grammar (validation.py);
# the config bodies arrive base64-encoded and never contain the private key, which is generated
# here and never leaves this machine. Everything is idempotent: a second run changes nothing.
#
# What the charm owns, and the only things it ever changes or removes:
#   - /etc/wireguard/<dev>.conf files that carry MARKER, their keys and .routes files (wg-<ep>, and
#     wr-<ep> while a key rotation runs a temporary device beside it: rotation.py);
#   - routes with protocol number VPNAAS_PROTO (iproute2 `proto`), never a connected, static or
#     operator route: a wanted route whose prefix already has a foreign route is refused;
#   - service addresses listed in OWNED_ADDRESSES, i.e. that this charm added itself;
#   - DATAPLANE_DIR (the userspace WireGuard programs it shipped, its wg-quick wrapper), the
#     <dev>.impl records and the wg-quick@<dev> drop-ins that start a device on a userspace program.

MARKER='# Managed by the VPNaaS charm; changes are overwritten on the next reconcile.'
VPNAAS_PROTO=148
ROUTES_HOOK=/etc/wireguard/vpnaas-routes.sh
SERVICE_HOOK=/etc/wireguard/vpnaas-service-addresses.sh
WANTED_ADDRESSES=/etc/wireguard/vpnaas-service-addresses
OWNED_ADDRESSES=/etc/wireguard/vpnaas-service-addresses.owned
SERVICE_DEVICE=vpnaas0
# The data plane (vpnaas/vnf/dataplane.py): the programs the charm installs, and per device the
# implementation it was brought up with (/etc/wireguard/<dev>.impl).
DATAPLANE_DIR=/usr/local/lib/vpnaas
DATAPLANE_WRAPPER=$DATAPLANE_DIR/wg-quick-userspace
DATAPLANE_DROPIN=vpnaas-dataplane.conf
TUNNELS_KERNEL=0           # 1: this VNF's kernel has the WireGuard module
WG_TIMEOUT=10              # s: a userspace daemon's UAPI socket that does not answer by then is wedged

# --------------------------------------------------------------------------- the step's parts
# One concept per file (vnf/tunnels/); vnfscript.load puts each one in place of its source line,
# in this order, so the VNF gets the step as one program and never reads a file of ours.
# what wg-quick runs too: the routes and service-address hooks, addresses compared as addresses
# shellcheck source=tunnels/hooks.sh
source "$VPNAAS_PARTS/tunnels/hooks.sh"
# the route lists and service addresses of a reconcile, staged before any device
# shellcheck source=tunnels/routes.sh
source "$VPNAAS_PARTS/tunnels/routes.sh"
# what the VNF reports about itself, and the guard that applies nothing when it changed
# shellcheck source=tunnels/facts.sh
source "$VPNAAS_PARTS/tunnels/facts.sh"
# which WireGuard runs each device: the kernel module or a shipped userspace program
# shellcheck source=tunnels/dataplane.sh
source "$VPNAAS_PARTS/tunnels/dataplane.sh"
# each device made as planned: its key, its configuration (peer by peer), up or down
# shellcheck source=tunnels/devices.sh
source "$VPNAAS_PARTS/tunnels/devices.sh"
# the slice's DSCP on the tunnels' outer packets, and the underlay egress queued by it
# shellcheck source=tunnels/qos.sh
source "$VPNAAS_PARTS/tunnels/qos.sh"
# the pq-psk daemon: a post-quantum preshared key per tunnel, its files and its state
# shellcheck source=tunnels/pqpsk.sh
source "$VPNAAS_PARTS/tunnels/pqpsk.sh"

# --------------------------------------------------------------------------- the report and the removal
report() {  # devices...: host, time and every peer of every device (never the private key)
  # The host name (the kernel's, as hostname(1) prints it) and the time read by bash itself.
  local dev host='' dump line first pk rest psk more
  read -r host < /proc/sys/kernel/hostname || host=$(hostname)
  out "HOST $host"
  printf 'NOW %(%s)T\n' -1
  for dev in "$@"; do
    # One `wg show dump` per device, read by bash (an awk was one program more per device): UP
    # and its peers, or DOWN when it printed nothing. Peer lines only: the first line of the
    # dump holds the private key. The second field, a peer's preshared key, never leaves the VNF
    # either: "(hidden)" when one is set. Tab-separated fields as they are, the second replaced.
    dump=$(timeout "$WG_TIMEOUT" wg show "$dev" dump 2>/dev/null) || true
    if [ -z "$dump" ]; then out "DOWN $dev"; continue; fi
    first=1
    while IFS= read -r line; do
      if [ "$first" = 1 ]; then first=0; out "UP $dev"; continue; fi
      pk=${line%%$'\t'*}
      rest=${line#"$pk"}
      rest=${rest#$'\t'}
      psk=${rest%%$'\t'*}
      more=${rest#"$psk"}
      [ "$psk" = "(none)" ] || psk="(hidden)"
      out "PEER $dev $pk"$'\t'"$psk$more"
    done < <(printf '%s\n' "$dump")   # a pipe: a here-string is a file in /tmp before bash 5.1 (the dump holds the keys)
  done
  pq_psk_report
}

teardown() {  # the charm is being removed: everything it put on the VNF for its tunnels goes, nothing else
  local a
  if [ -d /run/systemd/system ]; then init=systemd; else init=none; fi
  remove_stale_devices ""   # no device is wanted any more
  if [ -x "$SERVICE_HOOK" ]; then
    : > "$WANTED_ADDRESSES"
    "$SERVICE_HOOK"
  fi
  # The service device is the charm's own; it goes once no address is left on it (an address
  # the charm did not add keeps it, and the operator's address with it).
  if ip link show dev "$SERVICE_DEVICE" >/dev/null 2>&1; then
    a=$(ip -o addr show dev "$SERVICE_DEVICE" 2>/dev/null || true)
    if [ -z "$a" ]; then ip link del "$SERVICE_DEVICE"; else out "NOTE $SERVICE_DEVICE kept: it holds addresses the charm did not add"; fi
  fi
  rm -f "$ROUTES_HOOK" "$SERVICE_HOOK" "$WANTED_ADDRESSES" "$OWNED_ADDRESSES"
  # The shipped programs and the wrapper: every device that ran on them is down now. Named one by
  # one: nothing else in the directory is the charm's to remove (and it may be a mount point).
  pq_psk_files >/dev/null   # no device: every file of ours goes, and the folder with the last one
  pq_psk_forget             # the daemon stopped, its state, log and pid files deleted
  rm -f "$DATAPLANE_DIR/wireguard-go" "$DATAPLANE_DIR/boringtun" "$DATAPLANE_DIR/pq-psk" "$DATAPLANE_WRAPPER" \
    "$PROGRAMS_DIGESTS"
  rmdir "$DATAPLANE_DIR" 2>/dev/null || true
  metrics_remove
  qos_step --   # no marks, no queue: the chain and the queues the charm installed go
  out "TORNDOWN"
}
