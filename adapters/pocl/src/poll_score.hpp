// When a thread waiting inside PoCL should poll before it gives its CPU away.
#pragma once

namespace coexec::pocl {

// Whether polling pays for one thread: an episode that polled and then
// found its predicate true (the caller did not wait again) saved a CPU
// hand-over; one that polled until another thread wanted the CPU, or until
// its budget ran out, cost its slices and then waited anyway. A thread
// whose recent episodes mostly lost stops polling, and tries again one
// episode in kProbeEvery. One host thread launching kernels back to back
// mostly wins (HPCCG's vector kernels between OpenMP regions: about 80 % of
// the workers' episodes); many OpenMP tasks, each waiting for its own kernel,
// mostly lose (about 6 %: a waiting host wants the CPU within a few µs).
class PollScore {
  public:
    // Asked at the start of each episode; counts the episodes it skips.
    bool worth_polling() { return score_ > 0 || ++skipped_ % kProbeEvery == 0; }
    // The episode polled and the caller went on without waiting.
    void won() { score_ = score_ < kLimit ? score_ + 1 : kLimit; }
    // The episode polled, then the CPU was wanted or its budget ran out.
    void lost() { score_ = score_ > -kLimit ? score_ - 1 : -kLimit; }

  private:
    static constexpr int kLimit = 4;
    static constexpr unsigned kProbeEvery = 8;
    int score_ = 1;
    unsigned skipped_ = 0;
};

} // namespace coexec::pocl
