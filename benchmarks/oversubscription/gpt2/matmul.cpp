#include "matmul.hpp"

#include "../common/ocl.hpp"
#include "layers.hpp"

#include <mutex>
#include <stdexcept>
#include <string>
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

// Pointers travel as (buffer, float offset). Each work-item computes a register tile with
// explicit float8/float16 vectors along a contiguous dimension, so the code is vectorised
// whatever PoCL's work-item loop vectoriser makes of it; 1-item work-groups leave no
// work-item loop around the tile. Tiles past a piece's edge read its last row or channel
// again and store nothing. The backward kernels add each element's terms in the old order.
// The tile sizes, defined for the kernels from here so the host's ranges match them.
constexpr int kFwdRows = 4;    // FR: mm_fwd rows per work-item
constexpr int kFwdOut = 4;     // FQ: mm_fwd output channels per work-item
constexpr int kBwdInpRows = 8; // IR: mm_bwd_inp rows per work-item
constexpr int kBwdWOut = 8;    // WQ: mm_bwd_w output channels per work-item
constexpr int kChannels = 16;  // backward kernels' input channels per work-item: their float16

const char* const kBody = R"CLC(

// out[bt][oc] = bias[oc] + dot(inp[bt], w[oc]): FR x FQ dot products over C, 8 lanes wide.
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void mm_fwd(__global float* out, long out_off, __global const float* inp, long inp_off,
            __global const float* w, long w_off, __global const float* bias, long bias_off,
            int C, int OC, int lo, int hi, int olo, int ohi) {
    const int oc0 = olo + FQ * (int)get_global_id(0), bt0 = lo + FR * (int)get_global_id(1);
    __global const float* x[FR];
    __global const float* wr[FQ];
    for (int r = 0; r < FR; ++r) x[r] = inp + inp_off + (long)min(bt0 + r, hi - 1) * C;
    for (int q = 0; q < FQ; ++q) wr[q] = w + w_off + (long)min(oc0 + q, ohi - 1) * C;
    float8 acc[FR][FQ];
    for (int r = 0; r < FR; ++r)
        for (int q = 0; q < FQ; ++q) acc[r][q] = (float8)(0.0f);
    int i = 0;
    for (; i + 8 <= C; i += 8) {
        float8 xv[FR], wv[FQ];
        for (int r = 0; r < FR; ++r) xv[r] = vload8(0, x[r] + i);
        for (int q = 0; q < FQ; ++q) wv[q] = vload8(0, wr[q] + i);
        for (int r = 0; r < FR; ++r)
            for (int q = 0; q < FQ; ++q) acc[r][q] = fma(xv[r], wv[q], acc[r][q]);
    }
    for (int r = 0; r < FR; ++r)
        for (int q = 0; q < FQ; ++q) {
            const float4 h4 = acc[r][q].lo + acc[r][q].hi;
            const float2 h2 = h4.lo + h4.hi;
            float sum = h2.x + h2.y;
            for (int j = i; j < C; ++j) sum += x[r][j] * wr[q][j];
            if (bt0 + r < hi && oc0 + q < ohi)
                out[out_off + (long)(bt0 + r) * OC + oc0 + q] =
                    bias_off >= 0 ? sum + bias[bias_off + oc0 + q] : sum;
        }
}

// dinp[bt][i] += sum over oc of w[oc][i] * dout[bt][oc]: IR rows x 16 channels of i.
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void mm_bwd_inp(__global float* dinp, long dinp_off, __global const float* dout, long dout_off,
                __global const float* w, long w_off, int C, int OC, int lo, int hi) {
    const int i0 = 16 * (int)get_global_id(0), bt0 = lo + IR * (int)get_global_id(1);
    __global const float* d[IR];
    for (int r = 0; r < IR; ++r) d[r] = dout + dout_off + (long)min(bt0 + r, hi - 1) * OC;
    __global const float* wc = w + w_off + i0;
    if (i0 + 16 <= C) {
        float16 acc[IR];
        for (int r = 0; r < IR; ++r) acc[r] = (float16)(0.0f);
        for (int oc = 0; oc < OC; ++oc) {
            const float16 wv = vload16(0, wc + (long)oc * C);
            for (int r = 0; r < IR; ++r) acc[r] = fma(wv, (float16)(d[r][oc]), acc[r]);
        }
        for (int r = 0; r < IR; ++r)
            if (bt0 + r < hi) {
                __global float* p = dinp + dinp_off + (long)(bt0 + r) * C + i0;
                vstore16(vload16(0, p) + acc[r], 0, p);
            }
        return;
    }
    for (int r = 0; r < IR && bt0 + r < hi; ++r)
        for (int i = i0; i < C; ++i) {
            float sum = 0.0f;
            for (int oc = 0; oc < OC; ++oc) sum += w[w_off + (long)oc * C + i] * d[r][oc];
            dinp[dinp_off + (long)(bt0 + r) * C + i] += sum;
        }
}

