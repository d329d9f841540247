#include "matmul.hpp"

#include "../common/ocl.hpp"
#include "layers.hpp"

#include <mutex>
#include <stdexcept>
#include <vector>

namespace gpt2 {

namespace {

class CppMatmul final : public Matmul {
  public:
    void forward(float* out, const float* inp, const float* w, const float* bias, int C, int OC,
                 int lo, int hi, int olo, int ohi) override {
        layers::matmul_forward(out, inp, w, bias, C, OC, lo, hi, olo, ohi);
    }
    void backward_input(float* dinp, const float* dout, const float* w, int C, int OC, int lo,
                        int hi) override {
        layers::matmul_backward_input(dinp, dout, w, C, OC, lo, hi);
    }
    void backward_weight(float* dw, float* dbias, const float* dout, const float* inp, int BT,
                         int C, int OC, int olo, int ohi) override {
        layers::matmul_backward_weight(dw, dbias, dout, inp, BT, C, OC, olo, ohi);
    }
};

// Pointers travel as (buffer, float offset); one work-item per output element.
const char* const kSource = R"CLC(
__kernel void mm_fwd(__global float* out, long out_off, __global const float* inp, long inp_off,
                     __global const float* w, long w_off, __global const float* bias,
                     long bias_off, int C, int OC, int lo, int olo, int ocount) {
    const int g = get_global_id(0);
    const int bt = lo + g / ocount, oc = olo + g % ocount;
    __global const float* x = inp + inp_off + (long)bt * C;
    __global const float* wr = w + w_off + (long)oc * C;
    float sum = bias_off >= 0 ? bias[bias_off + oc] : 0.0f;
    for (int i = 0; i < C; ++i) sum += x[i] * wr[i];
    out[out_off + (long)bt * OC + oc] = sum;
}
__kernel void mm_bwd_inp(__global float* dinp, long dinp_off, __global const float* dout,
                         long dout_off, __global const float* w, long w_off, int C, int OC,
                         int lo) {
    const int g = get_global_id(0);
    const int bt = lo + g / C, i = g % C;
    __global const float* d = dout + dout_off + (long)bt * OC;
    float sum = 0.0f;
    for (int oc = 0; oc < OC; ++oc) sum += w[w_off + (long)oc * C + i] * d[oc];
    dinp[dinp_off + (long)bt * C + i] += sum;
}
__kernel void mm_bwd_w(__global float* dw, long dw_off, __global float* db, long db_off,
                       __global const float* dout, long dout_off, __global const float* inp,
                       long inp_off, int BT, int C, int OC, int olo) {
    const int g = get_global_id(0);
    const int oc = olo + g / C, i = g % C;
    float sum = 0.0f;
    for (int bt = 0; bt < BT; ++bt)
        sum += dout[dout_off + (long)bt * OC + oc] * inp[inp_off + (long)bt * C + i];
    dw[dw_off + (long)oc * C + i] += sum;
    if (i == 0 && db_off >= 0) {
        float s = 0.0f;
        for (int bt = 0; bt < BT; ++bt) s += dout[dout_off + (long)bt * OC + oc];
        db[db_off + oc] += s;
    }
}
)CLC";

class OclMatmul final : public Matmul {
  public:
    OclMatmul(const Region* regions, int count)
        : cl_(kSource), fwd_(cl_.kernel("mm_fwd")), bin_(cl_.kernel("mm_bwd_inp")),
          bw_(cl_.kernel("mm_bwd_w")) {
        for (int i = 0; i < count; ++i) {
            regions_.push_back(regions[i]);
            buffers_.push_back(cl_.wrap(regions[i].base, regions[i].floats * sizeof(float)));
        }
    }

    void forward(float* out, const float* inp, const float* w, const float* bias, int C, int OC,
                 int lo, int hi, int olo, int ohi) override {
        std::unique_lock lock(mu_);
        int a = 0;
        arg(fwd_, a, out).arg(fwd_, a, inp).arg(fwd_, a, w).arg_or_none(fwd_, a, bias, w);
        fwd_.arg(8, C).arg(9, OC).arg(10, lo).arg(11, olo).arg(12, ohi - olo);
        launch(lock, fwd_, static_cast<std::size_t>(hi - lo) * (ohi - olo));
    }
    void backward_input(float* dinp, const float* dout, const float* w, int C, int OC, int lo,
                        int hi) override {
        std::unique_lock lock(mu_);
        int a = 0;
        arg(bin_, a, dinp).arg(bin_, a, dout).arg(bin_, a, w);
        bin_.arg(6, C).arg(7, OC).arg(8, lo);
        launch(lock, bin_, static_cast<std::size_t>(hi - lo) * C);
    }
    void backward_weight(float* dw, float* dbias, const float* dout, const float* inp, int BT,
                         int C, int OC, int olo, int ohi) override {
        std::unique_lock lock(mu_);
        int a = 0;
        arg(bw_, a, dw).arg_or_none(bw_, a, dbias, dw).arg(bw_, a, dout).arg(bw_, a, inp);
        bw_.arg(8, BT).arg(9, C).arg(10, OC).arg(11, olo);
        launch(lock, bw_, static_cast<std::size_t>(ohi - olo) * C);
    }

  private:
    // Sets the (buffer, offset) pair for pointer p as arguments a and a+1.
    OclMatmul& arg(bench::Kernel& k, int& a, const float* p) {
        for (std::size_t r = 0; r < regions_.size(); ++r) {
            const float* base = regions_[r].base;
            if (p >= base && p < base + regions_[r].floats) {
                k.arg(a, buffers_[r].get()).arg(a + 1, static_cast<cl_long>(p - base));
                a += 2;
                return *this;
            }
        }
        throw std::logic_error("matmul pointer outside the OpenCL regions");
    }
    // Like arg, with offset -1 (and any valid buffer) when p is null.
    OclMatmul& arg_or_none(bench::Kernel& k, int& a, const float* p, const float* any) {
        if (p) return arg(k, a, p);
        arg(k, a, any);
        k.arg(a - 1, static_cast<cl_long>(-1));
        return *this;
    }
    void launch(std::unique_lock<std::mutex>& lock, const bench::Kernel& k, std::size_t n) {
        cl_event done = cl_.enqueue(k, 0, n);
        lock.unlock(); // arguments are captured at enqueue
        bench::OclContext::wait(done);
    }

    bench::OclContext cl_;
    std::mutex mu_; // guards kernel arguments
    bench::Kernel fwd_, bin_, bw_;
    std::vector<Region> regions_;
    std::vector<bench::Buffer> buffers_;
};

} // namespace

std::unique_ptr<Matmul> make_matmul(const std::string& name, const Region* regions, int count) {
    if (name == "cpp") return std::make_unique<CppMatmul>();
    if (name == "ocl") return std::make_unique<OclMatmul>(regions, count);
    throw std::invalid_argument("unknown kernel implementation '" + name + "'");
}

} // namespace gpt2
