#!/usr/bin/env bash
# Runs a TBB test program with the coexec RML server preloaded and passes only
# if the program succeeds AND the server reports that TBB connected to it (so a
# silent fallback to TBB's private server cannot pass for a coexec run).
# Usage: run-with-adapter.sh LIBIRML PROGRAM [ARGS...]
set -u
if (($# < 2)); then
  echo "usage: $0 LIBIRML PROGRAM [ARGS...]" >&2
  exit 2
fi
irml=$1
shift
err=$(mktemp)
# A segment of its own: a TBB program may exit without closing its RML
# factory, leaving its segment behind (reclaimed by the next nosv_init, but
# not on the node's default instance), and it is removed here once the
# program is gone.
segment="tbbup-$$"
trap 'rm -f "$err" "/dev/shm/coexec.$segment.u$(id -u)"' EXIT
LD_PRELOAD="$irml" COEXEC_VERBOSE=1 \
  NOSV_CONFIG_OVERRIDE="${NOSV_CONFIG_OVERRIDE:+$NOSV_CONFIG_OVERRIDE,}shared_memory.name=$segment" \
  "$@" 2>"$err"
rc=$?
cat "$err" >&2
if ((rc != 0)); then
  echo "run-with-adapter: $1 exited with status $rc" >&2
  exit "$rc"
fi
if ! grep -q '^coexec tbb: TBB connected' "$err"; then
  echo "run-with-adapter: TBB did not connect to the coexec server" >&2
  exit 1
fi
