// Creating, attaching and validating the shared segment.
#pragma once

#include "layout.hpp"

#include <functional>
#include <string>
#include <sys/types.h>
#include <unistd.h>

namespace coexec::shm {

// Why a segment could not be used. `message` says it in words for users.
struct SegmentError {
    enum class Kind { None, NotFound, Foreign, VersionMismatch, Permission, System };
    Kind kind = Kind::None;
    std::string message;
    explicit operator bool() const { return kind != Kind::None; }
};

struct SegmentOptions {
    std::string name = "coexec"; // shared_memory.name
    Isolation isolation = Isolation::User;
    bool create = true; // false: attach to an existing segment only
    // CPU slots a segment this open creates has room for (1..kMaxCpus); 0:
    // the node's CPUs (sysconf(_SC_NPROCESSORS_CONF)), up to kMaxCpus. A
    // segment that exists keeps the size it was created with.
    int32_t cpu_slots = 0;
    // Runs once, under the creation lock, on a freshly zeroed segment (after
    // the header's fixed fields are set and before the magic is published).
    std::function<void(Segment&)> initialize;
};

// The POSIX shm name for these options ("/coexec.<name>.u<uid>" and so on);
// empty for Isolation::Process, which has no name.
std::string segment_shm_name(const SegmentOptions& options);

// How many CPU slots a segment created with these options has.
int32_t cpu_slots_for(const SegmentOptions& options);

// Sizes a segment of segment_layout(cpus).total bytes for `cpus` CPU slots
// (Header::total_size and max_cpus) and places its per-CPU arrays. Part of
// creating a segment; tests use it to plant segments of their own.
void lay_out(Segment& segment, int32_t cpus);

// Whether a segment's per-CPU arrays are where its size (Header::max_cpus)
// puts them: every process indexes them without further checks, so each
// mapping checks this first.
bool placed_by_layout(const Segment& segment);

// Parses "process", "user", "group" or "public".
bool parse_isolation(const std::string& text, Isolation& out);
const char* isolation_name(Isolation isolation);

// A mapping of the segment; unmapped on destruction. Movable, not copyable.
// The last mapping of a segment to be destroyed removes the segment's name
// when no process is registered in it, so a reader (`coexec top`) racing the
// last process out leaves nothing in /dev/shm.
class SegmentMapping {
  public:
    SegmentMapping() = default;
    ~SegmentMapping();
    SegmentMapping(SegmentMapping&& other) noexcept;
    SegmentMapping& operator=(SegmentMapping&& other) noexcept;
    SegmentMapping(const SegmentMapping&) = delete;
    SegmentMapping& operator=(const SegmentMapping&) = delete;

    // Attaches to (or creates) the segment. On failure returns an empty
    // mapping and fills `error`. With `options.create`, an existing segment
    // this version cannot use (another ABI version, foreign, truncated or
    // half-created) is formatted afresh when no open mapping of it exists
    // in any process; one still in use is refused (VersionMismatch or
    // Foreign). Without `create` such a segment is always refused.
    static SegmentMapping open(const SegmentOptions& options, SegmentError& error);

    // Maps the same segment once more, at a different address.
    SegmentMapping map_again(SegmentError& error) const;

    // Removes the segment's name so the next open creates a fresh one.
    // Existing mappings stay valid.
    static bool unlink(const SegmentOptions& options, std::string& message);

    // Removes the segment's name if no other open mapping of it exists in
    // any process (every open() holds a shared lock on the segment until its
    // mapping is destroyed); true if it did. For the last process to leave:
    // an instance leaves nothing behind in /dev/shm. A process that opens
    // the name concurrently either sees the segment before it is removed and
    // keeps it, or creates a fresh one.
    bool remove_if_last() const;
    // For a process that exits while its threads still use the segment (it
    // cannot leave): removes the name as remove_if_last() does; else drops
    // this mapping's share of the in-use lock, which it must have marked
    // departing first (ProcSlot::departing), so that the last mapping to
    // close removes the name. The mapping stays valid. True if it removed it.
    bool leave_at_exit() const;

    Segment* get() const { return segment_; }
    Segment* operator->() const { return segment_; }
    explicit operator bool() const { return segment_ != nullptr; }
    const std::string& shm_name() const { return shm_name_; }
    size_t size() const { return size_; }

  private:
    SegmentMapping(Segment* s, size_t size, int fd, std::string name)
        : segment_(s), size_(size), fd_(fd), shm_name_(std::move(name)), owner_(::getpid()) {}
    void reset();
    // Whether the name still refers to this segment. Call with the
    // creation lock held.
    bool still_named() const;
    // remove_if_last() (keep_share) and leave_at_exit() (not): removes the
    // name if this is the last open mapping; otherwise keeps this mapping's
    // share of the in-use lock, or drops it.
    bool remove_name_if_alone(bool keep_share) const;
    // Drops this mapping's share of the in-use lock, first removing the name
    // if it is the last mapping and no registered process stays (none, or
    // only departing ones).
    void leave() const;
    Segment* segment_ = nullptr;
    size_t size_ = 0; // bytes mapped
    int fd_ = -1;
    std::string shm_name_;
    pid_t owner_ = 0; // the process that made the mapping
};

} // namespace coexec::shm