// dw[oc][i] += sum over bt of dout[bt][oc] * inp[bt][i]: WQ channels x 16 channels of i;
// the work-items at i = 0 also add up dbias.
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void mm_bwd_w(__global float* dw, long dw_off, __global float* db, long db_off,
              __global const float* dout, long dout_off, __global const float* inp,
              long inp_off, int BT, int C, int OC, int olo, int ohi) {
    const int i0 = 16 * (int)get_global_id(0), oc0 = olo + WQ * (int)get_global_id(1);
    int oc[WQ];
    for (int q = 0; q < WQ; ++q) oc[q] = min(oc0 + q, ohi - 1);
    __global const float* g = dout + dout_off;
    __global const float* x = inp + inp_off + i0;
    if (i0 + 16 <= C) {
        float16 acc[WQ];
        for (int q = 0; q < WQ; ++q) acc[q] = (float16)(0.0f);
        for (int bt = 0; bt < BT; ++bt) {
            const float16 xv = vload16(0, x + (long)bt * C);
            for (int q = 0; q < WQ; ++q)
                acc[q] = fma((float16)(g[(long)bt * OC + oc[q]]), xv, acc[q]);
        }
        for (int q = 0; q < WQ; ++q)
            if (oc0 + q < ohi) {
                __global float* p = dw + dw_off + (long)(oc0 + q) * C + i0;
                vstore16(vload16(0, p) + acc[q], 0, p);
            }
    } else {
        for (int q = 0; q < WQ && oc0 + q < ohi; ++q)
            for (int i = i0; i < C; ++i) {
                float sum = 0.0f;
                for (int bt = 0; bt < BT; ++bt)
                    sum += g[(long)bt * OC + oc[q]] * inp[inp_off + (long)bt * C + i];
                dw[dw_off + (long)oc[q] * C + i] += sum;
            }
    }
    if (i0 == 0 && db_off >= 0)
        for (int q = 0; q < WQ && oc0 + q < ohi; ++q) {
            float s = 0.0f;
            for (int bt = 0; bt < BT; ++bt) s += g[(long)bt * OC + oc[q]];
            db[db_off + oc[q]] += s;
        }
}
)CLC";

std::string kernel_source() {
    return "#define FR " + std::to_string(kFwdRows) + "\n#define FQ " + std::to_string(kFwdOut) +
           "\n#define IR " + std::to_string(kBwdInpRows) + "\n#define WQ " +
           std::to_string(kBwdWOut) + "\n" + kBody;
}

class OclMatmul final : public Matmul {
  public:
    OclMatmul(const Region* regions, int count)
        : cl_(kernel_source()), fwd_(cl_.kernel("mm_fwd")), bin_(cl_.kernel("mm_bwd_inp")),
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
        fwd_.arg(8, C).arg(9, OC).arg(10, lo).arg(11, hi).arg(12, olo).arg(13, ohi);
        launch(lock, fwd_, tiles(ohi - olo, kFwdOut), tiles(hi - lo, kFwdRows));
    }
    void backward_input(float* dinp, const float* dout, const float* w, int C, int OC, int lo,
                        int hi) override {
        std::unique_lock lock(mu_);
        int a = 0;
        arg(bin_, a, dinp).arg(bin_, a, dout).arg(bin_, a, w);
        bin_.arg(6, C).arg(7, OC).arg(8, lo).arg(9, hi);
        launch(lock, bin_, tiles(C, kChannels), tiles(hi - lo, kBwdInpRows));
    }
    void backward_weight(float* dw, float* dbias, const float* dout, const float* inp, int BT,
                         int C, int OC, int olo, int ohi) override {
        std::unique_lock lock(mu_);
        int a = 0;
        arg(bw_, a, dw).arg_or_none(bw_, a, dbias, dw).arg(bw_, a, dout).arg(bw_, a, inp);
        bw_.arg(8, BT).arg(9, C).arg(10, OC).arg(11, olo).arg(12, ohi);
        launch(lock, bw_, tiles(C, kChannels), tiles(ohi - olo, kBwdWOut));
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
    // Tiles of `per` covering n.
    static std::size_t tiles(int n, int per) {
        return static_cast<std::size_t>((n + per - 1) / per);
    }
    // A 2-D range of 1-item work-groups (the kernels' reqd_work_group_size).
    void launch(std::unique_lock<std::mutex>& lock, const bench::Kernel& k, std::size_t n0,
                std::size_t n1) {
        const std::size_t global[2] = {n0, n1}, local[2] = {1, 1};
        cl_event done = cl_.enqueue2d(k, global, local);
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
