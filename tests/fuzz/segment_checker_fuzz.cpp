// libFuzzer target: the invariant checker behind `coexec check`.
//
// Input: see segment_edits.hpp. With the 'E' tag, each edit damages one
// field of a sound segment (menu below: the fields the checker reads), and
// the checker must name the damage:
//   - an edit that writes the value the field has leaves the segment
//     sound: the checker reports nothing;
//   - any other edit, applied alone to the sound segment, must be reported
//     by a violation that names it (the slot and field, or the list or
//     counter it breaks: expected() below says which sentence). Applied
//     alone, a value the checker has no reason to refuse (an in-range
//     grant, a turn_proc that names a process) is replaced by one the field
//     may never hold (an index out of range, a state outside its enum, a
//     negative count); a field it does not read in that slot (the next of
//     a thread on no list, the proc of a freed slot) is written back;
//   - all edits at once, each with its own value (damage that takes several
//     fields: a thread pushed on a pool list, a hand-off read halfway): at
//     most 65 sentences, none empty; nothing when no edit changed a byte;
//     header damage (checked first, never capped) still named.
// Any other first byte tiles the input over the whole segment:
// the checker must only report problems, never crash, read out of bounds
// or hang. COEXEC_FUZZ_VERBOSE=1 prints each edit and what was reported.
#include "fuzz_support.hpp"
#include "scheduler/invariants.hpp"
#include "segment_edits.hpp"

#include <algorithm>
#include <optional>

