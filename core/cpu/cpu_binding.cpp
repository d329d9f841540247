#include "core/cpu/cpu_binding.hpp"

#include "scheduler/kernel_affinity.hpp"
#include "shm/clock.hpp"

#include <sched.h>
#include <utility>

namespace coexec::core {

using namespace coexec::shm;
using scheduler::KeepWord;
using scheduler::WakeList;

CpuBinding::CpuBinding(scheduler::SharedScheduler& sched, AffinityRegistry& affinity,
                       bool sched_batch)
    : sched_(sched), affinity_(affinity), sched_batch_(sched_batch),
      kept_seen_(size_t(sched.cpu_count())) {}

void CpuBinding::adopt(ThreadContext& self) {
    if (!sched_batch_ || sched_getscheduler(0) != SCHED_OTHER) return;
    const sched_param none{};
    self.binding.batch_policy = sched_setscheduler(0, SCHED_BATCH, &none) == 0;
    self.binding.batch_guess = BatchGuess{};
}

void CpuBinding::release(ThreadContext& self) {
    // Unless the thread chose a policy of its own meanwhile (or runs under
    // SCHED_OTHER already, as BatchGuess had it).
    if (!std::exchange(self.binding.batch_policy, false) || sched_getscheduler(0) != SCHED_BATCH)
        return;
    const sched_param none{};
    sched_setscheduler(0, SCHED_OTHER, &none);
}

void CpuBinding::woken(ThreadContext& self, int32_t cpu) {
    if (self.binding.batch_policy) woken_after(self, sched_.cpus().unheld_grant_age(cpu, now_ns()));
}

void CpuBinding::woken_after(ThreadContext& self, uint64_t delay_ns) {
    if (!self.binding.batch_policy) return;
    switch (self.binding.batch_guess.learn(delay_ns, now_ns())) {
    case BatchGuess::Change::None:
        return;
    case BatchGuess::Change::ToOther:
        switch_policy(self, SCHED_BATCH, SCHED_OTHER);
        return;
    case BatchGuess::Change::ToBatch:
        switch_policy(self, SCHED_OTHER, SCHED_BATCH);
        return;
    }
}

void CpuBinding::switch_policy(ThreadContext& self, int from, int to) {
    if (sched_getscheduler(0) != from) {
        self.binding.batch_policy = false;
        return;
    }
    const sched_param none{};
    if (sched_setscheduler(0, to, &none) != 0) self.binding.batch_policy = false;
}

void CpuBinding::bind_to(ThreadContext& self, int32_t cpu) {
    self.held.took(cpu);
    const int32_t system_cpu = sched_.segment().cpus[cpu].system_id;
    if (!self.attach.keeps_affinity) {
        sched_.binding().bind(self.slot, cpu); // usually the granter bound us already
        // A granter's binding moves a sleeping thread at once, but one that
        // spun on another CPU (an idle holder handed work elsewhere) runs
        // on there until the kernel migrates it, beside that CPU's new
        // holder. Setting its own affinity migrates the caller before the
        // call returns; sched_getcpu() is a vDSO read.
        if (sched_getcpu() != system_cpu) pin_self(system_cpu);
        return;
    }
    // Usually the kernel keeps the thread where it last held this CPU, and
    // sched_getcpu() (a vDSO call) costs far less than two affinity changes
    // per grant. When the kernel has put it elsewhere, pin it: left alone it
    // may share a CPU with another coexec thread for milliseconds.
    if (sched_getcpu() == system_cpu) return;
    // The mask unpin() restores: the kernel's now (the thread's own), unless
    // the thread was given one meanwhile that it has not applied yet.
    if (!self.binding.pinned) affinity_.capture_kernel(self.affinity);
    self.binding.pinned = true;
    pin_self(system_cpu);
    // Pinned, the thread would wake on this CPU after a grant of another,
    // behind its holder, and then migrate itself; granters now bind it
    // before they wake it, as they do other threads.
    sched_.binding().note(self.slot, cpu);
}

void CpuBinding::pin_self(int32_t system_cpu) {
    scheduler::CpuMask one;
    if (one.set(system_cpu)) one.apply(0);
}

void CpuBinding::forget(ThreadContext& self) {
    sched_.binding().forget(self.slot);
}

void CpuBinding::unpin(ThreadContext& self) {
    // Other threads keep coexec's binding until detach.
    if (!self.attach.keeps_affinity) return;
    // The thread holds its CPU, so no granter binds it meanwhile.
    if (self.binding.pinned) sched_.binding().forget(self.slot);
    affinity_.leave_cpu(self.affinity, std::exchange(self.binding.pinned, false));
}

void CpuBinding::go_outside(ThreadContext& self) {
    unpin(self);
    self.binding.own_affinity_applies = true;
}

void CpuBinding::come_back(ThreadContext& self) {
    self.binding.own_affinity_applies = false;
    if (std::exchange(self.affinity.applied_outside, false)) forget(self);
}

void CpuBinding::keep(ThreadContext& self) {
    unpin(self);
    self.binding.kept_word = sched_.begin_keep(self.slot);
    self.binding.kept_cpu = self.held.lost();
    self.binding.own_affinity_applies = self.attach.keeps_affinity; // as for lend()
}

void CpuBinding::lend(ThreadContext& self) {
    lend_held(self, self.held.lost());
    unpin(self);
    // Still bound to its CPU: only a thread that keeps its affinity runs
    // with its own, and may change it, outside coexec.
    self.binding.own_affinity_applies = self.attach.keeps_affinity;
}

void CpuBinding::lend_kept(ThreadContext& self) {
    const int32_t c = std::exchange(self.binding.kept_cpu, kNone);
    // Ending the period makes the CPU ours again (still Running, as lend
    // expects); a monitor that took it meanwhile wins instead.
    if (c == kNone || !sched_.end_keep(self.slot, self.binding.kept_word)) return;
    lend_held(self, c);
}

void CpuBinding::lend_held(ThreadContext& self, int32_t c) {
    WakeList wakes;
    int32_t taker;
    {
        scheduler::SchedulerLock lock(sched_, wakes);
        taker = sched_.policy().lend(c, wakes);
    }
    wakes.flush(sched_.segment());
    self.binding.lent_cpu = taker == kNone ? c : kNone;
}

bool CpuBinding::reclaim(ThreadContext& self) {
    return reclaim_kept(self) || reclaim_lent(self);
}

bool CpuBinding::reclaim_kept(ThreadContext& self) {
    const int32_t c = std::exchange(self.binding.kept_cpu, kNone);
    if (c == kNone || !sched_.end_keep(self.slot, self.binding.kept_word)) return false;
    bind_to(self, c);
    return true;
}

bool CpuBinding::reclaim_lent(ThreadContext& self) {
    const int32_t c = std::exchange(self.binding.lent_cpu, kNone);
    if (c == kNone) return false;
    WakeList wakes;
    bool back;
    {
        scheduler::SchedulerLock lock(sched_, wakes);
        back = sched_.cpus().reclaim_lent(c, self.slot);
    }
    wakes.flush(sched_.segment());
    // A thread that keeps its affinity may need pinning again.
    if (back) bind_to(self, c);
    return back;
}

void CpuBinding::take_long_kept(uint64_t now) {
    for (int32_t c = 0; c < int32_t(kept_seen_.size()); ++c) {
        KeptSighting& seen = kept_seen_[size_t(c)];
        KeepWord word;
        const int32_t t = sched_.cpus().keeping_holder(c, word);
        if (t == kNone || t != seen.thread || word != seen.word) {
            // A new period (or none): look again next time.
            seen = t == kNone ? KeptSighting{} : KeptSighting{t, word, now};
            continue;
        }
        if (now - seen.since_ns < kKeptGraceNs) continue;
        WakeList wakes;
        {
            scheduler::SchedulerLock lock(sched_, wakes);
            sched_.policy().take_kept(c, t, word, wakes);
        }
        wakes.flush(sched_.segment());
        seen = {};
    }
}

} // namespace coexec::core
