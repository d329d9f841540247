// Printing the results: one row per benchmark. Ratios against other systems
// belong to a run that measured both (compare.py pairs two coexec builds).
#pragma once

#include "benchmarks.hpp"
#include "stats.hpp"

#include <string>
#include <vector>

namespace coexec::bench {

// How a benchmark's samples read.
struct Metric {
    std::string name;              // --only name
    std::string title;             // what is measured, for the table
    bool higher_is_better = false; // throughput (true) or latency (false)
};

// The measured outcome of one metric.
struct Result {
    Metric metric;
    Outcome outcome;
};

// Prints the per-benchmark table (median, min, max).
void print_report(const std::vector<Result>& results, int repeats);

} // namespace coexec::bench
