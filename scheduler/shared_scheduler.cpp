#include "shared_scheduler.hpp"

#include "shm/clock.hpp"
#include "shm/liveness.hpp"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <sched.h>

namespace coexec::scheduler {

using namespace coexec::shm;

namespace {
constexpr auto rlx = std::memory_order_relaxed;

// What Header::unheld_cpus and Header::wakeable_cpus count.
bool counts_as_unheld(CpuState st) {
    return st != CpuState::Running;
}
bool counts_as_wakeable(CpuState st) {
    return st == CpuState::Free || st == CpuState::Sleeping || st == CpuState::Lent;
}
} // namespace

bool Placement::allows(const CpuSlot& cpu, int32_t cpu_index) const {
    if (!strict) return true;
    switch (kind) {
    case Kind::Any:
        return true;
    case Kind::Cpu:
        return cpu_index == index;
    case Kind::Numa:
        return cpu.numa == index;
    }
    return true;
}

RobustLock SharedScheduler::lock(WakeList& wakes) {
    return RobustLock(s_.header.lock, [&] { repair(wakes); });
}

// ---- processes -------------------------------------------------------

int32_t SharedScheduler::register_process(pid_t pid, uint64_t start_time, const std::string& name) {
    Header& h = s_.header;
    for (int32_t p = 0; p < kMaxProcs; ++p) {
        ProcSlot& slot = s_.procs[p];
        if (slot.state.load(rlx) != ProcState::Unused) continue;
        slot.pid = pid;
        slot.start_time = start_time;
        std::memset(slot.name, 0, sizeof slot.name);
        std::strncpy(slot.name, name.c_str(), sizeof slot.name - 1);
        slot.pool_head = kNone;
        slot.pool_size.store(0, rlx);
        slot.threads.store(0, rlx);
        slot.preemptible.store(0, rlx);
        slot.preemptions.store(0, rlx);
        slot.ready_total.store(0, rlx);
        slot.ready_any.store(0, rlx);
        for (auto& c : slot.ready_cpu)
            c.store(0, rlx);
        for (auto& n : slot.ready_numa)
            n.store(0, rlx);
        slot.cpu_time_ns.store(0, rlx);
        slot.handoffs.store(0, rlx);
        // Release: other processes that see Alive see the cleared counters.
        slot.state.store(ProcState::Alive, std::memory_order_release);
        h.alive[h.alive_count++] = p;
        return p;
    }
    return kNone;
}

void SharedScheduler::unregister_process(int32_t proc, WakeList& wakes) {
    Header& h = s_.header;
    release_cpus_of(proc);
    free_threads_of(proc);
    ProcSlot& slot = s_.procs[proc];
    slot.ready_total.store(0, rlx);
    slot.ready_any.store(0, rlx);
    slot.state.store(ProcState::Unused, std::memory_order_release);
    auto* end = h.alive + h.alive_count;
    auto* it = std::find(h.alive, end, proc);
    if (it != end) {
        std::move(it + 1, end, it);
        --h.alive_count;
    }
    distribute_free(wakes);
}

bool SharedScheduler::reap_dead(WakeList& wakes) {
    Header& h = s_.header;
    h.last_reap_ns.store(now_ns(), rlx);
    bool any = false;
    for (int i = h.alive_count - 1; i >= 0; --i) {
        int32_t p = h.alive[i];
        if (process_alive(s_.procs[p].pid, s_.procs[p].start_time)) continue;
        unregister_process(p, wakes);
        any = true;
    }
    return any;
}

void SharedScheduler::release_cpus_of(int32_t proc) {
    uint64_t now = now_ns();
    for (int c = 0; c < cpu_count(); ++c) {
        CpuSlot& cpu = s_.cpus[c];
        if (cpu.stint_proc == proc) close_stint(cpu, now);
        if (cpu.turn_proc.load(rlx) == proc) cpu.turn_proc.store(kNone, rlx);
        if (cpu.owner_proc.load(rlx) == proc) set_free(c);
    }
}

void SharedScheduler::free_threads_of(int32_t proc) {
    for (int32_t t = 0; t < kMaxThreads; ++t)
        if (s_.threads[t].proc == proc && s_.threads[t].state.load(rlx) != ThreadState::Unused)
            free_slot(t);
    s_.procs[proc].pool_head = kNone;
    s_.procs[proc].pool_size.store(0, rlx);
}

// Rebuilds everything a dead lock holder may have left half-updated: dead
// processes go first, then the lists and counts are derived again from the
// slots' states, which are each written in one store.
void SharedScheduler::repair(WakeList& wakes) {
    Header& h = s_.header;
    h.recoveries.fetch_add(1, rlx);
    h.alive_count = 0;
    for (int32_t p = 0; p < kMaxProcs; ++p)
        if (s_.procs[p].state.load(rlx) == ProcState::Alive) h.alive[h.alive_count++] = p;
    h.thread_free_head = kNone;
    for (auto& p : s_.procs) {
        p.pool_head = kNone;
        p.pool_size.store(0, rlx);
    }
    for (int32_t t = kMaxThreads - 1; t >= 0; --t) {
        ThreadSlot& th = s_.threads[t];
        ThreadState st = th.state.load(rlx);
        if (st == ThreadState::Unused) {
            th.next = h.thread_free_head;
            h.thread_free_head = t;
        } else if (st == ThreadState::Pool) {
            pool_push(t);
        }
    }
    int unheld = 0, wakeable = 0;
    for (int c = 0; c < cpu_count(); ++c) {
        CpuState st = s_.cpus[c].state.load(rlx);
        unheld += counts_as_unheld(st);
        wakeable += counts_as_wakeable(st);
    }
    h.unheld_cpus.store(unheld, std::memory_order_seq_cst);
    h.wakeable_cpus.store(wakeable, std::memory_order_seq_cst);
    reap_dead(wakes);
}

// ---- threads ---------------------------------------------------------

int32_t SharedScheduler::alloc_thread(int32_t proc, pid_t tid, const char* label, ThreadState state,
                                      bool keeps_affinity) {
    Header& h = s_.header;
    int32_t t = h.thread_free_head;
    if (t == kNone) return kNone;
    ThreadSlot& th = s_.threads[t];
    h.thread_free_head = th.next;
    th.next = kNone;
    th.proc = proc;
    th.tid = tid;
    th.grant.store(kNone, rlx);
    th.bound_cpu.store(kNone, rlx);
    th.keeps_affinity = keeps_affinity;
    th.serial.store(0, rlx);
    std::memset(th.label, 0, sizeof th.label);
    if (label) std::strncpy(th.label, label, sizeof th.label - 1);
    th.state.store(state, std::memory_order_release);
    s_.procs[proc].threads.fetch_add(1, rlx);
    return t;
}

void SharedScheduler::release_thread(int32_t t, WakeList& wakes) {
    ThreadSlot& th = s_.threads[t];
    if (th.state.load(rlx) == ThreadState::Unused) return;
    for (int32_t c = 0; c < cpu_count(); ++c) {
        CpuSlot& cpu = s_.cpus[c];
        if (cpu.owner_thread.load(rlx) != t || cpu.state.load(rlx) == CpuState::Free) continue;
        set_free(c);
        offer(c, wakes);
    }
    if (th.state.load(rlx) == ThreadState::Pool) pool_remove(t);
    free_slot(t);
}

void SharedScheduler::pool_remove(int32_t t) {
    ProcSlot& p = s_.procs[s_.threads[t].proc];
    for (int32_t* link = &p.pool_head; *link != kNone; link = &s_.threads[*link].next) {
        if (*link != t) continue;
        *link = s_.threads[t].next;
        s_.threads[t].next = kNone;
        p.pool_size.fetch_sub(1, rlx);
        return;
    }
}

void SharedScheduler::free_slot(int32_t t) {
    ThreadSlot& th = s_.threads[t];
    if (th.state.load(rlx) == ThreadState::Unused) return;
    if (th.proc >= 0) s_.procs[th.proc].threads.fetch_sub(1, rlx);
    th.state.store(ThreadState::Unused, rlx);
    th.grant.store(kNone, rlx);
    th.proc = kNone;
    th.tid = 0;
    th.next = s_.header.thread_free_head;
    s_.header.thread_free_head = t;
}

void SharedScheduler::pool_push(int32_t t) {
    assert(!runs_elsewhere(t, kNone));
    ThreadSlot& th = s_.threads[t];
    ProcSlot& p = s_.procs[th.proc];
    th.state.store(ThreadState::Pool, rlx);
    th.next = p.pool_head;
    p.pool_head = t;
    p.pool_size.fetch_add(1, rlx);
}

int32_t SharedScheduler::pool_pop(int32_t proc) {
    ProcSlot& p = s_.procs[proc];
    int32_t t = p.pool_head;
    if (t == kNone) return kNone;
    p.pool_head = s_.threads[t].next;
    s_.threads[t].next = kNone;
    p.pool_size.fetch_sub(1, rlx);
    return t;
}

// ---- CPUs ------------------------------------------------------------

bool SharedScheduler::has_work(int32_t proc, int32_t cpu) const {
    const ProcSlot& p = s_.procs[proc];
    if (p.ready_total.load(rlx) <= 0) return false;
    return p.ready_any.load(rlx) > 0 || p.ready_cpu[cpu].load(rlx) > 0 ||
           p.ready_numa[s_.cpus[cpu].numa].load(rlx) > 0;
}

template <class Stop>
bool SharedScheduler::any_alive_unlocked(Stop stop) const {
    const Header& h = s_.header;
    int n = std::min<int>(h.alive_count, kMaxProcs);
    for (int i = 0; i < n; ++i) {
        int32_t p = h.alive[i];
        if (p >= 0 && p < kMaxProcs && stop(p)) return true;
    }
    return false;
}

bool SharedScheduler::foreign_work(int32_t self, int32_t cpu) const {
    // A stale alive list only delays a switch to the next scheduling point,
    // which decide() then settles.
    return any_alive_unlocked([&](int32_t p) { return p != self && has_work(p, cpu); });
}

int32_t SharedScheduler::spare_cpus() const {
    // A snapshot of counters that move independently; a stale alive list or
    // count only makes the hint less exact.
    int64_t spare = s_.header.unheld_cpus.load(rlx);
    any_alive_unlocked([&](int32_t p) {
        spare -= std::max<int64_t>(0, s_.procs[p].ready_total.load(rlx));
        return false; // every process counts
    });
    return int32_t(std::max<int64_t>(spare, INT32_MIN)); // ready counts are 64-bit
}

bool SharedScheduler::turn_expired(const CpuSlot& cpu, int32_t self, uint64_t now) const {
    return cpu.turn_proc.load(rlx) != self || now - cpu.turn_start_ns.load(rlx) >= quantum_ns();
}

SharedScheduler::Next SharedScheduler::decide(int32_t c, int32_t self, bool self_ready,
                                              WakeList& wakes) {
    CpuSlot& cpu = s_.cpus[c];
    uint64_t now = now_ns();
    if (!turn_expired(cpu, self, now) && (self_ready || has_work(self, c))) return Next::Own;
    return next_turn(c, self, true, self_ready, now, wakes);
}

bool SharedScheduler::give_way(int32_t c, int32_t self, WakeList& wakes) {
    return next_turn(c, self, false, false, now_ns(), wakes) == Next::Other;
}

SharedScheduler::Next SharedScheduler::next_turn(int32_t c, int32_t self, bool self_may_keep,
                                                 bool self_ready, uint64_t now, WakeList& wakes) {
    Header& h = s_.header;
    CpuSlot& cpu = s_.cpus[c];
    // Round-robin: start after the process whose turn it was.
    int n = h.alive_count;
    int start = int(std::find(h.alive, h.alive + n, cpu.turn_proc.load(rlx)) - h.alive);
    for (int k = 1; k <= n; ++k) {
        int32_t p = h.alive[(start + k) % n];
        if (!(p == self && self_ready) && !has_work(p, c)) continue;
        if (p == self) {
            if (!self_may_keep) continue;
            cpu.turn_proc.store(self, rlx);
            cpu.turn_start_ns.store(now, rlx);
            return Next::Own;
        }
        if (grant_to_pool(c, p, wakes) == kNone) continue;
        return Next::Other;
    }
    return Next::None;
}

int32_t SharedScheduler::overdue_holder(int32_t c, int32_t waiter, uint64_t now) {
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
    if (now < since || now - since < quantum_ns() + after) return kNone;
    // One request per period, whoever asks: the holder needs a moment to
    // reach its handler, and repeated signals would only interrupt it again.
    uint64_t asked = cpu.preempt_asked_ns.load(rlx);
    if (now - asked < after) return kNone;
    if (!cpu.preempt_asked_ns.compare_exchange_strong(asked, now, rlx)) return kNone;
    return thread;
}

int32_t SharedScheduler::grant_to_pool(int32_t c, int32_t proc, WakeList& wakes) {
    int32_t t = pool_pop(proc);
    if (t == kNone) return kNone;
    CpuSlot& cpu = s_.cpus[c];
    if (cpu.turn_proc.load(rlx) != proc) {
        cpu.turn_proc.store(proc, rlx);
        cpu.turn_start_ns.store(now_ns(), rlx);
    }
    grant(c, t, wakes);
    return t;
}

void SharedScheduler::close_stint(CpuSlot& cpu, uint64_t now) {
    if (cpu.stint_proc == kNone) return;
    s_.procs[cpu.stint_proc].cpu_time_ns.fetch_add(now - cpu.stint_start_ns, rlx);
    cpu.stint_proc = kNone;
}

bool SharedScheduler::runs_elsewhere(int32_t t, int32_t c) const {
    for (int32_t other = 0; other < cpu_count(); ++other)
        if (other != c && s_.cpus[other].owner_thread.load(rlx) == t &&
            s_.cpus[other].state.load(rlx) == CpuState::Running)
            return true;
    return false;
}

void SharedScheduler::grant(int32_t c, int32_t t, WakeList& wakes) {
    assert(!runs_elsewhere(t, c));
    CpuSlot& cpu = s_.cpus[c];
    ThreadSlot& th = s_.threads[t];
    uint64_t now = now_ns();
    if (cpu.stint_proc != th.proc) {
        close_stint(cpu, now);
        cpu.stint_proc = th.proc;
        cpu.stint_start_ns = now;
    }
    cpu.owner_proc.store(th.proc, rlx);
    cpu.owner_thread.store(t, rlx);
    cpu.since_ns.store(now, rlx);
    set_state(c, CpuState::Running);
    s_.procs[th.proc].handoffs.fetch_add(1, rlx);
    th.state.store(ThreadState::Running, rlx);
    bind_thread(t, c);
    // Release pairs with the waiter's acquire of `grant` after it sees the
    // word change: the CPU slot writes above are visible to the new holder.
    th.grant.store(c, std::memory_order_release);
    th.word.fetch_add(1, std::memory_order_release);
    wakes.add(t);
}

void SharedScheduler::handoff_within_process(int32_t c, int32_t t, WakeList& wakes) {
    assert(!runs_elsewhere(t, c));
    CpuSlot& cpu = s_.cpus[c];
    ThreadSlot& th = s_.threads[t];
    cpu.owner_thread.store(t, rlx);
    cpu.since_ns.store(now_ns(), rlx);
    s_.procs[th.proc].handoffs.fetch_add(1, rlx);
    th.state.store(ThreadState::Running, rlx);
    bind_thread(t, c);
    th.grant.store(c, std::memory_order_release);
    th.word.fetch_add(1, std::memory_order_release);
    wakes.add(t);
}

void SharedScheduler::bind_thread(int32_t t, int32_t c) {
    ThreadSlot& th = s_.threads[t];
    // tid 0 (a worker not started yet) would name the caller itself.
    if (th.bound_cpu.load(rlx) == c || th.tid <= 0 || th.keeps_affinity) return;
    // Granters bind before they publish the grant: binding a waiting thread
    // is cheap, and the kernel then wakes it on the granted CPU. A thread
    // that binds itself after waking first runs on its previous CPU
    // (delaying that CPU's holder) and then migrates.
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(s_.cpus[c].system_id, &set);
    th.bound_cpu.store(sched_setaffinity(th.tid, sizeof set, &set) == 0 ? c : kNone, rlx);
}

void SharedScheduler::unbind_thread(int32_t t) {
    ThreadSlot& th = s_.threads[t];
    if (th.tid <= 0 || th.keeps_affinity) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int32_t c = 0; c < cpu_count(); ++c)
        CPU_SET(s_.cpus[c].system_id, &set);
    sched_setaffinity(th.tid, sizeof set, &set);
    th.bound_cpu.store(kNone, rlx);
}

