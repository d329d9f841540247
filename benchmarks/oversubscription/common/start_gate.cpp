#include "start_gate.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <thread>

namespace bench {
namespace {

constexpr int kGateTimeoutS = 300; // no scenario's start-up takes this long

long entered(const std::filesystem::path& dir) {
    std::error_code ec;
    long n = 0;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        ++n;
    return ec ? -1 : n;
}

} // namespace

void await_start_gate() {
    const char* dir = std::getenv("BENCH_START_GATE");
    const char* procs = std::getenv("BENCH_START_GATE_PROCS");
    if (!dir || !procs) return;
    char* end = nullptr;
    const long want = std::strtol(procs, &end, 10);
    if (end == procs || *end != '\0' || want < 1) {
        std::fprintf(stderr,
                     "start gate: BENCH_START_GATE_PROCS=%s is not a process count; "
                     "starting now\n",
                     procs);
        return;
    }
    const std::filesystem::path gate(dir);
    // One file per process: the ranks of one mpirun job enter apart.
    if (!std::ofstream(gate / std::to_string(getpid()))) {
        std::fprintf(stderr, "start gate: cannot enter %s; starting now\n", dir);
        return;
    }
    using namespace std::chrono;
    const auto deadline = steady_clock::now() + seconds(kGateTimeoutS);
    long n;
    // Polling (1 ms) is simple and costs nothing here: nothing is timed yet.
    while ((n = entered(gate)) >= 0 && n < want) {
        if (steady_clock::now() > deadline) {
            std::fprintf(stderr, "start gate: %ld of %ld processes after %d s; starting now\n", n,
                         want, kGateTimeoutS);
            return;
        }
        std::this_thread::sleep_for(milliseconds(1));
    }
    if (n < 0) std::fprintf(stderr, "start gate: cannot read %s; starting now\n", dir);
}

} // namespace bench
