#!/usr/bin/env bash
# System packages used by the tests, the local testbed and the demo. Idempotent; needs root.
set -euo pipefail
pkgs=(python3 python3-venv make git openssh-server openssh-client wireguard-tools wireguard-go
      iproute2 iputils-ping iperf3 tcpdump procps util-linux psmisc kmod sudo ca-certificates
      shellcheck)
pkgs+=(libconfig9)        # make oai-conformance parses OAI's libconfig files with libconfig itself
# make oai-conformance compiles the CN5G NFs' own configuration readers against these (nfbuild.py);
# g++ also for its test. Debian 12's libyaml-cpp-dev is yaml-cpp 0.7.0, the version of Ubuntu 22.04.
pkgs+=(g++ pkg-config libyaml-cpp-dev libspdlog-dev libfmt-dev nlohmann-json3-dev libboost-dev libconfig++-dev)
pkgs+=(strace)           # testbed.vnfcount and tests/e2e/test_vnf_step_cost.py count the VNF step's processes
pkgs+=(iptables)         # the slice marking (mangle DSCP) in the e2e test and the demo (docs/slices.md)
pkgs+=(openvpn openssl)   # the bench's peer VPN and its throwaway PKI
pkgs+=(prometheus)        # the testbed's Prometheus server and promtool (docs/metrics.md); not started as a service
pkgs+=(prometheus-alertmanager)  # amtool and Alertmanager: make unit checks the inhibit rules in it; not started
missing=()
for p in "${pkgs[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p"); done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
