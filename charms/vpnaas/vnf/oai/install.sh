# shellcheck shell=bash
# The oai-install step (after lib.sh and oai-lib.sh): wait for cloud-init and the dpkg lock, fetch
# the pinned source, run the component's build steps, link the program, write the marker.
#
# The build takes 30-60 minutes, longer than an SSH session may live: the step copies itself to the
# state directory and runs that copy detached (setsid) with the same arguments; the foreground
# follows its log. Running the step again attaches to a build in progress instead of starting one.

oai_install() {  # component title repo ref timeout build-steps packages candidates binary source-dir pins pin-program-base64 [prepare-args...]
  umask 022  # sources, builds and installed files readable like a normal install (lib.sh's is 077)
  oai_dirs
  if [ "${OAI_DETACHED:-}" = 1 ]; then
    oai_install_body "$@"
    return
  fi
  run_detached "install-$1" "$5" "$@"
}

run_detached() {  # name limit args...: survives a dropped SSH session; a rerun attaches to it
  local name=$1 limit=$2 pid="" status="" err=""
  shift 2
  local pidf="$OAI_STATE/$name.pid" rcf="$OAI_STATE/$name.rc" log="$OAI_LOGS/oai-$name.log"
  local copy="$OAI_STATE/$name.sh"
  if [ -s "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null \
     && grep -q "$name.sh" "/proc/$(cat "$pidf")/cmdline" 2>/dev/null; then
    pid=$(cat "$pidf")
    out "NOTE attaching to the $name run already in progress (pid $pid)"
  else
    cp "$0" "$copy.tmp"
    chmod 700 "$copy.tmp"
    mv -f "$copy.tmp" "$copy"
    rm -f "$rcf"
    : > "$log"
    # shellcheck disable=SC2016  # expanded by the inner bash
    OAI_DETACHED=1 setsid bash -c 'rcf=$1; shift; bash "$@"; echo $? > "$rcf.tmp"; mv -f "$rcf.tmp" "$rcf"' \
      _ "$rcf" "$copy" "$@" >> "$log" 2>&1 < /dev/null &
    pid=$!
    echo "$pid" > "$pidf"
  fi
  # tail (coreutils; busybox's has no --pid) wakes on each write to the log, but sees the run's end
  # only when it next checks the pid: every -s seconds (1 by default), then it reads the log to its
  # end and exits. 0.1 s: the action returns a tenth of a second after the run, not up to a second.
  { timeout "$limit" tail -n +1 -s 0.1 -F --pid="$pid" "$log" 2>/dev/null || true; } | while IFS= read -r line; do
    case "$line" in PROGRESS\ *|NOTE\ *|RESULT\ *) out "$line" ;; esac
  done
  if kill -0 "$pid" 2>/dev/null && [ ! -e "$rcf" ]; then
    fail "$name still running after ${limit}s; it goes on on the VNF:" \
      "run the action again to keep waiting (log $log)"
  fi
  [ -s "$rcf" ] || fail "$name ended without an exit status (killed?); see $log"
  status=$(cat "$rcf")
  if [ "$status" != 0 ]; then
    err=$(grep -m 1 '^ERROR ' "$log" | cut -c7- || true)
    fail "${err:-$name exited with status $status} (log $log)"
  fi
}

oai_install_body() {  # component title repo ref timeout build-steps packages candidates binary source-dir pins pin-program-base64 [prepare-args...]
  local c=$1 title=$2 repo=$3 ref=$4 steps=$6 binary=$9 src=${10} total b found=""
  local built="$OAI_STATE/$c.built" log="$OAI_LOGS/oai-$c-build.log" pins="$OAI_STATE/$c.submodule-pins"
  local -a packages candidates
  read -r -a packages <<< "$7"
  read -r -a candidates <<< "$8"
  total=$((steps + 4))
  write_pins "$pins" "${11}"
  install_helper oai-pin-submodules "${12}"
  # The marker names repository and ref, and the pins it was built with: the same inputs again are
  # a no-op.
  if [ -s "$built" ] && [ "$(cut -d' ' -f1,2 "$built")" = "$repo $ref" ] && [ -x "$binary" ] \
     && cmp -s "$pins" "$built.pins"; then
    out "RESULT state unchanged"
    out "RESULT commit $(cut -d' ' -f3 "$built")"
    return 0
  fi
  progress "1/$total waiting for cloud-init"
  wait_cloud_init 1800
  progress "2/$total waiting for the dpkg lock and the prerequisites"
  ensure_packages "${packages[@]}"
  if declare -F "oai_prepare_$c" >/dev/null; then "oai_prepare_$c" "${@:13}"; fi
  progress "3/$total fetching $title $ref"
  fetch_source "$src" "$repo" "$ref" "$pins"
  : > "$log"
  OAI_STEP=3 OAI_TOTAL=$total "oai_build_$c" "$src" "$log"
  progress "$total/$total checking the build"
  for b in "${candidates[@]}"; do
    if [ -x "$b" ]; then found=$b; break; fi
  done
  [ -n "$found" ] || fail "the build finished but none of ${candidates[*]} exists (see $log)"
  # The service always runs the stable path, a link to what the build made.
  mkdir -p "$(dirname "$binary")"
  ln -sfn "$found" "$binary"
  cp "$pins" "$built.pins"
  printf '%s %s %s\n' "$repo" "$ref" "$OAI_COMMIT" > "$built.tmp"
  mv -f "$built.tmp" "$built"
  out "RESULT state built"
  out "RESULT commit $OAI_COMMIT"
}