namespace {

using namespace coexec;
using namespace coexec::fuzz;
using shm::CpuState;
using shm::kNone;
using shm::ThreadState;

const Menu kMenu = {{
    {Field::Magic, Field::AbiVersion, Field::HeaderSize, Field::TotalSize, Field::MaxCpus,
     Field::MaxProcs, Field::MaxThreads, Field::MaxNuma, Field::CpuCount, Field::NumaCount,
     Field::ThreadsUsed, Field::ProcsUsed, Field::ThreadFreeHead, Field::AliveCount,
     Field::AliveEntry, Field::UnheldCpus, Field::WakeableCpus},
    {Field::CpuState, Field::CpuNuma, Field::CpuOwnerProc, Field::CpuOwnerThread,
     Field::CpuTurnProc, Field::CpuStintProc, Field::CpuCountedProc},
    {Field::ProcState, Field::ProcPoolHead, Field::ProcPoolSize, Field::ProcThreads,
     Field::ProcRunningCpus},
    {Field::ThreadState, Field::ThreadGrant, Field::ThreadProc, Field::ThreadBoundCpu,
     Field::ThreadNext},
}};

// ---- what the sound segment holds ---------------------------------------

constexpr int kOnNoList = -2;
constexpr int kOnFreeList = -1; // else: the process slot of a pool list

struct Model {
    struct Thread {
        ThreadState state;
        int32_t proc;
        int list = kOnNoList;
        int pos = -1;        // position on its list
        int32_t cpu = kNone; // the CPU it holds
    };
    int32_t cpus, numa, procs, threads, alive_count;
    std::vector<Thread> thread;
    std::vector<int32_t> free_list;
    std::vector<std::vector<int32_t>> pools;
};

std::vector<int32_t> walk(const shm::Segment& s, int32_t head) {
    std::vector<int32_t> items;
    for (int32_t t = head; t != kNone; t = s.threads[t].next)
        items.push_back(t);
    return items;
}

const Model& model() {
    static const Model m = [] {
        const shm::Segment& s = sound_segment();
        if (auto found = scheduler::check_invariants(s); !found.empty())
            fail("the sound segment is not sound: " + found.front());
        const shm::Header& h = s.header;
        Model m;
        m.cpus = h.cpu_count;
        m.numa = h.numa_count;
        m.procs = h.procs_used;
        m.threads = h.threads_used;
        m.alive_count = h.alive_count;
        for (int32_t t = 0; t < m.threads; ++t)
            m.thread.push_back({s.threads[t].state.load(), s.threads[t].proc});
        auto tag = [&](const std::vector<int32_t>& items, int list) {
            for (size_t i = 0; i < items.size(); ++i) {
                m.thread[size_t(items[i])].list = list;
                m.thread[size_t(items[i])].pos = int(i);
            }
        };
        m.free_list = walk(s, h.thread_free_head);
        tag(m.free_list, kOnFreeList);
        for (int32_t p = 0; p < m.procs; ++p) {
            m.pools.push_back(walk(s, s.procs[p].pool_head));
            tag(m.pools.back(), p);
        }
        for (int32_t c = 0; c < m.cpus; ++c)
            if (s.cpus[c].state.load() != CpuState::Free)
                m.thread[size_t(s.cpus[c].owner_thread.load())].cpu = c;
        return m;
    }();
    return m;
}

// ---- what the checker must say --------------------------------------------

// Alternatives: a violation must contain every piece of one of them.
using Needle = std::vector<std::vector<std::string>>;

std::string str(int64_t v) {
    return std::to_string(v);
}

// The checker's names (scheduler/invariants.cpp).
std::string cpu_state_name(CpuState st) {
    static constexpr const char* kNames[] = {"Free", "Running", "Idle", "Sleeping", "Lent"};
    return uint32_t(st) < 5 ? kNames[uint32_t(st)] : "#" + str(uint32_t(st));
}
std::string thread_state_name(ThreadState st) {
    static constexpr const char* kNames[] = {"Unused",  "Pool",    "Waiting",
                                             "Running", "Holding", "Blocked"};
    return uint32_t(st) < 6 ? kNames[uint32_t(st)] : "#" + str(uint32_t(st));
}
std::string list_name(int list) {
    return list == kOnFreeList ? "the free list" : "the pool list of process slot " + str(list);
}

bool held(CpuState st) {
    return st != CpuState::Free && uint32_t(st) <= uint32_t(CpuState::Lent);
}

// The link after position `pos` of `list` (-1: its head) set to `v`.
Needle list_link(const Model& m, int list, int pos, int64_t v) {
    const std::vector<int32_t>& items = list == kOnFreeList ? m.free_list : m.pools[size_t(list)];
    const std::string name = list_name(list);
    // The threads from `first` on are no longer on the list.
    auto cut = [&](int32_t first) -> Needle {
        if (list == kOnFreeList)
            return {{"thread slot " + str(first) + " is Unused but not on the free list"}};
        return {{"thread slot " + str(first) + " is in state Pool but not on the pool list"}};
    };
    if (v == kNone) return cut(items[size_t(pos + 1)]);
    if (v < 0 || v >= m.threads)
        return {{name + " links to " + str(v) + ", not a used thread slot"}};
    const Model::Thread& to = m.thread[size_t(v)];
    if (to.list == list) {
        if (to.pos <= pos) return {{name + " has a cycle: it comes back to thread slot " + str(v)}};
        return cut(items[size_t(pos + 1)]);
    }
    if (to.list != kOnNoList) return {{"thread slot " + str(v) + " is on both "}};
    return {{name + " holds thread slot " + str(v)}};
}

// What the checker must report once field `f` of `slot` holds `value`
// (not its sound value); nullopt when the checker accepts that value.
std::optional<Needle> expected(Field f, int32_t slot, uint64_t value) {
    const Model& m = model();
    const shm::Segment& s = sound_segment();
    const int64_t v = int64_t(value);
    const std::string shown_v = shown(f, value);
    const auto out_of = [&](int64_t lo, int64_t hi) { return v < lo || v > hi; };
    const std::string cpu = "CPU " + str(slot);
    const std::string proc = "process slot " + str(slot);
    const std::string thread = "thread slot " + str(slot);
    switch (f) {
    case Field::Magic:
        return Needle{{"header: bad magic " + shown_v}};
    case Field::AbiVersion:
        return Needle{{"header: ABI version " + shown_v}};
    case Field::MaxCpus:
        // Out of range, or in range and then not what total_size lays out.
        return Needle{{"header: max_cpus " + shown_v + " is not in"},
                      {"header: total_size ", " for max_cpus " + shown_v}};
    case Field::HeaderSize:
    case Field::TotalSize:
    case Field::MaxProcs:
    case Field::MaxThreads:
    case Field::MaxNuma:
        return Needle{
            {"header: " + std::string(field_name(f).name) + " " + shown_v + ", expected"}};
    case Field::CpuCount:
        if (out_of(1, s.header.max_cpus))
            return Needle{{"header: cpu_count " + shown_v + " is not in"}};
        return std::nullopt;
    case Field::NumaCount:
        if (out_of(1, shm::kMaxNuma))
            return Needle{{"header: numa_count " + shown_v + " is not in"}};
        return std::nullopt;
    case Field::ProcsUsed:
        if (out_of(0, shm::kMaxProcs))
            return Needle{{"header: procs_used " + shown_v + " is not in"}};
        return std::nullopt;
    case Field::ThreadsUsed:
        if (out_of(0, shm::kMaxThreads))
            return Needle{{"header: threads_used " + shown_v + " is not in"}};
        // Slots above the mark are all zero: Unused, and on no list.
        if (v > m.threads)
            return Needle{
                {"thread slot " + str(m.threads) + " is Unused but not on the free list"}};
        return std::nullopt;
    case Field::ThreadFreeHead:
        return list_link(m, kOnFreeList, -1, v);
    case Field::AliveCount: {
        if (out_of(0, shm::kMaxProcs))
            return Needle{{"header: alive_count " + shown_v + " is not in"}};
        if (v < m.alive_count)
            return Needle{{"process slot " + str(s.header.alive[v]) +
                           " is Alive but missing from the alive list"}};
        // The first entry past the old count, left from an earlier list.
        const int32_t e = s.header.alive[m.alive_count];
        if (e < 0 || e >= m.procs)
            return Needle{{"alive list: entry " + str(m.alive_count) + " is " + str(e)}};
        if (std::count(s.header.alive, s.header.alive + m.alive_count, e))
            return Needle{{"alive list: process slot " + str(e) + " is listed twice"}};
        return Needle{{"alive list: process slot " + str(e) + " is listed but not Alive"}};
    }
    case Field::AliveEntry:
        if (v < 0 || v >= m.procs)
            return Needle{{"alive list: entry " + str(slot) + " is " + shown_v + ", not a used"}};
        if (std::count(s.header.alive, s.header.alive + m.alive_count, int32_t(v)))
            return Needle{{"alive list: process slot " + shown_v + " is listed twice"}};
        return Needle{{"alive list: process slot " + shown_v + " is listed but not Alive"}};
    case Field::UnheldCpus:
    case Field::WakeableCpus:
        return Needle{{"header: " + std::string(field_name(f).name) + " is " + shown_v + " but"}};

    case Field::CpuState: {
        const auto before = s.cpus[slot].state.load();
        const auto after = CpuState(uint32_t(v));
        if (uint32_t(after) > uint32_t(CpuState::Lent))
            return Needle{{cpu + " has invalid state " + shown_v}};
        if (!held(after)) return Needle{{cpu + " is Free but names owner_thread"}};
        if (!held(before))
            return Needle{
                {cpu + " (" + cpu_state_name(after) + ") has owner_proc -1, not a used process"}};
        if ((before == CpuState::Running) != (after == CpuState::Running))
            return Needle{{cpu + " is counted in the running_cpus"}};
        if (shm::is_wakeable(before) != shm::is_wakeable(after))
            return Needle{{"header: wakeable_cpus is"}};
        return std::nullopt; // Sleeping and Lent count alike
    }
    case Field::CpuNuma:
        if (out_of(0, m.numa - 1))
            return Needle{{cpu + " is on NUMA node " + shown_v + ", not in"}};
        return std::nullopt;
    case Field::CpuTurnProc:
    case Field::CpuStintProc:
        if (v != kNone && out_of(0, shm::kMaxProcs - 1))
            return Needle{{cpu + " has " + field_name(f).name + " " + shown_v + ", neither"}};
        return std::nullopt;
    case Field::CpuCountedProc:
        return Needle{{cpu + " is counted in the running_cpus of process slot " + shown_v + " "}};
    case Field::CpuOwnerProc:
    case Field::CpuOwnerThread: {
        const shm::CpuSlot& c = s.cpus[slot];
        const CpuState st = c.state.load();
        if (!held(st))
            return Needle{{cpu + " is Free but names owner_thread",
                           std::string(field_name(f).name) + " " + shown_v}};
        const std::string what = cpu + " (" + cpu_state_name(st) + ")";
        if (f == Field::CpuOwnerProc) {
            if (out_of(0, m.procs - 1))
                return Needle{{what + " has owner_proc " + shown_v + ", not a used process slot"}};
            return Needle{{what + " has owner_proc " + shown_v + " but its holder"}};
        }
        if (out_of(0, m.threads - 1))
            return Needle{{what + " has owner_thread " + shown_v + ", not a used thread slot"}};
        const Model::Thread& to = m.thread[size_t(v)];
        const std::string holder = "thread slot " + shown_v;
        if (to.state == ThreadState::Unused)
            return Needle{{what + " is held by " + holder + ", which is freed (Unused)"}};
        if (to.state == ThreadState::Pool)
            return Needle{{what + " is held by " + holder + ", which is in state Pool"}};
        if (to.proc != c.owner_proc.load())
            return Needle{{what + " has owner_proc", "but its holder, " + holder + ", belongs to"}};
        // A thread read on two Running CPUs may be in a lock-free hand-off.
        if (to.cpu != kNone &&
            (st != CpuState::Running || s.cpus[to.cpu].state.load() != CpuState::Running))
            return Needle{{holder + " holds 2 CPUs"}};
        return std::nullopt;
    }

    case Field::ProcState: {
        const auto before = s.procs[slot].state.load();
        if (uint32_t(v) > uint32_t(shm::ProcState::Alive))
            return Needle{{proc + " has invalid state " + shown_v}};
        if (before == shm::ProcState::Alive)
            return Needle{{"alive list: " + proc + " is listed but not Alive"}};
        return Needle{{proc + " is Alive but missing from the alive list"}};
    }
    case Field::ProcPoolHead:
        return list_link(m, slot, -1, v);
    case Field::ProcPoolSize:
        return Needle{{proc + " has pool_size " + shown_v + " but"}};
    case Field::ProcThreads:
        return Needle{{proc + " counts " + shown_v + " threads but"}};
    case Field::ProcRunningCpus:
        return Needle{{proc + ": running_cpus is " + shown_v + " but"}};

    case Field::ThreadState: {
        const Model::Thread& th = m.thread[size_t(slot)];
        const auto after = ThreadState(uint32_t(v));
        if (uint32_t(after) > uint32_t(ThreadState::Blocked))
            return Needle{{thread + " has invalid state " + shown_v}};
        if (th.list == kOnFreeList)
            return Needle{{"the free list holds " + thread + ", which is in use (state " +
                           thread_state_name(after) + ")"}};
        if (th.list != kOnNoList)
            return Needle{{list_name(th.list) + " holds " + thread + " in state " +
                           thread_state_name(after) + ", not Pool"}};
        if (th.cpu != kNone && (after == ThreadState::Unused || after == ThreadState::Pool))
            return Needle{{"CPU " + str(th.cpu) + " (" +
                           cpu_state_name(s.cpus[th.cpu].state.load()) + ") is held by " + thread +
                           (after == ThreadState::Unused ? ", which is freed (Unused)"
                                                         : ", which is in state Pool")}};
        if (after == ThreadState::Unused)
            return Needle{{thread + " is Unused but not on the free list"}};
        if (after == ThreadState::Pool)
            return Needle{{thread + " is in state Pool but not on the pool list"}};
        return std::nullopt; // Running, Waiting, Holding, Blocked: not cross-checked
    }
    case Field::ThreadGrant:
    case Field::ThreadBoundCpu:
        if (v != kNone && out_of(0, m.cpus - 1))
            return Needle{
                {thread + " has " + field_name(f).name + " " + shown_v + ", neither kNone nor"}};
        return std::nullopt;
    case Field::ThreadProc: {
        const Model::Thread& th = m.thread[size_t(slot)];
        if (th.state == ThreadState::Unused) return std::nullopt; // not read
        const std::string what = thread + " (" + thread_state_name(th.state) + ")";
        if (out_of(0, m.procs - 1))
            return Needle{{what + " has proc " + shown_v + ", not a used process slot"}};
        if (th.list >= 0)
            return Needle{
                {list_name(th.list) + " holds " + thread + " of process slot " + shown_v}};
        if (th.cpu != kNone)
            return Needle{{"CPU " + str(th.cpu),
                           "but its holder, " + thread + ", belongs to process slot " + shown_v}};
        if (s.procs[v].state.load() != shm::ProcState::Alive)
            return Needle{{what + " belongs to process slot " + shown_v + ", which is not Alive"}};
        return Needle{{"process slot " + str(th.proc) + " counts"}};
    }
    case Field::ThreadNext: {
        const Model::Thread& th = m.thread[size_t(slot)];
        if (th.list == kOnNoList) return std::nullopt; // not read
        return list_link(m, th.list, th.pos, v);
    }
    default:
        fail("expected(): a field outside the menu");
    }
}

// A value field `f` of `slot` may never hold, from `raw`; or its sound
// value when the checker does not read that field of that slot.
uint64_t known_invalid(Field f, int32_t slot, uint32_t raw) {
    const Model& m = model();
    const int64_t r = int64_t((raw >> 1) % 1000);
    const bool low = raw & 1;
    const uint64_t sound = read_field(sound_segment(), f, slot);
    auto beyond = [&](int64_t lo, int64_t hi) { return uint64_t(low ? lo - 1 - r : hi + 1 + r); };
    switch (f) {
    case Field::Magic:
    case Field::AbiVersion:
    case Field::HeaderSize:
    case Field::TotalSize:
    case Field::MaxCpus:
    case Field::MaxProcs:
    case Field::MaxThreads:
    case Field::MaxNuma:
        return sound + 1 + uint64_t(r);
    case Field::CpuCount:
        return beyond(1, sound_segment().header.max_cpus);
    case Field::NumaCount:
        return beyond(1, shm::kMaxNuma);
    case Field::ProcsUsed:
    case Field::AliveCount:
        return beyond(0, shm::kMaxProcs);
    case Field::ThreadsUsed:
        return beyond(0, shm::kMaxThreads);
    case Field::CpuState:
        return uint32_t(CpuState::Lent) + 1 + uint64_t(r);
    case Field::ProcState:
        return uint32_t(shm::ProcState::Alive) + 1 + uint64_t(r);
    case Field::ThreadState:
        return uint32_t(ThreadState::Blocked) + 1 + uint64_t(r);
    case Field::CpuNuma:
        return beyond(0, m.numa - 1);
    case Field::ThreadGrant:
    case Field::ThreadBoundCpu:
        return beyond(kNone, shm::kMaxCpus - 1);
    case Field::AliveEntry:
    case Field::CpuOwnerProc:
    case Field::CpuTurnProc:
    case Field::CpuStintProc:
    case Field::CpuCountedProc:
        return beyond(kNone, shm::kMaxProcs - 1);
    case Field::ThreadProc:
        if (m.thread[size_t(slot)].state == ThreadState::Unused) return sound;
        return beyond(kNone, shm::kMaxProcs - 1);
    case Field::ThreadNext:
        if (m.thread[size_t(slot)].list == kOnNoList) return sound;
        return beyond(kNone, shm::kMaxThreads - 1);
    case Field::CpuOwnerThread:
    case Field::ThreadFreeHead:
    case Field::ProcPoolHead:
        return beyond(kNone, shm::kMaxThreads - 1);
    case Field::UnheldCpus:
    case Field::WakeableCpus:
    case Field::ProcPoolSize:
    case Field::ProcThreads:
    case Field::ProcRunningCpus:
        return uint64_t(-1 - r);
    default:
        fail("known_invalid(): a field outside the menu");
    }
}

int32_t slots(Field f) {
    const Model& m = model();
    switch (table_of(f)) {
    case Table::Header:
        return f == Field::AliveEntry ? m.alive_count : 1;
    case Table::Cpu:
        return m.cpus;
    case Table::Proc:
        return m.procs;
    case Table::Thread:
        return m.threads;
    }
    return 1;
}

void set_value(Edit& e) {
    switch (e.mode) {
    case 0:
        e.value = read_field(sound_segment(), e.field, e.slot);
        return;
    case 1:
        e.value = uint64_t(int64_t(int32_t(e.raw)));
        return;
    case 2:
        e.value = uint64_t(int64_t(int8_t(uint8_t(e.raw))));
        return;
    default:
        e.value = known_invalid(e.field, e.slot, e.raw);
        return;
    }
}

// Edit `e` as it is applied alone: with its own value, unless the checker
// accepts that value in that field; then with one the field may never hold.
Edit alone(const Edit& e) {
    Edit a = e;
    if (e.value != read_field(sound_segment(), e.field, e.slot) &&
        !expected(e.field, e.slot, e.value))
        a.value = known_invalid(e.field, e.slot, e.raw);
    return a;
}

bool reports(const std::vector<std::string>& found, const Needle& needle) {
    for (const auto& pieces : needle)
        for (const auto& line : found)
            if (std::all_of(pieces.begin(), pieces.end(), [&](const std::string& piece) {
                    return line.find(piece) != std::string::npos;
                }))
                return true;
    return false;
}

std::string joined(const std::vector<std::string>& found) {
    std::string text;
    for (const auto& line : found)
        text += "\n  " + line;
    return text.empty() ? " nothing" : text;
}

std::string needle_text(const Needle& needle) {
    std::string text;
    for (const auto& pieces : needle) {
        text += text.empty() ? "" : " or ";
        for (size_t i = 0; i < pieces.size(); ++i)
            text += (i ? " ... " : "") + ("\"" + pieces[i] + "\"");
    }
    return text;
}

void check_well_formed(const std::vector<std::string>& found) {
    if (found.size() > 65) fail("more than 65 sentences");
    for (const auto& p : found)
        if (p.empty()) fail("an empty problem description");
}

// Header damage the header pass reports whatever else the segment holds:
// it runs first, and never reaches the cap.
bool header_always_named(Field f, uint64_t value) {
    const int64_t v = int64_t(value);
    switch (f) {
    case Field::Magic:
    case Field::AbiVersion:
    case Field::HeaderSize:
    case Field::TotalSize:
    case Field::MaxCpus:
    case Field::MaxProcs:
    case Field::MaxThreads:
    case Field::MaxNuma:
        return true;
    case Field::CpuCount: // 0 is a fresh segment's, if alive_count is 0 too
        return v < 0 || v > sound_segment().header.max_cpus;
    case Field::NumaCount:
        return v < 0 || v > shm::kMaxNuma;
    case Field::AliveCount:
    case Field::ProcsUsed:
        return v < 0 || v > shm::kMaxProcs;
    case Field::ThreadsUsed:
        return v < 0 || v > shm::kMaxThreads;
    default:
        return false;
    }
}

// The sound segment's slots, for COEXEC_FUZZ_VERBOSE.
void print_layout() {
    const Model& m = model();
    const shm::Segment& s = sound_segment();
    std::fprintf(stderr, "sound segment: %d CPUs, %d NUMA nodes, procs_used %d, threads_used %d\n",
                 m.cpus, m.numa, m.procs, m.threads);
    for (int32_t c = 0; c < m.cpus; ++c)
        std::fprintf(stderr, "  CPU %d %s owner_proc %d owner_thread %d\n", c,
                     cpu_state_name(s.cpus[c].state.load()).c_str(), s.cpus[c].owner_proc.load(),
                     s.cpus[c].owner_thread.load());
    for (int32_t p = 0; p < m.procs; ++p)
        std::fprintf(stderr, "  process slot %d %s %s, pool list of %zu\n", p, s.procs[p].name,
                     s.procs[p].state.load() == shm::ProcState::Alive ? "Alive" : "Unused",
                     m.pools[size_t(p)].size());
    for (int32_t t = 0; t < m.threads; ++t) {
        const Model::Thread& th = m.thread[size_t(t)];
        std::fprintf(stderr, "  thread slot %d %s proc %d list %d pos %d cpu %d next %d\n", t,
                     thread_state_name(th.state).c_str(), th.proc, th.list, th.pos, th.cpu,
                     s.threads[t].next);
    }
    std::fprintf(stderr, "  thread_free_head %d alive_count %d alive", s.header.thread_free_head,
                 m.alive_count);
    for (int32_t i = 0; i <= m.alive_count; ++i)
        std::fprintf(stderr, " %d", s.header.alive[i]);
    std::fprintf(stderr, "\n");
}

void fuzz_edits(const uint8_t* data, size_t size) {
    static const bool verbose = [] {
        if (!std::getenv("COEXEC_FUZZ_VERBOSE")) return false;
        print_layout();
        return true;
    }();
    shm::Segment& s = sound_segment();
    model(); // checks that it is sound
    const std::vector<Edit> edits = decode_edits(data, size, kMenu, slots, set_value);
    // Each edit alone.
    for (const Edit& decoded : edits) {
        const Edit e = alone(decoded);
        const uint64_t sound = read_field(s, e.field, e.slot);
        std::optional<Needle> needle;
        if (e.value != sound) {
            needle = expected(e.field, e.slot, e.value);
            if (!needle) fail("no expectation for " + describe(e));
        }
        std::vector<std::string> found;
        {
            Patcher patch(s);
            patch.apply(e);
            found = scheduler::check_invariants(s);
        }
        if (verbose)
            std::fprintf(stderr, "%s\n  expect: %s\n  found:%s\n", describe(e).c_str(),
                         needle ? needle_text(*needle).c_str() : "nothing", joined(found).c_str());
        check_well_formed(found);
        if (!needle && !found.empty())
            fail("the checker reports a segment with " + describe(e) +
                 " (the sound value):" + joined(found));
        if (needle && !reports(found, *needle))
            fail("the checker does not name " + describe(e) + ": expected " + needle_text(*needle) +
                 ", found:" + joined(found));
    }
    // All of them at once (where two edits write one field, the last one).
    std::vector<uint64_t> sound;
    for (const Edit& e : edits)
        sound.push_back(read_field(s, e.field, e.slot));
    Patcher patch(s);
    for (const Edit& e : edits)
        patch.apply(e);
    const std::vector<std::string> found = scheduler::check_invariants(s);
    if (verbose) std::fprintf(stderr, "all %zu edits:%s\n", edits.size(), joined(found).c_str());
    check_well_formed(found);
    bool changed = false;
    for (size_t i = 0; i < edits.size(); ++i) {
        const Edit& e = edits[i];
        const uint64_t now = read_field(s, e.field, e.slot);
        if (now == sound[i]) continue;
        changed = true;
        if (!header_always_named(e.field, now)) continue;
        const std::optional<Needle> needle = expected(e.field, e.slot, now);
        if (needle && !reports(found, *needle))
            fail("with every edit applied, the checker does not name " + describe(e) +
                 ": expected " + needle_text(*needle) + ", found:" + joined(found));
    }
    if (!changed && !found.empty())
        fail("the checker reports a segment whose edits changed nothing:" + joined(found));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size > 0 && data[0] == kEditsTag) {
        fuzz_edits(data, size);
        return 0;
    }
    const shm::Segment& segment = segment_from(data, size);
    std::vector<std::string> problems = scheduler::check_invariants(segment);
    check_well_formed(problems);
    return 0;
}
