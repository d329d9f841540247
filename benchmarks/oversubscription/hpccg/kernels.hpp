// The three HPCCG kernels (SpMV, dot, waxpby), each over a row range [lo, hi), with one
// implementation per runtime: serial, OpenMP fork-join, oneTBB and OpenCL (PoCL).
#pragma once

#include "problem.hpp"

#include <memory>
#include <set>
#include <string>

namespace hpccg {

// One runtime's implementation of the kernels. Implementations may be called concurrently
// from several OpenMP tasks on disjoint output ranges.
class Kernels {
  public:
    virtual ~Kernels() = default;
    // y[i] = sum_j A[i][j] * x[j] for rows i in [lo, hi).
    virtual void spmv(const CsrMatrix& a, const double* x, double* y, int lo, int hi) = 0;
    // sum of x[i] * y[i] over [lo, hi).
    virtual double dot(const double* x, const double* y, int lo, int hi) = 0;
    // w[i] = alpha * x[i] + beta * y[i] over [lo, hi); w may alias x or y.
    virtual void waxpby(double alpha, const double* x, double beta, const double* y, double* w,
                        int lo, int hi) = 0;
};

// Names accepted by make_kernels.
const std::set<std::string>& kernel_names();

// Creates the implementation called `name` ("serial", "omp", "tbb" or "ocl") for vectors of
// length n. The OpenCL one needs every array it sees to stay alive and unmoved for the
// object's lifetime (it wraps them in buffers once).
std::unique_ptr<Kernels> make_kernels(const std::string& name, int n);

} // namespace hpccg
