// Unpreconditioned conjugate gradients as in Mantevo's HPCCG, in two shapes: fork-join
// (each kernel a parallel call) and a task graph over row blocks with depend clauses.
#pragma once

#include "kernels.hpp"
#include "problem.hpp"

#include <vector>

namespace hpccg {

// What a solve reports back.
struct CgResult {
    std::vector<double> residuals; // ||r|| before iteration 1, 2, ... (index 0 = initial)
    int iterations = 0;            // Mantevo's niters
    double total = 0, ddot = 0, waxpby = 0, spmv = 0; // wall seconds (kernels: fork-join only)
};

// Which implementation runs each kernel in the fork-join solver.
struct ForkJoinKernels {
    Kernels& spmv;
    Kernels& vec; // dot and waxpby
};

// Fork-join CG: at most max_iter iterations, stops early only if the residual is exactly 0.
CgResult solve_forkjoin(const Problem& p, AlignedVec<double>& x, ForkJoinKernels k, int max_iter);

// Task-graph CG: every kernel split into `blocks` row blocks, each an OpenMP task whose
// kernel runs with `per_task` (serial or OpenCL); only dependencies order them.
CgResult solve_tasks(const Problem& p, AlignedVec<double>& x, Kernels& per_task, int blocks,
                     int max_iter);

} // namespace hpccg
