// Reading the segment's trace rings for `coexec record`.
#pragma once

#include "scheduler/shared_scheduler.hpp"
#include "shm/trace_ring.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace coexec::cli {

// What a recording saw: the events in time order, and what the trace needs
// to name them.
struct Recording {
    uint64_t start_ns = 0; // CLOCK_MONOTONIC when recording started
    uint64_t end_ns = 0;   // ... and when it stopped
    // In time order (ties in ring order). The first ones, at start_ns,
    // describe the state found at the start: a Join for each member
    // (detail 1) and one event per held CPU (Grant, Idle, Sleep or Lend).
    std::vector<shm::TraceEvent> events;
    std::map<int32_t, std::string> process_names; // by pid
    std::map<int32_t, std::string> thread_names;  // by tid (its kernel name)
    std::vector<int> cpu_system_ids;              // by CPU slot index
    // Records lost: overwritten before they were read, or never finished by
    // their writer (it died or stopped mid-record, or dropped the record).
    uint64_t overwritten = 0;
    uint64_t unfinished = 0;
    uint64_t lost() const { return overwritten + unfinished; }
    std::string shm_name;
    // What made it, and the name of the CPU tracks' pseudo-process.
    std::string producer = "coexec record";
    std::string cpu_tracks_name = "CPUs (coexec)";
    uint64_t sample_period_ns = 0; // > 0: sampled (coexec record --native)
};

// A recorder: switches recording on in a segment, reads its rings, and
// switches it off. The segment must stay mapped for the recorder's lifetime.
class TraceRecorder {
  public:
    // Switches recording on and notes who holds each CPU and who is a
    // member, all under the segment lock, so that every locked change after
    // this point is in the rings. Throws std::runtime_error when
    // shm::kMaxRecorders recorders already record the segment.
    TraceRecorder(shm::Segment& segment, std::string shm_name);
    // Switches recording off if finish() was not called.
    ~TraceRecorder();
    TraceRecorder(const TraceRecorder&) = delete;
    TraceRecorder& operator=(const TraceRecorder&) = delete;

    // Reads the records written since the last poll. Poll at least every
    // few milliseconds: a ring holds shm::kTraceRingSize records, and older
    // ones are overwritten (and counted lost).
    void poll();
    // Switches recording off, polls until no record is pending (for at most
    // kPendingGraceNs: the rest are counted unfinished), and returns what
    // was read.
    Recording finish();

    // How long finish() waits for records still being written. Only a
    // writer that died or was stopped mid-record makes it wait this long; a
    // descheduled one finishes in a few time slices, even beside many CPU
    // hogs.
    static constexpr uint64_t kPendingGraceNs = 2'000'000'000;

  private:
    void name_new_threads(size_t from);
    // Records pending in all rings.
    size_t pending() const;
    void switch_off();

    scheduler::SharedScheduler sched_;
    Recording rec_;
    std::vector<shm::TraceRingReader> readers_;
    bool on_ = false;
};

} // namespace coexec::cli