void SharedScheduler::set_state(int32_t c, CpuState next) {
    CpuSlot& cpu = s_.cpus[c];
    const CpuState before = cpu.state.load(rlx);
    // seq_cst: the counts pair with the submitter's seq_cst publication of
    // its ready counters (Dekker). A CPU that becomes unheld or wakeable is
    // either seen by the submitter, or its holder's re-check after this call
    // (offer_released()) sees the work.
    if (int d = int(counts_as_unheld(next)) - int(counts_as_unheld(before)))
        s_.header.unheld_cpus.fetch_add(d, std::memory_order_seq_cst);
    if (int d = int(counts_as_wakeable(next)) - int(counts_as_wakeable(before)))
        s_.header.wakeable_cpus.fetch_add(d, std::memory_order_seq_cst);
    // Release: readers of the state (top, lock-free probes) see the owner.
    cpu.state.store(next, std::memory_order_release);
}

void SharedScheduler::set_holding(int32_t c, bool sleeping) {
    hold_without_work(c, sleeping ? CpuState::Sleeping : CpuState::Idle);
}

void SharedScheduler::set_lent(int32_t c) {
    hold_without_work(c, CpuState::Lent);
}

void SharedScheduler::hold_without_work(int32_t c, CpuState next) {
    CpuSlot& cpu = s_.cpus[c];
    if (cpu.state.load(rlx) == CpuState::Running) close_stint(cpu, now_ns());
    int32_t t = cpu.owner_thread.load(rlx);
    if (t != kNone) s_.threads[t].state.store(ThreadState::Holding, rlx);
    set_state(c, next);
}

