// The shared segment's layout: plain data at fixed offsets, no raw pointers.
//
// Every cross-reference inside the segment is an index (CPU, process or thread
// slot), so the segment works at any address in any process. Fields that other
// processes read without the segment lock are std::atomic, but for plain ones
// that do not change once written (the header's identity, the CPU table, the
// settings) and a few that such readers take as hints and check for range:
// the alive list, a thread slot's proc and label, a process slot's pid, start
// time and name, and a CPU slot's stint. Plain fields are written under
// Header::lock, or before the segment is published, except a thread's label
// (set_label() writes it without the lock; a reader may see it torn).
// scheduler/shared_scheduler.hpp lists which file writes which field.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <pthread.h>

namespace coexec::shm {

inline constexpr uint64_t kMagic = 0x434f45584543534dULL; // "COEXECSM"
// Bumped whenever a shared structure changes, even where its size does not
// (fields added into padding): processes of two versions must never share a
// segment.
inline constexpr uint32_t kAbiVersion = 18;

// The most CPUs one segment can be sized for. A segment has as many CPU slots
// as its creator asked for (shm::SegmentOptions::cpu_slots: the node's CPUs by
// default), so a 2-CPU node's segment stays small.
inline constexpr int kMaxCpus = 4096;
inline constexpr int kMaxNuma = 64;
inline constexpr int kMaxProcs = 512;
inline constexpr int kMaxThreads = 8192;
inline constexpr int kLabelSize = 32;
inline constexpr int kNameSize = 16;
inline constexpr int kOriginSize = 192;
inline constexpr int32_t kNone = -1;
// Trace rings (see shm/trace_ring.hpp): records per ring, a power of two.
inline constexpr int kTraceRingSize = 256;
inline constexpr int kTraceLabelSize = 24; // label bytes a trace record carries
// One ring per CPU slot, and one more for the process events (join, leave,
// reap), which belong to no CPU: trace_ring_count() and process_trace_ring()
// below.
inline constexpr int kMaxRecorders = 8; // recorders (`coexec record`) at once

enum class CpuState : uint32_t {
    Free = 0,     // nobody holds it; any submit may claim it
    Running = 1,  // a thread holds it and runs a task
    Idle = 2,     // a worker holds it and spins waiting for work
    Sleeping = 3, // a worker holds it and sleeps on its futex word
    // Its holder left coexec's view (an OpenMP root in serial code) but runs
    // on it until someone needs it; whoever claims it evicts the holder.
    Lent = 4,
};

// What Header::unheld_cpus counts: CPUs that work may claim now, without
// waiting for a scheduling point. A Lent CPU is one of them: whoever claims
// it evicts the lender.
constexpr bool is_unheld(CpuState st) {
    return st != CpuState::Running;
}
// What Header::wakeable_cpus counts: unheld CPUs that nobody watches for
// work (a Lent CPU's holder runs code of its own), so that a submitter must
// claim one itself. Idle holders spin on the ready counters instead.
constexpr bool is_wakeable(CpuState st) {
    return st == CpuState::Free || st == CpuState::Sleeping || st == CpuState::Lent;
}

// A set of CPU slots, a bit each: slot c is bit c % 64 of word c / 64
// (scheduler/cpu_bits.hpp).
struct CpuBits {
    uint64_t words[kMaxCpus / 64];
};
// The same, for a set that threads change without the lock (a bit at a
// time, by an atomic read-modify-write).
struct AtomicCpuBits {
    std::atomic<uint64_t> words[kMaxCpus / 64];
};

enum class ThreadState : uint32_t {
    Unused = 0,
    Pool = 1,    // worker without CPU or task, waiting for a grant
    Waiting = 2, // has ready work (attached or resumed), waiting for a CPU
    Running = 3, // holds a CPU
    Holding = 4, // holds a CPU idle (spinning or sleeping), or lends it
    Blocked = 5, // paused, in waitfor, or blocked outside coexec: no CPU
};

enum class ProcState : uint32_t { Unused = 0, Alive = 1 };

// The runtime a thread's label names, for the CPU time per runtime that
// `coexec top` shows: the adapters label their threads "openmp", "tbb" and
// "pocl"; any other label (a task type's, "worker", "attached") is Other.
enum class LabelClass : uint32_t { OpenMP = 0, Tbb = 1, Pocl = 2, Other = 3 };
inline constexpr int kLabelClasses = 4;

// An array in the segment's per-CPU part, which follows the fixed part and is
// sized when the segment is created (for Header::max_cpus CPUs; see
// SegmentLayout). It holds the distance in bytes from itself to its first
// element, so it works wherever a process maps the segment. shm/segment.cpp
// places every such array before the segment is published, and checks each
// place whenever a process maps the segment: indexed within the bounds the
// header gives, it reads and writes the segment only.
template <class T>
class PlacedArray {
  public:
    T& operator[](std::ptrdiff_t i) { return first()[i]; }
    const T& operator[](std::ptrdiff_t i) const { return first()[i]; }
    // Under the creation lock, before the segment is published.
    void place(const T* first) { distance_ = address(first) - address(this); }
    bool placed_at(const T* first) const { return distance_ == address(first) - address(this); }

