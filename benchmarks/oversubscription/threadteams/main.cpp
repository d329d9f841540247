// Program threads that each open OpenMP regions: T std::threads, each running R parallel
// regions of a memory-light loop (a polynomial evaluated over its own vector), with the
// OpenMP runtime's default team size. Servers, pipelines and task graphs whose stages call
// an OpenMP library from threads of their own work this way; each thread's regions form a
// team of their own, so T teams of one thread per CPU run at once. The runner's
// threads/omp-teams.
//
//     threadteams [--threads T] [--regions R] [--size N] [--sequential]
//
// --sequential runs the T threads' work one thread after the other: the "alone" row.
// Prints the steady time (after the start gate) and a checksum every mode prints alike.
#include "../common/args.hpp"
#include "../common/start_gate.hpp"

#include <omp.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>
#include <vector>

namespace {

// R regions over x: each evaluates a degree-16 polynomial at every element and adds the
// values; the sum of the regions' sums.
double regions(std::vector<double>& x, long count) {
    double total = 0;
    const long n = long(x.size());
    for (long r = 0; r < count; ++r) {
        double sum = 0;
#pragma omp parallel for reduction(+ : sum) schedule(static)
        for (long i = 0; i < n; ++i) {
            double v = x[size_t(i)], p = 1.0;
            for (int k = 0; k < 16; ++k)
                p = p * v + 1.0 / double(k + 1);
            sum += p;
        }
        total += sum;
        for (long i = 0; i < n; i += 4096)
            x[size_t(i)] = std::fmod(x[size_t(i)] + 0.001, 1.0);
    }
    return total;
}

int usage(const char* why) {
    std::fprintf(stderr,
                 "threadteams: %s\nusage: threadteams [--threads T] [--regions R] [--size N] "
                 "[--sequential]\n",
                 why);
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    long threads = 0, count = 0, size = 0;
    bool sequential = false;
    try {
        bench::Args args(argc, argv, {"threads", "regions", "size"}, {"sequential"});
        if (!args.positional().empty()) return usage("no positional arguments are taken");
        threads = args.get_int("threads", 4, 1, 4096);
        count = args.get_int("regions", 400, 1, 100'000'000);
        size = args.get_int("size", 1 << 16, 1, 1L << 28);
        sequential = args.has("sequential");
    } catch (const bench::UsageError& e) {
        return usage(e.what());
    }
    std::vector<std::vector<double>> data(size_t(threads), std::vector<double>(size_t(size), 0.0));
    for (long t = 0; t < threads; ++t)
        for (long i = 0; i < size; ++i)
            data[size_t(t)][size_t(i)] = double((i * 7 + t * 13) % 1000) / 1000.0;
    std::vector<double> sums(size_t(threads), 0.0);
    bench::await_start_gate();
    const auto start = std::chrono::steady_clock::now();
    if (sequential) {
        for (long t = 0; t < threads; ++t)
            sums[size_t(t)] = regions(data[size_t(t)], count);
    } else {
        std::vector<std::thread> pool;
        for (long t = 0; t < threads; ++t)
            pool.emplace_back([&, t] { sums[size_t(t)] = regions(data[size_t(t)], count); });
        for (auto& th : pool)
            th.join();
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double total = 0;
    for (double s : sums)
        total += s;
    std::printf("Steady seconds: %.6f\n", seconds);
    // Rounded: the reductions' order depends on the team size.
    std::printf("Result: %.6e\n", total);
    return 0;
}
