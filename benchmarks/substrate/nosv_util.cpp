#include "nosv_util.hpp"

#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <vector>

namespace coexec::bench {

void fail(const std::string& message) {
    std::fprintf(stderr, "coexec-bench-substrate: %s\n", message.c_str());
    std::fflush(nullptr);
    ::_exit(1); // also safe from task callbacks and forked children
}

void check(int rc, const char* what) {
    if (rc != NOSV_SUCCESS) fail(std::string(what) + ": " + nosv_get_error_string(rc));
}

void use_segment(const std::string& name, const std::string& extra) {
    std::string value;
    if (const char* user = std::getenv("NOSV_CONFIG_OVERRIDE"); user && *user)
        value = std::string(user) + ",";
    value += "shared_memory.name=" + name;
    if (!extra.empty()) value += "," + extra;
    ::setenv("NOSV_CONFIG_OVERRIDE", value.c_str(), 1);
}

shm::SegmentOptions segment_options(const std::string& name) {
    shm::SegmentOptions o;
    o.name = name;
    o.create = false;
    return o;
}

LockCounter::LockCounter(const std::string& segment) {
    shm::SegmentError e;
    map_ = shm::SegmentMapping::open(segment_options(segment), e);
    if (!map_) fail("cannot map segment " + segment + " to count lock acquisitions: " + e.message);
}

uint64_t LockCounter::read() const {
    return map_->header.lock_acquisitions.load(std::memory_order_relaxed);
}

int strict_cpu(const Options& options) {
    const int count = nosv_get_num_cpus();
    int* array = nosv_get_available_cpus(); // ours to free
    if (count <= 0 || !array) fail("coexec reports no CPUs");
    const std::vector<int> cpus(array, array + count);
    std::free(array);
    if (!options.cpu) return cpus[0];
    for (int cpu : cpus)
        if (cpu == *options.cpu) return cpu;
    fail("--cpu " + std::to_string(*options.cpu) + " is not a CPU that coexec manages");
}

} // namespace coexec::bench