  private:
    static std::ptrdiff_t address(const void* p) { return reinterpret_cast<std::ptrdiff_t>(p); }
    T* first() const {
        // The elements were never constructed as objects: like the rest of
        // the segment they are zero bytes that their types take as a valid
        // starting state (shm/segment.cpp).
        return std::launder(reinterpret_cast<T*>(address(this) + distance_));
    }
    std::ptrdiff_t distance_;
};

// One managed CPU. Its fields change under the segment lock, except that the
// holder of a Running CPU hands it to another thread of its process without
// the lock (CpuTable::handoff_within_process), and that waiters claim
// preempt_asked_ns by compare-exchange.
struct alignas(64) CpuSlot {
    int32_t system_id; // kernel CPU number
    int32_t numa;      // logical NUMA index (0..numa_count-1)
    int32_t system_numa;
    int32_t core; // the core: its first managed thread sibling's system id
    std::atomic<CpuState> state;
    std::atomic<int32_t> owner_proc;   // process slot, or kNone
    std::atomic<int32_t> owner_thread; // thread slot, or kNone
    std::atomic<uint64_t> since_ns;    // when owner_thread took it (Free: was freed)
    // Whether owner_thread took it from a holder that had it Running (a
    // hand-off, or a holder that gave way to another process), rather than
    // unheld (Free, Idle, Sleeping or Lent).
    std::atomic<bool> handed_over;
    // Round-robin between processes: written under the lock, read by
    // schedpoints without it (a stale value only delays a switch).
    std::atomic<int32_t> turn_proc;
    std::atomic<uint64_t> turn_start_ns;
    // When a waiting process last asked the holder to give way (preemption
    // safety net); claimed by compare-exchange so one request goes out per
    // period however many processes wait.
    std::atomic<uint64_t> preempt_asked_ns;
    // CPU-time accounting: the process whose stint is open, and its start.
    int32_t stint_proc;
    uint64_t stint_start_ns;
    // The process whose ProcSlot::running_cpus counts this CPU, or kNone
    // (under the lock; CpuTable::recount_running keeps it).
    int32_t counted_proc;
};

// One coexec thread of some process. `word` is the futex the thread sleeps
// on (scheduler::ThreadWord encodes it); `grant` tells it which CPU it has
// been given.
struct alignas(64) ThreadSlot {
    std::atomic<uint32_t> word;
    std::atomic<int32_t> grant; // CPU index handed to the thread, or kNone
    std::atomic<ThreadState> state;
    int32_t proc;
    // The kernel tid; a worker sets it once it runs, while granters and
    // monitors of other processes read it (to bind, to signal).
    std::atomic<int32_t> tid;
    // The CPU the thread's kernel affinity is set to, or kNone. Written by
    // the thread itself while it holds no grant in flight, by a granter
    // just before it publishes a grant (the thread is waiting then), and by
    // whoever evicts the thread as a lender (under the lock).
    std::atomic<int32_t> bound_cpu;
    // Set at attach and fixed until the slot is freed: coexec counts the
    // thread on the CPUs it grants but leaves its kernel affinity alone,
    // except while it pins the thread (bound_cpu names a CPU then).
    bool keeps_affinity;
    // A holder running code of its own keeps its CPU (coexec_keep_cpu), or
    // a paused one parks it (nosv_pause), in periods; scheduler::KeepWord
    // encodes and documents it.
    std::atomic<uint32_t> serial;
    // Whether a granter (of another process, or of this one) may give this
    // thread a CPU directly, past its process's pool: scheduler::ReceiveWord
    // encodes it.
    std::atomic<uint32_t> receive;
    int32_t next; // pool stack / free list link (under the lock)
    // Its process's list of threads (ProcSlot::thread_head), both ways, so
    // that a process leaves in time proportional to its own threads.
    int32_t proc_prev, proc_next; // under the lock
    char label[kLabelSize];
    // The class of `label`, set with it (ProcessTable::set_label): the
    // scheduler reads it when a stint closes, without parsing the text.
    std::atomic<LabelClass> label_class;
};

// One process that joined the instance. Its ready counters are kept by the
// owning process through scheduler::Demand, and read by others as hints.
struct alignas(64) ProcSlot {
    std::atomic<ProcState> state;
    int32_t pid;
    uint64_t start_time; // from /proc/<pid>/stat, to survive pid reuse
    char name[kNameSize];
    int32_t pool_head; // stack of Pool threads (under the lock)
    std::atomic<int32_t> pool_size;
    std::atomic<int32_t> threads; // thread slots in use
    int32_t thread_head;          // list of those (ThreadSlot::proc_next), under the lock
    std::atomic<uint32_t> monitor_word;
    // Its threads give way when signalled (the preemption handler is
    // installed); others never receive the signal.
    std::atomic<uint32_t> preemptible;
    // Last time (CLOCK_MONOTONIC) this process was known to run: its
    // monitor's beat, or another member that found it alive in /proc.
    std::atomic<uint64_t> alive_ns;
    // The kernel tid of the process's monitor thread once it runs, else 0.
    // The process stays the member that registered only while that thread
    // lives: an execve() ends every thread but the caller, and the new
    // image is a new member (MemberWatch).
    std::atomic<int32_t> monitor_tid;
    // A thread of this process whose own task is its only ready item, and
    // may take a CPU straight from a granter, of another process or of this
    // one (ThreadSlot::receive).
    std::atomic<int32_t> receiver;
    // CPUs that are Running with this process as owner_proc: written under
    // the lock, with each CPU's state (cpu_table.cpp); read without it as
    // a hint.
    std::atomic<int32_t> running_cpus;
    // 1 once the process is on its way out without leaving (it exits while
    // threads it started still use coexec): it has dropped its share of the
    // segment's in-use lock, and the last mapping to close counts it as gone
    // (SegmentMapping::leave_at_exit()). The slot stays until it is reaped.
    std::atomic<uint32_t> departing;
    // The NUMA node (logical) its affinity or memory policy names when it
    // registers, or kNone: its work that may run anywhere prefers CPUs
    // there. Under the lock (ProcessTable::register_process()).
    int32_t home_numa;
    alignas(64) std::atomic<int64_t> ready_total; // every ready item
    std::atomic<int64_t> ready_any;               // runnable on any CPU
    std::atomic<int64_t> ready_numa[kMaxNuma];    // strictly bound to a NUMA node
    // Those strictly bound to a CPU are counted in the process's row of
    // Segment::ready_cpu (ready_cpu_row()).
    alignas(64) std::atomic<uint64_t> cpu_time_ns; // closed stints
    // The same closed stints by the LabelClass of the thread holding the CPU
    // when each ended; they add up to cpu_time_ns.
    std::atomic<uint64_t> label_time_ns[kLabelClasses];
    std::atomic<uint64_t> handoffs;    // CPU grants received
    std::atomic<uint64_t> preemptions; // times its threads gave way to a signal
};

enum class Isolation : uint32_t { Process = 0, User = 1, Group = 2, Public = 3 };

// Settings fixed when the segment is created; every process uses these.
struct SegmentConfig {
    uint64_t quantum_ns;
    // A holder that keeps a CPU this long past its quantum, without reaching
    // a scheduling point, while another process waits for it, is signalled
    // to give way; 0 turns the safety net off.
    uint64_t preempt_after_ns;
    uint32_t governor_policy; // 0 hybrid, 1 idle, 2 busy
    uint32_t governor_spins;
    Isolation isolation;
};

struct alignas(64) Header {
    std::atomic<uint64_t> magic; // written last on creation
    uint32_t abi_version;
    uint32_t header_size;
    uint64_t total_size;
    int32_t max_cpus, max_procs, max_threads, max_numa;
    int32_t cpu_count;
    int32_t numa_count;
    // Why these CPUs, for `coexec info`: written when the CPU table is laid
    // out, read-only after. quota_cpus > 0: a cgroup CPU quota allows that
    // many CPUs, and cpu_count is no more.
    int32_t quota_cpus;
    char cpu_origin[kOriginSize];   // NUL-terminated, cut to fit
    char quota_origin[kOriginSize]; // NUL-terminated, empty without a quota
    SegmentConfig config;
    pthread_mutex_t lock; // process-shared, robust
    // Times the lock was taken since the segment was created (SchedulerLock
    // counts each, under the lock). Read without it, by the benchmarks that
    // count acquisitions per scheduling event.
    std::atomic<uint64_t> lock_acquisitions;
    uint64_t created_ns;
    // Under the lock. Slots at or above a high-water mark were never used
    // since formatting: they are free without being listed, and nothing
    // refers to them, so scans stop at the marks.
    int32_t threads_used;     // thread slots [0, threads_used) were used
    int32_t procs_used;       // process slots [0, procs_used) were used
    int32_t thread_free_head; // freed thread slots below threads_used
    int32_t alive_count;
    int32_t alive[kMaxProcs]; // dense list of Alive process slots
    // Lock-free hints, written under the lock: the CPUs whose state
    // is_unheld() and is_wakeable(). CpuTable::set_state keeps them in
    // step with each state change; format() and repair() count them afresh.
    alignas(64) std::atomic<int32_t> unheld_cpus;
    std::atomic<int32_t> wakeable_cpus;
    // Under the lock, kept with each state change by CpuTable::set_state
    // (format() and repair() fill them afresh): the CPUs in each unheld
    // state, so that a grant searches those, not every CPU slot.
    CpuBits free_cpus; // Free
    CpuBits idle_cpus; // Idle or Sleeping: held without work
    CpuBits lent_cpus; // Lent
    // Lock-free, by the threads that park and unpark them (a holder parks
    // its CPU while its task is paused: CpuTable::park()): the Running CPUs
    // whose holder sleeps in a Parked keep period, which anyone may take at
    // once (Policy::take_parked_cpu()), and their number, which a submitter
    // reads to know whether to look (ReadyWork::kick()). A bit and the count
    // move together: whoever sets a bit adds one, whoever clears it (the
    // parker that ends its period, the taker that wins it, or whoever frees
    // the CPU) takes one off.
    alignas(64) std::atomic<int32_t> parked_cpus;
    AtomicCpuBits parked;
    std::atomic<uint64_t> last_reap_ns;
    // When a joining member last checked the whole segment (nosv_init):
    // MemberWatch::claim_entry_check() elects one entering member per interval.
    std::atomic<uint64_t> last_entry_check_ns;
    std::atomic<uint64_t> recoveries; // times a dead lock holder was repaired
    // How many recorders (`coexec record`) want ownership changes written to
    // the trace rings; 0: none are written. On its own cache line: every
    // ownership change reads it, and it changes only when a recorder starts
    // or stops.
    alignas(64) std::atomic<uint32_t> trace_recorders;
    // The recorders' pids (0: free slot), so that SharedScheduler::reap() can
    // switch off for a recorder that died without doing so.
    std::atomic<int32_t> recorder_pids[kMaxRecorders];
};

// What a trace record says happened; shm/trace_ring.hpp documents each.
enum class TraceKind : uint8_t {
    None = 0,
    Grant = 1,    // a thread was given the CPU (from another holder, or none)
    Handoff = 2,  // the holder handed it to another thread of its process
    Wake = 3,     // its sleeping holder was given work on it again
    Reclaim = 4,  // its lender took it back
    Idle = 5,     // its holder keeps it without work, spinning
    Sleep = 6,    // its holder keeps it without work, asleep
    Lend = 7,     // its holder runs code of its own on it (coexec_lend_cpu)
    Release = 8,  // nobody holds it any more
    Evict = 9,    // its idle holder or lender was put off it (a grant follows)
    Preempt = 10, // its holder gave way to the preemption signal (SIGURG)
    Join = 11,    // a process registered (process ring)
    Leave = 12,   // a process unregistered (process ring)
    Reap = 13,    // a dead process was freed by another (process ring)
    Label = 14,   // its running holder's label changed (another task type)
};
inline constexpr int kTraceKinds = 15;

// One event in a trace ring: `seq` says which ring index it holds and
// whether it is complete (shm/trace_ring.hpp); the payload words are
// written relaxed between the two `seq` stores.
struct alignas(64) TraceRecord {
    std::atomic<uint64_t> seq;
    std::atomic<uint64_t> words[7];
};

// A bounded ring of trace records that any number of processes append to
// and recorders read without a lock; the oldest records are overwritten.
struct alignas(64) TraceRing {
    std::atomic<uint64_t> head; // the index the next record gets
    alignas(64) TraceRecord records[kTraceRingSize];
};

// The segment's fixed part; its per-CPU part follows (SegmentLayout). About
// 1.4 MiB, and 20 KiB more per CPU slot, 16 KiB of which is the CPU's trace
// ring: 1.5 MiB for 2 CPUs, 17 MiB for 768, 82 MiB for 4,096. It starts as all zero bytes and is
// never constructed as a whole (shm/segment.cpp), so only the pages in use are allocated.
struct Segment {
    Header header;
    // In the per-CPU part: Header::max_cpus slots, and one trace ring per
    // slot and one more (process_trace_ring()). Read-only once published.
    alignas(64) PlacedArray<CpuSlot> cpus;
    PlacedArray<TraceRing> traces;
    // kMaxProcs rows of ready_cpu_words() counters: ProcSlot's ready items
    // strictly bound to each CPU slot (ready_cpu_row()).
    PlacedArray<std::atomic<int64_t>> ready_cpu;
    // kMaxProcs rows of proc_cpu_words() words, a bit per CPU slot: the
    // CPUs granted to the process since it registered (proc_cpus_row()),
    // so that its leaving visits those and not every CPU slot. Under the
    // lock.
    PlacedArray<uint64_t> proc_cpus;
    // Each NUMA node's CPU slots: written with the CPU table
    // (CpuTable::format()), read-only after. (Not in the header: a reader
    // maps the header before it knows the segment's size.)
    alignas(64) CpuBits numa_cpus[kMaxNuma];
    ProcSlot procs[kMaxProcs];
    ThreadSlot threads[kMaxThreads];
};

constexpr size_t round_up(size_t n, size_t to) {
    return (n + to - 1) / to * to;
}

// Counters in a row of Segment::ready_cpu: one per CPU slot, rounded up to
// whole cache lines, so that two processes' rows share none.
constexpr size_t ready_cpu_words(int32_t max_cpus) {
    return round_up(size_t(max_cpus), 64 / sizeof(int64_t));
}

// Words in a row of Segment::proc_cpus: a bit per CPU slot.
constexpr size_t proc_cpu_words(int32_t max_cpus) {
    return (size_t(max_cpus) + 63) / 64;
}

// Where the per-CPU part's arrays lie in a segment sized for `max_cpus` CPU
// slots (1..kMaxCpus), in bytes from the segment's start, and its whole size.
struct SegmentLayout {
    size_t cpus = 0;
    size_t ready_cpu = 0;
    size_t proc_cpus = 0;
    size_t traces = 0;
    size_t total = 0;
};

constexpr SegmentLayout segment_layout(int32_t max_cpus) {
    const auto n = size_t(max_cpus);
    SegmentLayout l;
    l.cpus = round_up(sizeof(Segment), 64);
    l.ready_cpu = l.cpus + n * sizeof(CpuSlot);
    l.proc_cpus = l.ready_cpu + size_t(kMaxProcs) * ready_cpu_words(max_cpus) * sizeof(int64_t);
    l.traces = round_up(l.proc_cpus + size_t(kMaxProcs) * proc_cpu_words(max_cpus) * 8, 64);
    l.total = l.traces + (n + 1) * sizeof(TraceRing);
    return l;
}

// Process slot `proc`'s counters of ready items bound strictly to a CPU,
// indexed by CPU slot. Written by the process (scheduler::Demand), read by
// others as hints.
inline std::atomic<int64_t>* ready_cpu_row(Segment& s, int32_t proc) {
    return &s.ready_cpu[std::ptrdiff_t(proc) * std::ptrdiff_t(ready_cpu_words(s.header.max_cpus))];
}
inline const std::atomic<int64_t>* ready_cpu_row(const Segment& s, int32_t proc) {
    return &s.ready_cpu[std::ptrdiff_t(proc) * std::ptrdiff_t(ready_cpu_words(s.header.max_cpus))];
}

// Process slot `proc`'s row of Segment::proc_cpus.
inline uint64_t* proc_cpus_row(Segment& s, int32_t proc) {
    return &s.proc_cpus[std::ptrdiff_t(proc) * std::ptrdiff_t(proc_cpu_words(s.header.max_cpus))];
}
inline const uint64_t* proc_cpus_row(const Segment& s, int32_t proc) {
    return &s.proc_cpus[std::ptrdiff_t(proc) * std::ptrdiff_t(proc_cpu_words(s.header.max_cpus))];
}

// The trace rings of a segment: one per CPU slot, and the process ring last.
inline int32_t trace_ring_count(const Header& h) {
    return h.max_cpus + 1;
}
inline int32_t process_trace_ring(const Header& h) {
    return h.max_cpus;
}

static_assert(std::atomic<uint32_t>::is_always_lock_free);
static_assert(std::atomic<uint64_t>::is_always_lock_free);
static_assert(std::atomic<int64_t>::is_always_lock_free);
static_assert((kTraceRingSize & (kTraceRingSize - 1)) == 0);
static_assert(sizeof(TraceRecord) == 64);
static_assert(alignof(CpuSlot) <= 64 && alignof(TraceRing) <= 64 && sizeof(CpuSlot) % 64 == 0);

} // namespace coexec::shm
