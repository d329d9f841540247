// The segment's invariants, checked in one place: by the `coexec check`
// command on a live node, at every release of the segment lock in debug
// builds (scheduler_lock.hpp), by an entering member before it trusts a
// segment it did not write (MemberWatch::claim_entry_check()), and by
// tests and fuzzers.
#pragma once

#include "shm/layout.hpp"

#include <string>
#include <vector>

namespace coexec::scheduler {

// Every violated invariant of `segment`, one readable sentence each (empty when
// the segment is sound). The caller holds the segment lock, or nobody else uses
// the segment. Safe on arbitrary bytes: every index is bounds-checked before
// use and every list walk is bounded and detects cycles, so garbage yields
// violations, never a crash, an out-of-bounds read or a hang. Slots above
// the high-water marks (Header::threads_used, procs_used) are never read:
// nothing may refer to them. At most 64 sentences are returned, then one
// "... and N more violations". On a sound segment it allocates nothing (its
// scratch space, 28.5 KiB, is on the stack) and reads each slot once: it is
// meant to run after every locked operation in debug builds.
std::vector<std::string> check_invariants(const shm::Segment& segment);

} // namespace coexec::scheduler
