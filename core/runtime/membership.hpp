// The process's membership in the shared instance: the mapped segment, the
// scheduler over it, the process slot, and the CPUs the instance manages.
#pragma once

#include "config/config.hpp"
#include "scheduler/shared_scheduler.hpp"
#include "shm/segment.hpp"

#include <memory>
#include <string>
#include <vector>

namespace coexec::core {

class Membership {
  public:
    Membership() = default;
    Membership(const Membership&) = delete;
    Membership& operator=(const Membership&) = delete;

    // Maps (or creates) the segment `config` names, reclaims it when every
    // process on it is gone, and registers this process. Returns a nosv
    // error code, with the reason in `why`.
    int enter(const config::Config& config, std::string& why);
    // Frees the process slot, its threads and CPUs, and removes the
    // segment's name when this was the last process on it.
    void leave();
    // At process exit without leave() (threads of a runtime that does not
    // join them at exit, or that the program started, still use coexec):
    // removes the segment's name when no other process has the segment
    // open; else marks this process departing, so that the last of the
    // others to close removes it. The slot stays; a member reaps it once
    // the process is gone.
    void leave_at_exit() const;

    shm::Segment& segment() const { return *mapping_.get(); }
    scheduler::SharedScheduler& scheduler() const { return *sched_; }
    int32_t proc() const { return proc_; }

    // ---- topology (logical indices) ----------------------------------
    int cpu_count() const { return int(cpu_system_ids_.size()); }
    int numa_count() const { return int(numa_system_ids_.size()); }
    const std::vector<int>& cpu_system_ids() const { return cpu_system_ids_; }
    const std::vector<int>& numa_system_ids() const { return numa_system_ids_; }
    int numa_of_cpu(int cpu) const { return segment().cpus[cpu].numa; }
    // Logical index of a system CPU / NUMA id, or -1 if not managed.
    int logical_cpu(int system_id) const;
    int logical_numa(int system_id) const;

  private:
    shm::SegmentMapping mapping_;
    std::unique_ptr<scheduler::SharedScheduler> sched_;
    int32_t proc_ = shm::kNone;
    std::vector<int> cpu_system_ids_, numa_system_ids_;
};

} // namespace coexec::core
