#!/usr/bin/env bash
# `make demo`: two processes co-execute CPU-bound tasks on the coexec
# substrate. Shows who holds each CPU while they run, then each process's
# share of the CPU time.
#
# Usage: scripts/demo.sh [BUILD_DIR]   (default: build)
set -euo pipefail

build=${1:-build}
coexec=$build/bin/coexec
worker=$build/bin/coexec-demo-worker
seconds=4
for exe in "$coexec" "$worker"; do
  if [[ ! -x $exe ]]; then
    echo "demo: $exe is missing; build first (make build BUILD=$build)" >&2
    exit 1
  fi
done

# A segment of our own, so the demo neither disturbs nor is disturbed by
# other coexec users of this account.
segment=demo-$$
export NOSV_CONFIG_OVERRIDE="${NOSV_CONFIG_OVERRIDE:+$NOSV_CONFIG_OVERRIDE,}shared_memory.name=$segment"
out=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  "$coexec" reset --name "$segment" >/dev/null 2>&1 || true
  rm -rf "$out"
}
trap cleanup EXIT

# Two processes registered in the segment (or give up after ~5 s).
wait_for_workers() {
  for _ in $(seq 50); do
    local n
    n=$("$coexec" ps --name "$segment" 2>/dev/null | grep -c ' demo-[AB] ' || true)
    [[ $n -ge 2 ]] && return 0
    sleep 0.1
  done
  echo "demo: the workers did not join the segment; their output:" >&2
  cat "$out"/*.txt >&2
  exit 1
}

cpus=$(nproc)
echo "coexec demo: two processes (demo-A, demo-B), each keeping $((2 * cpus)) CPU-bound tasks"
echo "of ~2 ms in flight for ${seconds} s, share the $cpus CPUs of this machine through one scheduler."
echo
for name in demo-A demo-B; do
  "$worker" --seconds "$seconds" --process-name "$name" >"$out/$name.txt" 2>&1 &
  pids+=($!)
done
wait_for_workers

sleep 1.5
echo "== coexec top --once: who holds each CPU right now (segment $segment) =="
"$coexec" top --once --name "$segment"
echo

sleep 1.5
echo "== coexec ps: CPU time each process has received from the scheduler so far, and its share =="
"$coexec" ps --name "$segment"
echo

for pid in "${pids[@]}"; do wait "$pid"; done
pids=()
echo "== the workers' own reports (CPU time as measured by the kernel) =="
cat "$out/demo-A.txt" "$out/demo-B.txt"
