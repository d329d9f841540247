// A sound segment, and the field edits the segment targets decode from
// their input to damage it one chosen field at a time.
//
// Input format (segment_checker and segment_reader):
//   byte 0 'E'   edits on the sound segment that sound_segment() builds;
//                any other first byte: the whole input is tiled over an
//                all-zero segment instead (fuzz_support.hpp, segment_from).
//   then up to kMaxEdits records of 8 bytes (a shorter tail is ignored):
//     [0] table  % 4: 0 header, 1 CPU slot, 2 process slot, 3 thread slot
//     [1] field  % the target's menu for that table (see each target)
//     [2] slot   % the slots of that table in use (CPUs < cpu_count,
//                process slots < procs_used, thread slots < threads_used,
//                header.alive entries < alive_count); the reader adds one
//                or two past each mark. Ignored for the other header fields.
//     [3] mode   % 4: 0 writes the value the field has (no damage);
//                1 bytes [4..7] as a little-endian int32; 2 byte [4] as an
//                int8 (small indices and states); 3 a value derived from
//                bytes [4..7] that the field may never hold (checker) or
//                those bytes in both halves of a 64-bit field (reader).
//     [4..7] value
// tests/fuzz/make_segment_seeds.py writes one seed per damage kind of
// tests/substrate/invariants_test.cpp in this format, and lists the sound
// segment's slots.
#pragma once

#include "fuzz_support.hpp"
#include "scheduler/shared_scheduler.hpp"
#include "shm/clock.hpp"
#include "shm/liveness.hpp"
#include "shm/segment.hpp"

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

