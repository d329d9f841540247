// This process's membership of coexec on behalf of PoCL's workers.
#pragma once

#include <atomic>
#include <mutex>

namespace coexec::pocl {

// Starts coexec lazily, when PoCL creates its first worker, so that processes
// that never use PoCL (a shell under `coexec run --pocl`) never join. When
// coexec cannot start it says so once on stderr and PoCL keeps its own threads.
class PoclMembership {
  public:
    // The one instance in the process.
    static PoclMembership& instance();

    // True when PoCL's workers should become coexec threads. The first call
    // joins coexec (coexec_init_quiet(), unless COEXEC_DISABLE=1); later
    // calls are cheap.
    bool start();

    // Bookkeeping of workers that are attached right now, so that the
    // destructor only shuts coexec down when none of them can still need it.
    void worker_attached() { live_workers_.fetch_add(1, std::memory_order_relaxed); }
    void worker_detached() { live_workers_.fetch_sub(1, std::memory_order_relaxed); }

    // True when COEXEC_VERBOSE=1.
    bool verbose() const { return verbose_; }

    PoclMembership(const PoclMembership&) = delete;
    PoclMembership& operator=(const PoclMembership&) = delete;

  private:
    PoclMembership();
    ~PoclMembership();
    void start_once();

    std::once_flag once_;
    bool active_ = false; // written once inside call_once, read after it
    bool verbose_ = false;
    // Only a count for the shutdown decision at exit; no data hangs on it,
    // so relaxed ordering is enough (exit happens after the joins it counts).
    std::atomic<int> live_workers_{0};
};

} // namespace coexec::pocl
