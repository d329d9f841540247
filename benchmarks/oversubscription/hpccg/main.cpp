// HPCCG driver: `hpccg nx ny nz [options]`, output in the format of Mantevo's test_HPCCG.
#include "../common/args.hpp"
#include "cg.hpp"

#include <omp.h>
#include <oneapi/tbb/global_control.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>

namespace {

using namespace hpccg;

const char* const kUsage =
    "usage: hpccg nx ny nz [options]\n"
    "  --mode forkjoin|tasks   kernel structure (default forkjoin)\n"
    "  --spmv K                fork-join SpMV implementation, K = serial|omp|tbb|ocl\n"
    "  --vec K                 fork-join dot/waxpby implementation (default: same as --spmv)\n"
    "  --tasks N               tasks mode: number of row blocks (default 16)\n"
    "  --task-kernel seq|ocl   tasks mode: each task's kernel (default seq)\n"
    "  --iters N               maximum iterations (default 150, tolerance is 0)\n"
    "  --tbb-threads N         cap oneTBB's concurrency\n"
    "  --trace                 print the residual of every iteration, full precision\n";

struct Options {
    int nx, ny, nz;
    std::string mode, spmv, vec, task_kernel;
    int tasks, iters, tbb_threads;
    bool trace;
};

Options parse(int argc, char** argv) {
    bench::Args a(argc, argv,
                  {"mode", "spmv", "vec", "tasks", "task-kernel", "iters", "tbb-threads"},
                  {"trace"});
    if (a.positional().size() != 3) throw bench::UsageError("expected nx ny nz");
    Options o;
    o.nx = bench::parse_int(a.positional()[0], "nx", 1, 1000);
    o.ny = bench::parse_int(a.positional()[1], "ny", 1, 1000);
    o.nz = bench::parse_int(a.positional()[2], "nz", 1, 1000);
    if (static_cast<long>(o.nx) * o.ny * o.nz > 50'000'000)
        throw bench::UsageError("nx*ny*nz must be at most 50000000");
    o.mode = a.get_choice("mode", "forkjoin", {"forkjoin", "tasks"});
    o.spmv = a.get_choice("spmv", "omp", kernel_names());
    o.vec = a.get_choice("vec", o.spmv, kernel_names());
    o.task_kernel = a.get_choice("task-kernel", "seq", {"seq", "ocl"});
    o.tasks = a.get_int("tasks", 16, 1, 1 << 20);
    o.iters = a.get_int("iters", 150, 1, 100000);
    o.tbb_threads = a.get_int("tbb-threads", 0, 1, 4096);
    o.trace = a.has("trace");
    return o;
}

std::string describe(const Options& o) {
    if (o.mode == "tasks")
        return "tasks=" + std::to_string(o.tasks) + " task-kernel=" + o.task_kernel;
    return "forkjoin spmv=" + o.spmv + " vec=" + o.vec;
}

CgResult solve(const Options& o, const Problem& p, AlignedVec<double>& x) {
    const int n = p.a.nrows;
    if (o.mode == "tasks") {
        auto k = make_kernels(o.task_kernel == "ocl" ? "ocl" : "serial", n);
        return solve_tasks(p, x, *k, o.tasks, o.iters);
    }
    auto spmv = make_kernels(o.spmv, n);
    std::unique_ptr<Kernels> vec_own;
    Kernels* vec = spmv.get();
    if (o.vec != o.spmv) {
        vec_own = make_kernels(o.vec, n);
        vec = vec_own.get();
    }
    return solve_forkjoin(p, x, ForkJoinKernels{*spmv, *vec}, o.iters);
}

void report(const Options& o, const CgResult& r, const Problem& p, const AlignedVec<double>& x) {
    std::printf("Initial Residual = %g\n", r.residuals.front());
    const int freq = std::clamp(o.iters / 10, 1, 50);
    for (int k = 1; k < static_cast<int>(r.residuals.size()); ++k) {
        if (o.trace)
            std::printf("Iteration = %d   Residual = %.17g\n", k, r.residuals[k]);
        else if (k % freq == 0 || k + 1 == o.iters)
            std::printf("Iteration = %d   Residual = %g\n", k, r.residuals[k]);
    }
    double diff = 0.0;
    for (int i = 0; i < p.a.nrows; ++i) {
        const double d = std::fabs(x[i] - p.xexact[i]);
        if (std::isnan(d) || d > diff) diff = d; // a NaN must show, not vanish in max()
    }
    std::printf("Mini-Application Name: hpccg\nMini-Application Version: 1.0\n");
    std::printf("Parallelism: \n  MPI not enabled: \n  OpenMP max threads: %d\n",
                omp_get_max_threads());
    std::printf("Variant: %s\n", describe(o).c_str());
    std::printf("Dimensions: \n  nx: %d\n  ny: %d\n  nz: %d\n", o.nx, o.ny, o.nz);
    std::printf("Number of iterations: : %d\n", r.iterations);
    std::printf("Final residual: : %g\n", r.residuals.back());
    std::printf("Time Summary: \n  Total   : %g\n", r.total);
    if (o.mode == "forkjoin")
        std::printf("  DDOT    : %g\n  WAXPBY  : %g\n  SPARSEMV: %g\n", r.ddot, r.waxpby, r.spmv);
    std::printf("Time per iteration: %g\n", r.total / std::max(1, r.iterations));
    std::printf("Difference between computed and exact  = %g\n", diff);
    // Machine-readable steady-state time (run.py): the CG solve alone, without process
    // start, problem generation, allocation or the kernels' (OpenCL) set-up.
    std::printf("Steady seconds: %.6f\n", r.total);
}

} // namespace

int main(int argc, char** argv) {
    Options o;
    try {
        o = parse(argc, argv);
    } catch (const bench::UsageError& e) {
        std::fprintf(stderr, "hpccg: %s\n%s", e.what(), kUsage);
        return 2;
    }
    try {
        std::optional<oneapi::tbb::global_control> tbb_cap;
        if (o.tbb_threads > 0)
            tbb_cap.emplace(oneapi::tbb::global_control::max_allowed_parallelism, o.tbb_threads);
        const Problem p = generate_problem(o.nx, o.ny, o.nz);
        AlignedVec<double> x(p.a.nrows, 0.0);
        const CgResult r = solve(o, p, x);
        report(o, r, p, x);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "hpccg: %s\n", e.what());
        return 1;
    }
    return 0;
}