namespace coexec::fuzz {

inline constexpr uint8_t kEditsTag = 'E';
inline constexpr size_t kEditBytes = 8;
inline constexpr size_t kMaxEdits = 6;

enum class Table : uint8_t { Header = 0, Cpu = 1, Proc = 2, Thread = 3 };
inline constexpr int kTables = 4;

// Every field an edit may write; each target picks its menu among them.
enum class Field : uint8_t {
    // header
    Magic,
    AbiVersion,
    HeaderSize,
    TotalSize,
    MaxCpus,
    MaxProcs,
    MaxThreads,
    MaxNuma,
    CpuCount,
    NumaCount,
    QuotaCpus,
    CpuOrigin,
    QuantumNs,
    PreemptAfterNs,
    GovernorPolicy,
    GovernorSpins,
    IsolationLevel,
    CreatedNs,
    ThreadsUsed,
    ProcsUsed,
    ThreadFreeHead,
    AliveCount,
    AliveEntry, // header.alive[slot]
    UnheldCpus,
    WakeableCpus,
    Recoveries,
    TraceRecorders,
    // CPU slot
    CpuSystemId,
    CpuNuma,
    CpuCore,
    CpuState,
    CpuOwnerProc,
    CpuOwnerThread,
    CpuSinceNs,
    CpuTurnProc,
    CpuStintProc,
    CpuStintStartNs,
    CpuCountedProc,
    // process slot
    ProcState,
    ProcPid,
    ProcStartTime,
    ProcName,
    ProcPoolHead,
    ProcPoolSize,
    ProcThreads,
    ProcReceiver,
    ProcRunningCpus,
    ProcReadyTotal,
    ProcCpuTimeNs,
    ProcLabelTimeOpenMP,
    ProcLabelTimeTbb,
    ProcLabelTimePocl,
    ProcLabelTimeOther,
    ProcHandoffs,
    ProcPreemptions,
    // thread slot
    ThreadState,
    ThreadGrant,
    ThreadProc,
    ThreadTid,
    ThreadBoundCpu,
    ThreadNext,
    ThreadLabel,
    ThreadLabelClass,
};

// How a field's bytes read: as the checker prints them.
enum class Repr : uint8_t {
    I32,   // int32_t, or an atomic of it
    U32,   // uint32_t or a 32-bit enum
    U64,   // uint64_t (int64_t counters too: printed as bits here)
    Chars, // the first 4 bytes of a character array
};

inline constexpr size_t repr_size(Repr r) {
    return r == Repr::U64 ? 8 : 4;
}

inline Table table_of(Field f) {
    if (f <= Field::TraceRecorders) return Table::Header;
    if (f <= Field::CpuCountedProc) return Table::Cpu;
    if (f <= Field::ProcPreemptions) return Table::Proc;
    return Table::Thread;
}

struct FieldName {
    const char* name;
    Repr repr;
};

inline FieldName field_name(Field f) {
    switch (f) {
    case Field::Magic:
        return {"magic", Repr::U64};
    case Field::AbiVersion:
        return {"abi_version", Repr::U32};
    case Field::HeaderSize:
        return {"header_size", Repr::U32};
    case Field::TotalSize:
        return {"total_size", Repr::U64};
    case Field::MaxCpus:
        return {"max_cpus", Repr::I32};
    case Field::MaxProcs:
        return {"max_procs", Repr::I32};
    case Field::MaxThreads:
        return {"max_threads", Repr::I32};
    case Field::MaxNuma:
        return {"max_numa", Repr::I32};
    case Field::CpuCount:
        return {"cpu_count", Repr::I32};
    case Field::NumaCount:
        return {"numa_count", Repr::I32};
    case Field::QuotaCpus:
        return {"quota_cpus", Repr::I32};
    case Field::CpuOrigin:
        return {"cpu_origin", Repr::Chars};
    case Field::QuantumNs:
        return {"config.quantum_ns", Repr::U64};
    case Field::PreemptAfterNs:
        return {"config.preempt_after_ns", Repr::U64};
    case Field::GovernorPolicy:
        return {"config.governor_policy", Repr::U32};
    case Field::GovernorSpins:
        return {"config.governor_spins", Repr::U32};
    case Field::IsolationLevel:
        return {"config.isolation", Repr::U32};
    case Field::CreatedNs:
        return {"created_ns", Repr::U64};
    case Field::ThreadsUsed:
        return {"threads_used", Repr::I32};
    case Field::ProcsUsed:
        return {"procs_used", Repr::I32};
    case Field::ThreadFreeHead:
        return {"thread_free_head", Repr::I32};
    case Field::AliveCount:
        return {"alive_count", Repr::I32};
    case Field::AliveEntry:
        return {"alive[]", Repr::I32};
    case Field::UnheldCpus:
        return {"unheld_cpus", Repr::I32};
    case Field::WakeableCpus:
        return {"wakeable_cpus", Repr::I32};
    case Field::Recoveries:
        return {"recoveries", Repr::U64};
    case Field::TraceRecorders:
        return {"trace_recorders", Repr::U32};
    case Field::CpuSystemId:
        return {"system_id", Repr::I32};
    case Field::CpuNuma:
        return {"numa", Repr::I32};
    case Field::CpuCore:
        return {"core", Repr::I32};
    case Field::CpuState:
        return {"state", Repr::U32};
    case Field::CpuOwnerProc:
        return {"owner_proc", Repr::I32};
    case Field::CpuOwnerThread:
        return {"owner_thread", Repr::I32};
    case Field::CpuSinceNs:
        return {"since_ns", Repr::U64};
    case Field::CpuTurnProc:
        return {"turn_proc", Repr::I32};
    case Field::CpuStintProc:
        return {"stint_proc", Repr::I32};
    case Field::CpuStintStartNs:
        return {"stint_start_ns", Repr::U64};
    case Field::CpuCountedProc:
        return {"counted_proc", Repr::I32};
    case Field::ProcState:
        return {"state", Repr::U32};
    case Field::ProcPid:
        return {"pid", Repr::I32};
    case Field::ProcStartTime:
        return {"start_time", Repr::U64};
    case Field::ProcName:
        return {"name", Repr::Chars};
    case Field::ProcPoolHead:
        return {"pool_head", Repr::I32};
    case Field::ProcPoolSize:
        return {"pool_size", Repr::I32};
    case Field::ProcThreads:
        return {"threads", Repr::I32};
    case Field::ProcReceiver:
        return {"receiver", Repr::I32};
    case Field::ProcRunningCpus:
        return {"running_cpus", Repr::I32};
    case Field::ProcReadyTotal:
        return {"ready_total", Repr::U64};
    case Field::ProcCpuTimeNs:
        return {"cpu_time_ns", Repr::U64};
    case Field::ProcLabelTimeOpenMP:
        return {"label_time_ns[openmp]", Repr::U64};
    case Field::ProcLabelTimeTbb:
        return {"label_time_ns[tbb]", Repr::U64};
    case Field::ProcLabelTimePocl:
        return {"label_time_ns[pocl]", Repr::U64};
    case Field::ProcLabelTimeOther:
        return {"label_time_ns[other]", Repr::U64};
    case Field::ProcHandoffs:
        return {"handoffs", Repr::U64};
    case Field::ProcPreemptions:
        return {"preemptions", Repr::U64};
    case Field::ThreadState:
        return {"state", Repr::U32};
    case Field::ThreadGrant:
        return {"grant", Repr::I32};
    case Field::ThreadProc:
        return {"proc", Repr::I32};
    case Field::ThreadTid:
        return {"tid", Repr::I32};
    case Field::ThreadBoundCpu:
        return {"bound_cpu", Repr::I32};
    case Field::ThreadNext:
        return {"next", Repr::I32};
    case Field::ThreadLabel:
        return {"label", Repr::Chars};
    case Field::ThreadLabelClass:
        return {"label_class", Repr::U32};
    }
    return {"?", Repr::I32};
}

template <class T>
unsigned char* bytes_of(const T& field) {
    return reinterpret_cast<unsigned char*>(const_cast<void*>(static_cast<const void*>(&field)));
}

// Where field `f` of slot `slot` lies (`slot` is ignored for the header's
// single fields).
inline unsigned char* locate(const shm::Segment& s, Field f, int32_t slot) {
    const shm::Header& h = s.header;
    // Only the table the field belongs to is indexed by `slot`.
    const Table table = table_of(f);
    const shm::CpuSlot& c = s.cpus[table == Table::Cpu ? slot : 0];
    const shm::ProcSlot& p = s.procs[table == Table::Proc ? slot : 0];
    const shm::ThreadSlot& t = s.threads[table == Table::Thread ? slot : 0];
    switch (f) {
    case Field::Magic:
        return bytes_of(h.magic);
    case Field::AbiVersion:
        return bytes_of(h.abi_version);
    case Field::HeaderSize:
        return bytes_of(h.header_size);
    case Field::TotalSize:
        return bytes_of(h.total_size);
    case Field::MaxCpus:
        return bytes_of(h.max_cpus);
    case Field::MaxProcs:
        return bytes_of(h.max_procs);
    case Field::MaxThreads:
        return bytes_of(h.max_threads);
    case Field::MaxNuma:
        return bytes_of(h.max_numa);
    case Field::CpuCount:
        return bytes_of(h.cpu_count);
    case Field::NumaCount:
        return bytes_of(h.numa_count);
    case Field::QuotaCpus:
        return bytes_of(h.quota_cpus);
    case Field::CpuOrigin:
        return bytes_of(h.cpu_origin);
    case Field::QuantumNs:
        return bytes_of(h.config.quantum_ns);
    case Field::PreemptAfterNs:
        return bytes_of(h.config.preempt_after_ns);
    case Field::GovernorPolicy:
        return bytes_of(h.config.governor_policy);
    case Field::GovernorSpins:
        return bytes_of(h.config.governor_spins);
    case Field::IsolationLevel:
        return bytes_of(h.config.isolation);
    case Field::CreatedNs:
        return bytes_of(h.created_ns);
    case Field::ThreadsUsed:
        return bytes_of(h.threads_used);
    case Field::ProcsUsed:
        return bytes_of(h.procs_used);
    case Field::ThreadFreeHead:
        return bytes_of(h.thread_free_head);
    case Field::AliveCount:
        return bytes_of(h.alive_count);
    case Field::AliveEntry:
        return bytes_of(h.alive[slot]);
    case Field::UnheldCpus:
        return bytes_of(h.unheld_cpus);
    case Field::WakeableCpus:
        return bytes_of(h.wakeable_cpus);
    case Field::Recoveries:
        return bytes_of(h.recoveries);
    case Field::TraceRecorders:
        return bytes_of(h.trace_recorders);
    case Field::CpuSystemId:
        return bytes_of(c.system_id);
    case Field::CpuNuma:
        return bytes_of(c.numa);
    case Field::CpuCore:
        return bytes_of(c.core);
    case Field::CpuState:
        return bytes_of(c.state);
    case Field::CpuOwnerProc:
        return bytes_of(c.owner_proc);
    case Field::CpuOwnerThread:
        return bytes_of(c.owner_thread);
    case Field::CpuSinceNs:
        return bytes_of(c.since_ns);
    case Field::CpuTurnProc:
        return bytes_of(c.turn_proc);
    case Field::CpuStintProc:
        return bytes_of(c.stint_proc);
    case Field::CpuStintStartNs:
        return bytes_of(c.stint_start_ns);
    case Field::CpuCountedProc:
        return bytes_of(c.counted_proc);
    case Field::ProcState:
        return bytes_of(p.state);
    case Field::ProcPid:
        return bytes_of(p.pid);
    case Field::ProcStartTime:
        return bytes_of(p.start_time);
    case Field::ProcName:
        return bytes_of(p.name);
    case Field::ProcPoolHead:
        return bytes_of(p.pool_head);
    case Field::ProcPoolSize:
        return bytes_of(p.pool_size);
    case Field::ProcThreads:
        return bytes_of(p.threads);
    case Field::ProcReceiver:
        return bytes_of(p.receiver);
    case Field::ProcRunningCpus:
        return bytes_of(p.running_cpus);
    case Field::ProcReadyTotal:
        return bytes_of(p.ready_total);
    case Field::ProcCpuTimeNs:
        return bytes_of(p.cpu_time_ns);
    case Field::ProcLabelTimeOpenMP:
        return bytes_of(p.label_time_ns[0]);
    case Field::ProcLabelTimeTbb:
        return bytes_of(p.label_time_ns[1]);
    case Field::ProcLabelTimePocl:
        return bytes_of(p.label_time_ns[2]);
    case Field::ProcLabelTimeOther:
        return bytes_of(p.label_time_ns[3]);
    case Field::ProcHandoffs:
        return bytes_of(p.handoffs);
    case Field::ProcPreemptions:
        return bytes_of(p.preemptions);
    case Field::ThreadState:
        return bytes_of(t.state);
    case Field::ThreadGrant:
        return bytes_of(t.grant);
    case Field::ThreadProc:
        return bytes_of(t.proc);
    case Field::ThreadTid:
        return bytes_of(t.tid);
    case Field::ThreadBoundCpu:
        return bytes_of(t.bound_cpu);
    case Field::ThreadNext:
        return bytes_of(t.next);
    case Field::ThreadLabel:
        return bytes_of(t.label);
    case Field::ThreadLabelClass:
        return bytes_of(t.label_class);
    }
    fail("locate: unknown field");
}

// A field's value as 64 bits: int32 fields sign-extended, the others
// zero-extended.
inline uint64_t read_field(const shm::Segment& s, Field f, int32_t slot) {
    const Repr r = field_name(f).repr;
    const unsigned char* at = locate(s, f, slot);
    if (r == Repr::U64) {
        uint64_t v;
        std::memcpy(&v, at, 8);
        return v;
    }
    uint32_t v;
    std::memcpy(&v, at, 4);
    return r == Repr::I32 ? uint64_t(int64_t(int32_t(v))) : v;
}

// `value` truncated to the field's width, then read back as read_field().
inline uint64_t fit(Field f, uint64_t value) {
    switch (field_name(f).repr) {
    case Repr::U64:
        return value;
    case Repr::I32:
        return uint64_t(int64_t(int32_t(uint32_t(value))));
    case Repr::U32:
    case Repr::Chars:
        return uint32_t(value);
    }
    return value;
}

// The value as the checker prints it.
inline std::string shown(Field f, uint64_t value) {
    switch (field_name(f).repr) {
    case Repr::I32:
        return std::to_string(int32_t(value));
    case Repr::U32:
    case Repr::Chars:
        return std::to_string(uint32_t(value));
    case Repr::U64:
        return std::to_string(value);
    }
    return {};
}

// One decoded edit: write `value` into field `field` of slot `slot`.
struct Edit {
    Field field;
    int32_t slot;
    uint8_t mode;   // 0 keep, 1 int32, 2 int8, 3 known-invalid or wide
    uint32_t raw;   // bytes [4..7]
    uint64_t value; // what is written (fit() to the field)
};

inline std::string describe(const Edit& e) {
    static constexpr const char* kTableNames[] = {"header", "cpu", "proc", "thread"};
    std::string text = kTableNames[int(table_of(e.field))];
    if (table_of(e.field) != Table::Header || e.field == Field::AliveEntry)
        text += "[" + std::to_string(e.slot) + "]";
    return text + "." + field_name(e.field).name + " = " + shown(e.field, e.value) + " (mode " +
           std::to_string(e.mode) + ")";
}

// The fields a target may edit, per table.
using Menu = std::array<std::vector<Field>, kTables>;

// Decodes the records after the tag. `slots(field)` is how many slots an
// edit of that field may pick from; `value(edit)` sets edit.value from
// mode and raw.
template <class Slots, class Value>
std::vector<Edit> decode_edits(const uint8_t* data, size_t size, const Menu& menu, Slots slots,
                               Value value) {
    std::vector<Edit> edits;
    for (size_t at = 1; at + kEditBytes <= size && edits.size() < kMaxEdits; at += kEditBytes) {
        const uint8_t* r = data + at;
        const auto& fields = menu[r[0] % kTables];
        if (fields.empty()) continue;
        Edit e{};
        e.field = fields[r[1] % fields.size()];
        const int32_t n = slots(e.field);
        e.slot = n > 0 ? int32_t(r[2] % uint32_t(n)) : 0;
        e.mode = uint8_t(r[3] % 4);
        e.raw = uint32_t(r[4]) | uint32_t(r[5]) << 8 | uint32_t(r[6]) << 16 | uint32_t(r[7]) << 24;
        value(e);
        e.value = fit(e.field, e.value);
        edits.push_back(e);
    }
    return edits;
}

// Writes edits and takes them back, last first, so that the segment is
// sound again after undo().
class Patcher {
  public:
    explicit Patcher(shm::Segment& s) : s_(s) {}
    ~Patcher() { undo(); }
    Patcher(const Patcher&) = delete;
    Patcher& operator=(const Patcher&) = delete;

