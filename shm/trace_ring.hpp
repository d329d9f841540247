// The trace rings' protocol: how ownership changes are appended to a ring
// in the segment and read back, without a lock, by any number of writers
// and readers in any processes.
//
// Writers take an index with fetch_add on the ring's head, claim the record
// at index % kTraceRingSize by moving its `seq` to 2*index+1 (odd: being
// written), write the payload and publish it as 2*index+2. A reader that
// finds 2*index+2 before and after copying the payload has a whole record;
// any other value means it was overwritten by a later lap, is still being
// written, or was dropped. Readers keep their own positions, so a slow
// reader loses the oldest records (and counts them), never a writer's time;
// a record still being written is read later, when its writer has finished
// it, so a writer descheduled mid-record loses nothing.
#pragma once

#include "layout.hpp"

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace coexec::shm {

// One decoded trace record. Which thread it names depends on the kind: the
// new holder for Grant, Handoff, Wake and Reclaim; the holder for Idle,
// Sleep, Lend, Preempt and Label; the former holder for Release and Evict (none
// when the CPU was not held); none for the process events, whose `label`
// is the process name.
struct TraceEvent {
    uint64_t time_ns = 0; // CLOCK_MONOTONIC
    TraceKind kind = TraceKind::None;
    int32_t cpu = kNone;    // CPU slot index; kNone for process events
    int32_t pid = 0;        // 0 when no process is named
    int32_t tid = 0;        // kernel tid; 0 when unknown or none
    int32_t proc = kNone;   // process slot
    int32_t thread = kNone; // thread slot
    // Reap: when the dead process was last known to run (its last beat).
    uint64_t detail = 0;
    std::array<char, kTraceLabelSize> label{}; // NUL-padded, maybe unterminated

    // The label up to its first NUL.
    std::string_view label_text() const;
};

// Appends `event` to `ring`. Lock-free and async-signal-safe: no
// allocation, no lock, no system call. Any number of threads of any
// processes may append to one ring at once. Returns false when the record
// was dropped because its slot was still being written by a writer a whole
// lap behind, or by one that died writing it (the readers count it lost).
bool trace_append(TraceRing& ring, const TraceEvent& event);

// The kind's name in traces ("grant", "evict", ...); "?" when out of range.
const char* trace_kind_name(TraceKind kind);

// One reader's position in one ring. The ring may hold arbitrary bytes (a
// corrupt segment): nothing it reads is used as an index.
class TraceRingReader {
  public:
    // Reads from the ring's current head on: only records appended from now.
    void start(const TraceRing& ring);
    // Appends to `out` the records completed since the last poll, and the
    // pending ones (see below) completed since. Records come in ring order,
    // except that a pending record comes when it is complete; every record
    // carries its time. Counts the records lost: overwritten before they
    // were read, or pending when a later lap took their slot.
    //
    // A record claimed but not yet complete stays pending: its writer may be
    // descheduled mid-record, and is looked for again at every poll. One
    // whose writer died mid-record, or that a writer dropped (its slot was
    // still claimed a lap before), never completes; it stays pending until
    // the ring laps it, or until abandon_pending().
    void poll(const TraceRing& ring, std::vector<TraceEvent>& out);
    // Records pending now.
    size_t pending() const { return pending_.size(); }
    // Gives up on the pending records: each counts as unfinished.
    void abandon_pending();
    // Records overwritten before they were read.
    uint64_t overwritten() const { return overwritten_; }
    // Records never completed while this reader looked for them: their
    // writer died or stopped mid-record, or dropped them.
    uint64_t unfinished() const { return unfinished_; }
    // The index of the next record this reader will look at first.
    uint64_t position() const { return next_; }

  private:
    enum class Read { Done, Overwritten, NotYet };
    // Reads ring index `index` into `out` if it is complete.
    static Read read(const TraceRing& ring, uint64_t index, std::vector<TraceEvent>& out);

    uint64_t next_ = 0;
    std::vector<uint64_t> pending_; // indices below next_, fewer than kTraceRingSize
    uint64_t overwritten_ = 0;
    uint64_t unfinished_ = 0;
};

} // namespace coexec::shm
