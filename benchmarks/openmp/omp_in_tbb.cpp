// TBB parallel_for whose body opens an OpenMP parallel region: the mixed-
// runtime case of the OpenMP adapter's benchmarks.
//
//   omp_in_tbb OUTER INNER [TBB_THREADS]
//     TBB items, loop iterations per OpenMP region, and a cap on TBB's
//     threads (for a static partition of the CPUs between the two runtimes).
//     Runs the loop kPasses times. Prints "<steady seconds> <first seconds>
//     <checksum>": the median of the passes after the first, and the first
//     pass, in which both runtimes start their threads.
//   omp_in_tbb --phases N OUTER INNER
//     N times: that TBB loop, then the same OpenMP regions called one after
//     another from the main thread alone (a pure OpenMP phase). Prints the
//     seconds spent in TBB phases, in OpenMP phases, and the checksum. Shows
//     how fast OMP_DYNAMIC teams follow the load when it changes.
//
// Exits 2 on bad arguments and 1 on a wrong sum.
#include <omp.h>
#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

namespace {

long parse(const char* text) {
    char* end = nullptr;
    const long v = std::strtol(text, &end, 10);
    return end != text && *end == '\0' && v > 0 && v <= 100000000 ? v : -1;
}

// Passes of the TBB loop in one run: the first, then an odd number whose
// median is the steady state.
constexpr int kPasses = 6;

// One TBB item: an OpenMP loop over `inner` iterations.
long item(long outer_index, long inner) {
    long sum = 0;
#pragma omp parallel for reduction(+ : sum) schedule(static)
    for (long i = 0; i < inner; ++i)
        sum += (i ^ outer_index) & 15;
    return sum;
}

long expected_sum(long outer, long inner) {
    long expected = 0;
    for (long o = 0; o < outer; ++o)
        for (long i = 0; i < inner; ++i)
            expected += (i ^ o) & 15;
    return expected;
}

int usage() {
    std::fprintf(stderr, "usage: omp_in_tbb OUTER INNER [TBB_THREADS]\n"
                         "       omp_in_tbb --phases N OUTER INNER   (positive integers)\n");
    return 2;
}

// The TBB loop: each item an OpenMP region. Returns the sum of the items.
long tbb_phase(long outer, long inner) {
    std::atomic<long> total{0};
    tbb::parallel_for(tbb::blocked_range<long>(0, outer), [&](const tbb::blocked_range<long>& r) {
        long local = 0;
        for (long o = r.begin(); o != r.end(); ++o)
            local += item(o, inner);
        // Only the sum matters, read after the join.
        total.fetch_add(local, std::memory_order_relaxed);
    });
    return total.load();
}

// The same regions from the main thread alone.
long openmp_phase(long outer, long inner) {
    long total = 0;
    for (long o = 0; o < outer; ++o)
        total += item(o, inner);
    return total;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int run_phases(long phases, long outer, long inner) {
    const long expected = expected_sum(outer, inner);
    tbb_phase(outer, inner); // start both runtimes' threads, untimed
    double in_tbb = 0, in_openmp = 0;
    for (long p = 0; p < phases; ++p) {
        auto start = std::chrono::steady_clock::now();
        const long a = tbb_phase(outer, inner);
        in_tbb += seconds_since(start);
        start = std::chrono::steady_clock::now();
        const long b = openmp_phase(outer, inner);
        in_openmp += seconds_since(start);
        if (a != expected || b != expected) {
            std::fprintf(stderr, "omp_in_tbb: wrong sum %ld / %ld, expected %ld\n", a, b, expected);
            return 1;
        }
    }
    std::printf("%.6f %.6f %ld\n", in_tbb, in_openmp, expected);
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    if (argc == 5 && std::string(argv[1]) == "--phases") {
        const long phases = parse(argv[2]), outer = parse(argv[3]), inner = parse(argv[4]);
        if (phases < 0 || outer < 0 || inner < 0) return usage();
        return run_phases(phases, outer, inner);
    }
    const bool arity_ok = argc == 3 || argc == 4;
    const long outer = arity_ok ? parse(argv[1]) : -1;
    const long inner = arity_ok ? parse(argv[2]) : -1;
    const long tbb_threads = argc == 4 ? parse(argv[3]) : 0;
    if (outer < 0 || inner < 0 || tbb_threads < 0) return usage();
    std::unique_ptr<tbb::global_control> cap;
    if (tbb_threads > 0)
        cap = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                    size_t(tbb_threads));
    // Both runtimes start their threads (and join coexec) in the first
    // pass; the median of the others is the steady state, which one pass
    // caught in a slow spell of the machine would not be.
    const long expected = expected_sum(outer, inner);
    std::array<double, kPasses> seconds{};
    for (double& pass : seconds) {
        const auto start = std::chrono::steady_clock::now();
        const long total = tbb_phase(outer, inner);
        pass = seconds_since(start);
        if (total != expected) {
            std::fprintf(stderr, "omp_in_tbb: wrong sum %ld, expected %ld\n", total, expected);
            return 1;
        }
    }
    const double first = seconds[0];
    std::sort(seconds.begin() + 1, seconds.end());
    std::printf("%.6f %.6f %ld\n", seconds[1 + (kPasses - 1) / 2], first, expected);
    return 0;
}
