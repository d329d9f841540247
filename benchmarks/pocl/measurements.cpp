#include "measurements.hpp"

#include "bench_kernels.hpp"
#include "ocl.hpp"

#include <omp.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <vector>

namespace coexec::pocl_bench {
namespace {

using coexec::pocl_testing::PoclDevice;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Each task of the Multi. RT case has its own queue and kernel object, made
// before timing starts (kernel arguments are not thread-safe to share).
struct TaskSlots {
    std::vector<cl::CommandQueue> queues;
    std::vector<cl::Kernel> kernels;
    size_t chunk = 0;

    TaskSlots(const PoclDevice& d, const cl::Program& p, cl::Buffer& data, int tasks,
              size_t total) {
        chunk = total / static_cast<size_t>(tasks);
        for (int t = 0; t < tasks; ++t) {
            queues.emplace_back(d.context, d.device);
            kernels.emplace_back(p, "spin");
            kernels.back().setArg(0, data);
            kernels.back().setArg(1, 2000);
        }
    }

    void run(int t) {
        queues[t].enqueueNDRangeKernel(kernels[t], cl::NDRange(t * chunk), cl::NDRange(chunk));
        queues[t].finish();
    }
};

void run_all(TaskSlots& slots, Submitter submitter, int tasks) {
    switch (submitter) {
    case Submitter::Alone:
        for (int t = 0; t < tasks; ++t)
            slots.run(t);
        break;
    case Submitter::OpenMP:
#pragma omp parallel
#pragma omp single
        for (int t = 0; t < tasks; ++t) {
#pragma omp task firstprivate(t)
            slots.run(t);
        }
        break;
    case Submitter::Tbb:
        tbb::parallel_for(0, tasks, [&](int t) { slots.run(t); });
        break;
    }
}

} // namespace

double launch_latency_us() {
    PoclDevice d;
    cl::Program p = d.build(kBenchKernels);
    cl::CommandQueue q(d.context, d.device);
    cl::Buffer b(d.context, CL_MEM_READ_WRITE, 64 * sizeof(int));
    cl::Kernel k(p, "tiny");
    k.setArg(0, b);
    std::vector<double> us;
    for (int i = 0; i < 320; ++i) {
        auto start = Clock::now();
        q.enqueueNDRangeKernel(k, cl::NullRange, cl::NDRange(64));
        q.finish();
        if (i >= 20) us.push_back(seconds_since(start) * 1e6); // first 20 warm up
    }
    return median(us);
}

double triad_bandwidth_gbs() {
    const size_t n = 4u << 20;
    PoclDevice d;
    cl::Program p = d.build(kBenchKernels);
    cl::CommandQueue q(d.context, d.device);
    std::vector<float> host(n, 1.0f);
    auto flags = CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR;
    cl::Buffer a(d.context, flags, n * sizeof(float), host.data());
    cl::Buffer b(d.context, flags, n * sizeof(float), host.data());
    cl::Buffer c(d.context, CL_MEM_READ_WRITE, n * sizeof(float));
    cl::Kernel k(p, "triad");
    k.setArg(0, a), k.setArg(1, b), k.setArg(2, c), k.setArg(3, 3.0f);
    std::vector<double> gbs;
    for (int i = 0; i < 14; ++i) {
        auto start = Clock::now();
        q.enqueueNDRangeKernel(k, cl::NullRange, cl::NDRange(n));
        q.finish();
        if (i >= 2) gbs.push_back(3.0 * n * sizeof(float) / seconds_since(start) / 1e9);
    }
    return median(gbs);
}

double multi_runtime_seconds(Submitter submitter, int tasks) {
    const size_t total = 1u << 18;
    if (tasks < 1 || total % static_cast<size_t>(tasks) != 0)
        throw std::invalid_argument("TASKS must be a power of two in 1..65536");
    PoclDevice d;
    cl::Program p = d.build(kBenchKernels);
    cl::Buffer data(d.context, CL_MEM_READ_WRITE, total * sizeof(int));
    TaskSlots slots(d, p, data, tasks, total);
    run_all(slots, submitter, tasks); // warm-up: kernel compile, thread start
    auto start = Clock::now();
    run_all(slots, submitter, tasks);
    return seconds_since(start);
}

Submitter parse_submitter(const std::string& name) {
    if (name == "alone") return Submitter::Alone;
    if (name == "openmp") return Submitter::OpenMP;
    if (name == "tbb") return Submitter::Tbb;
    throw std::invalid_argument("unknown submitter '" + name + "' (alone, openmp or tbb)");
}

} // namespace coexec::pocl_bench
