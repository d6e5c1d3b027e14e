#!/usr/bin/env bash
# Lint: clang-format (the style in .clang-format; no rewrite, a difference is a finding) on every
# tracked C++ file, and clang-tidy (the checks in .clang-tidy) on the C++ files a change touches.
# Exits non-zero on any finding, naming the file. scripts/test.sh runs it as a stage (CI).
#
#   bash scripts/lint.sh [BASE]
#
# BASE is the commit the change is measured from (files changed between it and the work tree,
# staged or not). Default: the merge base of HEAD with origin/main; when that is HEAD itself (a
# clone of main, as in CI) or there is no origin/main, HEAD~1: the last commit, which on main is
# the last merge. Without that commit (a shallow clone of depth 1) the script fails, saying so:
# clang-tidy on nothing would pass without checking anything.
# clang-tidy reads compile_commands.json from BUILD_DIR (default: build; configured here when
# missing). CLANG_FORMAT and CLANG_TIDY name the tools (default: the -16 ones).
set -euo pipefail
cd "$(dirname "$0")/.."

clang_format=${CLANG_FORMAT:-clang-format-16}
clang_tidy=${CLANG_TIDY:-clang-tidy-16}
build_dir=${BUILD_DIR:-build}

for tool in "$clang_format" "$clang_tidy"; do
  command -v "$tool" >/dev/null || { echo "lint: $tool is not installed (scripts/setup.sh)" >&2; exit 2; }
done

if [ $# -ge 1 ]; then
  base=$1
else
  base=
  if git rev-parse --verify -q origin/main >/dev/null; then
    base=$(git merge-base HEAD origin/main)
  fi
  if [ -z "$base" ] || [ "$base" = "$(git rev-parse HEAD)" ]; then
    base=HEAD~1
  fi
fi
git rev-parse --verify -q "$base^{commit}" >/dev/null || {
  echo "lint: no commit \"$base\" to measure the change from (a shallow clone? fetch more history, or name BASE)" >&2
  exit 2
}

status=0
# Every tracked C++ file (a second or two for the whole tree).
mapfile -t all_files < <(git ls-files -- '*.cc' '*.h' '*.cpp' '*.hpp' | while read -r f; do [ -f "$f" ] && echo "$f"; done)
echo "== $clang_format: ${#all_files[@]} tracked C++ files"
if ! "$clang_format" --dry-run --Werror "${all_files[@]}"; then
  echo "lint: run $clang_format -i on the files above" >&2
  status=1
fi

# Added, copied, modified or renamed C++ files that still exist.
mapfile -t files < <(git diff --name-only --diff-filter=ACMR "$base" -- \
  '*.cc' '*.h' '*.cpp' '*.hpp' | while read -r f; do [ -f "$f" ] && echo "$f"; done)
if [ ${#files[@]} -eq 0 ]; then
  echo "lint: no C++ file changed since $(git rev-parse --short "$base"): nothing for clang-tidy"
  [ $status -eq 0 ] && echo "lint: clean"
  exit $status
fi
echo "lint: ${#files[@]} C++ file(s) changed since $(git rev-parse --short "$base")"

if [ ! -f "$build_dir/compile_commands.json" ]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
fi
# A unity build's compile_commands.json names its batches, not the sources: the per-file commands
# come from a folder configured (not built) beside it, file by file.
if grep -q '^GANTRY_UNITY_BUILD:BOOL=ON' "$build_dir/CMakeCache.txt" 2>/dev/null; then
  build_dir="$build_dir/per-file-commands"
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
    -DGANTRY_UNITY_BUILD=OFF >/dev/null
fi
echo "== $clang_tidy"
# Headers are checked through the sources that include them (--header-filter below); a header alone
# has no compile command, so only sources are handed over, and each source once.
sources=()
for f in "${files[@]}"; do
  case "$f" in
    *.cc | *.cpp) sources+=("$f") ;;
  esac
done
for f in "${files[@]}"; do
  case "$f" in
    *.h | *.hpp)
      # A changed header with no changed source: check the source next to it, if any.
      stem=${f%.*}
      for ext in cc cpp; do
        if [ -f "$stem.$ext" ] && [[ ! " ${sources[*]} " =~ " $stem.$ext " ]]; then
          sources+=("$stem.$ext")
        fi
      done
      ;;
  esac
done
# Findings in headers are reported only for the changed ones.
header_filter='^$'
headers=()
for f in "${files[@]}"; do
  case "$f" in *.h | *.hpp) headers+=("$(printf '%s' "$f" | sed 's/[.[\*^$()+?{}|]/\\&/g')") ;; esac
done
if [ ${#headers[@]} -gt 0 ]; then
  header_filter="($(IFS='|'; echo "${headers[*]}"))\$"
fi
for f in "${sources[@]}"; do
  if ! grep -q "\"file\": \".*/$f\"" "$build_dir/compile_commands.json"; then
    echo "lint: $f is not in $build_dir/compile_commands.json (not built); skipped by clang-tidy" >&2
    continue
  fi
  if ! "$clang_tidy" -p "$build_dir" --quiet --header-filter="$header_filter" \
    --extra-arg=-Wno-unknown-warning-option "$f" 2>/dev/null; then
    status=1
  fi
done

if [ $status -ne 0 ]; then
  echo "lint: findings above" >&2
else
  echo "lint: clean"
fi
exit $status
