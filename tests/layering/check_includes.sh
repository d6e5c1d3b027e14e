#!/usr/bin/env bash
# Fails when a file under src/<layer>/ includes a header of a layer it must not depend on (the
# "depends on" column of ARCHITECTURE.md's layer table, closed over its dependencies). Names each
# offending file and include. The CMake libraries are linked the same way (CMakeLists.txt), so
# this is the readable form of what the link order enforces.
#
#   bash tests/layering/check_includes.sh [SOURCE_DIR]
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}

# layer -> the layers it may include (itself always allowed).
declare -A allowed=(
  [util]=""
  [model]="util"
  [framework]="model util"
  [actions]="framework model util"
  [plugins]="framework model util"
  [scheduler]="actions plugins framework model util"
  [scenario]="scheduler actions plugins framework model util"
  [sim]="usagedb scenario scheduler actions plugins framework model util"
  [kube]="util"
  [observability]="util"
  [binder]="kube observability util"
  [cache]="model kube util"
  [usagedb]="framework model util"
  [podgrouper]="binder kube observability util"
  [statusctl]="binder kube observability util"
  [live]="usagedb cache scheduler actions plugins framework model kube observability util"
  [cli]="usagedb statusctl podgrouper live cache binder scenario sim scheduler actions plugins framework model kube observability util"
)

status=0
for dir in "$root"/src/*/; do
  layer=$(basename "$dir")
  if [ -z "${allowed[$layer]+set}" ]; then
    echo "src/$layer/: a layer this check does not know; add it to tests/layering/check_includes.sh and ARCHITECTURE.md" >&2
    status=1
    continue
  fi
  while IFS= read -r hit; do
    file=${hit%%:*}
    included=$(sed -E 's/.*#include "([a-z_]+)\/.*/\1/' <<<"$hit")
    [ "$included" = "$layer" ] && continue
    ok=0
    for a in ${allowed[$layer]}; do [ "$a" = "$included" ] && ok=1; done
    if [ $ok -eq 0 ]; then
      echo "${file#"$root"/}: includes \"$included/...\", a layer src/$layer/ must not depend on" >&2
      status=1
    fi
  done < <(grep -rHE '^#include "[a-z_]+/' "$dir" || true)
done
[ $status -eq 0 ] && echo "layering: every include of src/ follows the layer table"
exit $status
