#!/bin/bash
# Stress harness (manual, not part of ctest): runs libomp lit test binaries
# JOBS at a time on one coexec segment, with a chosen libcoexec (e.g. a Debug
# build, whose assertions check the scheduler's invariants), and stops at the
# first failure or hang. A hang is dumped with gdb before it is killed.
#
#   tests/openmp/stress-lit-binaries.sh --build build --coexec-lib /tmp/dbg/lib \
#       [--runs 200] [--jobs 3] [--timeout 20] [TEST.c.tmp ...]
#
# Default binaries: barrier/omp_barrier, ompt/parallel/{nested,nested_lwt}
# from the re-hosted lit build (run `ctest -R lit` once to build them).
set -u
usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
build="" lib="" runs=200 jobs=3 timeout=20 binaries=()
while (($#)); do
    case $1 in
    --build) build=${2:?}; shift 2 ;;
    --coexec-lib) lib=${2:?}; shift 2 ;;
    --runs) runs=${2:?}; shift 2 ;;
    --jobs) jobs=${2:?}; shift 2 ;;
    --timeout) timeout=${2:?}; shift 2 ;;
    -h|--help) usage ;;
    -*) echo "unknown option $1" >&2; usage ;;
    *) binaries+=("$1"); shift ;;
    esac
done
[[ -n $build && -d $build ]] || { echo "--build DIR: a configured build tree" >&2; usage; }
[[ $runs =~ ^[0-9]+$ && $jobs =~ ^[1-9][0-9]*$ && $timeout =~ ^[1-9][0-9]*$ ]] ||
    { echo "--runs, --jobs and --timeout take positive integers" >&2; exit 2; }
build=$(cd "$build" && pwd)
patched=$build/adapters/openmp/coexec_libomp_patched/build
tests=$patched/runtime/test
if ((${#binaries[@]} == 0)); then
    binaries=("$tests/barrier/Output/omp_barrier.c.tmp"
              "$tests/ompt/parallel/Output/nested.c.tmp"
              "$tests/ompt/parallel/Output/nested_lwt.c.tmp")
fi
for b in "${binaries[@]}"; do
    [[ -x $b ]] || { echo "not an executable: $b (build the lit tests first)" >&2; exit 2; }
done
command -v gdb >/dev/null || echo "note: gdb not found; hangs are reported without stacks" >&2

segment=stress$$
export COEXEC_CONFIG_OVERRIDE=shared_memory.name=$segment
export LD_LIBRARY_PATH=${lib:+$lib:}$patched/runtime/src
log=$(mktemp -d /tmp/coexec-stress.XXXXXX)
trap 'rm -f /dev/shm/coexec.$segment.*' EXIT

# One loop: runs its share of the binaries in turn; a failure leaves a file.
loop() {
    local id=$1 i b out rc
    for ((i = id; i < runs; i += jobs)); do
        [[ -e $log/failed ]] && return
        b=${binaries[i % ${#binaries[@]}]}
        out=$log/run$i.txt
        "$b" >"$out" 2>&1 &
        local pid=$! waited=0
        while kill -0 $pid 2>/dev/null && ((waited < timeout * 10)); do
            sleep 0.1; ((waited++))
        done
        if kill -0 $pid 2>/dev/null; then
            echo "run $i: $b hung for ${timeout}s" >"$log/failed"
            command -v gdb >/dev/null &&
                gdb -p $pid -batch -ex "thread apply all bt" >>"$log/failed" 2>&1
            kill -9 $pid
            return
        fi
        wait $pid; rc=$?
        if ((rc != 0)); then
            { echo "run $i: $b exited $rc"; cat "$out"; } >"$log/failed"
            return
        fi
        rm -f "$out"
    done
}
for ((j = 0; j < jobs; ++j)); do loop $j & done
wait
if [[ -e $log/failed ]]; then
    cat "$log/failed"; echo "logs in $log" >&2; exit 1
fi
rm -rf "$log"
echo "$runs runs, $jobs at a time, on segment $segment: no failure, no hang"
