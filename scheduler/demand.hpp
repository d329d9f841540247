// A process's demand for CPUs, as other processes see it: its ready
// counters in the segment (ProcSlot::ready_*), and their only writer while
// the process is a member (ProcessTable zeroes them when it registers
// and when it leaves).
#pragma once

#include "scheduler/placement.hpp"
#include "shm/layout.hpp"

#include <atomic>

namespace coexec::scheduler {

class Demand {
  public:
    Demand(shm::Segment& segment, int32_t proc)
        : slot_(segment.procs[proc]), ready_cpu_(shm::ready_cpu_row(segment, proc)) {}

    // Counts `delta` ready items placed at `where`. Thread-safe: submitters
    // count lock-free while the process's queue owner counts pops.
    void add(const Placement& where, int delta) {
        constexpr auto rlx = std::memory_order_relaxed;
        // Read-modify-writes, relaxed: other processes only read these, as
        // hints, after ready_total.
        if (!where.strict || where.kind == Placement::Kind::Any)
            slot_.ready_any.fetch_add(delta, rlx);
        else if (where.kind == Placement::Kind::Cpu)
            ready_cpu_[where.index].fetch_add(delta, rlx);
        else
            slot_.ready_numa[where.index].fetch_add(delta, rlx);
        // ready_total last, seq_cst when work appears: it publishes the
        // counter above (readers check ready_total first), and pairs with the
        // seq_cst update of the CPU counters by a CPU going unheld
        // (CpuTable::set_state), so one of the two always sees the
        // other (Dekker).
        slot_.ready_total.fetch_add(delta, delta > 0 ? std::memory_order_seq_cst : rlx);
    }

    // Everything ready, for the owner's fast checks.
    int64_t total() const { return slot_.ready_total.load(std::memory_order_relaxed); }

  private:
    shm::ProcSlot& slot_;
    std::atomic<int64_t>* ready_cpu_;
};

} // namespace coexec::scheduler
