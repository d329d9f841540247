#!/usr/bin/env bash
# coexec on a big node, in one run sized from its CPUs: the substrate against the OS, the
# shared scheduler from 2 to 4,096 CPUs, many processes joining at once, and a
# co-location against what users pick instead. Every ratio it prints has its baseline
# measured in the same run. About 4 minutes on 16 CPUs (the co-location is most of it).
#
# Usage: benchmarks/bignode.sh
#   BUILD=dir     the build (default ./build; configured and built here if needed)
#   CPUS=n        CPUs to use (default: all this process may run on)
#   REPEATS=n     repeats of each measurement (default 5; the co-location 3)
#   OUT=dir       where the logs go (default benchmarks/results/bignode-<date>-<commit>)
#
# What it runs, in order:
#   1. coexec-bench-substrate: hand-offs in one process and between two, against the
#      same ping-pong through the kernel (OS floor), each pair in one run;
#   2. coexec-bench-scheduler-scaling: the scheduler's locked operations on synthetic
#      nodes of 2 to 4,096 CPUs, each against the same operation at N = 2;
#   3. coexec-bench-many-procs: 32 processes per CPU (at most 4,096) joining one
#      instance at once, each waiting in turn in every style; all must finish;
#   4. the runner's 2proc/hpccg+hpccg-gcc (two OpenMP processes, each told to use every
#      CPU) in native, passive, capped, static and coexec, and alone.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
have=$(python3 -c 'import os; print(len(os.sched_getaffinity(0)))')
cpus=${CPUS:-$have}
repeats=${REPEATS:-5}
if ((cpus < 1 || cpus > have)); then
  echo "bignode: CPUS=$cpus, but this process may run on $have CPUs" >&2
  exit 2
fi
procs=$((cpus * 32 > 4096 ? 4096 : cpus * 32))

source "$root/scripts/ensure-build.sh"
ensure_build "$root" "$build" "$have" bin/coexec bin/coexec-bench-substrate \
  bin/coexec-bench-scheduler-scaling bin/coexec-bench-many-procs bin/hpccg-clang bin/hpccg-gcc \
  lib/coexec/openmp/libomp.so.5 lib/coexec/openmp/libgomp.so.1

commit=$(git -C "$root" rev-parse --short=7 HEAD 2>/dev/null || echo unknown)
out=${OUT:-$root/benchmarks/results/bignode-$(date -u +%F)-$commit}
mkdir -p "$out"
start=$(date +%s)
# The first $cpus CPUs this process may run on.
cpu_list=$(python3 -c "import os; print(','.join(map(str, sorted(os.sched_getaffinity(0))[:$cpus])))")
pin=(taskset -c "$cpu_list")
echo "bignode: $cpus CPUs ($cpu_list), commit $commit, logs in $out"

echo
echo "== 1. substrate against the OS floor ($repeats repeats)"
"${pin[@]}" "$build/bin/coexec-bench-substrate" -r "$repeats" \
  --only handoff os-threads xproc os-relay xready os-procs throughput init join \
  >"$out/substrate.txt" 2>&1
python3 - "$out/substrate.txt" <<'EOF'
import re, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"\s*(.+?)\s{2,}([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)", line)
    if m:
        rows[m.group(1).strip()] = float(m.group(2))
pairs = [("same-CPU pause/submit hand-off", "OS floor: futex ping-pong, 2 threads/1 CPU"),
         ("cross-process hand-off, partner ready", "OS floor: futex ping-pong, 2 procs/1 CPU"),
         ("cross-process relay (pause + remote submit)", "OS floor with the same watcher relay")]
for ours, floor in pairs:
    if ours in rows and floor in rows and rows[floor] > 0:
        print(f"  {ours}: {rows[ours]:.2f} us, OS floor {rows[floor]:.2f} us, "
              f"ratio {rows[ours] / rows[floor]:.2f}")
    else:
        print(f"  {ours}: not measured (see substrate.txt)")
for name in ("empty task create+submit+complete", "nosv_init+shutdown, first member",
             "same, joining an instance in use"):
    key = next((k for k in rows if k.endswith(name)), None)
    if key:
        print(f"  {name}: {rows[key]:g}")
EOF

echo
echo "== 2. the scheduler, N = 2 to 4,096 CPUs (ratio to N = 2)"
"$build/bin/coexec-bench-scheduler-scaling" >"$out/scheduler-scaling.txt" 2>&1
python3 - "$out/scheduler-scaling.txt" <<'EOF'
import re, sys
worst = {}
for line in open(sys.argv[1]):
    m = re.match(r"\s*(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\d+)\s+(\d+)\s+([\d.]+)", line)
    if m and int(m.group(1)) in (1024, 4096):
        key = (m.group(4), int(m.group(1)))
        worst[key] = max(worst.get(key, 0), float(m.group(7)))
for op in ("grant", "release", "handoff", "submit-wake", "reap", "reap-busy", "check"):
    cells = [f"N={n}: {worst[(op, n)]:.2f}x" for n in (1024, 4096) if (op, n) in worst]
    print(f"  {op:12s} worst over P and K: " + ", ".join(cells))
EOF

echo
echo "== 3. $procs processes joining at once, every waiting style"
rc_many=0
"${pin[@]}" "$build/bin/coexec-bench-many-procs" -n "$procs" --wait all --start gate \
  --timeout 120 >"$out/many-procs.txt" 2>&1 || rc_many=$?
grep -E "finished|hung|failed" "$out/many-procs.txt" | sed 's/^/  /' | head -20
((rc_many == 0)) || echo "  FAILED: coexec-bench-many-procs exited $rc_many (see many-procs.txt)"

echo
echo "== 4. co-location: two OpenMP processes, each told to use every CPU"
rc_run=0
(cd "$root" && "${pin[@]}" python3 benchmarks/oversubscription/run.py --build "$build" \
  --cpus "$cpus" --scenarios 2proc/hpccg+hpccg-gcc --modes native,passive,capped,static,coexec \
  --repeats 3 --timeout 60 --no-plots --out "$out/colocation") >"$out/colocation.txt" 2>&1 ||
  rc_run=$?
sed -n '/^scenario /,/^$/p' "$out/colocation.txt" | sed 's/^/  /'
((rc_run == 0)) || echo "  FAILED: run.py exited $rc_run (see colocation.txt)"

echo
echo "bignode: $(($(date +%s) - start)) s; logs in $out"
((rc_many == 0 && rc_run == 0))
