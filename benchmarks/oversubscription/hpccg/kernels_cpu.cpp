// Serial, OpenMP fork-join and oneTBB kernels.
#include "kernels.hpp"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/parallel_reduce.h>

#include <functional>
#include <stdexcept>

namespace hpccg {

std::unique_ptr<Kernels> make_ocl_kernels(int n); // kernels_ocl.cpp

namespace {

inline double row_product(const CsrMatrix& a, const double* x, int i) {
    double sum = 0.0;
    for (int k = a.rowptr[i]; k < a.rowptr[i + 1]; ++k)
        sum += a.vals[k] * x[a.cols[k]];
    return sum;
}

class SerialKernels final : public Kernels {
  public:
    void spmv(const CsrMatrix& a, const double* x, double* y, int lo, int hi) override {
        for (int i = lo; i < hi; ++i)
            y[i] = row_product(a, x, i);
    }
    double dot(const double* x, const double* y, int lo, int hi) override {
        double sum = 0.0;
        for (int i = lo; i < hi; ++i)
            sum += x[i] * y[i];
        return sum;
    }
    void waxpby(double alpha, const double* x, double beta, const double* y, double* w, int lo,
                int hi) override {
        for (int i = lo; i < hi; ++i)
            w[i] = alpha * x[i] + beta * y[i];
    }
};

class OmpKernels final : public Kernels {
  public:
    void spmv(const CsrMatrix& a, const double* x, double* y, int lo, int hi) override {
#pragma omp parallel for schedule(static)
        for (int i = lo; i < hi; ++i)
            y[i] = row_product(a, x, i);
    }
    double dot(const double* x, const double* y, int lo, int hi) override {
        double sum = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
        for (int i = lo; i < hi; ++i)
            sum += x[i] * y[i];
        return sum;
    }
    void waxpby(double alpha, const double* x, double beta, const double* y, double* w, int lo,
                int hi) override {
#pragma omp parallel for schedule(static)
        for (int i = lo; i < hi; ++i)
            w[i] = alpha * x[i] + beta * y[i];
    }
};

class TbbKernels final : public Kernels {
  public:
    using Range = oneapi::tbb::blocked_range<int>;
    void spmv(const CsrMatrix& a, const double* x, double* y, int lo, int hi) override {
        oneapi::tbb::parallel_for(Range(lo, hi, kGrain), [&](const Range& r) {
            for (int i = r.begin(); i < r.end(); ++i)
                y[i] = row_product(a, x, i);
        });
    }
    double dot(const double* x, const double* y, int lo, int hi) override {
        // Deterministic reduction: the same split every run, so results repeat exactly.
        return oneapi::tbb::parallel_deterministic_reduce(
            Range(lo, hi, kGrain), 0.0,
            [&](const Range& r, double sum) {
                for (int i = r.begin(); i < r.end(); ++i)
                    sum += x[i] * y[i];
                return sum;
            },
            std::plus<double>());
    }
    void waxpby(double alpha, const double* x, double beta, const double* y, double* w, int lo,
                int hi) override {
        oneapi::tbb::parallel_for(Range(lo, hi, kGrain), [&](const Range& r) {
            for (int i = r.begin(); i < r.end(); ++i)
                w[i] = alpha * x[i] + beta * y[i];
        });
    }

  private:
    static constexpr int kGrain = 2048;
};

} // namespace

const std::set<std::string>& kernel_names() {
    static const std::set<std::string> names{"serial", "omp", "tbb", "ocl"};
    return names;
}

std::unique_ptr<Kernels> make_kernels(const std::string& name, int n) {
    if (name == "serial") return std::make_unique<SerialKernels>();
    if (name == "omp") return std::make_unique<OmpKernels>();
    if (name == "tbb") return std::make_unique<TbbKernels>();
    if (name == "ocl") return make_ocl_kernels(n);
    throw std::invalid_argument("unknown kernel implementation '" + name + "'");
}

} // namespace hpccg
