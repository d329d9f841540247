#include "invariants.hpp"

#include "scheduler/cpu_bits.hpp"
#include "shm/segment.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace coexec::scheduler {

using namespace coexec::shm;

namespace {

// How shm::is_unheld and shm::is_wakeable read in a message.
constexpr const char* kUnheldMeaning = "not Running";
constexpr const char* kWakeableMeaning = "Free, Sleeping or Lent";

// The caller reads a few dozen messages at most; past that, one summary.
constexpr size_t kMaxMessages = 64;

// The caller holds the lock or owns the segment: no ordering is needed. One
// change runs outside the lock: a thread hands its Running CPU to another
// thread of its process (handoff_within_process()), which moves only that
// CPU's owner_thread. check_threads() says what that means for the checks.
constexpr auto rlx = std::memory_order_relaxed;

// ---- messages ----------------------------------------------------------

std::string piece(const char* text) {
    return text;
}
std::string piece(const std::string& text) {
    return text;
}
template <class T>
requires std::is_integral_v<T> std::string piece(T value) {
    return std::to_string(value);
}

// "#<value>" for a state no enumerator names. Built by appending: gcc 12's
// -Wrestrict misreads "literal" + std::string in Release builds.
std::string unknown_state(uint32_t value) {
    std::string text = "#";
    text += std::to_string(value);
    return text;
}

std::string cpu_state_name(CpuState st) {
    switch (st) {
    case CpuState::Free:
        return "Free";
    case CpuState::Running:
        return "Running";
    case CpuState::Idle:
        return "Idle";
    case CpuState::Sleeping:
        return "Sleeping";
    case CpuState::Lent:
        return "Lent";
    }
    return unknown_state(uint32_t(st));
}

std::string thread_state_name(ThreadState st) {
    switch (st) {
    case ThreadState::Unused:
        return "Unused";
    case ThreadState::Pool:
        return "Pool";
    case ThreadState::Waiting:
        return "Waiting";
    case ThreadState::Running:
        return "Running";
    case ThreadState::Holding:
        return "Holding";
    case ThreadState::Blocked:
        return "Blocked";
    }
    return unknown_state(uint32_t(st));
}

// Enums with a fixed underlying type may hold any value of it: compare the
// value, never switch on trust.
bool valid(CpuState st) {
    return uint32_t(st) <= uint32_t(CpuState::Lent);
}
bool valid(ThreadState st) {
    return uint32_t(st) <= uint32_t(ThreadState::Blocked);
}
bool valid(ProcState st) {
    return uint32_t(st) <= uint32_t(ProcState::Alive);
}

bool held(CpuState st) {
    return st == CpuState::Running || st == CpuState::Idle || st == CpuState::Sleeping ||
           st == CpuState::Lent;
}

bool in_range(int64_t index, int64_t size) {
    return index >= 0 && index < size;
}

// The violations found so far, capped at kMaxMessages plus a count.
class Report {
  public:
    template <class... Parts>
    void add(const Parts&... parts) {
        if (messages_.size() >= kMaxMessages) {
            ++more_;
            return;
        }
        std::string text;
        (text += ... += piece(parts));
        messages_.push_back(std::move(text));
    }
    bool full() const { return messages_.size() >= kMaxMessages; }
    std::vector<std::string> finish() && {
        if (more_ > 0) messages_.push_back("... and " + std::to_string(more_) + " more violations");
        return std::move(messages_);
    }

