// Printing the results: one row per benchmark and the comparison with the
// nOS-V 4.1 reference figures.
#pragma once

#include "benchmarks.hpp"
#include "stats.hpp"

#include <optional>
#include <string>
#include <vector>

namespace coexec::bench {

// How a benchmark's samples read and whether nOS-V has a reference figure.
struct Metric {
    std::string name;               // --only name
    std::string title;              // what is measured, for the table
    bool higher_is_better = false;  // throughput (true) or latency (false)
    std::optional<double> nosv_ref; // nOS-V 4.1 on the 2-core reference machine
};

// The measured outcome of one metric.
struct Result {
    Metric metric;
    Outcome outcome;
};

// Prints the per-benchmark table (median, min, max) and the comparison with
// nOS-V for the metrics that have a reference.
void print_report(const std::vector<Result>& results, int repeats);

} // namespace coexec::bench
