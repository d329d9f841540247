// The invariant checker of a torture run: a thread that maps the members'
// segment and, every few milliseconds, takes the segment lock and runs
// scheduler::check_invariants() on it; it also watches for CPUs that stay
// held by a member that died (docs/design.md, invariant 2).
#pragma once

#include "shm/layout.hpp"

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <sys/types.h>
#include <thread>
#include <vector>

namespace coexec::torture {

// What the harness knows about deaths and stops, shared with the checker.
// Thread-safe.
class Timeline {
  public:
    struct Death {
        int serial = 0;                 // the member's number
        uint64_t died_ns = 0;           // when the harness reaped it
        uint64_t stopped_ns_before = 0; // stopped_ns() at that moment
    };

    // One more / one less member is SIGSTOPped.
    void stopped(uint64_t now);
    void continued(uint64_t now);
    // Total time, up to `now`, during which at least one member was stopped.
    uint64_t stopped_ns(uint64_t now) const;

    // The member (pid, kernel start time) is dead since `now`.
    void died(pid_t pid, uint64_t start_time, int serial, uint64_t now);
    std::optional<Death> death_of(pid_t pid, uint64_t start_time) const;

  private:
    uint64_t stopped_ns_locked(uint64_t now) const;
    mutable std::mutex mu_;
    int stopped_now_ = 0;
    uint64_t stopped_since_ = 0, stopped_total_ = 0;
    std::map<std::pair<pid_t, uint64_t>, Death> deaths_;
};

class Checker {
  public:
    // `segment` stays mapped while the checker lives.
    Checker(shm::Segment& segment, const Timeline& timeline, uint32_t min_ms, uint32_t max_ms,
            uint32_t lost_ms, uint64_t seed);
    ~Checker();
    Checker(const Checker&) = delete;
    Checker& operator=(const Checker&) = delete;

    void start();
    void stop(); // joins the thread

    // One check now, from the calling thread (the checker thread must be
    // stopped or never started).
    void check_once();

    uint64_t checks() const { return checks_.load(std::memory_order_relaxed); }
    // Checks that found at least one violation.
    uint64_t failed_checks() const { return failed_checks_.load(std::memory_order_relaxed); }
    // Every distinct violation seen, in order of first sighting.
    std::vector<std::string> violations() const;
    // Distinct (CPU, dead process) pairs held longer than allowed.
    int lost_during_run() const;
    // The longest a CPU was seen Running for a dead member, and the longest
    // part of such a hold during which a live process had work for it
    // (both without the time some member was stopped).
    uint64_t max_dead_hold_ns() const { return max_dead_hold_ns_.load(std::memory_order_relaxed); }
    uint64_t max_wanted_hold_ns() const {
        return max_wanted_hold_ns_.load(std::memory_order_relaxed);
    }

  private:
    void loop();
    // Under the segment lock: CPUs that dead members hold while others
    // want them.
    void scan_dead_holders(uint64_t now, std::vector<std::string>& found);
    // Under the segment lock: a live process has ready work for `cpu`.
    bool wanted(int cpu) const;
    void record(const std::vector<std::string>& found);

    shm::Segment& s_;
    const Timeline& timeline_;
    uint32_t min_ms_, max_ms_;
    uint64_t lost_ns_;
    uint64_t seed_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
    std::atomic<uint64_t> checks_{0}, failed_checks_{0}, max_dead_hold_ns_{0},
        max_wanted_hold_ns_{0};
    // The previous scan (checker thread only): when, and Timeline::stopped_ns
    // then; and how long each (CPU, dead pid) was held while wanted.
    uint64_t prev_scan_ns_ = 0, prev_stopped_ns_ = 0;
    std::map<std::pair<int, pid_t>, uint64_t> wanted_hold_ns_;
    mutable std::mutex mu_;
    std::vector<std::string> violations_;
    std::set<std::string> seen_;
    std::set<std::pair<int, pid_t>> lost_; // (CPU, pid)
    bool dumped_ = false;
};

// A readable dump of the segment's CPUs, processes and used thread slots, for
// a failure report. The caller holds the segment lock, or nobody else uses
// the segment.
std::string dump_segment(const shm::Segment& s);

} // namespace coexec::torture
