#!/usr/bin/env bash
# Runs the stages of `make test` one after the other, stops at the first that
# fails, and ends with a report: what the builds left out, what the test runs
# skipped and why, and a line per stage with its time.
#
# Usage: test-stages.sh MAIN_BUILD ASAN_BUILD -- NAME 'COMMAND' [NAME 'COMMAND'...]
set -uo pipefail

main_build=${1:?} asan_build=${2:?}
shift 2
[[ "${1:-}" == "--" ]] && shift
here=$(cd "$(dirname "$0")" && pwd)

names=() seconds=() results=()
# Only the test logs this run writes are read (not an earlier run's).
since=$(mktemp)
trap 'rm -f "$since"' EXIT
report() {
  echo
  echo "==== make test: what was left out"
  if [[ -f "$main_build/coexec-parts.txt" ]]; then
    if grep -q '^left out' "$main_build/coexec-parts.txt"; then
      sed -n 's/^left out *//p' "$main_build/coexec-parts.txt" | sed 's/^/  main build: /'
    else
      echo "  main build: nothing (every part built)"
    fi
  fi
  echo "  sanitizer and fuzz stages: the substrate, CLI and examples only, by design"
  echo "==== make test: skipped tests"
  for b in "$main_build" "$asan_build"; do
    [[ "$b/Testing/Temporary/LastTest.log" -nt "$since" ]] &&
      python3 "$here/ctest-skips.py" "$b" | sed 's/^/  /'
  done
  echo "==== make test: stages"
  local total=0 i
  for i in "${!names[@]}"; do
    printf '  %-10s %-7s %4d min %02d s\n' "${names[$i]}" "${results[$i]}" \
      $((seconds[i] / 60)) $((seconds[i] % 60))
    total=$((total + seconds[i]))
  done
  printf '  %-10s %-7s %4d min %02d s\n' total "" $((total / 60)) $((total % 60))
}

while (($#)); do
  name=$1 command=${2:?"stage $1 has no command"}
  shift 2
  echo "==== make test: stage $name: $command"
  start=$(date +%s)
  bash -c "$command"
  rc=$?
  names+=("$name")
  seconds+=($(($(date +%s) - start)))
  if ((rc != 0)); then
    results+=(FAILED)
    report
    echo "make test: stage $name failed (exit $rc)" >&2
    exit 1
  fi
  results+=(ok)
done
report
