// One measurement of the PoCL benchmarks, run inside a child process whose
// environment selects the runtime set-up (stock, coexec, static partition).
#pragma once

#include <string>

namespace coexec::pocl_bench {

// Median time of one tiny kernel launch plus clFinish, in microseconds.
double launch_latency_us();

// Median bandwidth of a triad kernel over 3 x 16 MiB arrays, in GB/s.
double triad_bandwidth_gbs();

// Who submits the kernels of the Multi. RT case.
enum class Submitter { Alone, OpenMP, Tbb };

// Fixed total work split into `tasks` kernels; each task enqueues its kernel
// on its own queue and waits for it with clFinish. Alone submits them one by
// one from the main thread (PoCL by itself on every core). Returns seconds.
double multi_runtime_seconds(Submitter submitter, int tasks);

// Parses "alone", "openmp" or "tbb"; throws std::invalid_argument otherwise.
Submitter parse_submitter(const std::string& name);

} // namespace coexec::pocl_bench
