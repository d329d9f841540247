// The substrate benchmarks. Each forks fresh processes that run one
// warm-up and then `repeats` measured runs, and returns one sample per run.
#pragma once

#include "options.hpp"

#include <string>
#include <vector>

namespace coexec::bench {

struct SampleBuffer;

// The measured samples of one benchmark, or why it could not be measured.
struct Outcome {
    std::vector<double> samples;
    // Segment lock acquisitions per operation, per repeat; empty where the
    // benchmark has no segment (the OS floors) or does not count them.
    std::vector<double> locks_per_op;
    std::string error; // empty on success
};

// Empty tasks created, submitted and completed per second, from one attached
// thread that waits for the last completion with nosv_pause().
Outcome measure_task_throughput(const Options& options);

// The same with the tasks created before the clock starts: submit + run +
// completed callback (with nosv_destroy) only. A diagnostic for the cost of
// nosv_create.
Outcome measure_submit_throughput(const Options& options);

// Nanoseconds per pause/submit hand-off between two tasks strictly bound to
// one CPU.
Outcome measure_same_cpu_handoff(const Options& options);

// Nanoseconds per barrier of a team of one attached thread per managed CPU
// whose waiters pause and are submitted by the last arrival: an OpenMP
// barrier where every wait sleeps.
Outcome measure_team_barrier(const Options& options);

// Nanoseconds per nosv_attach + nosv_detach pair on a plain pthread.
Outcome measure_attach_detach(const Options& options);

// Nanoseconds per nosv_init + nosv_shutdown pair of the only member of an
// instance: each creates the segment and discovers the CPUs.
Outcome measure_init_fresh(const Options& options);

// The same while another process is a member: the pair only registers and
// unregisters.
Outcome measure_init_joining(const Options& options);

// Nanoseconds per hand-off of one CPU between two processes whose attached
// threads are strictly bound to it: each pauses after passing the turn and a
// plain watcher thread of its process submits it when the turn comes back.
Outcome measure_cross_process_pause(const Options& options);

// The same players, but each pauses only once the other is submitted: mean
// nanoseconds from one player's nosv_pause call to the other's return from
// nosv_pause, the substrate's own cross-process hand-off.
Outcome measure_cross_process_ready(const Options& options);

// The same ping-pong where each player waits for its turn with nosv_yield():
// nanoseconds per turn, which is the quantum (--quantum-ns) when the switch
// itself is faster.
Outcome measure_cross_process_yield(const Options& options);

// OS floor for the same-CPU hand-off, without coexec: ns per hand-off between
// two threads pinned to one CPU that sleep on a process-shared futex.
Outcome measure_os_threads(const Options& options);

// OS floor for the cross-process hand-off: the same with two processes.
Outcome measure_os_processes(const Options& options);

// OS floor for the cross-process benchmark's relay: the same two processes,
// but each player sleeps on a word of its own and a plain watcher thread of
// its process wakes it when the turn comes, as in the coexec benchmark.
Outcome measure_os_relay(const Options& options);

// Runs `body` (which pushes one sample per measured repeat) in one forked
// child and collects its samples; used by the single-process benchmarks.
Outcome run_in_child(const Options& options, void (*body)(const Options&, SampleBuffer&));

} // namespace coexec::bench
