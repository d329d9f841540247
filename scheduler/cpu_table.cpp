// The CPU table (cpu_table.hpp): every write to a CpuSlot after format(),
// but for the turn of a holder that keeps its CPU and preempt_asked_ns
// (policy.cpp's); the CPU counters; grants, keep words, and the kernel
// affinity that follows them.
#include "scheduler/cpu_table.hpp"

#include "scheduler/cpu_bits.hpp"
#include "scheduler/process_table.hpp"

#include "scheduler/kernel_affinity.hpp"
#include "scheduler/thread_word.hpp"
#include "shm/clock.hpp"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <sched.h>

namespace coexec::scheduler {

using namespace coexec::shm;

namespace {
constexpr auto rlx = std::memory_order_relaxed;
} // namespace

void CpuTable::format(const std::vector<CpuInfo>& cpus) {
    Header& h = s_.header;
    std::vector<int> numa_ids;
    for (auto& c : cpus)
        if (std::find(numa_ids.begin(), numa_ids.end(), c.system_numa) == numa_ids.end())
            numa_ids.push_back(c.system_numa);
    std::sort(numa_ids.begin(), numa_ids.end());
    // The callers refuse more CPUs than the segment has slots for, with an
    // error that says so (Membership::enter, and the tools): never cut here.
    const int count = std::min<int>(int(cpus.size()), h.max_cpus);
    // The node sets of an earlier layout (a segment reclaimed from dead
    // members), and no more: a fresh segment's are zero pages, which
    // writing zeros to would allocate (32 KiB).
    const int32_t old_cpus = std::clamp(h.cpu_count, 0, h.max_cpus);
    for (int32_t n = 0; n < std::clamp(h.numa_count, 0, kMaxNuma); ++n)
        clear_below(s_.numa_cpus[n], old_cpus);
    h.cpu_count = count;
    h.numa_count = int(numa_ids.size());
    for (int i = 0; i < h.max_cpus; ++i) {
        CpuSlot& slot = s_.cpus[i];
        if (i < count) {
            const CpuInfo& info = cpus[size_t(i)];
            slot.system_id = info.system_id;
            slot.core = info.core;
            slot.system_numa = info.system_numa;
            slot.numa = int(std::find(numa_ids.begin(), numa_ids.end(), info.system_numa) -
                            numa_ids.begin());
        }
        slot.state.store(CpuState::Free, rlx);
        slot.owner_proc.store(kNone, rlx);
        slot.owner_thread.store(kNone, rlx);
        slot.since_ns.store(0, rlx);
        slot.handed_over.store(false, rlx);
        slot.turn_proc.store(kNone, rlx);
        slot.turn_start_ns.store(0, rlx);
        slot.preempt_asked_ns.store(0, rlx);
        slot.stint_proc = kNone;
        slot.counted_proc = kNone;
    }
    h.unheld_cpus.store(count, std::memory_order_seq_cst);
    h.wakeable_cpus.store(count, std::memory_order_seq_cst);
    clear(h.free_cpus);
    clear(h.idle_cpus);
    clear(h.lent_cpus);
    // Nobody runs in a segment being formatted: no parker races these.
    clear_below(h.parked, h.max_cpus);
    h.parked_cpus.store(0, std::memory_order_seq_cst);
    for (int32_t c = 0; c < count; ++c) {
        note_state(c, CpuState::Free);
        assign(s_.numa_cpus[s_.cpus[c].numa], c, true);
    }
}

void CpuTable::note_state(int32_t c, CpuState st) {
    Header& h = s_.header;
    assign(h.free_cpus, c, st == CpuState::Free);
    assign(h.idle_cpus, c, st == CpuState::Idle || st == CpuState::Sleeping);
    assign(h.lent_cpus, c, st == CpuState::Lent);
}

bool runs_elsewhere(const Segment& s, int32_t t, int32_t c) {
    for (int32_t other = 0; other < s.header.cpu_count; ++other)
        if (other != c && s.cpus[other].owner_thread.load(rlx) == t &&
            s.cpus[other].state.load(rlx) == CpuState::Running)
            return true;
    return false;
}

void CpuTable::grant(int32_t c, int32_t t, WakeList& wakes) {
    assert(!runs_elsewhere(t, c));
    CpuSlot& cpu = s_.cpus[c];
    ThreadSlot& th = s_.threads[t];
    uint64_t now = now_ns();
    // A sleeping holder given work again is woken; anything else is a grant.
    const CpuState before = cpu.state.load(rlx);
    const bool woken = before == CpuState::Sleeping && cpu.owner_thread.load(rlx) == t;
    time_.run_for(c, th.proc, now);
    cpu.owner_proc.store(th.proc, rlx);
    assign(proc_cpus_row(s_, th.proc), c, true);
    cpu.owner_thread.store(t, rlx);
    cpu.since_ns.store(now, rlx);
    cpu.handed_over.store(before == CpuState::Running, rlx);
    set_state(c, CpuState::Running);
    trace_.cpu_event(woken ? TraceKind::Wake : TraceKind::Grant, c, t, now);
    publish_grant(c, t, wakes);
}

void CpuTable::publish_grant(int32_t c, int32_t t, WakeList& wakes) {
    ThreadSlot& th = s_.threads[t];
    s_.procs[th.proc].handoffs.fetch_add(1, rlx);
    binding_.bind(t, c);
    // The state and the grant are stored back to back: a granter that dies
    // before the state store leaves a slot that repair() finishes;
    // one that dies between the two leaves the CPU lost (a known gap).
    th.state.store(ThreadState::Running, rlx);
    // Release pairs with the waiter's acquire of `grant` after it sees the
    // word change: the CPU slot writes above are visible to the new holder.
    th.grant.store(c, std::memory_order_release);
    if (ThreadWord::move(th.word)) wakes.add(t);
}

void CpuTable::handoff_within_process(int32_t c, int32_t t, WakeList& wakes) {
    assert(!runs_elsewhere(t, c));
    CpuSlot& cpu = s_.cpus[c];
    const uint64_t now = now_ns();
    time_.relabel(c, s_.threads[t].label_class.load(rlx), now);
    cpu.owner_thread.store(t, rlx);
    cpu.since_ns.store(now, rlx);
    cpu.handed_over.store(true, rlx);
    trace_.cpu_event(TraceKind::Handoff, c, t, now);
    publish_grant(c, t, wakes);
}

void CpuTable::set_state(int32_t c, CpuState next) {
    CpuSlot& cpu = s_.cpus[c];
    const CpuState before = cpu.state.load(rlx);
    // seq_cst: the counts pair with the submitter's seq_cst publication of
    // its ready counters (Dekker). A CPU that becomes unheld or wakeable is
    // either seen by the submitter, or its holder's re-check after this call
    // (offer_released()) sees the work.
    if (int d = int(is_unheld(next)) - int(is_unheld(before)))
        s_.header.unheld_cpus.fetch_add(d, std::memory_order_seq_cst);
    if (int d = int(is_wakeable(next)) - int(is_wakeable(before)))
        s_.header.wakeable_cpus.fetch_add(d, std::memory_order_seq_cst);
    note_state(c, next);
    // A CPU that stops being Running stops being parked: its holder either
    // lost its period first (a taker won it) or is gone (reap, repair).
    if (next != CpuState::Running) unmark_parked(c);
    // Release: readers of the state (top, lock-free probes) see the owner.
    cpu.state.store(next, std::memory_order_release);
    // Every owner change of a Running CPU (grant, set_free) ends here: the
    // owner is stored first.
    recount_running(c);
}

void CpuTable::recount_running(int32_t c) {
    CpuSlot& cpu = s_.cpus[c];
    const int32_t owner = cpu.owner_proc.load(rlx);
    const int32_t counted =
        cpu.state.load(rlx) == CpuState::Running && owner >= 0 && owner < kMaxProcs ? owner : kNone;
    if (counted == cpu.counted_proc) return;
    if (cpu.counted_proc >= 0 && cpu.counted_proc < kMaxProcs)
        s_.procs[cpu.counted_proc].running_cpus.fetch_sub(1, rlx);
    if (counted != kNone) s_.procs[counted].running_cpus.fetch_add(1, rlx);
    cpu.counted_proc = counted;
}

void CpuTable::recount_all_running() {
    // A lock holder that died inside recount_running() left one count off.
    for (ProcSlot& p : s_.procs)
        p.running_cpus.store(0, rlx);
    for (int32_t c = 0; c < s_.header.max_cpus; ++c) {
        s_.cpus[c].counted_proc = kNone;
        if (c < cpu_count()) recount_running(c);
    }
}

void CpuTable::hold_without_work(int32_t c, CpuState next) {
    CpuSlot& cpu = s_.cpus[c];
    if (cpu.state.load(rlx) == CpuState::Running) time_.stop(c, now_ns());
    int32_t t = cpu.owner_thread.load(rlx);
    if (t != kNone) s_.threads[t].state.store(ThreadState::Holding, rlx);
    set_state(c, next);
    trace_.cpu_event(next == CpuState::Idle       ? TraceKind::Idle
                     : next == CpuState::Sleeping ? TraceKind::Sleep
                                                  : TraceKind::Lend,
                     c, t);
}

bool CpuTable::reclaim_lent(int32_t c, int32_t thread) {
    CpuSlot& cpu = s_.cpus[c];
    if (cpu.state.load(rlx) != CpuState::Lent || cpu.owner_thread.load(rlx) != thread) return false;
    ThreadSlot& th = s_.threads[thread];
    const uint64_t now = now_ns();
    time_.start(c, th.proc, now);
    th.state.store(ThreadState::Running, rlx);
    set_state(c, CpuState::Running);
    trace_.cpu_event(TraceKind::Reclaim, c, thread, now);
    return true;
}

KeepWord CpuTable::begin_keep(int32_t t) {
    std::atomic<uint32_t>& serial = s_.threads[t].serial;
    // Only the thread writes the word outside a period, so the load is its
    // own last store. Release: a monitor that sees the new period sees the
    // thread's CPU state as of now.
    const KeepWord word = KeepWord(serial.load(rlx)).next_outside();
    serial.store(word.bits(), std::memory_order_release);
    return word;
}

bool CpuTable::try_end_keep(int32_t t, KeepWord word) {
    uint32_t expected = word.bits();
    // Against claim_kept()'s compare-exchange on the same word: exactly one
    // of us wins the period.
    return s_.threads[t].serial.compare_exchange_strong(
        expected, word.in(KeepWord::Mode::Inside).bits(), std::memory_order_acq_rel,
        std::memory_order_acquire);
}

void CpuTable::finish_lost_keep(int32_t t, KeepWord word) {
    // The taker is done with the word: its locked section ended.
    s_.threads[t].serial.store(word.in(KeepWord::Mode::Inside).bits(), rlx);
}

int32_t CpuTable::keeping_holder(int32_t c, KeepWord& word) const {
    const CpuSlot& cpu = s_.cpus[c];
    if (cpu.state.load(rlx) != CpuState::Running) return kNone;
    const int32_t t = cpu.owner_thread.load(rlx);
    if (t == kNone) return kNone;
    // seq_cst, not just acquire (which a keep needs: begin_keep()'s release
    // store): a park's Dekker pair (see park()).
    word = KeepWord(s_.threads[t].serial.load(std::memory_order_seq_cst));
    return word.away() ? t : kNone;
}

bool CpuTable::claim_kept(int32_t c, int32_t t, KeepWord word) {
    CpuSlot& cpu = s_.cpus[c];
    if (cpu.state.load(rlx) != CpuState::Running || cpu.owner_thread.load(rlx) != t) return false;
    ThreadSlot& th = s_.threads[t];
    // The thread ends its period with a compare-exchange Outside -> Inside
    // on the same word: exactly one of the two succeeds. If we do, it waits
    // for a CPU at its coexec_block_exit(), which takes this lock after us
    // (SharedScheduler::end_keep), once the caller has freed the CPU.
    uint32_t expected = word.bits();
    if (!th.serial.compare_exchange_strong(expected, word.in(KeepWord::Mode::Taken).bits(),
                                           std::memory_order_acq_rel, std::memory_order_relaxed))
        return false;
    th.state.store(ThreadState::Blocked, rlx);
    // Won a park: its parker no longer clears the mark (unpark() lost).
    if (word.mode() == KeepWord::Mode::Parked) unmark_parked(c);
    return true;
}

// ---- parked CPUs ------------------------------------------------------
//
// Why a park needs no lock. The CPU stays Running and its holder's, so no
// count, set or list that the locked sections keep changes; only the
// holder's keep word and the parked mark do, and those have their own
// atomic protocol:
//  - the word: exactly one of the parker (unpark(), Parked -> Inside) and a
//    taker (claim_kept(), Parked -> Taken, under the lock) wins the period,
//    by compare-exchange; the winner clears the mark, at most once (the
//    mark's fetch_and tells it whether the bit was still set). The mark is
//    set before the period is published, so a taker always finds it set;
//  - a set mark is a Running CPU: the parker marks the CPU it holds, and a
//    CPU stops Running only under the lock, which clears the mark first
//    (claim_kept(), set_state());
//  - the park against a submitter (Dekker): the parker marks and counts the
//    CPU, publishes its period (all seq_cst), then, after a seq_cst fence,
//    reads the ready counters (the caller, CpuHandover::park()). A
//    submitter raises its ready counter (seq_cst), then reads parked_cpus
//    (ReadyWork::kick()) and, under the lock, the mark and the word
//    (Policy::take_parked_cpu(), keeping_holder(); seq_cst). In the single
//    order of those operations, either the submitter's read of the word
//    comes after the publication, and it takes the CPU, or the parker's
//    reads come after the ready counter's rise, and it sees the work and
//    unparks.

KeepWord CpuTable::park(int32_t c, int32_t t) {
    assert(holds(t, c));
    if (mark(s_.header.parked, c)) s_.header.parked_cpus.fetch_add(1, std::memory_order_seq_cst);
    std::atomic<uint32_t>& serial = s_.threads[t].serial;
    // Only the thread writes the word outside a period (as in begin_keep()).
    const KeepWord word = KeepWord(serial.load(rlx)).next_parked();
    serial.store(word.bits(), std::memory_order_seq_cst);
    return word;
}

bool CpuTable::unpark(int32_t c, int32_t t, KeepWord word) {
    if (!try_end_keep(t, word)) return false; // a taker won: it cleared the mark
    unmark_parked(c);
    return true;
}

void CpuTable::unmark_parked(int32_t c) {
    if (unmark(s_.header.parked, c)) s_.header.parked_cpus.fetch_sub(1, std::memory_order_seq_cst);
}

int32_t CpuTable::parked_holder(int32_t c, KeepWord& word) const {
    const int32_t t = keeping_holder(c, word);
    return t != kNone && word.mode() == KeepWord::Mode::Parked ? t : kNone;
}

int32_t CpuTable::take_grant(int32_t t) {
    // Acquire pairs with the granter's release store of `grant`.
    return s_.threads[t].grant.exchange(kNone, std::memory_order_acquire);
}

bool CpuTable::stint_over(int32_t cpu, uint64_t now) const {
    // Relaxed: the granter stored since_ns before it published the grant
    // (release), and the holder acquired that grant before running; nobody
    // else writes it while the holder keeps the CPU Running.
    const uint64_t since = s_.cpus[cpu].since_ns.load(rlx);
    return now > since && now - since >= s_.header.config.quantum_ns;
}

uint64_t CpuTable::unheld_grant_age(int32_t cpu, uint64_t now) const {
    // Relaxed, as in stint_over(): both were stored before the grant.
    const CpuSlot& slot = s_.cpus[cpu];
    if (slot.handed_over.load(rlx)) return 0;
    const uint64_t since = slot.since_ns.load(rlx);
    return now > since ? now - since : 0;
}

bool CpuTable::holds(int32_t t, int32_t c) const {
    const CpuSlot& cpu = s_.cpus[c];
    return c != kNone && cpu.owner_thread.load(rlx) == t &&
           cpu.state.load(rlx) == CpuState::Running;
}

void CpuTable::start_turn(int32_t c, int32_t proc, uint64_t now) {
    CpuSlot& cpu = s_.cpus[c];
    if (cpu.turn_proc.load(rlx) == proc) return;
    cpu.turn_proc.store(proc, rlx);
    assign(proc_cpus_row(s_, proc), c, true);
    cpu.turn_start_ns.store(now, rlx);
}

void CpuTable::set_free(int32_t c) {
    CpuSlot& cpu = s_.cpus[c];
    const CpuState before = cpu.state.load(rlx);
    const int32_t holder = cpu.owner_thread.load(rlx);
    const uint64_t now = now_ns();
    if (before == CpuState::Running) time_.stop(c, now);
    cpu.owner_proc.store(kNone, rlx);
    cpu.owner_thread.store(kNone, rlx);
    cpu.since_ns.store(now, rlx);
    set_state(c, CpuState::Free);
    if (before != CpuState::Free) trace_.cpu_event(TraceKind::Release, c, holder, now);
}

void CpuTable::release_all_of(int32_t proc) {
    const uint64_t now = now_ns();
    // Only a CPU granted to the process since it registered can name it
    // (as owner, turn or stint): its row of proc_cpus, not every CPU slot.
    uint64_t* granted = proc_cpus_row(s_, proc);
    // Under our lock: the analysis does not follow it into a lambda.
    find_in(granted, cpu_count(), [&](int32_t c) COEXEC_NO_THREAD_SAFETY_ANALYSIS {
        CpuSlot& cpu = s_.cpus[c];
        time_.stop_if_of(c, proc, now);
        if (cpu.turn_proc.load(rlx) == proc) cpu.turn_proc.store(kNone, rlx);
        if (cpu.owner_proc.load(rlx) == proc) set_free(c);
        return false; // every one
    });
    for (size_t w = 0; w < proc_cpu_words(s_.header.max_cpus); ++w)
        granted[w] = 0;
}

void CpuTable::repair(WakeList& wakes) {
    for (int32_t c = 0; c < cpu_count(); ++c) {
        CpuSlot& cpu = s_.cpus[c];
        const CpuState st = cpu.state.load(rlx);
        // A park's mark outlives it only if its taker died before clearing
        // it (set_state() clears it for every CPU that stops Running).
        if (st != CpuState::Running) unmark_parked(c);
        if (st == CpuState::Free) {
            // A grant that wrote the owner but not the state.
            cpu.owner_thread.store(kNone, rlx);
            cpu.owner_proc.store(kNone, rlx);
            continue;
        }
        if (!holder_is_sound(c)) {
            set_free(c); // the thread, if popped for a grant, goes back to its pool
            continue;
        }
        // A take of a kept CPU cut short after claim_kept() won the keep word: the thread's
        // end_keep() has lost the period and will queue its task, so the
        // take is finished here.
        const int32_t holder = cpu.owner_thread.load(rlx);
        if (st == CpuState::Running &&
            KeepWord(s_.threads[holder].serial.load(rlx)).mode() == KeepWord::Mode::Taken) {
            s_.threads[holder].state.store(ThreadState::Blocked, rlx);
            set_free(c);
            continue;
        }
        // A grant that made the CPU Running but never told the thread (an
        // idle holder still marked Holding; no grant was stored yet).
        if (st == CpuState::Running && s_.threads[holder].state.load(rlx) == ThreadState::Holding)
            publish_grant(c, holder, wakes);
    }
    int unheld = 0, wakeable = 0;
    clear(s_.header.free_cpus);
    clear(s_.header.idle_cpus);
    clear(s_.header.lent_cpus);
    for (int c = 0; c < cpu_count(); ++c) {
        const CpuState st = s_.cpus[c].state.load(rlx);
        unheld += is_unheld(st);
        wakeable += is_wakeable(st);
        note_state(c, st);
    }
    s_.header.unheld_cpus.store(unheld, std::memory_order_seq_cst);
    s_.header.wakeable_cpus.store(wakeable, std::memory_order_seq_cst);
    recount_all_running();
}

bool CpuTable::holder_is_sound(int32_t c) const {
    const CpuSlot& cpu = s_.cpus[c];
    const int32_t t = cpu.owner_thread.load(rlx);
    const int32_t p = cpu.owner_proc.load(rlx);
    // Cleared by set_free() or evict_holder() before the state was.
    if (t < 0 || t >= s_.header.threads_used || p < 0 || p >= kMaxProcs) return false;
    const ThreadSlot& th = s_.threads[t];
    switch (th.state.load(rlx)) {
    case ThreadState::Unused:
        return false;
    case ThreadState::Pool:
        // Evicted (pool_push() comes first), or popped for a grant that
        // stopped before it told the thread. A lock-free hand-off never
        // targets a Pool thread (take_pool_thread() marks it Waiting).
        return false;
    case ThreadState::Blocked:
        // claim_kept() and an evicted lender: Blocked is their first store.
        return false;
    default:
        return th.proc == p;
    }
}

void CpuTable::evict_holder(int32_t c) {
    CpuSlot& cpu = s_.cpus[c];
    int32_t t = cpu.owner_thread.load(rlx);
    if (t == kNone) return;
    trace_.cpu_event(TraceKind::Evict, c, t);
    if (cpu.state.load(rlx) == CpuState::Lent) {
        // The lender is not waiting: it learns it at reclaim_lent(). Until
        // then it runs on any managed CPU rather than share this one.
        binding_.unbind(t);
        s_.threads[t].state.store(ThreadState::Blocked, rlx);
        cpu.owner_thread.store(kNone, rlx);
        cpu.owner_proc.store(kNone, rlx);
        return;
    }
    // The holder spins on its word or sleeps on it. As a pool thread it just
    // waits for a grant, so a sleeping holder need not be woken; a spinning
    // one sees the word change and goes to sleep.
    procs_.pool_push(t);
    ThreadWord::move_quietly(s_.threads[t].word);
    cpu.owner_thread.store(kNone, rlx);
    cpu.owner_proc.store(kNone, rlx);
}

} // namespace coexec::scheduler
