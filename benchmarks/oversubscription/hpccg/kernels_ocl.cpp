// OpenCL kernels, run by whatever CPU driver the ICD loader finds (PoCL on Debian).
#include "../common/ocl.hpp"
#include "kernels.hpp"

#include <algorithm>
#include <map>
#include <mutex>

namespace hpccg {

namespace {

// Each work-item owns one block of consecutive rows or elements, as an OpenMP thread owns
// its static share, and runs it as a plain loop: 1-item work-groups leave PoCL no work-item
// loop to build around it. waxpby and dot go 8 lanes at a time with explicit double8
// vectors, so they are vectorised whatever PoCL's vectoriser makes of them; dot's lanes are
// added pairwise at the end, which changes its rounding only in the last bits. SpMV's rows
// are gathers over the CSR columns and stay scalar, as on the CPU. Contraction is off:
// PoCL compiles for the host's CPU and would fuse each row sum into one chain of FMAs,
// slower than separate multiplies and adds where an FMA's latency is longer than an add's
// (AMD's Zen), and unfused, SpMV and waxpby give the serial code's bits.
const char* const kSource = R"CLC(
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF
#define BLOCK(lo, hi, chunk)                                   \
    const int begin = (lo) + (int)get_global_id(0) * (chunk);  \
    const int end = min((hi), begin + (chunk))

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void spmv(__global const int* restrict rowptr, __global const int* restrict cols,
          __global const double* restrict vals, __global const double* restrict x,
          __global double* restrict y, int lo, int hi, int chunk) {
    BLOCK(lo, hi, chunk);
    int k = begin < end ? rowptr[begin] : 0;
    for (int i = begin; i < end; ++i) {
        const int row_end = rowptr[i + 1];
        double sum = 0.0;
        for (; k < row_end; ++k) sum += vals[k] * x[cols[k]];
        y[i] = sum;
    }
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void waxpby(double alpha, __global const double* x, double beta, __global const double* y,
            __global double* w, int lo, int hi, int chunk) {
    BLOCK(lo, hi, chunk);
    int i = begin;
    for (; i + 8 <= end; i += 8)
        vstore8(alpha * vload8(0, x + i) + beta * vload8(0, y + i), 0, w + i);
    for (; i < end; ++i) w[i] = alpha * x[i] + beta * y[i];
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void ddot(__global const double* x, __global const double* y, __global double* out, int lo,
         int hi, int chunk) {
    BLOCK(lo, hi, chunk);
    double8 acc = (double8)(0.0);
    int i = begin;
    for (; i + 8 <= end; i += 8) acc += vload8(0, x + i) * vload8(0, y + i);
    const double4 a4 = acc.lo + acc.hi;
    const double2 a2 = a4.lo + a4.hi;
    double sum = a2.lo + a2.hi;
    for (; i < end; ++i) sum += x[i] * y[i];
    out[get_global_id(0)] = sum;
}
)CLC";

// How [lo, hi) is cut into blocks: at least kMinChunk rows or elements each, so a block's
// loop outweighs PoCL's cost per work-group, and at most kMaxBlocks of them, enough for
// PoCL's workers to balance the load.
struct Blocks {
    static constexpr int kMinChunk = 512;
    static constexpr int kMaxBlocks = 256;
    Blocks(int lo, int hi) {
        const int len = hi - lo;
        count = len <= 0 ? 0 : std::clamp(len / kMinChunk, 1, kMaxBlocks);
        chunk = count == 0 ? 0 : (len + count - 1) / count;
    }
    int count;
    int chunk;
};

class OclKernels final : public Kernels {
  public:
    explicit OclKernels(int n)
        : n_(n), cl_(kSource), spmv_(cl_.kernel("spmv")), waxpby_(cl_.kernel("waxpby")),
          dot_(cl_.kernel("ddot")) {}

    void spmv(const CsrMatrix& a, const double* x, double* y, int lo, int hi) override {
        const Blocks b(lo, hi);
        std::unique_lock lock(mu_);
        const int n = a.nrows;
        spmv_.arg(0, buffer(a.rowptr.data(), (n + 1) * sizeof(int)))
            .arg(1, buffer(a.cols.data(), a.cols.size() * sizeof(int)))
            .arg(2, buffer(a.vals.data(), a.vals.size() * sizeof(double)))
            .arg(3, buffer(x, n * sizeof(double)))
            .arg(4, buffer(y, n * sizeof(double)))
            .arg(5, lo)
            .arg(6, hi)
            .arg(7, b.chunk);
        launch(lock, spmv_, b.count);
    }

    double dot(const double* x, const double* y, int lo, int hi) override {
        const Blocks b(lo, hi);
        if (b.count == 0) return 0.0;
        AlignedVec<double> partial(b.count, 0.0);
        bench::Buffer out = cl_.wrap(partial.data(), b.count * sizeof(double));
        {
            std::unique_lock lock(mu_);
            dot_.arg(0, buffer(x, n_ * sizeof(double)))
                .arg(1, buffer(y, n_ * sizeof(double)))
                .arg(2, out.get())
                .arg(3, lo)
                .arg(4, hi)
                .arg(5, b.chunk);
            launch(lock, dot_, b.count);
        }
        double sum = 0.0;
        for (double v : partial)
            sum += v;
        return sum;
    }

    void waxpby(double alpha, const double* x, double beta, const double* y, double* w, int lo,
                int hi) override {
        const Blocks b(lo, hi);
        std::unique_lock lock(mu_);
        waxpby_.arg(0, alpha)
            .arg(1, buffer(x, n_ * sizeof(double)))
            .arg(2, beta)
            .arg(3, buffer(y, n_ * sizeof(double)))
            .arg(4, buffer(w, n_ * sizeof(double)))
            .arg(5, lo)
            .arg(6, hi)
            .arg(7, b.chunk);
        launch(lock, waxpby_, b.count);
    }

  private:
    // Enqueues `blocks` 1-item work-groups under the lock (arguments are captured at
    // enqueue), then waits without it so kernels from different tasks overlap.
    void launch(std::unique_lock<std::mutex>& lock, const bench::Kernel& k, int blocks) {
        const std::size_t global[2] = {static_cast<std::size_t>(blocks), 1}, local[2] = {1, 1};
        cl_event done = cl_.enqueue2d(k, global, local);
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
