// Whether a managed thread should run under SCHED_BATCH right now
// (CpuBinding): yes, unless its wake-ups have lately waited behind a program
// outside coexec.
#pragma once

#include <algorithm>
#include <cstdint>

namespace coexec::core {

// SCHED_BATCH keeps a thread woken with a CPU from preempting the coexec
// thread that just handed it that CPU (docs/design.md, "Kernel policy:
// SCHED_BATCH"). But it also keeps it from preempting a program outside
// coexec that runs on the same CPU: the woken thread then waits out that
// program's time slice, milliseconds, on every wake-up, where a hand-off
// takes microseconds. So a thread woken
// kLateNs or more after the grant of a CPU that was unheld (no coexec thread
// ran there: the delay was the kernel's) runs under SCHED_OTHER for a stay,
// after which it tries SCHED_BATCH again. The stay doubles (up to
// kMaxStayNs) each time the next try is late as well, and starts over at
// kMinStayNs once SCHED_BATCH lasted kMaxStayNs. A try costs one late
// wake-up; at the longest stay that is well under 1 % of the time.
class BatchGuess {
  public:
    enum class Change { None, ToOther, ToBatch };

    static constexpr uint64_t kLateNs = 1'000'000;
    static constexpr uint64_t kMinStayNs = 10'000'000;
    static constexpr uint64_t kMaxStayNs = 1'000'000'000;

    // After each wake-up with a grant: the policy to switch to, given how
    // long after the grant of an unheld CPU the thread ran (`delay_ns`; 0
    // for a CPU handed over by its holder), at `now`.
    Change learn(uint64_t delay_ns, uint64_t now) {
        if (!batch_) {
            if (now < other_until_) return Change::None;
            batch_ = true;
            batch_since_ = now;
            return Change::ToBatch;
        }
        if (delay_ns < kLateNs) return Change::None;
        stay_ = now - batch_since_ >= kMaxStayNs ? kMinStayNs : std::min(stay_ * 2, kMaxStayNs);
        batch_ = false;
        other_until_ = now + stay_;
        return Change::ToOther;
    }

    bool batch() const { return batch_; }

  private:
    bool batch_ = true;
    uint64_t batch_since_ = 0;
    uint64_t other_until_ = 0;
    uint64_t stay_ = kMinStayNs;
};

} // namespace coexec::core