int32_t SharedScheduler::offer_released(int32_t c, WakeList& wakes) {
    // Fence: the CPU's new state is counted (unheld_cpus, wakeable_cpus in
    // set_state) before offer() reads the ready counters (Dekker with the
    // submitter's kick()). Work queued before that skipped its kick: it is
    // seen here.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return offer(c, wakes);
}

bool SharedScheduler::reclaim_lent(int32_t c, int32_t thread) {
    CpuSlot& cpu = s_.cpus[c];
    if (cpu.state.load(rlx) != CpuState::Lent || cpu.owner_thread.load(rlx) != thread) return false;
    ThreadSlot& th = s_.threads[thread];
    cpu.stint_proc = th.proc;
    cpu.stint_start_ns = now_ns();
    th.state.store(ThreadState::Running, rlx);
    set_state(c, CpuState::Running);
    return true;
}

int32_t SharedScheduler::keeping_holder(int32_t c, uint32_t& word) const {
    const CpuSlot& cpu = s_.cpus[c];
    if (cpu.state.load(rlx) != CpuState::Running) return kNone;
    const int32_t t = cpu.owner_thread.load(rlx);
    if (t == kNone) return kNone;
    word = s_.threads[t].serial.load(std::memory_order_acquire);
    return (word & 3u) == 1u ? t : kNone;
}

