#!/usr/bin/env bash
# Runs LLVM's libomp lit suite (minus the tests in lit-excluded.txt) on the
# re-hosted build, and requires the stock build of the same source's result
# for every test that does not pass there: the tests that did not pass run
# again on the stock build, which must give each the same result. (A test
# that passes re-hosted is not run on stock: that would only check the
# stock build, and would double the run.) The tests in lit-by-design.txt
# cannot pass re-hosted and are not run. It fails when lit does not run to
# its end, when the re-hosted run has a test more or less than the suite
# holds (as lit discovers it on the stock build, less the lists above), or
# when a test that did not pass re-hosted has another result on stock (a new
# failure, or a test turned UNSUPPORTED).
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
# Runs the suite of one build (the tests $filter names, less the skipped
# paths); writes its results, one "PASS: libomp :: x.c"
# line a test, sorted by test, to $tmp/NAME and lit's whole output to
# $tmp/NAME.log. Fails when lit did not run to its end: an exit status other
# than 0 (all passed) or 1 (some failed), no summary, or fewer result lines
# than the summary counts.
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
  local rc=0
  env "${envs[@]}" "$python" "$lit" "${args[@]}" "$build/runtime/test" >"$tmp/$name.log" 2>&1 || rc=$?
  grep -E '^(PASS|FAIL|XFAIL|XPASS|UNSUPPORTED|UNRESOLVED|TIMEOUT): ' "$tmp/$name.log" |
    sed 's/ ([0-9]* of [0-9]*)$//' | sort -t: -k2 >"$tmp/$name"
  if ((rc > 1)) || ! grep -q '^Testing Time: ' "$tmp/$name.log"; then
    tail -n 30 "$tmp/$name.log" >&2
    die "lit stopped early on the $name build (exit $rc)"
  fi
  # The summary's counts ("  Passed: 268"), less the tests left out by filters.
  local summed
  summed=$(awk '/^Testing Time: /{on=1; next} on && /^  [A-Za-z ]+: *[0-9]+$/ &&
    !/Excluded/ {split($0, f, ":"); n += f[2]} END {print n + 0}' "$tmp/$name.log")
  (($(wc -l <"$tmp/$name") == summed)) ||
    die "the $name build reported $(wc -l <"$tmp/$name") results, its summary counts $summed"
}

# failure_output LOG TEST: the end of lit's report of one failed test.
failure_output() {
  awk -v t="$2" -v q="'" 'index($0, "TEST " q t q) { on = 1; next } on && $0 == "********************" { exit } on' "$1" |
    tail -n 40
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "run-lit: re-hosted build"
run_suite rehosted "$rehosted" LD_LIBRARY_PATH="$libdir" \
  COEXEC_CONFIG_OVERRIDE="shared_memory.name=$segment-$$" \
  -- "${excluded[@]}" "${by_design[@]}"
[[ -s "$tmp/rehosted" ]] || die "lit ran no test (filter: ${filter:-none})"

# The tests the re-hosted run must have run: the suite as lit discovers it
# (on the stock build: the same source), less the paths left out.
left_out=("${excluded[@]}" "${by_design[@]}")
"$python" "$lit" --show-tests "$stock/runtime/test" 2>/dev/null |
  sed -n 's/^  \(libomp :: .*\)$/\1/p' |
  { if [[ -n "$filter" ]]; then grep -E "$filter" || true; else cat; fi; } |
  { if ((${#left_out[@]})); then grep -v -E "$(any_of "${left_out[@]}")\$" || true; else cat; fi; } |
  sort >"$tmp/suite"
[[ -s "$tmp/suite" ]] || die "lit discovered no test on the stock build"
sed 's/^[A-Z]*: //' "$tmp/rehosted" | sort >"$tmp/ran"
missing=$(comm -23 "$tmp/suite" "$tmp/ran" | sed 's/^/  not run re-hosted: /')
extra=$(comm -13 "$tmp/suite" "$tmp/ran" | sed 's/^/  not in the suite: /')

# The tests that did not pass re-hosted, run again on the stock build.
grep -v '^PASS: ' "$tmp/rehosted" >"$tmp/expected" || true
: >"$tmp/stock"
if [[ -s "$tmp/expected" ]]; then
  mapfile -t again < <(sed 's/^[A-Z]*: libomp :: //' "$tmp/expected")
  echo "run-lit: stock build, the ${#again[@]} tests that did not pass re-hosted"
  filter=$(any_of "${again[@]}")\$
  run_suite stock "$stock" --
fi

count() { grep -c "^$1: " "$2" || true; }
bad() { grep -E '^(FAIL|XPASS|UNRESOLVED|TIMEOUT): ' "$1" | sed 's/^[A-Z]*: //'; }
differences=$(diff "$tmp/stock" "$tmp/expected" | grep '^[<>]' |
  sed -e 's/^< /  stock:     /' -e 's/^> /  re-hosted: /' || true)
differences=$(printf '%s\n' "$missing" "$extra" "$differences" | sed '/^$/d')
{
  echo "libomp lit suite: ${paths[*]:-all but lit-excluded.txt}"
  printf '%-10s %6s %6s %6s %12s\n' build tests pass fail unsupported
  for b in rehosted stock; do
    printf '%-10s %6s %6s %6s %12s\n' "$b" "$(wc -l <"$tmp/$b")" "$(count PASS "$tmp/$b")" \
      "$(bad "$tmp/$b" | wc -l)" "$(count UNSUPPORTED "$tmp/$b")"
  done
  echo "(stock: only the tests that did not pass re-hosted)"
  echo "failing on stock: $(bad "$tmp/stock" | tr '\n' ' ')"
  echo "not run, by design (lit-by-design.txt): ${by_design[*]}"
  if [[ -z "$differences" ]]; then
    echo "re-hosted results: every test of the suite ran; those that did not pass give the same result on stock"
  else
    echo "re-hosted results that differ from the suite or from stock's:"
    echo "$differences"
  fi
} | tee "$report"
[[ -z "$differences" ]] && exit 0
comm -13 <(bad "$tmp/stock" | sort) <(bad "$tmp/rehosted" | sort) | while IFS= read -r t; do
  echo "---- re-hosted output of $t"
  failure_output "$tmp/rehosted.log" "$t"
done
exit 1