write_pins() {  # file "path=commit ...": the pin list oai-pin-submodules reads (one "path commit" a line)
  local pin path commit
  local -a all=()
  read -r -a all <<< "$2"
  : > "$1.tmp"
  for pin in ${all[@]+"${all[@]}"}; do
    path=${pin%%=*} commit=${pin#*=}
    [[ "$path" =~ ^[A-Za-z0-9._/-]+$ && "$commit" =~ ^[0-9a-f]{40}$ ]] || fail "bad submodule pin $pin"
    printf '%s %s\n' "$path" "$commit" >> "$1.tmp"
  done
  mv -f "$1.tmp" "$1"
}

build_step() {  # src log label command...: one numbered build step, in the source directory
  local src=$1 log=$2 label=$3
  shift 3
  OAI_STEP=$((OAI_STEP + 1))
  progress "$OAI_STEP/$OAI_TOTAL $label"
  wait_dpkg_lock "$OAI_DPKG_LOCK_TIMEOUT"
  cd "$src" || fail "no source folder $src"
  run_logged "$log" "$label" "$@"
}

# --------------------------------------------------------------------------- per component
# oai_prepare_<c> (optional) gets the install step's extra arguments, after the prerequisites.

oai_prepare_hss() {  # repository series keys-url: Cassandra from Apache's Debian repository
  local repo=$1 series=$2 keys=$3 apt=${OAI_APT_DIR:-/etc/apt} tmp line
  local keyring="$apt/keyrings/apache-cassandra.asc" list="$apt/sources.list.d/cassandra.list"
  mkdir -p "$apt/keyrings" "$apt/sources.list.d"
  tmp=$(mktemp "$apt/keyrings/.cassandra.XXXXXX")
  curl -fsSL --max-time 120 -o "$tmp" "$keys" || { rm -f "$tmp"; fail "cannot fetch Cassandra's keys from $keys"; }
  grep -q 'BEGIN PGP PUBLIC KEY BLOCK' "$tmp" || { rm -f "$tmp"; fail "$keys is not an armoured key file"; }
  chmod 644 "$tmp"
  install_file "$tmp" "$keyring"
  line="deb [signed-by=$keyring] $repo $series main"
  if [ "$(cat "$list" 2>/dev/null || true)" != "$line" ]; then
    printf '%s\n' "$line" > "$list.tmp"
    chmod 644 "$list.tmp"
    mv -f "$list.tmp" "$list"
    out "NOTE Cassandra from $repo $series"
  fi
  if ! dpkg -s cassandra >/dev/null 2>&1; then
    apt_get update >/dev/null || fail "apt-get update failed (is $repo $series reachable?)"
    apt_get install --no-install-recommends cassandra >/dev/null \
      || fail "cannot install cassandra from $repo $series"
    # The charm configures Cassandra and starts it in oai-configure.
    if [ "$(oai_mode)" = systemd ]; then systemctl stop cassandra || true; else service cassandra stop || true; fi
  fi
  if [ -x /usr/lib/jvm/java-8-openjdk-amd64/jre/bin/java ]; then
    update-alternatives --set java /usr/lib/jvm/java-8-openjdk-amd64/jre/bin/java >/dev/null
  fi
}

# Each takes (src log) and runs exactly as many build_step calls as the charm's build_steps.

oai_build_hss() {
  build_step "$1" "$2" "installing the HSS build dependencies" \
    bash -c 'cd scripts && ./build_hss_rel14 --check-installed-software --force'
  build_step "$1" "$2" "building the HSS" bash -c 'cd scripts && ./build_hss_rel14 --clean'
}

oai_build_mme() {
  build_step "$1" "$2" "installing the MME build dependencies" \
    bash -c 'cd scripts && ./build_mme --check-installed-software --force'
  build_step "$1" "$2" "building the MME" bash -c 'cd scripts && ./build_mme --clean'
}

oai_build_spgwc() {
  build_step "$1" "$2" "installing the SPGW-C build dependencies" ./build/scripts/build_spgwc -I -f
  build_step "$1" "$2" "building the SPGW-C" ./build/scripts/build_spgwc -c -V -b Debug -j
}

oai_build_spgwu() {
  build_step "$1" "$2" "installing the SPGW-U build dependencies" ./build/scripts/build_spgwu -I -f
  build_step "$1" "$2" "building the SPGW-U" ./build/scripts/build_spgwu -c -V -b Debug -j
}

oai_build_enb() {
  # shellcheck disable=SC2016  # oaienv sets the variables build_oai reads
  build_step "$1" "$2" "installing the eNB build dependencies" \
    bash -c 'source oaienv && cd cmake_targets && ./build_oai -I --phy_simulators'
  check_asn1c "$1"
  build_step "$1" "$2" "building the eNB and UE with the RF simulator" \
    bash -c 'source oaienv && cd cmake_targets && ./build_oai -w SIMU --UE --eNB'
}

check_asn1c() {  # src: build_oai -I clones and builds asn1c into a log and ignores its failures
  local alog="$1/cmake_targets/log/asn1c_install_log.txt" why
  why=$(grep -m 3 -E '^(fatal|error|Error):|: (fatal )?error:|Could not resolve|unable to access' "$alog" \
        2>/dev/null | tr '\n' ' ' | cut -c1-300 || true)
  [ -z "$why" ] || fail "installing asn1c failed: $why(see $alog)"
  command -v asn1c >/dev/null 2>&1 || fail "build_oai -I did not install asn1c (see $alog)"
}

# --------------------------------------------------------------------------- 5G standalone
# CN5G v2.0.0 (AMF, SMF, UPF): OAI's own two calls, from build/scripts as OAI's images run them.
# `-I` installs packages and clones fmt, spdlog, pistache, nlohmann, nghttp2, yaml-cpp (and, for
# the UPF, libbpf and bpftool) from GitHub; outside a container it also disables IPv6
# (net.ipv6.conf.all.disable_ipv6=1) and unattended apt upgrades. `-j` takes no number.
cn5g_build() {  # src log title nf
  build_step "$1" "$2" "installing the $3 build dependencies" bash -c "cd build/scripts && ./build_$4 -I -f"
  build_step "$1" "$2" "building the $3" bash -c "cd build/scripts && ./build_$4 -c -V -b Release -j"
}

oai_build_amf() {
  cn5g_build "$1" "$2" AMF amf
}

oai_build_smf() {
  cn5g_build "$1" "$2" SMF smf
}

oai_build_upf() {
  cn5g_build "$1" "$2" UPF upf
}

oai_prepare_gnb() {  # the gNB builds none of its submodules (FlexRIC, the E2 agent, only with --build-e2)
  # shellcheck disable=SC2034  # read by pin_submodules (oai-lib.sh)
  OAI_SUBMODULES=no
}

oai_build_gnb() {
  # shellcheck disable=SC2016  # oaienv sets the variables build_oai reads
  build_step "$1" "$2" "installing the gNB build dependencies" \
    bash -c 'source oaienv && cd cmake_targets && ./build_oai -I'
  build_step "$1" "$2" "building the gNB and nrUE with the RF simulator" \
    bash -c 'source oaienv && cd cmake_targets && ./build_oai --gNB --nrUE -w SIMU --ninja'
}

oai_prepare_mysql() {  # MySQL reads one file of OAI's federation repository: none of its submodules (the NFs)
  # shellcheck disable=SC2034  # read by pin_submodules (oai-lib.sh)
  OAI_SUBMODULES=no
}

oai_build_mysql() {  # the package (a prerequisite) starts MySQL under its own unit: only the charm's may
  build_step "$1" "$2" "taking MySQL out of the distribution's start-up (the charm's unit starts it)" \
    mysql_distribution_unit_off
}

mysql_distribution_unit_off() {
  if [ "$(oai_mode)" = systemd ]; then
    systemctl disable --now mysql.service
  else
    service mysql stop || true
  fi
}