bool SharedScheduler::take_kept(int32_t c, int32_t t, uint32_t word) {
    CpuSlot& cpu = s_.cpus[c];
    if (cpu.state.load(rlx) != CpuState::Running || cpu.owner_thread.load(rlx) != t) return false;
    ThreadSlot& th = s_.threads[t];
    // The thread ends its period with a compare-exchange 1 -> 0 on the same
    // word: exactly one of the two succeeds. If we do, it waits for a CPU
    // at its coexec_block_exit(), which takes this lock after us.
    if (!th.serial.compare_exchange_strong(word, (word & ~3u) | 2u, std::memory_order_acq_rel,
                                           std::memory_order_relaxed))
        return false;
    th.state.store(ThreadState::Blocked, rlx);
    set_free(c);
    return true;
}

void SharedScheduler::set_free(int32_t c) {
    CpuSlot& cpu = s_.cpus[c];
    if (cpu.state.load(rlx) == CpuState::Running) close_stint(cpu, now_ns());
    cpu.owner_proc.store(kNone, rlx);
    cpu.owner_thread.store(kNone, rlx);
    cpu.since_ns.store(now_ns(), rlx);
    set_state(c, CpuState::Free);
}

void SharedScheduler::evict_holder(CpuSlot& cpu) {
    int32_t t = cpu.owner_thread.load(rlx);
    if (t == kNone) return;
    if (cpu.state.load(rlx) == CpuState::Lent) {
        // The lender is not waiting: it learns it at reclaim_lent(). Until
        // then it runs on any managed CPU rather than share this one.
        unbind_thread(t);
        s_.threads[t].state.store(ThreadState::Blocked, rlx);
        cpu.owner_thread.store(kNone, rlx);
        cpu.owner_proc.store(kNone, rlx);
        return;
    }
    // The holder spins on its word or sleeps on it. As a pool thread it just
    // waits for a grant, so a sleeping holder need not be woken; a spinning
    // one sees the word change and goes to sleep.
    pool_push(t);
    s_.threads[t].word.fetch_add(1, std::memory_order_release);
    cpu.owner_thread.store(kNone, rlx);
    cpu.owner_proc.store(kNone, rlx);
}

