// The segment's trace rings, and the recorder slots that switch them on
// (Header::recorder_pids, trace_recorders): the only writer of both. The
// scheduler reports every ownership change it makes here; a change is
// written to the CPU's ring (or to the process ring) while at least one
// recorder (`coexec record`) is on. See docs/trace.md.
#pragma once

#include "shm/layout.hpp"

#include <cstdint>
#include <sys/types.h>

namespace coexec::scheduler {

class TraceRings {
  public:
    explicit TraceRings(shm::Segment& segment) : s_(segment) {}

    // Under the segment lock (SharedScheduler::add_recorder() and its
    // neighbours take it): the recorder slots. add_recorder() is false when
    // kMaxRecorders already record; reap_recorders() frees the slots of
    // recorders that died.
    bool add_recorder(pid_t pid);
    void remove_recorder(pid_t pid);
    void reap_recorders();

    // Lock-free: whether a recorder is on.
    bool recording() const {
        return s_.header.trace_recorders.load(std::memory_order_relaxed) != 0;
    }

    // Lock-free and async-signal-safe, like every writer below: an
    // ownership change of `cpu` that names `thread` (kNone for none) at
    // `now` (0: read the clock); shm/trace_ring.hpp says what each kind
    // names.
    void cpu_event(shm::TraceKind kind, int32_t cpu, int32_t thread, uint64_t now = 0) {
        // Relaxed: the switch publishes no data (each record carries its
        // own ordering in its `seq`), so a stale read only adds or omits a
        // record at the moment a recorder starts or stops. The recorder
        // switches on under the segment lock, which orders it before every
        // later locked change anyway.
        if (recording()) [[unlikely]]
            append_cpu_event(kind, cpu, thread, now);
    }
    // A process event (Join, Leave, Reap) of `proc`, to the process ring.
    void process_event(shm::TraceKind kind, int32_t proc, uint64_t now, uint64_t detail) {
        if (recording()) [[unlikely]]
            append_process_event(kind, proc, now, detail);
    }
    // A label change of `thread`, on the CPU it runs on if it runs: the
    // label names the runtime or task type in the CPU's slices.
    void label_event(int32_t thread) {
        if (recording()) [[unlikely]]
            append_label_event(thread);
    }

  private:
    // Sets Header::trace_recorders from the recorder slots.
    void count_recorders();
    void append_cpu_event(shm::TraceKind kind, int32_t cpu, int32_t thread, uint64_t now);
    void append_process_event(shm::TraceKind kind, int32_t proc, uint64_t now, uint64_t detail);
    void append_label_event(int32_t thread);

    shm::Segment& s_;
};

} // namespace coexec::scheduler
