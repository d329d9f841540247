// The policy (policy.hpp): the decisions. Grants and releases go through
// the CPU table and the process table; this file writes only the turn of a
// holder that keeps its CPU (next_turn()), preempt_asked_ns
// (overdue_holder(), overdue_within()) and a preempted thread's state
// (give_way(), give_way_within()).
#include "scheduler/policy.hpp"

#include "scheduler/alive_list.hpp"
#include "scheduler/cpu_bits.hpp"

#include "shm/clock.hpp"

#include <algorithm>
#include <cstdint>

namespace coexec::scheduler {

using namespace coexec::shm;

namespace {
constexpr auto rlx = std::memory_order_relaxed;
} // namespace

// ---- CPUs ------------------------------------------------------------

bool Policy::has_work(int32_t proc, int32_t cpu) const {
    const ProcSlot& p = s_.procs[proc];
    if (p.ready_total.load(rlx) <= 0) return false;
    return p.ready_any.load(rlx) > 0 || ready_cpu_row(s_, proc)[cpu].load(rlx) > 0 ||
           p.ready_numa[s_.cpus[cpu].numa].load(rlx) > 0;
}

bool Policy::foreign_work(int32_t self, int32_t cpu) const {
    // A stale alive list only delays a switch to the next scheduling point,
    // which decide() then settles.
    return any_alive(s_.header, [&](int32_t p) { return p != self && has_work(p, cpu); });
}

int32_t Policy::spare_cpus() const {
    // A snapshot of counters that move independently; a stale alive list or
    // count only makes the hint less exact.
    int64_t spare = s_.header.unheld_cpus.load(rlx);
    any_alive(s_.header, [&](int32_t p) {
        spare -= std::max<int64_t>(0, s_.procs[p].ready_total.load(rlx));
        return false; // every process counts
    });
    return int32_t(std::max<int64_t>(spare, INT32_MIN)); // ready counts are 64-bit
}

bool Policy::quantum_spent(const CpuSlot& cpu, int32_t self, uint64_t now) const {
    return cpu.turn_proc.load(rlx) != self || now - cpu.turn_start_ns.load(rlx) >= quantum_ns();
}

bool Policy::turn_over(int32_t c, int32_t proc, uint64_t now) const {
    const CpuSlot& cpu = s_.cpus[c];
    if (!quantum_spent(cpu, proc, now)) return false;
    if (cpu.turn_proc.load(rlx) != proc || now - cpu.turn_start_ns.load(rlx) >= share_turn_ns())
        return true;
    const int32_t mine = running_cpus(proc);
    return any_alive(s_.header, [&](int32_t p) {
        return p != proc && has_work(p, c) && short_of_cpus(p, c, mine);
    });
}

bool Policy::has_local_work(int32_t proc, int32_t cpu) const {
    const ProcSlot& p = s_.procs[proc];
    const int32_t node = s_.cpus[cpu].numa;
    return p.ready_total.load(rlx) > 0 &&
           (ready_cpu_row(s_, proc)[cpu].load(rlx) > 0 || p.ready_numa[node].load(rlx) > 0 ||
            (p.home_numa == node && p.ready_any.load(rlx) > 0));
}

int32_t Policy::running_cpus(int32_t proc) const {
    return s_.procs[proc].running_cpus.load(rlx);
}

bool Policy::short_of_cpus(int32_t proc, int32_t c, int32_t holder_cpus) const {
    const ProcSlot& p = s_.procs[proc];
    if (ready_cpu_row(s_, proc)[c].load(rlx) > 0 || p.ready_numa[s_.cpus[c].numa].load(rlx) > 0)
        return true;
    return running_cpus(proc) < holder_cpus;
}

uint64_t Policy::share_turn_ns() const {
    return kShareTurnQuanta * quantum_ns();
}

Policy::Next Policy::decide(int32_t c, int32_t self, bool self_ready, WakeList& wakes) {
    CpuSlot& cpu = s_.cpus[c];
    uint64_t now = now_ns();
    if (!quantum_spent(cpu, self, now) && (self_ready || has_work(self, c))) return Next::Own;
    return next_turn(c, self, true, self_ready, now, wakes);
}

bool Policy::give_way(int32_t c, int32_t self, int32_t thread, WakeList& wakes) {
    const uint64_t now = now_ns();
    if (next_turn(c, self, false, false, now, wakes) != Next::Other) return false;
    s_.threads[thread].state.store(ThreadState::Waiting, rlx);
    // At `now`, before the grant next_turn() recorded: readers order by time.
    trace_.cpu_event(TraceKind::Preempt, c, thread, now);
    return true;
}

Policy::Next Policy::next_turn(int32_t c, int32_t self, bool self_may_keep, bool self_ready,
                               uint64_t now, WakeList& wakes) {
    Header& h = s_.header;
    CpuSlot& cpu = s_.cpus[c];
    // In its share turn, a holder whose process still has work (a preempted
    // one has: it was running) passes the CPU only to a process short of
    // CPUs. Keeping it continues the share turn; it does not start one.
    const bool own_turn = cpu.turn_proc.load(rlx) == self;
    const bool share_turn = own_turn && now - cpu.turn_start_ns.load(rlx) < share_turn_ns() &&
                            (!self_may_keep || self_ready || has_work(self, c));
    const int32_t self_cpus = share_turn ? running_cpus(self) : 0;
    bool passed_over = false;
    // Round-robin: start after the process whose turn it was.
    int n = h.alive_count;
    int start = int(std::find(h.alive, h.alive + n, cpu.turn_proc.load(rlx)) - h.alive);
    for (int k = 1; k <= n; ++k) {
        int32_t p = h.alive[(start + k) % n];
        if (!(p == self && self_ready) && !has_work(p, c)) continue;
        if (p != self && share_turn && !short_of_cpus(p, c, self_cpus)) {
            passed_over = true;
            continue;
        }
        if (p == self) {
            if (!self_may_keep) continue;
            if (!passed_over) {
                cpu.turn_proc.store(self, rlx);
                cpu.turn_start_ns.store(now, rlx);
            }
            return Next::Own;
        }
        if (grant_to_pool(c, p, wakes) == kNone) continue;
        return Next::Other;
    }
    return Next::None;
}

int32_t Policy::overdue_holder(int32_t c, int32_t waiter, uint64_t now) {
    const uint64_t after = s_.header.config.preempt_after_ns;
    CpuSlot& cpu = s_.cpus[c];
    if (after == 0 || cpu.state.load(rlx) != CpuState::Running) return kNone;
    int32_t owner = cpu.owner_proc.load(rlx);
    int32_t thread = cpu.owner_thread.load(rlx);
    if (owner == kNone || owner == waiter || thread == kNone || !has_work(waiter, c)) return kNone;
    if (!s_.procs[owner].preemptible.load(rlx)) return kNone;
    // The owner's process has had the CPU since its turn began (or, if the
    // turn is someone else's, since its thread took the CPU).
    uint64_t since =
        cpu.turn_proc.load(rlx) == owner ? cpu.turn_start_ns.load(rlx) : cpu.since_ns.load(rlx);
    const uint64_t turn =
        short_of_cpus(waiter, c, running_cpus(owner)) ? quantum_ns() : share_turn_ns();
    if (now < since || now - since < turn + after) return kNone;
    // One request per period, whoever asks: the holder needs a moment to
    // reach its handler, and repeated signals would only interrupt it again.
    uint64_t asked = cpu.preempt_asked_ns.load(rlx);
    if (now - asked < after) return kNone;
    if (!cpu.preempt_asked_ns.compare_exchange_strong(asked, now, rlx)) return kNone;
    return thread;
}

bool Policy::give_way_within(int32_t c, int32_t self, int32_t thread, WakeList& wakes) {
    const uint64_t now = now_ns();
    if (!has_work(self, c) || grant_to_pool(c, self, wakes) == kNone) return false;
    s_.threads[thread].state.store(ThreadState::Waiting, rlx);
    trace_.cpu_event(TraceKind::Preempt, c, thread, now);
    return true;
}

bool Policy::overdue_within(int32_t c, int32_t proc, int32_t thread, uint64_t now) {
    const uint64_t after = s_.header.config.preempt_after_ns;
    CpuSlot& cpu = s_.cpus[c];
    if (after == 0 || cpu.state.load(rlx) != CpuState::Running) return false;
    if (cpu.owner_proc.load(rlx) != proc || cpu.owner_thread.load(rlx) != thread) return false;
    if (!has_work(proc, c)) return false;
    const uint64_t since = cpu.since_ns.load(rlx);
    if (now < since || now - since < quantum_ns() + after) return false;
    // One request per period, as in overdue_holder().
    uint64_t asked = cpu.preempt_asked_ns.load(rlx);
    if (now - asked < after) return false;
    return cpu.preempt_asked_ns.compare_exchange_strong(asked, now, rlx);
}

int32_t Policy::grant_to_pool(int32_t c, int32_t proc, WakeList& wakes) {
    // A thread waiting for this CPU for its own task, and nothing else ready
    // in its process: one wake-up, where a pool thread would pop the task
    // and wake the thread (two, and a context switch more).
    int32_t t = procs_.claim_receiver(c, proc);
    if (t == kNone) t = procs_.pool_pop(proc);
    if (t == kNone) return kNone;
    cpus_.start_turn(c, proc, now_ns());
    cpus_.grant(c, t, wakes);
    return t;
}

namespace {
// pick_unheld()'s `also` that accepts every CPU.
constexpr auto any_cpu = [](int32_t) { return true; };
} // namespace

template <class Also>
int32_t Policy::pick_unheld(const CpuBits& set, const Placement& where, int32_t node,
                            Also also) const {
    const int32_t n = cpus_.cpu_count();
    auto fits = [&](int32_t c) { return where.allows(s_.cpus[c], c) && also(c); };
    if (const int32_t p = where.preferred(); p >= 0 && p < n && contains(set, p) && fits(p))
        return p;
    if (node != kNone)
        if (const int32_t c = find_in_both(set, s_.numa_cpus[node], n, fits); c != kNone) return c;
    return find_in(set, n, fits);
}

int32_t Policy::preferred_node(int32_t proc, const Placement& where) const {
    const int32_t nodes = std::clamp(s_.header.numa_count, 0, kMaxNuma);
    if (nodes < 2 || where.strict) return kNone; // strict work is placed by allows()
    const int32_t node = where.kind == Placement::Kind::Numa  ? where.index
                         : where.kind == Placement::Kind::Any ? s_.procs[proc].home_numa
                                                              : kNone;
    return node >= 0 && node < nodes ? node : kNone;
}

int32_t Policy::claim_unheld_cpu(int32_t proc, const Placement& where, WakeList& wakes) {
    const Header& h = s_.header;
    const int32_t node = preferred_node(proc, where);
    auto own = [&](int32_t c) { return s_.cpus[c].owner_proc.load(rlx) == proc; };
    // Our own idle worker takes the work: one wake, no new thread.
    if (const int32_t c = pick_unheld(h.idle_cpus, where, node, own); c != kNone) {
        cpus_.grant(c, s_.cpus[c].owner_thread.load(rlx), wakes);
        return c;
    }
    if (s_.procs[proc].pool_size.load(rlx) == 0) return kNone;
    // Else a Free CPU, another process's idle holder's, or a Lent one: last
    // choice, its lender may come back for it any moment.
    int32_t c = pick_unheld(h.free_cpus, where, node, any_cpu);
    if (c == kNone) c = pick_unheld(h.idle_cpus, where, node, [&](int32_t c) { return !own(c); });
    if (c == kNone) c = pick_unheld(h.lent_cpus, where, node, any_cpu);
    if (c == kNone) return take_parked_cpu(proc, where, wakes);
    cpus_.evict_holder(c);
    grant_to_pool(c, proc, wakes);
    return c;
}

int32_t Policy::take_parked_cpu(int32_t proc, const Placement& where, WakeList& wakes) {
    // A count of 0 here is exact enough: a park that the count does not
    // show yet sees the caller's work itself (CpuTable::park()).
    if (s_.header.parked_cpus.load(std::memory_order_seq_cst) <= 0) return kNone;
    const int32_t n = cpus_.cpu_count();
    const int32_t node = preferred_node(proc, where);
    // (Under our lock: the analysis does not follow it into a lambda.)
    auto take = [&](int32_t c) COEXEC_NO_THREAD_SAFETY_ANALYSIS {
        return where.allows(s_.cpus[c], c) && take_parked(c, proc, wakes);
    };
    if (node != kNone)
        if (const int32_t c = find_in(
                s_.header.parked, n, [&](int32_t c) { return s_.cpus[c].numa == node && take(c); });
            c != kNone)
            return c;
    return find_in(s_.header.parked, n, take);
}

void Policy::take_parked_for(int32_t proc, WakeList& wakes) {
    if (s_.header.parked_cpus.load(std::memory_order_seq_cst) <= 0) return;
    // (Under our lock: the analysis does not follow it into a lambda.)
    find_in(s_.header.parked, cpus_.cpu_count(), [&](int32_t c) COEXEC_NO_THREAD_SAFETY_ANALYSIS {
        if (has_work(proc, c)) take_parked(c, proc, wakes);
        return s_.procs[proc].ready_total.load(rlx) <= 0; // nothing left to place
    });
}

bool Policy::take_parked(int32_t c, int32_t proc, WakeList& wakes) {
    KeepWord word;
    const int32_t t = cpus_.parked_holder(c, word);
    // The parker may have won its period back meanwhile.
    if (t == kNone || !cpus_.claim_kept(c, t, word)) return false;
    cpus_.set_free(c);
    // Nobody of `proc` to take it after all (a receiver closed since):
    // whoever has work for it.
    if (grant_to_pool(c, proc, wakes) == kNone) offer_released(c, wakes);
    return true;
}

int32_t Policy::offer(int32_t c, WakeList& wakes) {
    return offer_among(c, s_.header.alive, s_.header.alive_count, wakes);
}

int32_t Policy::offer_among(int32_t c, const int32_t* procs, int n, WakeList& wakes) {
    CpuSlot& cpu = s_.cpus[c];
    const int32_t holder = cpu.owner_thread.load(rlx);
    // An idle holder of p's takes p's work itself; a lender does not look.
    const int32_t idle_owner =
        holder != kNone && cpu.state.load(rlx) != CpuState::Lent ? cpu.owner_proc.load(rlx) : kNone;
    auto can_take = [&](int32_t p) {
        return p == idle_owner || s_.procs[p].pool_size.load(rlx) > 0;
    };
    // (Under our lock: the analysis does not follow it into a lambda.)
    auto give = [&](int32_t p) COEXEC_NO_THREAD_SAFETY_ANALYSIS {
        if (p == idle_owner) {
            cpus_.grant(c, holder, wakes);
            return holder;
        }
        cpus_.evict_holder(c);
        return grant_to_pool(c, p, wakes);
    };
    // Work bound to this CPU or its NUMA node goes first: it can run
    // nowhere else, and its memory is here. One walk: the first process
    // with local work takes the CPU, else the first with any.
    int start = int(std::find(procs, procs + n, cpu.turn_proc.load(rlx)) - procs);
    int32_t first_any = kNone;
    for (int k = 1; k <= n; ++k) {
        int32_t p = procs[(start + k) % n];
        if (!has_work(p, c) || !can_take(p)) continue;
        if (has_local_work(p, c)) return give(p);
        if (first_any == kNone) first_any = p;
    }
    return first_any == kNone ? kNone : give(first_any);
}

int32_t Policy::find_unheld_cpu(int32_t proc, const Placement& where, int32_t prefer) const {
    auto taken = [&](int32_t c) {
        CpuState st = s_.cpus[c].state.load(rlx);
        return st == CpuState::Running || st == CpuState::Lent;
    };
    if (prefer >= 0 && prefer < cpus_.cpu_count() && !taken(prefer) &&
        where.allows(s_.cpus[prefer], prefer))
        return prefer;
    // The placement's preferred CPU if it is unheld, in any state; else a
    // Free CPU, an idle one of our own, another process's, and a Lent one
    // last.
    if (const int32_t p = where.preferred();
        p >= 0 && p < cpus_.cpu_count() && s_.cpus[p].state.load(rlx) != CpuState::Running)
        return p;
    const Header& h = s_.header;
    const int32_t node = preferred_node(proc, where);
    auto own = [&](int32_t c) { return s_.cpus[c].owner_proc.load(rlx) == proc; };
    int32_t c = pick_unheld(h.free_cpus, where, node, any_cpu);
    if (c == kNone) c = pick_unheld(h.idle_cpus, where, node, own);
    if (c == kNone) c = pick_unheld(h.idle_cpus, where, node, [&](int32_t c) { return !own(c); });
    if (c == kNone) c = pick_unheld(h.lent_cpus, where, node, any_cpu);
    return c;
}

int32_t Policy::grant_unheld_cpu(int32_t thread, const Placement& where, WakeList& wakes) {
    const int32_t proc = s_.threads[thread].proc;
    const int32_t c = find_unheld_cpu(proc, where, binding_.bound_cpu(thread));
    if (c == kNone) return kNone;
    cpus_.evict_holder(c);
    cpus_.start_turn(c, proc, now_ns());
    cpus_.grant(c, thread, wakes);
    return c;
}

void Policy::distribute_free(WakeList& wakes) {
    // Fence: as in offer_released(), the Free CPUs are counted before the
    // ready counters are read (Dekker with the submitter's kick()), so work
    // that this look misses kicks for a CPU itself.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // A Free CPU has no holder: only a member with work and a pool thread
    // can take it. One walk of the alive list finds them (in its order, so
    // offers stay round-robin among them); each CPU is then offered to those
    // alone, not to every member (a reap on an idle node was CPUs x members).
    int32_t takers[kMaxProcs];
    int n = 0;
    any_alive(s_.header, [&](int32_t p) {
        const ProcSlot& slot = s_.procs[p];
        if (slot.ready_total.load(rlx) > 0 && slot.pool_size.load(rlx) > 0) takers[n++] = p;
        return false; // every member is looked at
    });
    if (n == 0) return;
    // (Under our lock: the analysis does not follow it into a lambda.)
    find_in(
        s_.header.free_cpus, cpus_.cpu_count(), [&](int32_t c) COEXEC_NO_THREAD_SAFETY_ANALYSIS {
            if (offer_among(c, takers, n, wakes) == kNone) return false;
            // A member whose last pool thread went takes no more Free CPUs.
            n = int(
                std::remove_if(takers, takers + n,
                               [&](int32_t p) { return s_.procs[p].pool_size.load(rlx) == 0; }) -
                takers);
            return n == 0; // nobody left to take one
        });
}

// ---- a holder leaving its CPU -----------------------------------------

int32_t Policy::hold_idle(int32_t c, bool sleeping, WakeList& wakes) {
    cpus_.hold_without_work(c, sleeping ? CpuState::Sleeping : CpuState::Idle);
    return offer_released(c, wakes);
}

int32_t Policy::lend(int32_t c, WakeList& wakes) {
    cpus_.hold_without_work(c, CpuState::Lent);
    return offer_released(c, wakes);
}

int32_t Policy::release(int32_t c, WakeList& wakes) {
    cpus_.set_free(c);
    return offer_released(c, wakes);
}

bool Policy::take_kept(int32_t c, int32_t t, KeepWord word, WakeList& wakes) {
    if (!cpus_.claim_kept(c, t, word)) return false;
    release(c, wakes);
    return true;
}

int32_t Policy::offer_released(int32_t c, WakeList& wakes) {
    // Fence: the CPU's new state is counted (unheld_cpus, wakeable_cpus in
    // the CPU table's set_state) before offer() reads the ready counters
    // (Dekker with the submitter's kick()). Work queued before that skipped
    // its kick: it is seen here.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return offer(c, wakes);
}

} // namespace coexec::scheduler