int32_t SharedScheduler::claim_unheld_cpu(int32_t proc, const Placement& where, WakeList& wakes) {
    int32_t own_holder = kNone, free_cpu = kNone, foreign_holder = kNone, lent_cpu = kNone;
    for (int32_t c = 0; c < cpu_count(); ++c) {
        CpuSlot& cpu = s_.cpus[c];
        CpuState st = cpu.state.load(rlx);
        if (st == CpuState::Running || !where.allows(cpu, c)) continue;
        bool preferred = !where.strict && where.kind == Placement::Kind::Cpu && where.index == c;
        if (st == CpuState::Free) {
            if (free_cpu == kNone || preferred) free_cpu = c;
        } else if (st == CpuState::Lent) {
            // Last choice: its lender may come back for it any moment.
            if (lent_cpu == kNone || preferred) lent_cpu = c;
        } else if (cpu.owner_proc.load(rlx) == proc) {
            if (own_holder == kNone || preferred) own_holder = c;
        } else if (foreign_holder == kNone || preferred) {
            foreign_holder = c;
        }
    }
    if (own_holder != kNone) {
        // Our own idle worker takes the work: one wake, no new thread.
        grant(own_holder, s_.cpus[own_holder].owner_thread.load(rlx), wakes);
        return own_holder;
    }
    int32_t c = free_cpu != kNone ? free_cpu : foreign_holder != kNone ? foreign_holder : lent_cpu;
    if (c == kNone || s_.procs[proc].pool_size.load(rlx) == 0) return kNone;
    evict_holder(s_.cpus[c]);
    grant_to_pool(c, proc, wakes);
    return c;
}

