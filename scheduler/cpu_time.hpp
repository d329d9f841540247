// CPU time by process and by runtime label: the stint each Running CPU is
// in (CpuSlot::stint_proc, stint_start_ns) and the totals the closed ones
// add up to (ProcSlot::cpu_time_ns, label_time_ns). The only writer of
// those fields after format() and register_process(). The stints change
// where a CPU changes hands: under the segment lock, or by its holder in a
// same-process hand-off; the totals are read lock-free.
#pragma once

#include "shm/layout.hpp"

#include <array>
#include <cstdint>

namespace coexec::scheduler {

// CPU time by shm::LabelClass, in nanoseconds.
using LabelTimes = std::array<uint64_t, shm::kLabelClasses>;

class CpuTime {
  public:
    explicit CpuTime(shm::Segment& segment) : s_(segment) {}

    // `cpu` runs a thread of `proc` from `now`: a stint of another process
    // ends and one of `proc` starts (nothing changes if it was `proc`'s).
    void run_for(int32_t cpu, int32_t proc, uint64_t now);
    // `cpu` runs a thread of `proc` from `now` (a lender took it back),
    // with no stint open before.
    void start(int32_t cpu, int32_t proc, uint64_t now);
    // `cpu` passes within its process to a thread of label class `next`:
    // the stint so far is the old holder's class, so it ends and another
    // starts, when the classes differ.
    void relabel(int32_t cpu, shm::LabelClass next, uint64_t now);
    // `cpu` stops running coexec work: its stint, if any, ends at `now`.
    void stop(int32_t cpu, uint64_t now);
    // As stop(), when the stint is `proc`'s (the process leaves).
    void stop_if_of(int32_t cpu, int32_t proc, uint64_t now);

    // Lock-free: CPU time `proc` received, including open stints.
    uint64_t total_ns(int32_t proc, uint64_t now) const;
    // Lock-free: the same by the label class of the holding thread (the
    // class it has when a stint ends; open stints count under the class
    // their holder has now). The classes add up to total_ns() but for a
    // stint that closes between the two reads.
    LabelTimes by_label_ns(int32_t proc, uint64_t now) const;

  private:
    // The label class of the thread holding `cpu` now (Other without one).
    shm::LabelClass holder_class(const shm::CpuSlot& cpu) const;

    shm::Segment& s_;
};

} // namespace coexec::scheduler
