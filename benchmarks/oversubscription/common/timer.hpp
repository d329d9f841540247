// Wall-clock timing helpers.
#pragma once

#include <chrono>

namespace bench {

// Seconds since an arbitrary fixed point, from a monotonic clock.
inline double now() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// Adds the wall time of its own lifetime to `sink` (per-kernel accumulators).
class ScopedTimer {
  public:
    explicit ScopedTimer(double& sink) : sink_(sink), start_(now()) {}
    ScopedTimer(const ScopedTimer&) = delete;
    ScopedTimer& operator=(const ScopedTimer&) = delete;
    ~ScopedTimer() { sink_ += now() - start_; }

  private:
    double& sink_;
    double start_;
};

} // namespace bench
