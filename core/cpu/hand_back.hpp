// Whether a thread that gave its CPU away (to a teammate, or to another
// process) should yield, rather than sleep, while it waits for a CPU again
// (CpuHandover::wait_for_cpu).
#pragma once

#include <algorithm>
#include <cstdint>

namespace coexec::core {

// A yielding waiter stays runnable: each time the kernel picks it, it gives
// way again, until the CPU comes back or its window ends. That pays when the
// taker hands the CPU back within microseconds (a barrier both reach, a
// partner that answers), and only costs when the taker runs long: then the
// waiter is picked about once a kernel time slice until it sleeps. So a
// thread yields while the CPU has lately come back within the window, and
// after a wait that ended in sleep it sleeps at once for a number of waits
// that doubles (up to kMaxSkip) with each further miss, trying the window
// again in between.
class HandBackGuess {
  public:
    // At the start of a wait after a hand-off: whether to yield first.
    bool worth_yielding() {
        if (skip_ == 0) return true;
        --skip_;
        return false;
    }
    // After a wait that yielded: whether the CPU came back in the window.
    void learn(bool came_back) {
        if (came_back) {
            backoff_ = 1;
            return;
        }
        skip_ = backoff_;
        backoff_ = uint16_t(std::min<int>(backoff_ * 2, kMaxSkip));
    }

  private:
    static constexpr int kMaxSkip = 64;
    uint16_t skip_ = 0;
    uint16_t backoff_ = 1;
};

} // namespace coexec::core
