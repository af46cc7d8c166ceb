# shellcheck shell=bash
# The shell library every VNF-side step of the VPNaaS charms starts with.
#
# The charm sends a step as one program on stdin: this library, the step's own files, a few fixed
# lines that call the step's functions with "$1", "$2"... and, after an `exit`, an optional data
# section for secrets. Values reach the program only as positional arguments or through that data
# section: nothing the charm received is ever part of the program text.
#
# Every line the charm reads starts with a keyword (see vnfscript.py): ERROR ends the step; the
# step's last line is DONE.
set -Eeo pipefail   # -E: the ERR trap below also fires inside functions
umask 077
export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
export LC_ALL=C

out() { printf '%s\n' "$*"; }
fail() { out "ERROR $*"; exit 3; }
step_failed() { out "ERROR step failed (line $1): $2"; exit 3; }
trap 'step_failed "$LINENO" "$BASH_COMMAND"' ERR

isolated() {  # label command...: a failure prints "FAILED <label> <reason>" and the step goes on
  # A subshell with its own trap, run outside any `if`/`||` (where bash would ignore `set -e`).
  local label=$1
  shift
  trap - ERR
  set +e
  (
    # shellcheck disable=SC2317  # called by the step's functions inside this subshell
    fail() { out "FAILED $label $*"; exit 3; }
    trap 'out "FAILED $label step failed (line $LINENO): $BASH_COMMAND"; exit 3' ERR
    set -e
    "$@"
  )
  # shellcheck disable=SC2034  # for callers that want to know
  ISOLATED_RC=$?
  set -e
  trap 'step_failed "$LINENO" "$BASH_COMMAND"' ERR
}

require_tools() {  # tool...: fail with the package to install when one is missing
  local t
  for t in "$@"; do
    command -v "$t" >/dev/null 2>&1 || fail "missing-tool $t (install it on the VNF)"
  done
}

install_file() {  # tmp target: replace target atomically, only if the content differs
  if cmp -s "$1" "$2"; then rm -f "$1"; else mv -f "$1" "$2"; fi
}

has_line() {  # path line: true when a line of the file is exactly line (grep -qxF, read by bash)
  # A file with a NUL byte may read as without it (read_whole): the charm writes none in its files.
  local vpnaas_text
  [ -f "$1" ] || return 1
  read_whole vpnaas_text "$1"
  [[ $'\n'$vpnaas_text$'\n' == *$'\n'"$2"$'\n'* ]]
}

read_whole() {  # var path: var holds the file's bytes exactly (trailing line breaks too), read by bash
  # mapfile of lines and not `read -d ''`: bash before 5.2 (Ubuntu 18.04's 4.4, 20.04's 5.0) reads
  # one byte per read(2) when the delimiter is not a newline, for read and mapfile alike; mapfile
  # with its newline reads a regular file in blocks (builtins/mapfile.def). A NUL byte is lost, as
  # with read: callers compare sizes first.
  local -a vpnaas_lines=()
  mapfile vpnaas_lines < "$2" 2>/dev/null || true
  local IFS=
  printf -v "$1" '%s' "${vpnaas_lines[*]}"
}

# What one stat said of the files a part is about to compare (stat_prefetch): path -> "size mode".
declare -A VPNAAS_STAT=()

