// This process's membership of coexec on behalf of TBB: whether it may join,
// joining once, leaving when TBB lets go, and the one-line messages on stderr.
#pragma once

#include <atomic>

namespace coexec::tbb_rml {

// Whether this process is a member of coexec for TBB's sake, and what still
// needs it to stay one (live servers, attached masters, the keeper). One
// instance (TbbMembership::instance()); every method is thread-safe.
class TbbMembership {
  public:
    static TbbMembership& instance();

    // Joins coexec unless COEXEC_DISABLE=1 or coexec_init_quiet() fails; in
    // those cases prints one line on stderr and returns false. Idempotent.
    bool start();

    // Leaves coexec if start() joined it and no server is alive any more.
    // With servers still alive (exit while workers run), or masters still
    // attached, it stays joined: their threads still hold coexec tasks.
    void stop();

    // True between a successful start() and stop().
    bool active() const { return active_.load(std::memory_order_acquire); }

    // Servers count themselves so stop() knows whether workers may remain.
    void server_created() { live_servers_.fetch_add(1, std::memory_order_acq_rel); }
    void server_destroyed() { live_servers_.fetch_sub(1, std::memory_order_acq_rel); }
    // So do the program threads attached as masters (master.h): stop()
    // leaves coexec only when none is attached.
    void master_attached() { attached_masters_.fetch_add(1, std::memory_order_acq_rel); }
    void master_detached() { attached_masters_.fetch_sub(1, std::memory_order_acq_rel); }
    // One master at a time keeps its CPU between algorithms (master.h):
    // true for the caller that becomes it, until it gives the role back.
    bool claim_keeper() {
        bool expected = false;
        return keeper_.compare_exchange_strong(expected, true, std::memory_order_acq_rel);
    }
    void release_keeper() { keeper_.store(false, std::memory_order_release); }

    // COEXEC_VERBOSE=1 was set when the library loaded.
    bool verbose() const { return verbose_; }

  private:
    TbbMembership();

    const bool verbose_;
    std::atomic<bool> active_{false};
    std::atomic<bool> failed_{false};
    std::atomic<int> live_servers_{0};
    std::atomic<int> attached_masters_{0};
    std::atomic<bool> keeper_{false};
};

// Prints "coexec tbb: <message>" as one line on stderr (printf-style).
void log_line(const char* format, ...) __attribute__((format(printf, 1, 2)));

} // namespace coexec::tbb_rml
