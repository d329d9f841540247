#!/usr/bin/env bash
# The oversubscription benchmarks on a 16-core node, in under 8 minutes: builds first if
# the programs are missing, then runs a selection in every mode (native, passive, capped,
# static, stock-llvm, coexec, and alone) and writes it to
# benchmarks/oversubscription/results/<date>-<commit>/ with a meta.json, ready for
# scripts/results-page.py.
#
# Usage: scripts/bench-16core.sh
#   BUILD=dir      the build (default ./build; configured and built here if needed)
#   CPUS=n         CPUs the runner uses (default 16: the first 16 of those it may use)
#   REPEATS=n      rounds (default 3)
#   SCENARIOS=...  run.py --scenarios (default below)
#   OUT=dir        the results folder (default benchmarks/oversubscription/results/<date>-<commit>)
#
# The selection and its time: 5 scenarios (fig6/omp+ocl, fig7/tasks=32,
# 2proc/hpccg+hpccg-gcc, mpi/4ranks-omp and mpi/halo+hpccg) x 7 modes x 3 rounds = 105
# runs. On 2 cores, `make demo` (the default selection, 3 modes + alone, 3 rounds: 132
# runs) takes about 6.5 minutes, 3.0 s a run with start-up; run.py grows the problems with
# the CPUs (8 times the points on 16), so a run keeps about that length if the node's
# memory bandwidth grows with its cores: 105 x 3.0 s = 5.3 minutes, and --timeout 40 caps
# a collapsing mode (2-core runs of these scenarios took at most 8.6 s).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
cpus=${CPUS:-16}
repeats=${REPEATS:-3}
scenarios=${SCENARIOS:-fig6/omp+ocl,fig7/tasks=32,2proc/hpccg+hpccg-gcc,mpi/}
have=$(python3 -c 'import os; print(len(os.sched_getaffinity(0)))')
if ((have < cpus)); then
  echo "bench-16core: $have CPUs available, $cpus wanted (CPUS=$have to run on them)" >&2
  exit 2
fi

start=$(date +%s)
source "$root/scripts/ensure-build.sh"
ensure_build "$root" "$build" "$have" bin/coexec bin/hpccg-clang bin/hpccg-gcc bin/gpt2-clang \
  lib/coexec/openmp/libomp.so.5 lib/coexec/openmp/libgomp.so.1 lib/coexec/openmp-stock/libomp.so.5

commit=$(git -C "$root" rev-parse --short=7 HEAD)
day=$(date -u +%F)
out=${OUT:-$root/benchmarks/oversubscription/results/$day-$commit}
mkdir -p "$out"
cmd=(python3 benchmarks/oversubscription/run.py --build "$build" --cpus "$cpus"
     --scenarios "$scenarios" --repeats "$repeats" --timeout 40 --out "$out")
echo "bench-16core: ${cmd[*]}"
rc=0
(cd "$root" && "${cmd[@]}") || rc=$?
took=$(($(date +%s) - start))

# meta.json, as scripts/results-page.py reads it (see docs/oversubscription.md).
DAY=$day COMMIT=$commit OUT=$out CPUS=$cpus REPEATS=$repeats SCENARIOS=$scenarios \
  TOOK=$took RC=$rc DIRTY=$(git -C "$root" status --porcelain --untracked-files=no | wc -l) \
  python3 - <<'EOF'
import json, os, platform, subprocess

def first_line(argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        return "?"

model = "?"
with open("/proc/cpuinfo") as f:
    for line in f:
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
e = os.environ
debian = open("/etc/debian_version").read().strip() if os.path.exists("/etc/debian_version") else "?"
machine = (f"{os.cpu_count()}-CPU {model}, {e['CPUS']} CPUs used, Debian {debian}, "
           f"kernel {platform.release()}; {first_line(['gcc', '--version'])}; "
           f"{first_line(['clang', '--version'])}")
command = (f"CPUS={e['CPUS']} REPEATS={e['REPEATS']} scripts/bench-16core.sh "
           f"(run.py --cpus {e['CPUS']} --scenarios {e['SCENARIOS']} --repeats {e['REPEATS']} "
           f"--timeout 40)")
about = (f"Every mode, {e['REPEATS']} rounds, the order rotating; {e['TOOK']} s in all "
         f"(build included), run.py exit {e['RC']}.")
if e["DIRTY"] != "0":
    about += " The work tree had uncommitted changes."
meta = {"date": e["DAY"], "commit": e["COMMIT"], "machine": machine,
        "tables": {"results.csv": {"title": f"A {e['CPUS']}-CPU selection, every mode",
                                   "command": command, "about": about}}}
with open(os.path.join(e["OUT"], "meta.json"), "w") as f:
    json.dump(meta, f, indent=2)
    f.write("\n")
EOF
echo "bench-16core: $took s; results and meta.json in $out"
echo "bench-16core: python3 scripts/results-page.py puts them on docs/results.md"
exit $rc
