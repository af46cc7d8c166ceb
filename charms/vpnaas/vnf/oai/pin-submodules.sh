#!/bin/bash
# oai-pin-submodules <pin-list>: checks out the submodule commits the charm pins. Installed by
# oai-install as /var/lib/vpnaas/oai/oai-pin-submodules; OAI's build helpers call it where they
# ran `git pull origin master` (oai-install rewrites those pulls, see pin_submodules in oai-lib.sh).
#
# The pin list is data the charm wrote (lines "<submodule path> <commit>"), never executed. Run in
# the superproject it pins every listed submodule; run inside a submodule folder (the MME's helper
# pulls from inside freeDiameter) only that one. A commit the submodule's clone lacks is fetched
# from its origin. A submodule already at its commit is left alone: running it again changes
# nothing. Output goes to OAI's build log.
set -euo pipefail
LIST=${1:?usage: oai-pin-submodules <pin-list>}
FETCH_LIMIT=1800

say() { printf 'oai-pin-submodules: %s\n' "$*"; }

top=$(git rev-parse --show-superproject-working-tree 2>/dev/null || true)
only=""
if [ -n "$top" ]; then
  only=$(realpath --relative-to="$top" "$(git rev-parse --show-toplevel)")
else
  top=$(git rev-parse --show-toplevel)
fi

pin() {  # path commit
  local dir="$top/$1" commit=$2
  [ -e "$dir/.git" ] || { say "$1 is not a checked-out submodule of $top" >&2; return 1; }
  if [ "$(git -C "$dir" rev-parse -q --verify 'HEAD^{commit}' 2>/dev/null || true)" = "$commit" ]; then
    say "$1 at $commit (unchanged)"
    return 0
  fi
  if ! git -C "$dir" cat-file -e "$commit^{commit}" 2>/dev/null; then
    # By commit first (servers that allow it), else every branch and tag of the origin.
    timeout "$FETCH_LIMIT" git -C "$dir" fetch -q origin "$commit" 2>/dev/null \
      || timeout "$FETCH_LIMIT" git -C "$dir" fetch -q --tags origin '+refs/heads/*:refs/remotes/origin/*' \
      || { say "cannot fetch $1's origin" >&2; return 1; }
    git -C "$dir" cat-file -e "$commit^{commit}" 2>/dev/null \
      || { say "$1: commit $commit is not in its origin" >&2; return 1; }
  fi
  git -C "$dir" checkout -q --force --detach "$commit"
  say "$1 pinned at $commit"
}

found=0
while read -r path commit; do
  case "$path" in ''|'#'*) continue ;; esac
  [[ "$commit" =~ ^[0-9a-f]{40}$ ]] || { say "bad commit for $path in $LIST" >&2; exit 1; }
  if [ -n "$only" ] && [ "$path" != "$only" ]; then continue; fi
  found=1
  pin "$path" "$commit"
done < "$LIST"
if [ -n "$only" ] && [ "$found" = 0 ]; then
  say "$only has no pin: left at the commit the superproject records"
fi