    void apply(const Edit& e) {
        unsigned char* at = locate(s_, e.field, e.slot);
        const size_t n = repr_size(field_name(e.field).repr);
        Saved saved{at, n, {}};
        std::memcpy(saved.bytes, at, n);
        saved_.push_back(saved);
        std::memcpy(at, &e.value, n); // little-endian: the low bytes
    }
    void undo() {
        for (auto it = saved_.rbegin(); it != saved_.rend(); ++it)
            std::memcpy(it->at, it->bytes, it->size);
        saved_.clear();
    }

  private:
    struct Saved {
        unsigned char* at;
        size_t size;
        unsigned char bytes[8];
    };
    shm::Segment& s_;
    std::vector<Saved> saved_;
};

// ---- the sound segment --------------------------------------------------

// Built once with the scheduler's own operations, so that the checker
// finds it sound; fake tids are set afterwards (a real one would be bound
// to the CPUs granted). Six CPUs on two NUMA nodes, five processes:
//   CPU 0 Running (alpha), 1 Idle (beta), 2 Sleeping (gamma), 3 Lent
//   (alpha), 4 Running (beta), 5 Free;
//   alpha, beta, gamma and eps Alive, delta left (its slot Unused);
//   thread slots in every state: Pool threads on three pool lists, freed
//   ones on the free list, a Waiting and a Blocked thread on no list.
// make_segment_seeds.py lists which slot is which.
inline shm::Segment& sound_segment() {
    // Out of the lock analysis: the segment lives in this process's own
    // memory and no other thread sees it until it is built.
    static shm::Segment* built = []() COEXEC_NO_THREAD_SAFETY_ANALYSIS {
        using namespace shm;
        using scheduler::Placement;
        // Room for the six CPUs below.
        constexpr size_t size = segment_layout(6).total;
        auto* s = static_cast<Segment*>(std::aligned_alloc(64, size));
        std::memset(static_cast<void*>(s), 0, size);
        lay_out(*s, 6);
        Header& h = s->header;
        h.magic.store(kMagic);
        h.abi_version = kAbiVersion;
        h.header_size = sizeof(Header);
        h.max_procs = kMaxProcs;
        h.max_threads = kMaxThreads;
        h.max_numa = kMaxNuma;
        h.config.isolation = Isolation::User;
        h.created_ns = now_ns();

        scheduler::SharedScheduler sched(*s);
        SegmentConfig config{};
        config.quantum_ns = 1'000'000'000;
        config.governor_spins = 1000;
        scheduler::Discovery six;
        six.cpus = {{0, 0, 0}, {1, 1, 0}, {2, 2, 0}, {3, 3, 1}, {4, 4, 1}, {5, 5, 1}};
        six.origin = "six CPUs on two NUMA nodes";
        sched.format(six, config);

        const pid_t pid = ::getpid();
        const uint64_t start = process_start_time(pid);
        scheduler::WakeList wakes; // the threads are not real: never flushed
        const int32_t alpha = sched.procs().register_process(pid, start, "alpha");
        const int32_t beta = sched.procs().register_process(pid, start, "beta");
        const int32_t gamma = sched.procs().register_process(pid, start, "gamma");
        const int32_t delta = sched.procs().register_process(pid, start, "delta");
        const int32_t eps = sched.procs().register_process(pid, start, "eps");
        auto workers = [&](int32_t p, int n,
                           const char* label) COEXEC_REQUIRES(scheduler::segment_lock) {
            for (int i = 0; i < n; ++i)
                sched.procs().pool_push(
                    sched.procs().alloc_thread(p, 0, label, ThreadState::Blocked));
        };
        workers(alpha, 4, "openmp");
        workers(beta, 3, "tbb");
        workers(gamma, 2, "pocl");
        workers(delta, 1, "worker");
        workers(eps, 2, "worker");
        auto claim = [&](int32_t p, int32_t cpu) COEXEC_REQUIRES(scheduler::segment_lock) {
            if (sched.policy().claim_unheld_cpu(p, {Placement::Kind::Cpu, cpu, true}, wakes) != cpu)
                fail("sound segment: CPU " + std::to_string(cpu) + " not claimed");
        };
        claim(alpha, 0);
        claim(beta, 1);
        sched.policy().hold_idle(1, false, wakes);
        claim(gamma, 2);
        sched.policy().hold_idle(2, true, wakes);
        claim(alpha, 3);
        sched.policy().lend(3, wakes);
        claim(beta, 4);
        sched.procs().alloc_thread(beta, 0, "attached", ThreadState::Waiting);
        sched.procs().alloc_thread(alpha, 0, "openmp", ThreadState::Blocked);
        sched.unregister_process(delta, wakes);
        for (int i = 0; i < 2; ++i)
            sched.release_thread(sched.procs().take_pool_thread(eps), wakes);

        for (int32_t t = 0; t < h.threads_used; ++t)
            if (s->threads[t].state.load() != ThreadState::Unused)
                sched.procs().set_tid(t, 20000 + t);
        for (int32_t p : {alpha, beta, gamma, eps}) {
            ProcSlot& slot = s->procs[p];
            const uint64_t ns = 1'000'000'000ULL * uint64_t(p + 1);
            slot.cpu_time_ns.store(ns);
            slot.label_time_ns[0].store(ns / 2);
            slot.label_time_ns[3].store(ns - ns / 2);
            slot.ready_total.store(int64_t(p));
        }
        return s;
    }();
    return *built;
}

} // namespace coexec::fuzz
