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
    std::printf("%-48s %10.3f %10.3f %10.3f  %s\n", m.title.c_str(), scaled(m, s.median),
                scaled(m, s.min), scaled(m, s.max), unit_of(m).c_str());
}

void print_comparison(const Result& r) {
    const Metric& m = r.metric;
    if (!m.nosv_ref || !r.outcome.error.empty()) return;
    const double ours = summarize(r.outcome.samples).median;
    const double ratio = ours / *m.nosv_ref;
    const bool better = m.higher_is_better ? ratio >= 1 : ratio <= 1;
    std::printf("%-48s %10.3f %10.3f %12.2f  %s (%s is better)\n", m.title.c_str(), scaled(m, ours),
                scaled(m, *m.nosv_ref), ratio,
                better ? "coexec matches or beats nOS-V" : "nOS-V is faster",
                m.higher_is_better ? "higher" : "lower");
}

} // namespace

void print_report(const std::vector<Result>& results, int repeats) {
    std::printf("\ncoexec substrate micro-benchmarks: median of %d repeats (after 1 warm-up)\n",
                repeats);
    std::printf("%-48s %10s %10s %10s  %s\n", "benchmark", "median", "min", "max", "unit");
    for (const Result& r : results)
        print_row(r);

    bool any_reference = false;
    for (const Result& r : results)
        any_reference |= r.metric.nosv_ref && r.outcome.error.empty();
    if (!any_reference) return;
    std::printf("\nversus nOS-V 4.1 (reference figures measured on this 2-core machine)\n");
    std::printf("%-48s %10s %10s %12s\n", "metric", "coexec", "nOS-V 4.1", "coexec/nOS-V");
    for (const Result& r : results)
        print_comparison(r);
}

} // namespace coexec::bench
