// OpenCL kernels, run by whatever CPU driver the ICD loader finds (PoCL on Debian).
#include "../common/ocl.hpp"
#include "kernels.hpp"

#include <algorithm>
#include <map>
#include <mutex>

namespace hpccg {

namespace {

const char* const kSource = R"CLC(
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void spmv(__global const int* rowptr, __global const int* cols,
                   __global const double* vals, __global const double* x, __global double* y) {
    const int i = get_global_id(0);
    double sum = 0.0;
    for (int k = rowptr[i]; k < rowptr[i + 1]; ++k) sum += vals[k] * x[cols[k]];
    y[i] = sum;
}
__kernel void waxpby(double alpha, __global const double* x, double beta,
                     __global const double* y, __global double* w) {
    const int i = get_global_id(0);
    w[i] = alpha * x[i] + beta * y[i];
}
__kernel void dot_chunks(__global const double* x, __global const double* y,
                         __global double* out, int lo, int hi, int chunk) {
    const int g = get_global_id(0);
    const int begin = lo + g * chunk;
    const int end = min(hi, begin + chunk);
    double sum = 0.0;
    for (int i = begin; i < end; ++i) sum += x[i] * y[i];
    out[g] = sum;
}
)CLC";

class OclKernels final : public Kernels {
  public:
    explicit OclKernels(int n)
        : n_(n), cl_(kSource), spmv_(cl_.kernel("spmv")), waxpby_(cl_.kernel("waxpby")),
          dot_(cl_.kernel("dot_chunks")) {}

    void spmv(const CsrMatrix& a, const double* x, double* y, int lo, int hi) override {
        std::unique_lock lock(mu_);
        const int n = a.nrows;
        spmv_.arg(0, buffer(a.rowptr.data(), (n + 1) * sizeof(int)))
            .arg(1, buffer(a.cols.data(), a.cols.size() * sizeof(int)))
            .arg(2, buffer(a.vals.data(), a.vals.size() * sizeof(double)))
            .arg(3, buffer(x, n * sizeof(double)))
            .arg(4, buffer(y, n * sizeof(double)));
        launch(lock, spmv_, lo, hi - lo);
    }

    double dot(const double* x, const double* y, int lo, int hi) override {
        const int len = hi - lo;
        if (len <= 0) return 0.0;
        const int groups = std::clamp(len / 2048, 1, 64);
        const int chunk = (len + groups - 1) / groups;
        AlignedVec<double> partial(groups, 0.0);
        bench::Buffer out = cl_.wrap(partial.data(), groups * sizeof(double));
        {
            std::unique_lock lock(mu_);
            dot_.arg(0, buffer(x, n_ * sizeof(double)))
                .arg(1, buffer(y, n_ * sizeof(double)))
                .arg(2, out.get())
                .arg(3, lo)
                .arg(4, hi)
                .arg(5, chunk);
            launch(lock, dot_, 0, groups);
        }
        double sum = 0.0;
        for (double v : partial)
            sum += v;
        return sum;
    }

    void waxpby(double alpha, const double* x, double beta, const double* y, double* w, int lo,
                int hi) override {
        std::unique_lock lock(mu_);
        waxpby_.arg(0, alpha)
            .arg(1, buffer(x, n_ * sizeof(double)))
            .arg(2, beta)
            .arg(3, buffer(y, n_ * sizeof(double)))
            .arg(4, buffer(w, n_ * sizeof(double)));
        launch(lock, waxpby_, lo, hi - lo);
    }

  private:
    // Enqueues under the lock (arguments are captured at enqueue), then waits without it so
    // kernels from different tasks overlap.
    void launch(std::unique_lock<std::mutex>& lock, const bench::Kernel& k, int offset, int count) {
        cl_event done = cl_.enqueue(k, offset, count);
        lock.unlock();
        bench::OclContext::wait(done);
    }

    // The buffer aliasing `host`, created on first use. Caller holds mu_.
    cl_mem buffer(const void* host, std::size_t bytes) {
        auto it = buffers_.find(host);
        if (it == buffers_.end())
            it = buffers_.emplace(host, cl_.wrap(const_cast<void*>(host), bytes)).first;
        return it->second.get();
    }

    const int n_; // vector length
    bench::OclContext cl_;
    std::mutex mu_; // guards the kernel arguments and the buffer map
    bench::Kernel spmv_, waxpby_, dot_;
    std::map<const void*, bench::Buffer> buffers_;
};

} // namespace

std::unique_ptr<Kernels> make_ocl_kernels(int n) {
    return std::make_unique<OclKernels>(n);
}

} // namespace hpccg
