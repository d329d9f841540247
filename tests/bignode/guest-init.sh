#!/bin/busybox sh
# /init of the big-node guest that scripts/bignode-guest.sh boots: runs
# coexec's checks on the guest's CPUs and NUMA nodes, then powers off.
#
# Prints, on the serial console, one line a check:
#   BIGNODE RESULT <check> PASS|FAIL <seconds> s: <detail>
# and last `BIGNODE END pass=<n> fail=<n>`; the host script reads them.
# The kernel command line sets bignode.cpus= and bignode.nodes= (the topology
# the guest must see), bignode.slow= (how many times slower than real
# hardware the guest's CPUs may be: it scales the checks' time limits) and
# bignode.procs= (the scale test's process count).
/bin/busybox --install -s /bin
export PATH=/coexec/bin:/bin HOME=/tmp LANG=C
# The programs' run path names the build tree; libcoexec is here.
export LD_LIBRARY_PATH=/coexec/lib
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/shm /tmp
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=1777 tmpfs /tmp

param() { # param NAME DEFAULT: bignode.NAME= from the kernel command line
    for word in $(cat /proc/cmdline); do
        case "$word" in "bignode.$1="*) echo "${word#*=}"; return ;; esac
    done
    echo "$2"
}
want_cpus=$(param cpus 0)
want_nodes=$(param nodes 0)
slow=$(param slow 1)
procs=$(param procs 512)

now() { cut -d' ' -f1 /proc/uptime; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
passed=0
failed=0
result() { # result CHECK PASS|FAIL SECONDS DETAIL
    echo "BIGNODE RESULT $1 $2 $3 s: $4"
    if [ "$2" = PASS ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
}
show() { # show NAME LOG: the log, indented, its last 80 lines at most
    echo "---- $1 (last lines of its output)"
    tail -n 80 "$2" | sed 's/^/    /'
}

cpus=$(nproc)
nodes=$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)
echo "BIGNODE GUEST kernel $(uname -r), $cpus CPUs, $nodes NUMA nodes, slow=$slow"
for n in /sys/devices/system/node/node[0-9]*; do
    echo "BIGNODE GUEST ${n##*/}: CPUs $(cat "$n/cpulist")"
done

# The topology the host asked for.
start=$(now)
if [ "$cpus" = "$want_cpus" ] && [ "$nodes" = "$want_nodes" ]; then
    result topology PASS "$(since "$start")" "$cpus CPUs on $nodes NUMA nodes"
else
    result topology FAIL "$(since "$start")" \
        "$cpus CPUs on $nodes NUMA nodes, expected $want_cpus on $want_nodes"
fi

# 1. Every CPU used, NUMA-strict tasks on their node, one task per CPU at a
# time: coexec-placement, 4 processes on one segment of every CPU.
start=$(now)
NOSV_CONFIG_OVERRIDE=shared_memory.name=placement,topology.binding=all \
    timeout -s KILL $((300 * slow)) coexec-placement --procs 4 --seconds $((60 * slow)) \
    --expect-cpus "$want_cpus" --expect-numa "$want_nodes" >/tmp/placement.log 2>&1
rc=$?
took=$(since "$start")
show placement /tmp/placement.log
for check in topology cover numa home occupancy pinned; do
    line=$(grep "^coexec-placement: $check: " /tmp/placement.log)
    case "$line" in
    *": $check: ok,"*) result "placement.$check" PASS "$took" "${line#*: $check: }" ;;
    "") result "placement.$check" FAIL "$took" "no result (exit status $rc)" ;;
    *) result "placement.$check" FAIL "$took" "${line#*: $check: }" ;;
    esac
done

# 2. The multi-process invariant test: processes churning through every
# scheduling point while the parent samples the segment and each task
# records its CPU (invariant 1 of docs/design.md: at most one running
# coexec thread per CPU).
start=$(now)
timeout -s KILL $((300 * slow)) test-multiprocess >/tmp/multiprocess.log 2>&1
rc=$?
show multiprocess /tmp/multiprocess.log
summary=$(grep -E '^\[  (PASSED|FAILED)  \]' /tmp/multiprocess.log | tr '\n' ' ')
if [ $rc -eq 0 ]; then
    result multiprocess PASS "$(since "$start")" "$summary"
else
    result multiprocess FAIL "$(since "$start")" "exit status $rc; $summary"
fi