  private:
    std::vector<std::string> messages_;
    uint64_t more_ = 0;
};

// ---- scratch -------------------------------------------------------------

// Which list a thread slot was found on, per slot: kOnNoList, kOnFreeList,
// or kOnPoolBase + the process whose pool list holds it.
constexpr uint16_t kOnNoList = 0;
constexpr uint16_t kOnFreeList = 1;
constexpr uint16_t kOnPoolBase = 2;
static_assert(kOnPoolBase + kMaxProcs <= UINT16_MAX);

// Derived facts, filled in by the passes below. 60.5 KiB: on the stack,
// so a sound segment costs no allocation.
struct Scratch {
    std::array<uint16_t, kMaxThreads> list{};        // see kOnNoList
    std::array<uint8_t, kMaxThreads> cpus_held{};    // saturates at 255
    std::array<uint8_t, kMaxThreads> on_proc_list{}; // on its process's thread list
    // Each CPU's holder and state as the CPU pass read them, so a message
    // names what was counted even if a holder moves on lock-free meanwhile.
    // Not zeroed: the CPU pass fills [0, cpu_count) before anything reads it.
    std::array<int32_t, kMaxCpus> holder;
    std::array<CpuState, kMaxCpus> state;
    std::array<int16_t, kMaxProcs> threads_in_use{};
    std::array<uint8_t, kMaxProcs> on_alive_list{};
    std::array<int16_t, kMaxProcs> running_cpus{}; // Running CPUs by owner_proc
};
static_assert(kMaxCpus <= INT16_MAX);
static_assert(kMaxThreads <= INT16_MAX);

std::string list_name(uint16_t tag) {
    if (tag == kOnFreeList) return "the free list";
    return "the pool list of process slot " + std::to_string(tag - kOnPoolBase);
}

// ---- passes ----------------------------------------------------------------

// The fixed fields, and the counts every later pass uses as bounds.
// Returns the CPU, NUMA and alive counts to use, clamped into range.
struct Bounds {
    int32_t cpus = 0;
    int32_t numa = 0; // 0: unknown, skip NUMA checks
    int32_t alive = 0;
    int32_t procs = 0;   // process slots ever used (Header::procs_used)
    int32_t threads = 0; // thread slots ever used (Header::threads_used)
};

Bounds check_header(const Segment& s, Report& r) {
    const Header& h = s.header;
    if (uint64_t magic = h.magic.load(rlx); magic != kMagic) r.add("header: bad magic ", magic);
    if (h.abi_version != kAbiVersion)
        r.add("header: ABI version ", h.abi_version, ", this coexec uses ", kAbiVersion);
    if (h.header_size != sizeof(Header))
        r.add("header: header_size ", h.header_size, ", expected ", sizeof(Header));
    // Set when the segment was created, and checked by every mapping
    // (shm/segment.cpp), with the per-CPU arrays' places.
    const bool sized = h.max_cpus >= 1 && h.max_cpus <= kMaxCpus;
    if (!sized) {
        r.add("header: max_cpus ", h.max_cpus, " is not in 1..", kMaxCpus);
        // Which of the two is wrong cannot be told: both are named.
        r.add("header: total_size ", h.total_size, ", expected the size of a layout for max_cpus ",
              h.max_cpus, ", which is out of range");
    }
    const bool fits = sized && h.total_size == segment_layout(h.max_cpus).total;
    if (sized && !fits)
        r.add("header: total_size ", h.total_size, ", expected ", segment_layout(h.max_cpus).total,
              " for max_cpus ", h.max_cpus);
    // Nothing in the per-CPU part is read unless its arrays are in place.
    const bool placed = fits && placed_by_layout(s);
    if (fits && !placed)
        r.add("header: the per-CPU arrays are not where max_cpus ", h.max_cpus, " puts them");
    const int32_t slots = placed ? h.max_cpus : 0;
    if (h.max_procs != kMaxProcs)
        r.add("header: max_procs ", h.max_procs, ", expected ", kMaxProcs);
    if (h.max_threads != kMaxThreads)
        r.add("header: max_threads ", h.max_threads, ", expected ", kMaxThreads);
    if (h.max_numa != kMaxNuma) r.add("header: max_numa ", h.max_numa, ", expected ", kMaxNuma);

    Bounds b;
    b.cpus = h.cpu_count;
    // A segment nobody joined yet may have no CPU table: its first member
    // lays it out (SharedScheduler::format) under the lock.
    const bool unformatted = b.cpus == 0 && h.alive_count == 0;
    if (!unformatted && (b.cpus <= 0 || b.cpus > slots)) {
        r.add("header: cpu_count ", b.cpus, " is not in 1..", slots);
        b.cpus = b.cpus <= 0 ? 0 : slots;
    }
    b.numa = h.numa_count;
    if (unformatted && b.numa == 0) {
        // nothing to check yet
    } else if (b.numa <= 0 || b.numa > kMaxNuma) {
        r.add("header: numa_count ", b.numa, " is not in 1..", kMaxNuma);
        b.numa = 0;
    }
    b.alive = h.alive_count;
    if (b.alive < 0 || b.alive > kMaxProcs) {
        r.add("header: alive_count ", b.alive, " is not in 0..", kMaxProcs);
        b.alive = b.alive < 0 ? 0 : kMaxProcs;
    }
    b.procs = h.procs_used;
    if (b.procs < 0 || b.procs > kMaxProcs) {
        r.add("header: procs_used ", b.procs, " is not in 0..", kMaxProcs);
        b.procs = b.procs < 0 ? 0 : kMaxProcs;
    }
    b.threads = h.threads_used;
    if (b.threads < 0 || b.threads > kMaxThreads) {
        r.add("header: threads_used ", b.threads, " is not in 0..", kMaxThreads);
        b.threads = b.threads < 0 ? 0 : kMaxThreads;
    }
    return b;
}

// The alive list is exactly the set of Alive process slots, each once.
void check_procs(const Segment& s, const Bounds& b, Scratch& k, Report& r) {
    for (int32_t i = 0; i < b.alive; ++i) {
        int32_t p = s.header.alive[i];
        if (!in_range(p, b.procs)) {
            r.add("alive list: entry ", i, " is ", p, ", not a used process slot");
            continue;
        }
        if (k.on_alive_list[size_t(p)]) {
            r.add("alive list: process slot ", p, " is listed twice");
            continue;
        }
        k.on_alive_list[size_t(p)] = 1;
        if (ProcState st = s.procs[p].state.load(rlx); st != ProcState::Alive)
            r.add("alive list: process slot ", p, " is listed but not Alive (state ", uint32_t(st),
                  ")");
    }
    for (int32_t p = 0; p < b.procs; ++p) {
        ProcState st = s.procs[p].state.load(rlx);
        if (!valid(st))
            r.add("process slot ", p, " has invalid state ", uint32_t(st));
        else if (st == ProcState::Alive && !k.on_alive_list[size_t(p)])
            r.add("process slot ", p, " is Alive but missing from the alive list");
        if (const int32_t home = s.procs[p].home_numa;
            st == ProcState::Alive && b.numa > 0 && home != kNone && !in_range(home, b.numa))
            r.add("process slot ", p, " has home_numa ", home, ", neither kNone nor a NUMA node");
    }
}

// Whether every CPU thread `t` was read holding is Running.
bool all_running(const Scratch& k, const Bounds& b, int32_t t) {
    for (int32_t c = 0; c < b.cpus; ++c)
        if (k.holder[size_t(c)] == t && k.state[size_t(c)] != CpuState::Running) return false;
    return true;
}

bool proc_alive(const Segment& s, const Bounds& b, int32_t p) {
    return in_range(p, b.procs) && s.procs[p].state.load(rlx) == ProcState::Alive;
}

// Each CPU's state, owner and indices; counts the CPUs each thread holds.
// "CPU <c> (<state>)", spelled out only when a message uses it: a sound
// segment's check allocates nothing.
struct CpuName {
    int32_t cpu;
    CpuState state;
};
std::string piece(const CpuName& n) {
    std::string text = "CPU ";
    text += std::to_string(n.cpu);
    text += " (";
    text += cpu_state_name(n.state);
    text += ")";
    return text;
}

// The header's unheld sets (free_cpus, idle_cpus, lent_cpus) against the
// CPUs' states: each CPU below cpu_count in the set of its state alone, and
// no slot past it in any.
void check_unheld_sets(const Segment& s, const Bounds& b, Report& r) {
    const Header& h = s.header;
    for (int32_t c = 0; c < b.cpus; ++c) {
        const CpuState st = s.cpus[c].state.load(rlx);
        const bool free = contains(h.free_cpus, c), idle = contains(h.idle_cpus, c),
                   lent = contains(h.lent_cpus, c);
        if (free != (st == CpuState::Free) ||
            idle != (st == CpuState::Idle || st == CpuState::Sleeping) ||
            lent != (st == CpuState::Lent))
            r.add("CPU ", c, " is ", cpu_state_name(st),
                  " but in the header's unheld sets as free ", int(free), ", idle ", int(idle),
                  ", lent ", int(lent));
    }
    // Each CPU in its own NUMA node's set, and in no other.
    const int32_t nodes = std::clamp(h.numa_count, 0, kMaxNuma);
    for (int32_t n = 0; n < nodes; ++n)
        if (int32_t c = find_in(s.numa_cpus[n], kMaxCpus,
                                [&](int32_t c) { return c >= b.cpus || s.cpus[c].numa != n; });
            c != kNone)
            r.add("header: the CPU set of NUMA node ", n, " holds CPU slot ", c,
                  c >= b.cpus ? ", past cpu_count" : ", which is on another node");
    for (int32_t c = 0; c < b.cpus; ++c)
        if (const int32_t n = s.cpus[c].numa; n >= 0 && n < nodes && !contains(s.numa_cpus[n], c))
            r.add("CPU ", c, " is on NUMA node ", n, " but not in that node's CPU set");
    for (const CpuBits* set : {&h.free_cpus, &h.idle_cpus, &h.lent_cpus})
        if (int32_t c = find_in(*set, kMaxCpus, [&](int32_t c) { return c >= b.cpus; }); c != kNone)
            r.add("header: an unheld set holds CPU slot ", c, ", past cpu_count ", b.cpus);
    // The parked set and its count change without the lock, a bit and then
    // the count: they may differ by the parks in flight. But a CPU stops
    // Running only under the lock, which clears its mark first
    // (CpuTable::park()): every marked CPU is Running.
    if (const int32_t n = h.parked_cpus.load(rlx); n < 0 || n > b.cpus)
        r.add("header: parked_cpus is ", n, ", not in 0..", b.cpus);
    find_in(h.parked, kMaxCpus, [&](int32_t c) {
        if (c >= b.cpus)
            r.add("header: the parked set holds CPU slot ", c, ", past cpu_count ", b.cpus);
        else if (const CpuState st = s.cpus[c].state.load(rlx); st != CpuState::Running)
            r.add("CPU ", c, " is in the header's parked set but ", cpu_state_name(st));
        return false; // every one
    });
}

// Every process a CPU names (owner_proc of a held CPU, turn_proc,
// stint_proc) has the CPU in its row of proc_cpus: a process that leaves
// visits only that row.
void check_granted_rows(const Segment& s, const Bounds& b, Report& r) {
    for (int32_t c = 0; c < b.cpus; ++c) {
        const CpuSlot& cpu = s.cpus[c];
        const int32_t owner =
            cpu.state.load(rlx) == CpuState::Free ? kNone : cpu.owner_proc.load(rlx);
        for (auto [p, as] :
             {std::pair{owner, "owner_proc"}, std::pair{cpu.turn_proc.load(rlx), "turn_proc"},
              std::pair{cpu.stint_proc, "stint_proc"}})
            if (in_range(p, b.procs) && !contains(proc_cpus_row(s, p), c))
                r.add("CPU ", c, " names process slot ", p, " as ", as,
                      " but is not in its row of proc_cpus");
    }
}

void check_cpus(const Segment& s, const Bounds& b, Scratch& k, Report& r) {
    check_unheld_sets(s, b, r);
    check_granted_rows(s, b, r);
    int32_t unheld = 0, wakeable = 0;
    for (int32_t c = 0; c < b.cpus; ++c) {
        const CpuSlot& cpu = s.cpus[c];
        const CpuState st = cpu.state.load(rlx);
        const int32_t proc = cpu.owner_proc.load(rlx);
        const int32_t thread = cpu.owner_thread.load(rlx);
        k.holder[size_t(c)] = kNone;
        const bool counted_running = st == CpuState::Running && in_range(proc, kMaxProcs);
        if (int32_t counted = counted_running ? proc : kNone; cpu.counted_proc != counted)
            r.add("CPU ", c, " is counted in the running_cpus of process slot ", cpu.counted_proc,
                  " but is ", cpu_state_name(st), " with owner_proc ", proc);
        if (counted_running) ++k.running_cpus[size_t(proc)];
        unheld += is_unheld(st);
        wakeable += is_wakeable(st);
        if (!valid(st)) r.add("CPU ", c, " has invalid state ", uint32_t(st));
        if (b.numa > 0 && !in_range(cpu.numa, b.numa))
            r.add("CPU ", c, " is on NUMA node ", cpu.numa, ", not in 0..", b.numa - 1);
        if (int32_t t = cpu.turn_proc.load(rlx); t != kNone && !in_range(t, kMaxProcs))
            r.add("CPU ", c, " has turn_proc ", t, ", neither kNone nor a process slot");
        if (cpu.stint_proc != kNone && !in_range(cpu.stint_proc, kMaxProcs))
            r.add("CPU ", c, " has stint_proc ", cpu.stint_proc,
                  ", neither kNone nor a process slot");
        if (st == CpuState::Free) {
            if (thread != kNone || proc != kNone)
                r.add("CPU ", c, " is Free but names owner_thread ", thread, " and owner_proc ",
                      proc);
            continue;
        }
        if (!held(st)) continue;
        const CpuName what{c, st};
        if (!in_range(proc, b.procs))
            r.add(what, " has owner_proc ", proc, ", not a used process slot");
        else if (!proc_alive(s, b, proc))
            r.add(what, " is held by process slot ", proc, ", which is not Alive");
        if (!in_range(thread, b.threads)) {
            r.add(what, " has owner_thread ", thread, ", not a used thread slot");
            continue;
        }
        if (k.cpus_held[size_t(thread)] < UINT8_MAX) ++k.cpus_held[size_t(thread)];
        k.holder[size_t(c)] = thread;
        k.state[size_t(c)] = st;
        const ThreadSlot& th = s.threads[thread];
        const ThreadState ts = th.state.load(rlx);
        if (ts == ThreadState::Unused)
            r.add(what, " is held by thread slot ", thread, ", which is freed (Unused)");
        else if (ts == ThreadState::Pool)
            r.add(what, " is held by thread slot ", thread, ", which is in state Pool");
        if (th.proc != proc)
            r.add(what, " has owner_proc ", proc, " but its holder, thread slot ", thread,
                  ", belongs to process slot ", th.proc);
    }
    const Header& h = s.header;
    if (int32_t n = h.unheld_cpus.load(rlx); n != unheld)
        r.add("header: unheld_cpus is ", n, " but ", unheld, " CPUs are ", kUnheldMeaning);
    if (int32_t n = h.wakeable_cpus.load(rlx); n != wakeable)
        r.add("header: wakeable_cpus is ", n, " but ", wakeable, " CPUs are ", kWakeableMeaning);
    for (int32_t p = 0; p < b.procs; ++p)
        if (int32_t n = s.procs[p].running_cpus.load(rlx); n != k.running_cpus[size_t(p)])
            r.add("process slot ", p, ": running_cpus is ", n, " but it owns ",
                  k.running_cpus[size_t(p)], " Running CPUs");
}

// Walks one list through ThreadSlot::next, tagging its slots with `tag`;
// returns its length. Stops at the first bad link: out of range, or a slot
// already tagged (a cycle, or a slot on two lists), so at most kMaxThreads
// steps are taken over all walks together.
int32_t walk(const Segment& s, const Bounds& b, int32_t head, uint16_t tag, Scratch& k, Report& r) {
    int32_t length = 0;
    for (int32_t t = head; t != kNone; t = s.threads[t].next) {
        if (!in_range(t, b.threads)) {
            r.add(list_name(tag), " links to ", t, ", not a used thread slot");
            break;
        }
        uint16_t& seen = k.list[size_t(t)];
        if (seen == tag) {
            r.add(list_name(tag), " has a cycle: it comes back to thread slot ", t);
            break;
        }
        if (seen != kOnNoList) {
            r.add("thread slot ", t, " is on both ", list_name(seen), " and ", list_name(tag));
            break;
        }
        seen = tag;
        ++length;
        const ThreadSlot& th = s.threads[t];
        const ThreadState st = th.state.load(rlx);
        if (tag == kOnFreeList) {
            if (st != ThreadState::Unused)
                r.add("the free list holds thread slot ", t, ", which is in use (state ",
                      thread_state_name(st), ")");
            continue;
        }
        const int32_t p = tag - kOnPoolBase;
        if (st != ThreadState::Pool)
            r.add(list_name(tag), " holds thread slot ", t, " in state ", thread_state_name(st),
                  ", not Pool");
        if (th.proc != p)
            r.add(list_name(tag), " holds thread slot ", t, " of process slot ", th.proc);
    }
    return length;
}

// The free list and every pool list: well formed, acyclic, disjoint, and
// pool_size in step.
void check_lists(const Segment& s, const Bounds& b, Scratch& k, Report& r) {
    walk(s, b, s.header.thread_free_head, kOnFreeList, k, r);
    for (int32_t p = 0; p < b.procs; ++p) {
        const ProcSlot& proc = s.procs[p];
        const int32_t length = walk(s, b, proc.pool_head, uint16_t(kOnPoolBase + p), k, r);
        if (int32_t size = proc.pool_size.load(rlx); size != length)
            r.add("process slot ", p, " has pool_size ", size, " but its pool list holds ", length,
                  " threads");
    }
}

// Every thread slot: its state, process, list membership, grant and CPUs.
void check_threads(const Segment& s, const Bounds& b, Scratch& k, Report& r) {
    for (int32_t t = 0; t < b.threads; ++t) {
        const ThreadSlot& th = s.threads[t];
        const ThreadState st = th.state.load(rlx);
        const uint16_t list = k.list[size_t(t)];
        if (int32_t g = th.grant.load(rlx); g != kNone && !in_range(g, b.cpus))
            r.add("thread slot ", t, " has grant ", g, ", neither kNone nor a CPU");
        if (int32_t c = th.bound_cpu.load(rlx); c != kNone && !in_range(c, b.cpus))
            r.add("thread slot ", t, " has bound_cpu ", c, ", neither kNone nor a CPU");
        if (!valid(st)) {
            r.add("thread slot ", t, " has invalid state ", uint32_t(st));
            continue;
        }
        if (st == ThreadState::Unused) {
            if (list != kOnFreeList)
                r.add("thread slot ", t, " is Unused but not on the free list");
            continue;
        }
        if (!in_range(th.proc, b.procs)) {
            r.add("thread slot ", t, " (", thread_state_name(st), ") has proc ", th.proc,
                  ", not a used process slot");
            continue;
        }
        ++k.threads_in_use[size_t(th.proc)];
        if (!proc_alive(s, b, th.proc))
            r.add("thread slot ", t, " (", thread_state_name(st), ") belongs to process slot ",
                  th.proc, ", which is not Alive");
        if (st == ThreadState::Pool && list != kOnPoolBase + th.proc)
            r.add("thread slot ", t,
                  " is in state Pool but not on the pool list of its process "
                  "slot ",
                  th.proc);
        // Owners of Running CPUs move outside the lock, so the CPUs are read
        // at different moments: a thread that handed CPU 0 away and was then
        // handed CPU 1 may be read as the owner of both. Every other state is
        // written under the lock, and a thread holds an Idle, Sleeping or
        // Lent CPU only after it left any Running one under the lock: a
        // second CPU that is not Running is a real double hold.
        if (uint8_t n = k.cpus_held[size_t(t)]; n > 1 && !all_running(k, b, t)) {
            std::string which; // named only while the report has room
            for (int32_t c = 0; c < b.cpus && !r.full(); ++c)
                if (k.holder[size_t(c)] == t)
                    which.append(which.empty() ? "" : ", ")
                        .append(std::to_string(c))
                        .append(" ")
                        .append(cpu_state_name(k.state[size_t(c)]));
            r.add("thread slot ", t, " holds ", n, " CPUs (", which, "); it is ",
                  thread_state_name(st), " with grant ", th.grant.load(rlx));
        }
    }
    for (int32_t p = 0; p < b.procs; ++p)
        if (int32_t n = s.procs[p].threads.load(rlx); n != k.threads_in_use[size_t(p)])
            r.add("process slot ", p, " counts ", n, " threads but ", k.threads_in_use[size_t(p)],
                  " thread slots in use belong to it");
}

// Each process's list of threads (ProcSlot::thread_head, linked both ways
// through proc_next and proc_prev): it holds exactly the thread slots in
// use that belong to the process. After check_threads(), whose counts it
// compares with. Each slot is visited at most once over all the lists.
void check_thread_lists(const Segment& s, const Bounds& b, Scratch& k, Report& r) {
    for (int32_t p = 0; p < b.procs; ++p) {
        int32_t length = 0, prev = kNone;
        for (int32_t t = s.procs[p].thread_head; t != kNone; prev = t, t = s.threads[t].proc_next) {
            if (!in_range(t, b.threads)) {
                r.add("the thread list of process slot ", p, " links to ", t,
                      ", not a used thread slot");
                break;
            }
            if (k.on_proc_list[size_t(t)]) {
                r.add("thread slot ", t, " is on the thread list of process slot ", p,
                      " twice, or on another's too");
                break;
            }
            k.on_proc_list[size_t(t)] = 1;
            ++length;
            const ThreadSlot& th = s.threads[t];
            if (th.state.load(rlx) == ThreadState::Unused || th.proc != p)
                r.add("the thread list of process slot ", p, " holds thread slot ", t, " (",
                      thread_state_name(th.state.load(rlx)), ", of process slot ", th.proc, ")");
            if (th.proc_prev != prev)
                r.add("thread slot ", t, " has proc_prev ", th.proc_prev, " but follows ", prev,
                      " on the thread list of process slot ", p);
        }
        if (length != k.threads_in_use[size_t(p)])
            r.add("the thread list of process slot ", p, " holds ", length, " threads, but ",
                  k.threads_in_use[size_t(p)], " thread slots in use belong to it");
    }
}

} // namespace

std::vector<std::string> check_invariants(const Segment& segment) {
    Report report;
    Scratch scratch;
    const Bounds bounds = check_header(segment, report);
    check_procs(segment, bounds, scratch, report);
    check_cpus(segment, bounds, scratch, report);
    check_lists(segment, bounds, scratch, report);
    check_threads(segment, bounds, scratch, report);
    check_thread_lists(segment, bounds, scratch, report);
    return std::move(report).finish();
}

} // namespace coexec::scheduler
