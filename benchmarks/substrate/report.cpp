#include "report.hpp"

#include <cstdio>

namespace coexec::bench {
namespace {

// Throughputs print in millions per second, latencies in microseconds.
std::string unit_of(const Metric& m) {
    return m.higher_is_better ? "M tasks/s" : "us";
}
double scaled(const Metric& m, double v) {
    return m.higher_is_better ? v / 1e6 : v / 1e3;
}

void print_row(const Result& r) {
    const Metric& m = r.metric;
    if (!r.outcome.error.empty()) {
        std::printf("%-48s  FAILED: %s\n", m.title.c_str(), r.outcome.error.c_str());
        return;
    }
    Summary s = summarize(r.outcome.samples);
    std::printf("%-48s %10.3f %10.3f %10.3f  %-9s", m.title.c_str(), scaled(m, s.median),
                scaled(m, s.min), scaled(m, s.max), unit_of(m).c_str());
    if (r.outcome.locks_per_op.empty())
        std::printf(" %9s\n", "-");
    else
        std::printf(" %9.3f\n", summarize(r.outcome.locks_per_op).median);
}

} // namespace

void print_report(const std::vector<Result>& results, int repeats) {
    std::printf("\ncoexec substrate micro-benchmarks: median of %d repeats (after 1 warm-up)\n",
                repeats);
    std::printf("%-48s %10s %10s %10s  %-9s %9s\n", "benchmark", "median", "min", "max", "unit",
                "locks/op");
    for (const Result& r : results)
        print_row(r);
}

} // namespace coexec::bench
