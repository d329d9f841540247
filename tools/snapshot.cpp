#include "snapshot.hpp"

#include "config/config.hpp"
#include "scheduler/shared_scheduler.hpp"
#include "shm/clock.hpp"
#include "shm/liveness.hpp"
#include "shm/segment.hpp"

#include <algorithm>
#include <cstring>

namespace coexec::cli {
namespace {

using shm::CpuState;
using shm::kMaxProcs;
using shm::kMaxThreads;

// Display reads: every field below may be changing under us in another
// process, so relaxed loads suffice; a stale or torn value only makes one
// refresh show an odd row, and every index is checked before use.
constexpr auto rlx = std::memory_order_relaxed;

// Copies a fixed-size, possibly unterminated or torn C string field.
template <size_t N>
std::string printable(const char (&field)[N]) {
    char copy[N];
    std::memcpy(copy, field, N);
    std::string out;
    for (size_t i = 0; i < N && copy[i] != '\0'; ++i)
        out += (copy[i] >= 0x20 && copy[i] < 0x7f) ? copy[i] : '?';
    return out;
}

const char* state_name(CpuState s) {
    switch (s) {
    case CpuState::Free:
        return "free";
    case CpuState::Running:
        return "running";
    case CpuState::Idle:
        return "idle";
    case CpuState::Sleeping:
        return "sleeping";
    case CpuState::Lent:
        return "lent";
    }
    return "unknown";
}

bool valid_proc(int32_t p) {
    return p >= 0 && p < kMaxProcs;
}
bool valid_thread(int32_t t) {
    return t >= 0 && t < kMaxThreads;
}

// Whether a CPU in state `s` has a holder: running, idle, sleeping or lent.
// A state this version does not know names no holder to trust.
bool has_holder(CpuState s) {
    switch (s) {
    case CpuState::Running:
    case CpuState::Idle:
    case CpuState::Sleeping:
    case CpuState::Lent:
        return true;
    case CpuState::Free:
        return false;
    }
    return false;
}

// The pid of process slot `p` when the snapshot lists it: Alive (acquire:
// register_process() sets the pid before it publishes the state) with a
// pid > 0. Else 0.
int32_t listed_pid(const shm::ProcSlot& p) {
    if (p.state.load(std::memory_order_acquire) != shm::ProcState::Alive) return 0;
    const int32_t pid = p.pid;
    return pid > 0 ? pid : 0;
}

// The header's CPU count when it is in range and the CPU slots are where
// the segment's size puts them, else 0 (no CPU rows). open_existing()
// refuses such a segment, but the snapshot does not rely on it: whatever
// bytes the segment holds, every read stays in bounds.
int checked_cpu_count(const shm::Segment& s) {
    const shm::Header& h = s.header;
    const bool sized = h.max_cpus >= 1 && h.max_cpus <= shm::kMaxCpus &&
                       h.total_size == shm::segment_layout(h.max_cpus).total &&
                       shm::placed_by_layout(s);
    return sized && h.cpu_count >= 0 && h.cpu_count <= h.max_cpus ? h.cpu_count : 0;
}

// The header's NUMA node count when it is in range, else 0 (no CPU's node
// is known).
int checked_numa_count(const shm::Header& h) {
    return h.numa_count >= 0 && h.numa_count <= shm::kMaxNuma ? h.numa_count : 0;
}

CpuRow cpu_row(const shm::Segment& s, int index, uint64_t now) {
    const shm::CpuSlot& slot = s.cpus[index];
    CpuRow row;
    row.cpu = index;
    // Fixed when the table is laid out; each is read once, then checked.
    const int32_t system_id = slot.system_id, numa = slot.numa, core = slot.core;
    row.system_cpu_known = system_id >= 0;
    row.system_cpu = row.system_cpu_known ? system_id : 0;
    row.numa_known = numa >= 0 && numa < checked_numa_count(s.header);
    row.numa = row.numa_known ? numa : 0;
    row.core_known = core >= 0;
    row.core = row.core_known ? core : 0;
    CpuState state = slot.state.load(rlx);
    row.state = state_name(state);
    int32_t proc = slot.owner_proc.load(rlx);
    int32_t thread = slot.owner_thread.load(rlx);
    if (!has_holder(state) || !valid_proc(proc) || !valid_thread(thread)) return row;
    const shm::ProcSlot& p = s.procs[proc];
    const shm::ThreadSlot& t = s.threads[thread];
    // An owner whose slots are not in use (it left while this row was read,
    // or the segment is damaged) has no pid or tid to show; neither has a
    // worker that has not started yet (tid 0).
    const int32_t pid = listed_pid(p);
    const int32_t tid = t.tid.load(rlx);
    if (pid == 0 || t.state.load(rlx) == shm::ThreadState::Unused || tid <= 0) return row;
    row.held = true;
    row.proc = proc;
    row.pid = pid;
    row.name = printable(p.name);
    row.tid = tid;
    row.label = printable(t.label);
    uint64_t since = slot.since_ns.load(rlx);
    row.held_ns = now > since ? now - since : 0;
    return row;
}

ProcRow proc_row(scheduler::SharedScheduler& sched, int slot, int32_t pid, uint64_t now) {
    const shm::ProcSlot& p = sched.segment().procs[slot];
    ProcRow row;
    row.slot = slot;
    row.pid = pid;
    row.name = printable(p.name);
    const int64_t ready = p.ready_total.load(rlx);
    row.ready_known = ready >= 0;
    row.ready = row.ready_known ? ready : 0;
    // The label times before the CPU time: a stint that ends between the two
    // reads then counts in its class up to `now` and in the CPU time up to
    // its end, normally past `now`. A class above the CPU time is then
    // damage (or a rarer race), shown as unknown.
    // SharedScheduler walks header.cpu_count CPUs: only with a sane count.
    if (checked_cpu_count(sched.segment()) == sched.cpu_count()) {
        row.label_time_ns = sched.cpu_time().by_label_ns(slot, now);
        row.cpu_time_ns = sched.cpu_time().total_ns(slot, now);
    } else {
        for (int l = 0; l < shm::kLabelClasses; ++l)
            row.label_time_ns[l] = p.label_time_ns[l].load(rlx);
        row.cpu_time_ns = p.cpu_time_ns.load(rlx);
    }
    for (int l = 0; l < shm::kLabelClasses; ++l) {
        row.label_time_known[l] = row.label_time_ns[l] <= row.cpu_time_ns;
        if (!row.label_time_known[l]) row.label_time_ns[l] = 0;
    }
    row.handoffs = p.handoffs.load(rlx);
    row.preemptions = p.preemptions.load(rlx);
    const int32_t threads = p.threads.load(rlx);
    row.threads_known = threads >= 0 && threads <= kMaxThreads;
    row.threads = row.threads_known ? threads : 0;
    row.alive = scheduler::MemberWatch::member_alive(p);
    return row;
}

SegmentInfo segment_info(const shm::Segment& s, const std::string& shm_name, uint64_t now) {
    const shm::Header& h = s.header;
    SegmentInfo info;
    info.shm_name = shm_name;
    info.size = h.total_size;
    info.abi_version = h.abi_version;
    info.age_ns = h.created_ns != 0 && now > h.created_ns ? now - h.created_ns : 0;
    info.quantum_ns = h.config.quantum_ns;
    info.preempt_after_ns = h.config.preempt_after_ns;
    info.governor = h.config.governor_policy <= 2
                        ? config::governor_name(config::GovernorPolicy(h.config.governor_policy))
                        : "unknown";
    info.governor_spins = h.config.governor_spins;
    info.isolation = shm::isolation_name(h.config.isolation);
    info.cpu_count = h.cpu_count;
    info.numa_count = h.numa_count;
    info.cpu_origin = printable(h.cpu_origin);
    info.quota_cpus = std::max(0, int(h.quota_cpus)); // a torn or corrupt value shows as none
    info.quota_origin = printable(h.quota_origin);
    for (const auto& t : s.threads)
        if (t.state.load(rlx) != shm::ThreadState::Unused) ++info.threads_used;
    const int32_t unheld = h.unheld_cpus.load(rlx);
    info.unheld_cpus_known = unheld >= 0 && unheld <= checked_cpu_count(s);
    info.unheld_cpus = info.unheld_cpus_known ? unheld : 0;
    info.recoveries = h.recoveries.load(rlx);
    const uint32_t recorders = h.trace_recorders.load(rlx);
    info.trace_recorders_known = recorders <= uint32_t(shm::kMaxRecorders);
    info.trace_recorders = info.trace_recorders_known ? recorders : 0;
    return info;
}

// Holders change under the segment lock, which a display tool must never
// wait for; a reader preempted halfway through one pass over the table could
// show a thread on two CPUs. So the table is read until two passes in a row
// agree (since_ns only grows, so equal passes saw no change in between).
std::vector<CpuRow> cpu_table(const shm::Segment& s, uint64_t now) {
    constexpr int kMaxPasses = 50;
    std::vector<CpuRow> previous;
    for (int pass = 0; pass < kMaxPasses; ++pass) {
        std::vector<CpuRow> rows;
        for (int c = 0, n = checked_cpu_count(s); c < n; ++c)
            rows.push_back(cpu_row(s, c, now));
        if (rows == previous) break;
        previous = std::move(rows);
    }
    return previous;
}

} // namespace

Snapshot take_snapshot(shm::Segment& segment, const std::string& shm_name) {
    scheduler::SharedScheduler sched(segment);
    Snapshot snap;
    snap.taken_ns = shm::now_ns();
    snap.segment = segment_info(segment, shm_name, snap.taken_ns);
    snap.cpus = cpu_table(segment, snap.taken_ns);
    for (int p = 0; p < kMaxProcs; ++p) {
        const int32_t pid = listed_pid(segment.procs[p]);
        if (pid == 0) continue;
        ProcRow row = proc_row(sched, p, pid, snap.taken_ns);
        for (const auto& c : snap.cpus)
            row.cpus += c.held && c.proc == p ? 1 : 0;
        snap.procs.push_back(row);
    }
    snap.segment.procs_used = int(snap.procs.size());
    return snap;
}

} // namespace coexec::cli
