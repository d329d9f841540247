// `coexec record --native`: what the kernel scheduler did with a command
// that runs outside coexec, sampled from /proc, as a Recording that
// trace_to_json() turns into the same trace format as a coexec recording.
#pragma once

#include "trace_recorder.hpp"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <sys/types.h>

namespace coexec::cli {

// Samples every thread of a process tree. At each sample it reads, per
// thread, its state and the CPU the kernel last ran it on (/proc/.../stat,
// fields 3 and 39) and its time on a CPU (/proc/.../schedstat). Each kernel
// CPU is then shown held, until the next sample, by a thread of the tree
// that is runnable there (state R) or ran there since the previous sample:
// the one whose CPU time grew most (the kernel updates it at each tick and
// context switch), else the one shown there before, else any. So the trace
// shows, at the sampling period's resolution, approximately which thread
// the kernel ran on each CPU: not the exact context switches, and where
// several threads of the tree queue for one CPU, the choice is exact only
// to a scheduler tick. Not thread-safe.
class NativeSampler {
  public:
    // Samples `root` and its descendants; `label` names them in the trace.
    explicit NativeSampler(pid_t root, std::string label = "native");

    // Takes one sample. Call it every millisecond or so.
    void sample();
    // Takes a last sample and returns what was seen since construction.
    Recording finish();
    // Whether the last sample found the root process gone (exited, even if
    // not reaped yet).
    bool root_gone() const { return !procs_.contains(root_); }

  private:
    struct Thread {
        pid_t pid = 0;
        uint64_t run_ns = 0; // time on a CPU, at the last sample
        bool seen = false;   // found by the current sample
    };
    struct Holder {
        pid_t pid = 0;
        pid_t tid = 0;
        bool operator==(const Holder&) const = default;
    };
    // The best thread for one CPU in a sample so far.
    struct Candidate {
        Holder holder;
        uint64_t ran = 0;        // CPU time gained since the last sample
        bool was_holder = false; // shown on that CPU until now
    };

    // Adds the descendants of the known processes, by a scan of /proc.
    void find_children();
    void add_process(pid_t pid, uint64_t now);
    // Reads the threads of `pid`, updating each CPU's best candidate.
    void read_threads(pid_t pid, std::map<int, Candidate>& best);
    void set_holder(int cpu, const Holder& h, uint64_t at);
    void push(shm::TraceKind kind, int cpu, const Holder& h, uint64_t at);

    pid_t root_;
    std::string label_;
    Recording rec_;
    std::set<pid_t> procs_;           // the tree as last seen
    std::map<pid_t, Thread> threads_; // by tid
    std::map<int, Holder> holders_;   // by kernel CPU: shown holding it
    uint64_t last_ns_ = 0;            // the previous sample
    unsigned samples_ = 0;
};

} // namespace coexec::cli
