// The process and thread tables (process_table.hpp): every write to a
// process slot or a thread slot but for a thread's CPU side (its grant and
// state as it gets, holds or loses a CPU: cpu_table.cpp), its binding
// (thread_binding.cpp), its keep word (cpu_table.cpp), a process's CPU time
// (cpu_time.cpp), ready counters (demand.hpp) and liveness (member_watch.cpp).
#include "scheduler/process_table.hpp"

#include "scheduler/cpu_table.hpp"
#include "scheduler/fixed_text.hpp"
#include "scheduler/receive_word.hpp"
#include "scheduler/thread_word.hpp"

#include "shm/clock.hpp"
#include "shm/futex.hpp"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstring>

namespace coexec::scheduler {

using namespace coexec::shm;

namespace {
constexpr auto rlx = std::memory_order_relaxed;
} // namespace

LabelClass classify_label(std::string_view label) {
    if (label == "openmp") return LabelClass::OpenMP;
    if (label == "tbb") return LabelClass::Tbb;
    if (label == "pocl") return LabelClass::Pocl;
    return LabelClass::Other;
}

const char* label_class_name(LabelClass c) {
    switch (c) {
    case LabelClass::OpenMP:
        return "openmp";
    case LabelClass::Tbb:
        return "tbb";
    case LabelClass::Pocl:
        return "pocl";
    default:
        return "other";
    }
}

void ProcessTable::format() {
    Header& h = s_.header;
    h.alive_count = 0;
    // Only the slots below the high-water marks were ever used (none in a
    // fresh segment). Those above are still all zero, that is Unused
    // (shm/segment.cpp), and are left untouched: their pages are never
    // faulted in until a process or a thread first takes them.
    const int32_t procs_used = std::clamp(h.procs_used, 0, kMaxProcs);
    const int32_t threads_used = std::clamp(h.threads_used, 0, kMaxThreads);
    for (int32_t p = 0; p < procs_used; ++p) {
        ProcSlot& slot = s_.procs[p];
        slot.state.store(ProcState::Unused, rlx);
        slot.pool_head = kNone;
        slot.pool_size.store(0, rlx);
        slot.running_cpus.store(0, rlx);
        slot.thread_head = kNone;
    }
    for (int32_t t = 0; t < threads_used; ++t) {
        ThreadSlot& th = s_.threads[t];
        th.state.store(ThreadState::Unused, rlx);
        th.grant.store(kNone, rlx);
        th.proc = kNone;
        th.next = kNone;
        th.proc_prev = th.proc_next = kNone;
    }
    h.procs_used = 0;
    h.threads_used = 0;
    h.thread_free_head = kNone;
}

// ---- processes -------------------------------------------------------

int32_t ProcessTable::register_process(pid_t pid, uint64_t start_time, const std::string& name,
                                       int32_t home_numa) {
    Header& h = s_.header;
    for (int32_t p = 0; p < kMaxProcs; ++p) {
        ProcSlot& slot = s_.procs[p];
        if (p < h.procs_used && slot.state.load(rlx) != ProcState::Unused) continue;
        if (p == h.procs_used) ++h.procs_used;
        slot.pid = pid;
        slot.start_time = start_time;
        copy_text(slot.name, name);
        slot.pool_head = kNone;
        slot.pool_size.store(0, rlx);
        slot.threads.store(0, rlx);
        slot.thread_head = kNone;
        slot.preemptible.store(0, rlx);
        slot.preemptions.store(0, rlx);
        slot.ready_total.store(0, rlx);
        slot.ready_any.store(0, rlx);
        std::atomic<int64_t>* ready_cpu = ready_cpu_row(s_, p);
        for (int32_t c = 0; c < h.max_cpus; ++c)
            ready_cpu[c].store(0, rlx);
        uint64_t* granted = proc_cpus_row(s_, p);
        for (size_t w = 0; w < proc_cpu_words(h.max_cpus); ++w)
            granted[w] = 0;
        for (auto& n : slot.ready_numa)
            n.store(0, rlx);
        slot.cpu_time_ns.store(0, rlx);
        for (auto& l : slot.label_time_ns)
            l.store(0, rlx);
        slot.handoffs.store(0, rlx);
        slot.alive_ns.store(now_ns(), rlx);
        slot.monitor_tid.store(0, rlx);
        slot.receiver.store(kNone, rlx);
        slot.departing.store(0, rlx);
        slot.home_numa = home_numa;
        // Release: other processes that see Alive see the cleared counters.
        slot.state.store(ProcState::Alive, std::memory_order_release);
        h.alive[h.alive_count++] = p;
        trace_.process_event(TraceKind::Join, p, slot.alive_ns.load(rlx), 0);
        return p;
    }
    return kNone;
}

bool ProcessTable::still_names(int32_t proc, pid_t pid, uint64_t start_time) const {
    if (proc < 0 || proc >= kMaxProcs) return false;
    const ProcSlot& slot = s_.procs[proc];
    return slot.state.load(rlx) == ProcState::Alive && slot.pid == pid &&
           slot.start_time == start_time;
}

void ProcessTable::unregister(int32_t proc) {
    Header& h = s_.header;
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
}

void ProcessTable::open_receiver(int32_t proc, int32_t t, int32_t cpu) {
    // Release: a granter that reads the open word (acquire) also sees the
    // thread slot as its process left it; the task is queued already.
    s_.threads[t].receive.store(ReceiveWord::open_for(cpu).bits(), std::memory_order_release);
    s_.procs[proc].receiver.store(t, rlx);
}

bool ProcessTable::close_receiver(int32_t t) {
    // acq_rel: either our exchange comes first (a granter's compare-exchange
    // then fails) or the granter's claim does and we see it.
    return ReceiveWord(
               s_.threads[t].receive.exchange(ReceiveWord::kClosed, std::memory_order_acq_rel))
        .claimed();
}

bool ProcessTable::receive_claimed(int32_t t) const {
    // Acquire pairs with the popper's exchange (close_receiver): a thread that
    // reads the word its popper closed runs after everything that popper
    // read of it and of its task (pop_warm's last CPU of the thread, the task's thread).
    return ReceiveWord(s_.threads[t].receive.load(std::memory_order_acquire)).claimed();
}

int32_t ProcessTable::claim_receiver(int32_t c, int32_t proc) {
    std::atomic<int32_t>& hint = s_.procs[proc].receiver;
    const int32_t t = hint.load(rlx);
    if (t < 0 || t >= s_.header.threads_used || s_.threads[t].proc != proc) return kNone;
    // Only while the thread's task is still the process's only ready item:
    // anything queued since (a preempted task, which must get its CPU back
    // first; work of a higher priority) is the process's pool thread's to
    // order. A relaxed read that misses an item queued a moment ago grants
    // out of order once, never twice: the word decides who grants.
    if (s_.procs[proc].ready_total.load(rlx) != 1) return kNone;
    ThreadSlot& th = s_.threads[t];
    uint32_t bits = th.receive.load(std::memory_order_acquire);
    if (!ReceiveWord(bits).open() || !ReceiveWord(bits).allows(c)) return kNone;
    // Against the popper's exchange (close_receiver): one of us wins.
    if (!th.receive.compare_exchange_strong(bits, ReceiveWord::kClaimed, std::memory_order_acq_rel,
                                            rlx))
        return kNone;
    int32_t expected = t;
    hint.compare_exchange_strong(expected, kNone, rlx); // used up
    return t;
}

void ProcessTable::free_threads_of(int32_t proc) {
    // Its own list: a process leaves in time proportional to its threads,
    // not to every thread slot ever used. free_slot() unlinks each.
    ProcSlot& p = s_.procs[proc];
    for (int32_t t = p.thread_head; t != kNone; t = p.thread_head)
        free_slot(t);
    p.pool_head = kNone;
    p.pool_size.store(0, rlx);
}

void ProcessTable::link_thread(int32_t t) {
    ThreadSlot& th = s_.threads[t];
    ProcSlot& p = s_.procs[th.proc];
    th.proc_prev = kNone;
    th.proc_next = p.thread_head;
    if (p.thread_head != kNone) s_.threads[p.thread_head].proc_prev = t;
    p.thread_head = t;
}

void ProcessTable::unlink_thread(int32_t t) {
    ThreadSlot& th = s_.threads[t];
    if (th.proc_next != kNone) s_.threads[th.proc_next].proc_prev = th.proc_prev;
    if (th.proc_prev != kNone)
        s_.threads[th.proc_prev].proc_next = th.proc_next;
    else
        s_.procs[th.proc].thread_head = th.proc_next;
    th.proc_prev = th.proc_next = kNone;
}

void ProcessTable::repair() {
    Header& h = s_.header;
    h.alive_count = 0;
    for (int32_t p = 0; p < h.procs_used; ++p) {
        ProcSlot& slot = s_.procs[p];
        if (slot.state.load(rlx) == ProcState::Alive) h.alive[h.alive_count++] = p;
        slot.pool_head = kNone;
        slot.pool_size.store(0, rlx);
        slot.threads.store(0, rlx);
        slot.thread_head = kNone;
    }
    h.thread_free_head = kNone;
    for (int32_t t = h.threads_used - 1; t >= 0; --t) {
        ThreadSlot& th = s_.threads[t];
        ThreadState st = th.state.load(rlx);
        if (st == ThreadState::Unused) {
            th.next = h.thread_free_head;
            h.thread_free_head = t;
            continue;
        }
        s_.procs[th.proc].threads.fetch_add(1, rlx);
        link_thread(t); // the lists, rebuilt: a dead locker may have cut one
        // A thread popped by a granter that died before the grant is
        // still Pool: it goes back.
        if (st == ThreadState::Pool) pool_push(t);
    }
}

// ---- threads ---------------------------------------------------------

int32_t ProcessTable::alloc_thread(int32_t proc, pid_t tid, const char* label, ThreadState state,
                                   bool keeps_affinity) {
    Header& h = s_.header;
    int32_t t = h.thread_free_head;
    if (t != kNone)
        h.thread_free_head = s_.threads[t].next;
    else if (h.threads_used < kMaxThreads)
        t = h.threads_used++;
    else
        return kNone;
    ThreadSlot& th = s_.threads[t];
    th.next = kNone;
    th.proc = proc;
    th.tid.store(tid, rlx);
    th.grant.store(kNone, rlx);
    th.bound_cpu.store(kNone, rlx);
    th.keeps_affinity = keeps_affinity;
    th.serial.store(0, rlx);
    th.receive.store(ReceiveWord::kClosed, rlx);
    std::memset(th.label, 0, sizeof th.label);
    if (label) std::strncpy(th.label, label, sizeof th.label - 1);
    th.label_class.store(classify_label(th.label), rlx);
    th.state.store(state, std::memory_order_release);
    s_.procs[proc].threads.fetch_add(1, rlx);
    link_thread(t);
    return t;
}

void ProcessTable::free_thread(int32_t t) {
    if (s_.threads[t].state.load(rlx) == ThreadState::Pool) pool_remove(t);
    free_slot(t);
}

void ProcessTable::pool_remove(int32_t t) {
    ProcSlot& p = s_.procs[s_.threads[t].proc];
    for (int32_t* link = &p.pool_head; *link != kNone; link = &s_.threads[*link].next) {
        if (*link != t) continue;
        *link = s_.threads[t].next;
        s_.threads[t].next = kNone;
        p.pool_size.fetch_sub(1, rlx);
        return;
    }
}

void ProcessTable::free_slot(int32_t t) {
    ThreadSlot& th = s_.threads[t];
    if (th.state.load(rlx) == ThreadState::Unused) return;
    if (th.proc >= 0) {
        s_.procs[th.proc].threads.fetch_sub(1, rlx);
        unlink_thread(t);
    }
    th.state.store(ThreadState::Unused, rlx);
    th.grant.store(kNone, rlx);
    th.receive.store(ReceiveWord::kClosed, rlx);
    th.proc = kNone;
    th.tid.store(0, rlx);
    th.next = s_.header.thread_free_head;
    s_.header.thread_free_head = t;
}

void ProcessTable::pool_push(int32_t t) {
    assert(!runs_elsewhere(s_, t, kNone));
    ThreadSlot& th = s_.threads[t];
    ProcSlot& p = s_.procs[th.proc];
    th.state.store(ThreadState::Pool, rlx);
    th.next = p.pool_head;
    p.pool_head = t;
    p.pool_size.fetch_add(1, rlx);
}

int32_t ProcessTable::take_pool_thread(int32_t proc) {
    const int32_t t = pool_pop(proc);
    if (t != kNone) s_.threads[t].state.store(ThreadState::Waiting, rlx);
    return t;
}

void ProcessTable::close_pool(int32_t proc) {
    while (take_pool_thread(proc) != kNone) {
    }
}

void ProcessTable::set_tid(int32_t t, pid_t tid) {
    // Relaxed: a reader that sees 0 leaves the thread to bind itself.
    s_.threads[t].tid.store(tid, rlx);
}

void ProcessTable::set_label(int32_t t, std::string_view label) {
    char buf[kLabelSize] = {};
    label.copy(buf, kLabelSize - 1);
    std::memcpy(s_.threads[t].label, buf, kLabelSize);
    s_.threads[t].label_class.store(classify_label(buf), rlx);
    trace_.label_event(t);
}

void ProcessTable::wake_thread(int32_t t) {
    if (ThreadWord::move(s_.threads[t].word)) futex_wake(s_.threads[t].word);
}

void ProcessTable::wait_word(int32_t t, uint32_t seen, uint64_t timeout_ns) {
    uint32_t expected;
    if (ThreadWord::announce_sleep(s_.threads[t].word, seen, expected))
        futex_wait(s_.threads[t].word, expected, timeout_ns);
}

void ProcessTable::set_preemptible(int32_t proc, bool on) {
    s_.procs[proc].preemptible.store(on ? 1 : 0, rlx);
}

void ProcessTable::count_preemption(int32_t proc) {
    s_.procs[proc].preemptions.fetch_add(1, rlx);
}

void ProcessTable::mark_departing(int32_t proc) {
    // Release: the next mapping to take the in-use lock exclusively (after
    // our unlock) and read the flag with acquire sees it.
    s_.procs[proc].departing.store(1, std::memory_order_release);
}

void ProcessTable::wake_monitor(int32_t proc) {
    s_.procs[proc].monitor_word.fetch_add(1, std::memory_order_release);
    futex_wake(s_.procs[proc].monitor_word);
}

void ProcessTable::wait_monitor(int32_t proc, uint64_t timeout_ns) {
    std::atomic<uint32_t>& word = s_.procs[proc].monitor_word;
    futex_wait(word, word.load(std::memory_order_acquire), timeout_ns);
}

int32_t ProcessTable::pool_pop(int32_t proc) {
    ProcSlot& p = s_.procs[proc];
    int32_t t = p.pool_head;
    if (t == kNone) return kNone;
    p.pool_head = s_.threads[t].next;
    s_.threads[t].next = kNone;
    p.pool_size.fetch_sub(1, rlx);
    return t;
}

} // namespace coexec::scheduler
