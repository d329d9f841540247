// The operations that span the scheduler's parts: formatting, a process or
// a thread leaving, reaping, repair after a dead lock holder, and the end
// of a keep period that lost its CPU. The fields it writes itself are the
// settings and the CPU origin (format()), the reap mark (reap()) and the
// recovery count (repair()).
#include "scheduler/shared_scheduler.hpp"

#include "scheduler/cpu_bits.hpp"
#include "scheduler/fixed_text.hpp"
#include "shm/clock.hpp"

#include <cstdint>
#include <cstring>
#include <string_view>

namespace coexec::scheduler {

using namespace coexec::shm;

namespace {
constexpr auto rlx = std::memory_order_relaxed;
} // namespace

void SharedScheduler::format(const Discovery& found, const SegmentConfig& config) {
    Header& h = s_.header;
    copy_text(h.cpu_origin, found.origin);
    copy_text(h.quota_origin, found.quota_origin);
    h.quota_cpus = found.quota_cpus;
    const Isolation isolation = h.config.isolation; // fixed by the segment's name
    h.config = config;
    h.config.isolation = isolation;
    cpus_.format(found.cpus);
    procs_.format();
}

void SharedScheduler::unregister_process(int32_t proc, WakeList& wakes) {
    unregister(proc, wakes, TraceKind::Leave);
}

void SharedScheduler::unregister(int32_t proc, WakeList& wakes, TraceKind why) {
    cpus_.release_all_of(proc);
    procs_.free_threads_of(proc);
    // After its CPUs' releases (recorded with their holders), before the
    // CPUs go to others. A reaped process was last known to run at its
    // last beat.
    trace_.process_event(why, proc, now_ns(),
                         why == TraceKind::Reap ? s_.procs[proc].alive_ns.load(rlx) : 0);
    procs_.unregister(proc);
    policy_.distribute_free(wakes);
}

bool SharedScheduler::reap(const DeadMembers& dead, WakeList& wakes) {
    s_.header.last_reap_ns.store(now_ns(), rlx);
    trace_.reap_recorders();
    bool any = false;
    for (const DeadMember& m : dead) {
        // The slot may have been freed, or taken by a new member, since the
        // look-up: only the process that was found dead is freed.
        if (!procs_.still_names(m.proc, m.pid, m.start_time)) continue;
        unregister(m.proc, wakes, TraceKind::Reap);
        any = true;
    }
    return any;
}

void SharedScheduler::release_thread(int32_t t, WakeList& wakes) {
    if (s_.threads[t].state.load(rlx) == ThreadState::Unused) return;
    // The thread holds only CPUs granted to its process: those in the
    // process's row of proc_cpus, not every CPU slot.
    // (Under our lock: the analysis does not follow it into a lambda.)
    find_in(proc_cpus_row(s_, s_.threads[t].proc), cpu_count(),
            [&](int32_t c) COEXEC_NO_THREAD_SAFETY_ANALYSIS {
                const CpuSlot& cpu = s_.cpus[c];
                if (cpu.owner_thread.load(rlx) != t || cpu.state.load(rlx) == CpuState::Free)
                    return false;
                cpus_.set_free(c);
                policy_.offer(c, wakes);
                return false; // every one
            });
    procs_.free_thread(t);
}

bool SharedScheduler::end_keep(int32_t t, KeepWord word) {
    if (cpus_.try_end_keep(t, word)) return true;
    after_lost_period(t, word);
    return false;
}

bool SharedScheduler::end_park(int32_t t, int32_t cpu, KeepWord word) {
    if (cpus_.unpark(cpu, t, word)) return true;
    after_lost_period(t, word);
    return false;
}

void SharedScheduler::after_lost_period(int32_t t, KeepWord word) {
    // The taker won the word under the lock, and frees the CPU in the same
    // locked section. Until that section ends the CPU is still ours on
    // paper: wait for it, so that the caller never queues a thread that
    // still holds a CPU (the taker may be slow, or stopped by a signal).
    WakeList wakes;
    { SchedulerLock lock(*this, wakes); }
    wakes.flush(s_);
    cpus_.finish_lost_keep(t, word);
}

// Rebuilds everything a dead lock holder may have left half-updated: CPU
// slots are made whole first (CpuTable::repair()), then the lists and
// counts are derived again from the slots' states (ProcessTable::repair()),
// and dead processes are reaped.
void SharedScheduler::repair(WakeList& wakes) {
    s_.header.recoveries.fetch_add(1, rlx);
    cpus_.repair(wakes);
    procs_.repair();
    // The dead holder's process is found by the next sweep, which starts at
    // once, outside the lock (find_dead()).
    watch_.reap_soon();
}

} // namespace coexec::scheduler