int32_t SharedScheduler::offer(int32_t c, WakeList& wakes) {
    const Header& h = s_.header;
    CpuSlot& cpu = s_.cpus[c];
    int n = h.alive_count;
    int start = int(std::find(h.alive, h.alive + n, cpu.turn_proc.load(rlx)) - h.alive);
    for (int k = 1; k <= n; ++k) {
        int32_t p = h.alive[(start + k) % n];
        if (!has_work(p, c)) continue;
        int32_t holder = cpu.owner_thread.load(rlx);
        // An idle holder of p's takes p's work itself; a lender does not look.
        if (holder != kNone && cpu.owner_proc.load(rlx) == p &&
            cpu.state.load(rlx) != CpuState::Lent) {
            grant(c, holder, wakes);
            return holder;
        }
        if (s_.procs[p].pool_size.load(rlx) == 0) continue;
        evict_holder(cpu);
        return grant_to_pool(c, p, wakes);
    }
    return kNone;
}

int32_t SharedScheduler::find_unheld_cpu(int32_t proc, const Placement& where,
                                         int32_t prefer) const {
    auto taken = [&](int32_t c) {
        CpuState st = s_.cpus[c].state.load(rlx);
        return st == CpuState::Running || st == CpuState::Lent;
    };
    if (prefer >= 0 && prefer < cpu_count() && !taken(prefer) &&
        where.allows(s_.cpus[prefer], prefer))
        return prefer;
    int32_t best = kNone;
    int best_rank = 4;
    for (int32_t c = 0; c < cpu_count(); ++c) {
        const CpuSlot& cpu = s_.cpus[c];
        CpuState st = cpu.state.load(rlx);
        if (st == CpuState::Running || !where.allows(cpu, c)) continue;
        int rank = st == CpuState::Free               ? 0
                   : st == CpuState::Lent             ? 3
                   : cpu.owner_proc.load(rlx) == proc ? 1
                                                      : 2;
        if (!where.strict && where.kind == Placement::Kind::Cpu && where.index == c) rank = -1;
        if (rank < best_rank) {
            best = c;
            best_rank = rank;
        }
    }
    return best;
}

void SharedScheduler::give_unheld_cpu(int32_t c, int32_t thread, WakeList& wakes) {
    CpuSlot& cpu = s_.cpus[c];
    evict_holder(cpu);
    int32_t proc = s_.threads[thread].proc;
    if (cpu.turn_proc.load(rlx) != proc) {
        cpu.turn_proc.store(proc, rlx);
        cpu.turn_start_ns.store(now_ns(), rlx);
    }
    grant(c, thread, wakes);
}

void SharedScheduler::distribute_free(WakeList& wakes) {
    for (int32_t c = 0; c < cpu_count(); ++c)
        if (s_.cpus[c].state.load(rlx) == CpuState::Free) offer(c, wakes);
}

uint64_t SharedScheduler::cpu_time_ns(int32_t proc, uint64_t now) const {
    uint64_t total = s_.procs[proc].cpu_time_ns.load(rlx);
    for (int c = 0; c < cpu_count(); ++c) {
        const CpuSlot& cpu = s_.cpus[c];
        if (cpu.stint_proc == proc && now > cpu.stint_start_ns) total += now - cpu.stint_start_ns;
    }
    return total;
}

} // namespace coexec::scheduler