stat_prefetch() {  # path...: one stat for the files that write_if_changed (or private_dir) is about to look at
  # A session compares a dozen files that are already as wanted; one stat process for a part's
  # files instead of one each. An entry serves once (write_if_changed drops it), and only the
  # caller's next lines use it, before anything else can change those files; a file the stat did
  # not see (missing) has none, and write_if_changed asks for itself.
  local text line rest
  text=$(stat -c '%s %a %n' -- "$@" 2>/dev/null) || true
  while [ -n "$text" ]; do
    line=${text%%$'\n'*}
    if [ "$line" = "$text" ]; then text=; else text=${text#*$'\n'}; fi
    rest=${line#* }
    VPNAAS_STAT[${rest#* }]="${line%% *} ${rest%% *}"
  done
}

private_dir() {  # path mode: the folder exists with that mode (asked by stat_prefetch when it was)
  local meta=${VPNAAS_STAT[$1]:-}
  unset "VPNAAS_STAT[$1]"
  if [ -d "$1" ] && [ -n "$meta" ] && [ "${meta#* }" = "$2" ]; then return 0; fi
  mkdir -p "$1"
  chmod "$2" "$1"
}

# shellcheck disable=SC2034  # WRITTEN is for the callers
write_if_changed() {  # path mode content: the file holds exactly content; WRITTEN=1 when it had to be written
  # Compared before anything is written: a file that is already as wanted keeps its bytes, inode
  # and mtime, and nothing is created in its directory (whose mtime stays too); only a mode that
  # differs is set. Otherwise it is written whole beside the target and renamed over it.
  # One program at most for a file that is as wanted (its size and mode asked by one stat; its
  # bytes read by bash itself, LC_ALL=C: ${#3} counts bytes): this runs a dozen times in every
  # session. The size first: a file with a NUL byte (which read_whole drops) never passes for equal.
  WRITTEN=0
  local meta=${VPNAAS_STAT[$1]:-} current=
  unset "VPNAAS_STAT[$1]"
  if [ -f "$1" ] && { [ -n "$meta" ] || meta=$(stat -c '%s %a' -- "$1" 2>/dev/null); } && [ "${meta%% *}" = "${#3}" ]; then
    read_whole current "$1"
    if [ "$current" = "$3" ]; then
      [ "${meta#* }" = "$2" ] || chmod "$2" "$1"
      return 0
    fi
  fi
  printf '%s' "$3" > "$1.vpnaas-tmp"
  chmod "$2" "$1.vpnaas-tmp"
  mv -f "$1.vpnaas-tmp" "$1"
  WRITTEN=1
}

write_file() {  # path mode base64-content: as write_if_changed, the content given in base64
  local content
  # The x keeps the content's trailing line breaks, which a command substitution drops.
  content=$(printf '%s' "$3" | base64 -d && printf x)
  write_if_changed "$1" "$2" "${content%x}"
}

# The data section is base64 of NAME=value lines and of texts ("NAME:<n>" and its n lines:
# vnfscript.Step.text), after the line __VPNAAS_DATA__ of this file: decoded once, here, by the
# step's own shell, into memory (data_item runs inside $(...): a subshell could not keep what it
# decoded), and indexed once: a value by its name, a text by where its lines are. A tunnel step
# reads one item per device and several for the exporter; decoding the whole section for each
# cost four programs each time, and a base64 value one `base64 -d` more each.
VPNAAS_DATA=()
mapfile -t VPNAAS_DATA < <(sed '1,/^__VPNAAS_DATA__$/d' "$0" | base64 -d 2>/dev/null || true)
declare -A VPNAAS_ITEM=()   # name -> value
declare -A VPNAAS_TEXT=()   # name -> "index count" of its lines in VPNAAS_DATA

vpnaas_data_index() {  # VPNAAS_ITEM and VPNAAS_TEXT from VPNAAS_DATA (a text's lines are skipped, never read as items)
  local i=0 n=${#VPNAAS_DATA[@]} line name count
  while [ "$i" -lt "$n" ]; do
    line=${VPNAAS_DATA[i]}
    name=${line%%[=:]*}
    if [ -z "$name" ]; then i=$((i + 1)); continue; fi
    if [ "${line:${#name}:1}" = : ]; then
      count=${line#*:}
      case "$count" in ''|*[!0-9]*) return 0 ;; esac   # not the charm's: nothing after it is read
      VPNAAS_TEXT[$name]="$((i + 1)) $count"
      i=$((i + 1 + count))
      continue
    fi
    # the first line of a name counts, as it always did
    if [ "$name" != "$line" ] && [ -z "${VPNAAS_ITEM[$name]+x}" ]; then VPNAAS_ITEM[$name]=${line#*=}; fi
    i=$((i + 1))
  done
}
vpnaas_data_index

data_item() {  # name: a value from the program's data section (never an argument)
  printf '%s' "${VPNAAS_ITEM[$1]-}"
}

data_text() {  # var name: var holds the text item name of the data section, byte for byte ("" when there is none)
  # By bash alone: its lines joined by line breaks (a text's last line is what follows its last
  # line break, "" when it ends with one).
  local vpnaas_at=${VPNAAS_TEXT[$2]:-} IFS=$'\n'
  if [ -z "$vpnaas_at" ]; then printf -v "$1" '%s' ""; return 0; fi
  printf -v "$1" '%s' "${VPNAAS_DATA[*]:${vpnaas_at% *}:${vpnaas_at#* }}"
}

secret() {  # name: the value of a secret (LTE K/OP) from the data section
  data_item "$1"
}

vpnaas_timed() {  # function args...: run it, then report its start and end (a profiled step only: hookclock.py)
  # bash 5's EPOCHREALTIME costs no fork; an older bash asks date.
  local started=${EPOCHREALTIME:-$(date +%s.%N)}
  "$@"
  out "TIMING $1 $started ${EPOCHREALTIME:-$(date +%s.%N)}"
}
