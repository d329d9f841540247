// Summaries of repeated measurements.
#pragma once

#include <vector>

namespace coexec::bench {

// Median, min and max of a non-empty sample set.
struct Summary {
    double median = 0;
    double min = 0;
    double max = 0;
};

// Summarises `samples` (taken by value: it is sorted). Requires at least one.
Summary summarize(std::vector<double> samples);

} // namespace coexec::bench