# 3. The torture run: members doing random C API operations while a killer
# SIGKILLs and SIGSTOPs them, the segment's invariants checked all along,
# with bursts of processes beside them. A CPU counts as lost after
# --lost-ms, scaled like every time limit here. The bound on a burst task's
# wait for a CPU comes from the segment's quantum and preemption delay: an
# emulated vCPU can be off the host's cores for seconds, so the preemption
# delay is scaled too (100 ms x slow).
start=$(now)
NOSV_CONFIG_OVERRIDE=scheduler.preempt_after_ns=$((100000000 * slow)) \
    timeout -s KILL $((300 * slow)) coexec-torture --procs 8 --threads 4 --seconds 20 \
    --kill-rate 10 --lost-ms $((100 * slow)) --finish-ms $((30000 * slow)) \
    --burst 64 --burst-every-ms 6000 --burst-busy 1 \
    --burst-program /coexec/bin/coexec-bench-many-procs >/tmp/torture.log 2>&1
rc=$?
show torture /tmp/torture.log
if [ $rc -eq 0 ]; then
    result torture PASS "$(since "$start")" "$(tail -n 1 /tmp/torture.log)"
else
    result torture FAIL "$(since "$start")" "exit status $rc: $(tail -n 1 /tmp/torture.log)"
fi

# 4. The scale test: $procs processes, started together at a gate, each
# joining the segment, running a task and leaving. Their main threads sleep
# on a futex meanwhile: with `--wait mixed`, the fifth of them that spin
# starved the emulated guest's kernel (RCU stalls) for minutes.
start=$(now)
timeout -s KILL $((600 * slow)) coexec-bench-many-procs --procs "$procs" --start gate \
    --wait "$(param procs_wait futex)" --repeats 1 --timeout $((120 * slow)) >/tmp/procs.log 2>&1
rc=$?
show "$procs processes" /tmp/procs.log
if [ $rc -eq 0 ]; then
    result "procs$procs" PASS "$(since "$start")" "$procs processes joined, ran and left"
else
    result "procs$procs" FAIL "$(since "$start")" "exit status $rc"
fi

# 5. Co-location: two OpenMP programs (GCC-built, libgomp replaced by coexec's
# libomp under `coexec run`), each starting one thread per CPU, and two
# coexec-placement processes, on one segment; `coexec check` verifies the
# segment's invariants every half second while they run.
start=$(now)
omp_args="$(param omp_regions 60) $(param omp_iterations 20000)"
coexec run -- omp_work_gcc $omp_args >/tmp/omp-a.log 2>&1 &
omp_a=$!
coexec run -- omp_work_gcc $omp_args >/tmp/omp-b.log 2>&1 &
omp_b=$!
# The home check wants its node's CPUs free: not here (--home-rounds 0).
NOSV_CONFIG_OVERRIDE=topology.binding=all coexec-placement --procs 2 --home-rounds 0 \
    --seconds $((120 * slow)) >/tmp/coplace.log 2>&1 &
place=$!
looks=0
unsound=0
shown=0
: >/tmp/check.log
deadline=$(($(date +%s) + 600 * slow))
while kill -0 $omp_a 2>/dev/null || kill -0 $omp_b 2>/dev/null || kill -0 $place 2>/dev/null; do
    if [ "$(date +%s)" -gt "$deadline" ]; then
        kill -KILL $omp_a $omp_b $place 2>/dev/null
        echo "co-location: killed after $((600 * slow)) s" >>/tmp/check.log
        break
    fi
    out=$(coexec check 2>&1)
    case $? in
    0) looks=$((looks + 1)) ;;
    1) looks=$((looks + 1)); unsound=$((unsound + 1)); echo "$out" >>/tmp/check.log ;;
    *) ;; # no segment yet, or already gone
    esac
    if [ $shown -eq 0 ] && [ $looks -ge 4 ]; then
        coexec top --once >/tmp/top.log 2>&1
        shown=1
    fi
    sleep 0.5
done
wait $omp_a
rc_a=$?
wait $omp_b
rc_b=$?
wait $place
rc_p=$?
took=$(since "$start")
show "OpenMP A" /tmp/omp-a.log
show "OpenMP B" /tmp/omp-b.log
show "coexec-placement beside them" /tmp/coplace.log
show "coexec top --once, during the run" /tmp/top.log
show "coexec check, unsound looks" /tmp/check.log
detail="OpenMP exit $rc_a and $rc_b, placement exit $rc_p, $looks checks ($unsound unsound)"
if [ $rc_a -eq 0 ] && [ $rc_b -eq 0 ] && [ $rc_p -eq 0 ] && [ $looks -gt 0 ] && [ $unsound -eq 0 ]; then
    result colocation PASS "$took" "$detail"
else
    result colocation FAIL "$took" "$detail"
fi

leftover=$(ls /dev/shm)
[ -z "$leftover" ] || echo "BIGNODE NOTE left in /dev/shm: $leftover"
echo "BIGNODE END pass=$passed fail=$failed"
sync
poweroff -f
