// A point-in-time copy of the segment, taken without its lock, for display.
// The CPU table in it is consistent: two reads in a row agreed on it.
#pragma once

#include "shm/layout.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace coexec::cli {

// One managed CPU and whoever holds it. A value the segment holds out of
// its range (damaged, or read mid-change) is not shown: its `*_known` flag
// is false, the field holds 0, and the views print "?" (null in JSON).
// Owner fields are set only when `held` is true: state running, idle,
// sleeping or lent, with an owner process slot that is Alive with a pid > 0
// and an owner thread slot in use with a tid > 0 (a worker that has not
// started yet has none).
struct CpuRow {
    int cpu = 0;        // logical index in the segment
    int system_cpu = 0; // kernel CPU number
    int numa = 0;       // logical NUMA node (known: below the header's numa_count)
    int core = 0;       // system id of the core
    bool system_cpu_known = true;
    bool numa_known = true;
    bool core_known = true;
    std::string state; // "free", "running", "idle", "sleeping", "lent" or "unknown"
    bool held = false;
    int proc = -1; // process slot of the holder
    int pid = 0;
    int tid = 0;
    std::string name;  // process name
    std::string label; // label of the thread or of the task it runs
    uint64_t held_ns = 0;

    bool operator==(const CpuRow&) const = default;
};

// One process registered in the segment: an Alive slot with a pid > 0. As
// in CpuRow, a value out of range has its `*_known` flag false and holds 0.
struct ProcRow {
    int slot = 0;
    int pid = 0;
    std::string name;
    int cpus = 0; // CPUs it holds now
    int64_t ready = 0;
    bool ready_known = true; // false: ready_total is negative
    uint64_t cpu_time_ns = 0;
    // cpu_time_ns by the runtime its threads were labelled with, indexed by
    // shm::LabelClass (openmp, tbb, pocl, other). A class whose time is above
    // cpu_time_ns is not known.
    std::array<uint64_t, shm::kLabelClasses> label_time_ns{};
    std::array<bool, shm::kLabelClasses> label_time_known = [] {
        std::array<bool, shm::kLabelClasses> all;
        all.fill(true);
        return all;
    }();
    uint64_t handoffs = 0;
    uint64_t preemptions = 0; // times its threads gave way to the safety net
    int threads = 0;
    bool threads_known = true; // false: outside 0..kMaxThreads
    bool alive = true;         // false: died, not reaped yet
};

// Segment-wide facts and usage.
struct SegmentInfo {
    std::string shm_name;
    uint64_t size = 0;
    uint32_t abi_version = 0;
    uint64_t age_ns = 0; // 0 when the segment does not record its creation
    uint64_t quantum_ns = 0;
    uint64_t preempt_after_ns = 0; // 0: no preemption
    std::string governor;
    uint32_t governor_spins = 0;
    std::string isolation;
    int cpu_count = 0;
    int numa_count = 0;
    std::string cpu_origin; // why these CPUs (affinity mask, cgroup cpuset, binding)
    int quota_cpus = 0;     // > 0: a cgroup CPU quota allows this many CPUs
    std::string quota_origin;
    int procs_used = 0;
    int procs_max = shm::kMaxProcs;
    int threads_used = 0;
    int threads_max = shm::kMaxThreads;
    int unheld_cpus = 0;
    bool unheld_cpus_known = true; // false: outside 0..cpu_count (the field holds 0)
    uint64_t recoveries = 0;
    uint32_t trace_recorders = 0;      // `coexec record` processes recording it
    bool trace_recorders_known = true; // false: above kMaxRecorders (the field holds 0)
};

struct Snapshot {
    uint64_t taken_ns = 0; // monotonic clock, comparable across snapshots
    SegmentInfo segment;
    std::vector<CpuRow> cpus;
    std::vector<ProcRow> procs;
};

// Copies `segment` (already checked by open_existing) into a snapshot; it
// only reads the segment (non-const because SharedScheduler is).
// Every index read from the segment is bounds-checked and every string is
// cut at its field size and made printable, so concurrent writers can make
// a row stale or odd but never make this read out of bounds. A value shown
// is in its range, or marked unknown (the `*_known` flags).
Snapshot take_snapshot(shm::Segment& segment, const std::string& shm_name);

} // namespace coexec::cli
