// Which CPU a thread runs on: its kernel affinity while it holds a CPU, and
// the CPU it keeps or lends while it runs code of its own
// (coexec_keep_cpu, coexec_lend_cpu); and the kernel policy it runs under.
#pragma once

#include "core/interpose/affinity.hpp"
#include "core/runtime/thread_context.hpp"
#include "scheduler/shared_scheduler.hpp"

#include <cstdint>
#include <vector>

namespace coexec::core {

class CpuBinding {
  public:
    // `sched_batch`: whether adopt() sets SCHED_BATCH (threads.sched_batch).
    CpuBinding(scheduler::SharedScheduler& sched, AffinityRegistry& affinity, bool sched_batch);

    // From attach (or a worker's start) to detach: the calling thread runs
    // under SCHED_BATCH if it ran under SCHED_OTHER, and gets SCHED_OTHER
    // back at release(); a policy the program chose is left alone. coexec
    // decides which of its threads runs on a CPU; under SCHED_OTHER the
    // kernel would also let a thread woken with a CPU preempt the thread that
    // just gave it that CPU, before the giver can go to sleep. The giver then
    // stays runnable until the kernel picks it again, milliseconds later, and
    // interrupts the new holder to let it sleep. SCHED_BATCH threads do not
    // preempt on wake-up; otherwise they share CPUs as SCHED_OTHER ones do
    // (same nice weights). With threads.sched_batch=false, nothing changes.
    void adopt(ThreadContext& self);
    void release(ThreadContext& self);
    // After the calling thread was woken with a grant of `cpu`: a thread that
    // adopt() put under SCHED_BATCH runs under SCHED_OTHER for a while after
    // a wake-up that waited behind a program outside coexec (BatchGuess).
    void woken(ThreadContext& self, int32_t cpu);
    // The same after a wake-up that came `delay_ns` after it was asked for,
    // on a CPU no other coexec thread ran on meanwhile (a parked one).
    void woken_after(ThreadContext& self, uint64_t delay_ns);

    // Runs the calling thread on `cpu` from now on. A thread that keeps its
    // affinity is pinned only if the kernel has it elsewhere; once pinned,
    // granters move it too, until unpin().
    void bind_to(ThreadContext& self, int32_t cpu);
    // The thread set a kernel mask of its own while outside coexec: the
    // next grant binds it again, even to the CPU it had.
    void forget(ThreadContext& self);
    // Before a thread that keeps its affinity runs code of its own: undoes
    // what bind_to() pinned, and applies a mask set while it held its CPU.
    void unpin(ThreadContext& self);
    // The thread leaves coexec (coexec_block_enter): unpin(), and a mask it
    // sets itself goes to the kernel until it comes back. Until then it
    // stays bound to its CPU, so a grant of the same CPU needs no system
    // call.
    void go_outside(ThreadContext& self);
    // Back in coexec, which binds the thread: a mask it sets is remembered
    // again, and one it set outside is forgotten (the next grant binds it).
    void come_back(ThreadContext& self);

    // The caller keeps its CPU while it runs code of its own, until a
    // monitor takes it (take_long_kept()). Its own masks apply as after
    // lend().
    void keep(ThreadContext& self);
    // The caller lends its CPU: it runs on until someone claims it. Work
    // already queued for it takes it at once. Only a thread that keeps its
    // affinity runs with its own mask, and may change it, meanwhile.
    void lend(ThreadContext& self);
    // After keep(): the kept CPU is lent from now on, as by lend(), unless
    // a monitor took it meanwhile.
    void lend_kept(ThreadContext& self);
    // After keep() or lend(): true if the CPU is still the caller's (it
    // holds it again, bound), false if it was taken meanwhile.
    bool reclaim(ThreadContext& self);

    // The monitor's part: frees CPUs that threads have kept outside coexec
    // since an earlier look of its own, at least kKeptGraceNs ago.
    void take_long_kept(uint64_t now);

    // A CPU kept outside coexec is taken for waiting work only after two
    // looks of the monitor at least this far apart saw the same period:
    // short serial stretches between parallel regions keep their CPU.
    static constexpr uint64_t kKeptGraceNs = 1'000'000;

  private:
    // Runs the calling thread on kernel CPU `system_cpu` only, migrating it
    // there before returning (the system call: see kernel_affinity.hpp).
    static void pin_self(int32_t system_cpu);
    // Switches the calling thread from kernel policy `from` to `to`; a
    // thread found under another policy chose its own, and is left alone
    // from now on.
    static void switch_policy(ThreadContext& self, int from, int to);
    // Lends `c`, which the caller holds (Running) without running on it.
    void lend_held(ThreadContext& self, int32_t c);
    bool reclaim_kept(ThreadContext& self);
    bool reclaim_lent(ThreadContext& self);

    scheduler::SharedScheduler& sched_;
    AffinityRegistry& affinity_;
    const bool sched_batch_;
    struct KeptSighting {
        int32_t thread = shm::kNone;
        scheduler::KeepWord word;
        uint64_t since_ns = 0;
    };
    std::vector<KeptSighting> kept_seen_; // per CPU; the monitor's own
};

} // namespace coexec::core
