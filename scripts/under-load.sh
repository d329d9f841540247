#!/usr/bin/env bash
# Runs a command with CPU hogs beside it (stress-ng, one busy process per hog),
# RUNS times in a row; fails at the first run that fails. The hogs are
# stopped however the command ends.
#
# Usage: under-load.sh [--hogs N] [--runs K] -- COMMAND [ARG...]
set -uo pipefail

hogs=2 runs=1
while (($#)); do
  case "$1" in
  --hogs) hogs=${2:?}; shift 2 ;;
  --runs) runs=${2:?}; shift 2 ;;
  --) shift; break ;;
  *) echo "under-load: unknown option $1" >&2; exit 2 ;;
  esac
done
(($#)) || { echo "under-load: no command" >&2; exit 2; }
[[ "$hogs" =~ ^[0-9]+$ && "$runs" =~ ^[1-9][0-9]*$ ]] ||
  { echo "under-load: --hogs and --runs take counts" >&2; exit 2; }
command -v stress-ng >/dev/null ||
  { echo "under-load: stress-ng is missing; install: sudo apt-get install stress-ng" >&2; exit 2; }

pid=""
stop_hogs() { [[ -n "$pid" ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; pid=""; }
trap stop_hogs EXIT
trap 'exit 130' INT TERM

for ((run = 1; run <= runs; run++)); do
  if ((hogs > 0)); then
    stress-ng --cpu "$hogs" --quiet &
    pid=$!
  fi
  echo "under-load: run $run of $runs beside $hogs CPU hogs (stress-ng pid ${pid:-none})"
  start=$(date +%s)
  "$@"
  rc=$?
  stop_hogs
  echo "under-load: run $run of $runs: exit $rc after $(($(date +%s) - start)) s"
  ((rc == 0)) || exit "$rc"
done
