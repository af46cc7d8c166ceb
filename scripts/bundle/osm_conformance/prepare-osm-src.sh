#!/usr/bin/env bash
# Prepare the OSM_SRC layout `make osm-conformance` reads, from git checkouts or bare mirrors.
#
#   prepare-osm-src.sh OSM_SRC NBI_GIT[@REF[:SUBDIR]] IM_GIT@REF IM_OSM10_GIT@REF \
#                      SOL006_GIT@REF OSM_COMMON_GIT@REF OSMCLIENT_GIT@REF \
#                      OSMCLIENT_NEWEST_GIT@REF[:SUBDIR] OPENSTACK_REQUIREMENTS_GIT@REF \
#                      [LCM_GIT@REF[:SUBDIR]]
#
# Each argument is a git directory (a clone or a bare mirror), optionally followed by @<commit or
# branch> (default HEAD) and, for repositories that keep the component in a sub-folder,
# :<folder>. The tree at that ref is exported (git archive, no history) to
#   OSM_SRC/NBI  OSM_SRC/IM  OSM_SRC/IM-osm10  OSM_SRC/SOL006  OSM_SRC/osm-common  OSM_SRC/osmclient
#   OSM_SRC/osmclient-newest  OSM_SRC/openstack-requirements
# and the commit of each goes to OSM_SRC/COMMITS, which the conformance report prints.
# Example (the mirrors the project was checked against, see docs/bundle.md):
#   prepare-osm-src.sh ~/osm-src osm-capk.git@64e403c8:NBI IM.git@ef549b00 IM.git@b8c59539 \
#       NFV-SOL006.git@v2.6.1 osm-common.git@277c9311 osmclient.git@7b6400a0 \
#       oauth-server.git@21bf35e2:openid-server/osmclient requirements.git@ussuri-eol \
#       osm-capk.git@64e403c8:LCM
# The last (LCM) is optional: without it the metrics path of make osm-conformance is NOT RUN.
set -euo pipefail

if [ "$#" -ne 9 ] && [ "$#" -ne 10 ]; then
    sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
dest=$1
shift
mkdir -p "$dest"
: > "$dest/COMMITS"
names=(NBI IM IM-osm10 SOL006 osm-common osmclient osmclient-newest openstack-requirements)
if [ "$#" -eq 9 ]; then names+=(LCM); fi   # optional 10th (9 after the shift): the metrics path
for name in "${names[@]}"; do
    spec=$1
    shift
    sub=""
    if [[ "$spec" == *:* ]]; then sub=${spec##*:}; spec=${spec%:*}; fi
    ref=HEAD
    if [[ "$spec" == *@* ]]; then ref=${spec##*@}; spec=${spec%@*}; fi
    commit=$(git -C "$spec" rev-parse --verify "$ref^{commit}")
    rm -rf "${dest:?}/$name"
    mkdir -p "$dest/$name"
    git -C "$spec" archive --format=tar "$commit${sub:+:$sub}" | tar -x -C "$dest/$name"
    printf '%s %s %s%s\n' "$name" "$commit" "$spec" "${sub:+ (folder $sub)}" >> "$dest/COMMITS"
    echo "$name: $commit"
done
