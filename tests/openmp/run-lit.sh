#!/usr/bin/env bash
# Runs LLVM's libomp lit suite (minus the tests in lit-excluded.txt) on the
# stock and on the re-hosted build of the same source, prints both pass counts,
# and fails only on tests that fail re-hosted but not stock. The tests in
# lit-by-design.txt cannot pass re-hosted: they run on the stock build only.
#
# Usage: run-lit.sh --lit LIT_PY --stock BUILD --rehosted BUILD
#                   --coexec-lib-dir DIR [--segment NAME] [--report FILE] [PATH...]
# PATH... are tests or folders under openmp/runtime/test to run instead of the
# default; "all" runs the whole suite.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
excluded_file="$here/lit-excluded.txt"
by_design_file="$here/lit-by-design.txt"

die() {
  echo "run-lit: $*" >&2
  exit 2
}

lit="" stock="" rehosted="" libdir="" segment="omptest-lit" report=/dev/null
paths=()
while (($#)); do
  case "$1" in
  --lit) lit=${2:?}; shift 2 ;;
  --stock) stock=${2:?}; shift 2 ;;
  --rehosted) rehosted=${2:?}; shift 2 ;;
  --coexec-lib-dir) libdir=${2:?}; shift 2 ;;
  --segment) segment=${2:?}; shift 2 ;;
  --report) report=${2:?}; shift 2 ;;
  -h | --help) sed -n '2,10p' "$0"; exit 0 ;;
  -*) die "unknown option $1" ;;
  *) paths+=("$1"); shift ;;
  esac
done
[[ -f "$lit" ]] || die "lit.py not found: '$lit' (install llvm-14-tools)"
for b in "$stock" "$rehosted"; do
  [[ -f "$b/runtime/test/lit.site.cfg" ]] || die "no lit.site.cfg under '$b/runtime/test' (build the adapter first)"
done
[[ -e "$libdir/libcoexec.so" ]] || die "libcoexec.so not found in '$libdir'"

# Test paths listed in a file, one a line, # comments.
listed() { sed -e 's/#.*//' -e 's/[[:space:]]*$//' "$1" | grep -v '^$' || true; }

# A lit regex (searched in names like "libomp :: barrier/x.c") for the paths.
any_of() { echo ":: ($(printf '%s|' "$@" | sed 's/|$//'))"; }

filter="" excluded=()
if ((${#paths[@]})); then
  [[ "${paths[*]}" == "all" ]] || filter=$(any_of "${paths[@]}")
else
  mapfile -t excluded < <(listed "$excluded_file")
fi
mapfile -t by_design < <(listed "$by_design_file")
python=python3
[[ -x /usr/bin/python3 ]] && python=/usr/bin/python3 # Debian's, with psutil

# run_suite NAME BUILD [VAR=VALUE...] -- [SKIPPED_PATH...]
# Runs the suite of one build; prints its result lines ("PASS: libomp :: x.c")
# and keeps lit's whole output in $tmp/NAME.log.
run_suite() {
  local name=$1 build=$2
  shift 2
  local envs=()
  while (($#)) && [[ "$1" != "--" ]]; do
    envs+=("$1")
    shift
  done
  (($#)) && shift
  local args=(-v -j2 --no-progress-bar)
  [[ -n "$filter" ]] && args+=(--filter "$filter")
  (($#)) && args+=(--filter-out "$(any_of "$@")")
  # A per-test limit needs psutil; without it a hang is caught by ctest.
  "$python" -c 'import psutil' 2>/dev/null && args+=(--timeout 300)
  env "${envs[@]}" "$python" "$lit" "${args[@]}" "$build/runtime/test" >"$tmp/$name.log" 2>&1 || true
  grep -E '^(PASS|FAIL|XFAIL|XPASS|UNSUPPORTED|UNRESOLVED|TIMEOUT): ' "$tmp/$name.log" |
    sed 's/ (.*)$//' || true
}

# failure_output LOG TEST: the end of lit's report of one failed test.
failure_output() {
  awk -v t="$2" -v q="'" 'index($0, "TEST " q t q) { on = 1; next } on && $0 == "********************" { exit } on' "$1" |
    tail -n 40
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "run-lit: stock build"
run_suite stock "$stock" -- "${excluded[@]}" >"$tmp/stock"
echo "run-lit: re-hosted build"
run_suite rehosted "$rehosted" LD_LIBRARY_PATH="$libdir" \
  COEXEC_CONFIG_OVERRIDE="shared_memory.name=$segment-$$" \
  -- "${excluded[@]}" "${by_design[@]}" >"$tmp/rehosted"

count() { grep -c "^$1: " "$2" || true; }
bad() { grep -E '^(FAIL|XPASS|UNRESOLVED|TIMEOUT): ' "$1" | sed 's/^[A-Z]*: //' | sort -u; }
(($(wc -l <"$tmp/stock") > 0 && $(wc -l <"$tmp/rehosted") > 0)) ||
  die "lit ran no test (filter: ${filter:-none})"
new_failures=$(comm -13 <(bad "$tmp/stock") <(bad "$tmp/rehosted"))
{
  echo "libomp lit suite: ${paths[*]:-all but lit-excluded.txt}"
  printf '%-10s %6s %6s %6s %12s\n' build tests pass fail unsupported
  for b in stock rehosted; do
    printf '%-10s %6s %6s %6s %12s\n' "$b" "$(wc -l <"$tmp/$b")" "$(count PASS "$tmp/$b")" \
      "$(bad "$tmp/$b" | wc -l)" "$(count UNSUPPORTED "$tmp/$b")"
  done
  echo "failing on stock: $(bad "$tmp/stock" | tr '\n' ' ')"
  echo "not run re-hosted, by design (lit-by-design.txt): ${by_design[*]}"
  echo "failing only re-hosted: $(echo ${new_failures:-none})"
} | tee "$report"
[[ -z "$new_failures" ]] && exit 0
while IFS= read -r t; do
  echo "---- re-hosted output of $t"
  failure_output "$tmp/rehosted.log" "$t"
done <<<"$new_failures"
exit 1
