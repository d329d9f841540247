// TBB parallel_for whose body opens an OpenMP parallel region: the mixed-
// runtime case of the OpenMP adapter's benchmarks. Usage: omp_in_tbb OUTER
// INNER [TBB_THREADS] (TBB items, loop iterations per OpenMP region, and a
// cap on TBB's threads, for a static partition of the CPUs between the two
// runtimes). Runs the loop twice and times the second run. Prints "<seconds>
// <checksum>"; exits 2 on bad arguments and 1 on a wrong sum.
#include <omp.h>
#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

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

// One TBB item: an OpenMP loop over `inner` iterations.
long item(long outer_index, long inner) {
    long sum = 0;
#pragma omp parallel for reduction(+ : sum) schedule(static)
    for (long i = 0; i < inner; ++i)
        sum += (i ^ outer_index) & 15;
    return sum;
}

} // namespace

int main(int argc, char** argv) {
    const bool arity_ok = argc == 3 || argc == 4;
    const long outer = arity_ok ? parse(argv[1]) : -1;
    const long inner = arity_ok ? parse(argv[2]) : -1;
    const long tbb_threads = argc == 4 ? parse(argv[3]) : 0;
    if (outer < 0 || inner < 0 || tbb_threads < 0) {
        std::fprintf(stderr,
                     "usage: omp_in_tbb OUTER INNER [TBB_THREADS] (positive integers)\n");
        return 2;
    }
    std::unique_ptr<tbb::global_control> cap;
    if (tbb_threads > 0)
        cap = std::make_unique<tbb::global_control>(
            tbb::global_control::max_allowed_parallelism, size_t(tbb_threads));
    std::atomic<long> total{0};
    auto run = [&] {
        total.store(0, std::memory_order_relaxed);
        tbb::parallel_for(tbb::blocked_range<long>(0, outer),
                          [&](const tbb::blocked_range<long>& r) {
                              long local = 0;
                              for (long o = r.begin(); o != r.end(); ++o)
                                  local += item(o, inner);
                              // Only the sum matters, read after the join.
                              total.fetch_add(local, std::memory_order_relaxed);
                          });
    };
    // An untimed pass first: both runtimes start their threads (and join
    // coexec) then, so the timed pass measures the steady state.
    run();
    const auto start = std::chrono::steady_clock::now();
    run();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    long expected = 0;
    for (long o = 0; o < outer; ++o)
        for (long i = 0; i < inner; ++i)
            expected += (i ^ o) & 15;
    if (total.load() != expected) {
        std::fprintf(stderr, "omp_in_tbb: wrong sum %ld, expected %ld\n", total.load(), expected);
        return 1;
    }
    std::printf("%.6f %ld\n", seconds, expected);
    return 0;
}
