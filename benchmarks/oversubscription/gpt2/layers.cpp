#include "layers.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace gpt2::layers {

namespace {
constexpr float kGeluScale = 0.7978845608f; // sqrt(2 / pi)
inline long at(long row, long width) {
    return row * width;
}
} // namespace

void encoder_forward(float* out, const int* tokens, const float* wte, const float* wpe, int T,
                     int C, int lo, int hi) {
    for (int bt = lo; bt < hi; ++bt) {
        const float* e = wte + at(tokens[bt], C);
        const float* p = wpe + at(bt % T, C);
        float* o = out + at(bt, C);
        for (int i = 0; i < C; ++i)
            o[i] = e[i] + p[i];
    }
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* tokens, int T, int C,
                      int lo, int hi) {
    for (int bt = lo; bt < hi; ++bt) {
        float* de = dwte + at(tokens[bt], C);
        float* dp = dwpe + at(bt % T, C);
        const float* d = dout + at(bt, C);
        for (int i = 0; i < C; ++i) {
            de[i] += d[i];
            dp[i] += d[i];
        }
    }
}

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w,
                       const float* b, int C, int lo, int hi) {
    for (int bt = lo; bt < hi; ++bt) {
        const float* x = inp + at(bt, C);
        float m = 0.0f;
        for (int i = 0; i < C; ++i)
            m += x[i];
        m /= C;
        float var = 0.0f;
        for (int i = 0; i < C; ++i)
            var += (x[i] - m) * (x[i] - m);
        var /= C;
        const float s = 1.0f / std::sqrt(var + 1e-5f);
        float* o = out + at(bt, C);
        for (int i = 0; i < C; ++i)
            o[i] = (x[i] - m) * s * w[i] + b[i];
        mean[bt] = m;
        rstd[bt] = s;
    }
}

void layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                        const float* w, const float* mean, const float* rstd, int C, int lo,
                        int hi) {
    for (int bt = lo; bt < hi; ++bt) {
        const float* d = dout + at(bt, C);
        const float* x = inp + at(bt, C);
        float* dx = dinp + at(bt, C);
        const float m = mean[bt], s = rstd[bt];
        float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
        for (int i = 0; i < C; ++i) {
            const float norm = (x[i] - m) * s;
            dnorm_mean += w[i] * d[i];
            dnorm_norm_mean += w[i] * d[i] * norm;
        }
        dnorm_mean /= C;
        dnorm_norm_mean /= C;
        for (int i = 0; i < C; ++i) {
            const float norm = (x[i] - m) * s;
            const float dnorm = w[i] * d[i];
            db[i] += d[i];
            dw[i] += norm * d[i];
            dx[i] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
        }
    }
}

// The matmuls work on register tiles of 16-float vectors (GCC/Clang vector extensions).
// A Vec is 16 floats whatever the target: one zmm register with AVX-512, two ymm with
// AVX2, four xmm with SSE, so every build sums in the same order and gives the same bits.
// Each output element is summed in an order that depends only on the shapes, never on the
// tile or the lo/hi/olo/ohi range a piece covers, so every execution mode gets the same
// bits too. What depends on the target is the tile: how many accumulators the register
// file holds (32 zmm, or 16 ymm/xmm holding half or a quarter of a Vec each).
namespace {

// One Vec is 16 floats, kept as kParts native registers of kPart floats: GCC lowers a
// 16-float vector extension without AVX-512 through memory, an array of registers it
// keeps in registers.
constexpr int kLanes = 16;
#if defined(__AVX512F__)
#define GPT2_PART 16
constexpr int kRegs = 32; // zmm
#elif defined(__AVX__)
#define GPT2_PART 8
constexpr int kRegs = 16; // ymm
#else
#define GPT2_PART 4
constexpr int kRegs = 16; // xmm (SSE2; NEON has 32, taken as 16)
#endif
constexpr int kPart = GPT2_PART;
constexpr int kParts = kLanes / kPart;
typedef float Part __attribute__((vector_size(kPart * sizeof(float))));
typedef float Vec4 __attribute__((vector_size(4 * sizeof(float))));
struct Vec {
    Part p[kParts];
};

// Register tiles, in native registers: forward R x Q dot-product accumulators plus R
// inputs and one weight Vec; backward R x NV rank-1 accumulators plus NV inputs and a
// broadcast scalar. Both fit the register file.
constexpr int kFwdR = kParts == 1 ? 4 : kParts == 2 ? 2 : 1;
constexpr int kFwdQ = kParts == 1 ? 4 : 2;
constexpr int kUpdR = kParts == 4 ? 2 : 4;
constexpr int kUpdNV = kParts == 1 ? 4 : 1;
static_assert(kFwdR * kFwdQ * kParts + (kFwdR + 1) * kParts <= kRegs);
static_assert((kUpdR + 1) * kUpdNV * kParts + 1 <= kRegs);

// Part by part: one memcpy of the whole Vec becomes 16-byte moves through the stack.
inline Part load_part(const float* p) {
    Part v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline void load(Vec& v, const float* p) {
#pragma GCC unroll 4
    for (int j = 0; j < kParts; ++j)
        v.p[j] = load_part(p + j * kPart);
}
inline void store(float* p, const Vec& v) {
#pragma GCC unroll 4
    for (int j = 0; j < kParts; ++j)
        std::memcpy(p + j * kPart, &v.p[j], sizeof(Part));
}
// acc += x * y and acc += x * g, lane by lane.
inline void fma(Vec& acc, const Vec& x, const Vec& y) {
#pragma GCC unroll 4
    for (int j = 0; j < kParts; ++j)
        acc.p[j] += x.p[j] * y.p[j];
}
inline void fma(Vec& acc, const Vec& x, float g) {
#pragma GCC unroll 4
    for (int j = 0; j < kParts; ++j)
        acc.p[j] += x.p[j] * g;
}
inline void add(Vec& acc, const Vec& x) {
#pragma GCC unroll 4
    for (int j = 0; j < kParts; ++j)
        acc.p[j] += x.p[j];
}

// The first two halvings of a lane sum: lane j of the result is
// (v[j] + v[j + 8]) + (v[j + 4] + v[j + 12]).
inline Vec4 quarter_sum(const Vec& v) {
#if GPT2_PART == 16
    const auto s8 = __builtin_shufflevector(v.p[0], v.p[0], 0, 1, 2, 3, 4, 5, 6, 7) +
                    __builtin_shufflevector(v.p[0], v.p[0], 8, 9, 10, 11, 12, 13, 14, 15);
    return __builtin_shufflevector(s8, s8, 0, 1, 2, 3) + __builtin_shufflevector(s8, s8, 4, 5, 6, 7);
#elif GPT2_PART == 8
    const Part s8 = v.p[0] + v.p[1];
    return __builtin_shufflevector(s8, s8, 0, 1, 2, 3) + __builtin_shufflevector(s8, s8, 4, 5, 6, 7);
#else
    return (v.p[0] + v.p[2]) + (v.p[1] + v.p[3]);
#endif
}
// Sum of the lanes, halving the vector each time (always the same order).
inline float lane_sum(const Vec& v) {
    const Vec4 s4 = quarter_sum(v);
    return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}

// lane_sum of a[0..3] into s[0..3], bit for bit, sharing the last shuffles.
inline void lane_sum4(const Vec* a, float* s) {
    const Vec4 q0 = quarter_sum(a[0]), q1 = quarter_sum(a[1]), q2 = quarter_sum(a[2]),
               q3 = quarter_sum(a[3]);
    // Lanes 2j, 2j + 1 hold (q[0] + q[2]), (q[1] + q[3]) of a[j], j < 2; r23 likewise.
    const Vec4 r01 = __builtin_shufflevector(q0, q1, 0, 1, 4, 5) +
                     __builtin_shufflevector(q0, q1, 2, 3, 6, 7);
    const Vec4 r23 = __builtin_shufflevector(q2, q3, 0, 1, 4, 5) +
                     __builtin_shufflevector(q2, q3, 2, 3, 6, 7);
    s[0] = r01[0] + r01[1];
    s[1] = r01[2] + r01[3];
    s[2] = r23[0] + r23[1];
    s[3] = r23[2] + r23[3];
}

// out[bt + r][oc + q] for r < R, q < Q: lane-wise dot products over the first C - C % 16
// channels, then the lanes, then the remaining channels one by one.
template <int R, int Q>
void forward_tile(float* out, const float* inp, const float* w, const float* bias, int C, int OC,
                  int bt, int oc) {
    const int cv = C - C % kLanes;
    Vec acc[R * Q] = {};
    for (int i = 0; i < cv; i += kLanes) {
        Vec x[R];
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r)
            load(x[r], inp + at(bt + r, C) + i);
#pragma GCC unroll 16
        for (int q = 0; q < Q; ++q) {
            Vec wv;
            load(wv, w + at(oc + q, C) + i);
#pragma GCC unroll 16
            for (int r = 0; r < R; ++r)
                fma(acc[r * Q + q], x[r], wv);
        }
    }
    float sums[R * Q];
    int k = 0;
#pragma GCC unroll 16
    for (; k + 4 <= R * Q; k += 4)
        lane_sum4(acc + k, sums + k);
#pragma GCC unroll 16
    for (; k < R * Q; ++k)
        sums[k] = lane_sum(acc[k]);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
        const float* x = inp + at(bt + r, C);
#pragma GCC unroll 16
        for (int q = 0; q < Q; ++q) {
            const float* wr = w + at(oc + q, C);
            float sum = sums[r * Q + q];
            for (int i = cv; i < C; ++i)
                sum += x[i] * wr[i];
            out[at(bt + r, OC) + oc + q] = (bias ? bias[oc + q] : 0.0f) + sum;
        }
    }
}

template <int Q>
void forward_rows(float* out, const float* inp, const float* w, const float* bias, int C, int OC,
                  int lo, int hi, int oc) {
    int bt = lo;
    for (; bt + kFwdR <= hi; bt += kFwdR)
        forward_tile<kFwdR, Q>(out, inp, w, bias, C, OC, bt, oc);
    for (; bt < hi; ++bt)
        forward_tile<1, Q>(out, inp, w, bias, C, OC, bt, oc);
}

// dst[row + r][i + 16 v] += sum over k in [k0, k1), in order, of scalar(k, r) *
// src[k][i + 16 v]: the rank-1 updates both backward matmuls are made of (dst and src
// are C floats a row).
template <int R, int NV, class Scalar>
void update_tile(float* dst, int row, const float* src, int k0, int k1, int C, int i,
                 Scalar scalar) {
    Vec acc[R][NV];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
        for (int v = 0; v < NV; ++v)
            load(acc[r][v], dst + at(row + r, C) + i + v * kLanes);
    for (int k = k0; k < k1; ++k) {
        Vec x[NV];
#pragma GCC unroll 16
        for (int v = 0; v < NV; ++v)
            load(x[v], src + at(k, C) + i + v * kLanes);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
            const float g = scalar(k, r);
#pragma GCC unroll 16
            for (int v = 0; v < NV; ++v)
                fma(acc[r][v], x[v], g);
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
        for (int v = 0; v < NV; ++v)
            store(dst + at(row + r, C) + i + v * kLanes, acc[r][v]);
}

// dinp[bt + r][i + 16 v] += dout[bt + r][oc] * w[oc][i + 16 v] for oc in [o0, o1), in order.
template <int R, int NV>
void input_tile(float* dinp, const float* dout, const float* w, int C, int OC, int bt, int i,
                int o0, int o1) {
    update_tile<R, NV>(dinp, bt, w, o0, o1, C, i,
                       [&](int oc, int r) { return dout[at(bt + r, OC) + oc]; });
}

template <int NV>
void input_rows(float* dinp, const float* dout, const float* w, int C, int OC, int lo, int hi,
                int i, int o0, int o1) {
    int bt = lo;
    for (; bt + kUpdR <= hi; bt += kUpdR)
        input_tile<kUpdR, NV>(dinp, dout, w, C, OC, bt, i, o0, o1);
    for (; bt < hi; ++bt)
        input_tile<1, NV>(dinp, dout, w, C, OC, bt, i, o0, o1);
}

// dw[oc + r][i + 16 v] += sum over bt, in order, of g[bt][r] * inp[bt][i + 16 v], where g
// holds the packed dout columns (kPack per row).
constexpr int kPack = 16;
template <int R, int NV>
void weight_tile(float* dw, const float* g, const float* inp, int BT, int C, int oc, int i) {
    update_tile<R, NV>(dw, oc, inp, 0, BT, C, i,
                       [&](int bt, int r) { return g[at(bt, kPack) + r]; });
}

template <int R>
void weight_cols(float* dw, const float* g, const float* inp, int BT, int C, int oc) {
    const int cv = C - C % kLanes;
    int i = 0;
    for (; i + kUpdNV * kLanes <= cv; i += kUpdNV * kLanes)
        weight_tile<R, kUpdNV>(dw, g, inp, BT, C, oc, i);
    for (; i < cv; i += kLanes)
        weight_tile<R, 1>(dw, g, inp, BT, C, oc, i);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
        for (int j = cv; j < C; ++j) {
            float sum = dw[at(oc + r, C) + j];
            for (int bt = 0; bt < BT; ++bt)
                sum += inp[at(bt, C) + j] * g[at(bt, kPack) + r];
            dw[at(oc + r, C) + j] = sum;
        }
}


// e^x lane by lane, for x <= 0 (below -87 it clamps to about 1e-38): x = n ln2 + r with
// |r| <= ln2 / 2, e^r by its degree-7 Taylor polynomial (relative error ~1e-8), and 2^n
// put together in the exponent bits.
inline Part exp_lanes(Part x) {
    typedef int PartI __attribute__((vector_size(kPart * sizeof(int))));
    const Part lowest = Part{} - 87.0f;
    x = x < lowest ? lowest : x;
    const Part n = (x * 1.44269504f + 12582912.0f) - 12582912.0f; // round(x / ln2)
    const Part r = (x - n * 0.693359375f) - n * -2.12194440e-4f;  // ln2 in two parts
    Part e = Part{} + 1.0f / 5040.0f;
    e = e * r + 1.0f / 720.0f;
    e = e * r + 1.0f / 120.0f;
    e = e * r + 1.0f / 24.0f;
    e = e * r + 1.0f / 6.0f;
    e = e * r + 0.5f;
    e = e * r + 1.0f;
    e = e * r + 1.0f;
    const PartI bits = (__builtin_convertvector(n, PartI) + 127) << 23;
    Part scale;
    std::memcpy(&scale, &bits, sizeof scale);
    return e * scale;
}

// x = e^(x - m), lane by lane.
inline void exp_shifted(Vec& x, float m) {
#pragma GCC unroll 4
    for (int j = 0; j < kParts; ++j)
        x.p[j] = exp_lanes(x.p[j] - m);
}

// tanh lane by lane, from e^(-2|u|) (absolute error ~1e-7).
inline Part tanh_lanes(Part u) {
    const Part a = u < 0.0f ? -u : u;
    const Part e = exp_lanes(-2.0f * a);
    const Part t = (1.0f - e) / (1.0f + e);
    return u < 0.0f ? -t : t;
}

// f(Part of inputs) over elements [lo, hi), kPart at a time; the last few are padded, so
// each element's result never depends on where a piece starts or ends.
template <class F>
inline void lanes(int lo, int hi, F f) {
    int i = lo;
    for (; i + kPart <= hi; i += kPart)
        f(i, kPart);
    if (i < hi) f(i, hi - i);
}
inline Part load_some(const float* p, int n) {
    float buf[kPart] = {};
    std::memcpy(buf, p, n * sizeof(float));
    return load_part(buf);
}
inline void store_some(float* p, const Part& v, int n) {
    float buf[kPart];
    std::memcpy(buf, &v, sizeof buf);
    std::memcpy(p, buf, n * sizeof(float));
}

// sum of a[i] * b[i], i < n: lane-wise over the first n - n % 16, then the lanes, then
// the rest in order (the order depends on n only).
inline float dot(const float* a, const float* b, int n) {
    const int nv = n - n % kLanes;
    Vec acc{};
    for (int i = 0; i < nv; i += kLanes) {
        Vec x, y;
        load(x, a + i);
        load(y, b + i);
        fma(acc, x, y);
    }
    float sum = lane_sum(acc);
    for (int i = nv; i < n; ++i)
        sum += a[i] * b[i];
    return sum;
}
// y[i] += g * x[i], i < n.
inline void axpy(float* y, float g, const float* x, int n) {
    const int nv = n - n % kLanes;
    for (int i = 0; i < nv; i += kLanes) {
        Vec xv, yv;
        load(xv, x + i);
        load(yv, y + i);
        fma(yv, xv, g);
        store(y + i, yv);
    }
    for (int i = nv; i < n; ++i)
        y[i] += g * x[i];
}

} // namespace

void matmul_forward(float* out, const float* inp, const float* w, const float* bias, int C, int OC,
                    int lo, int hi, int olo, int ohi) {
    // kFwdQ weight rows at a time against every row of the piece (those stay in L1).
    int oc = olo;
    for (; oc + kFwdQ <= ohi; oc += kFwdQ)
        forward_rows<kFwdQ>(out, inp, w, bias, C, OC, lo, hi, oc);
    for (; oc < ohi; ++oc)
        forward_rows<1>(out, inp, w, bias, C, OC, lo, hi, oc);
}

void matmul_backward_input(float* dinp, const float* dout, const float* w, int C, int OC, int lo,
                           int hi) {
    // Blocks of rows and of weight rows, so a block of w is reused from cache by every row
    // tile; each dinp element still receives its OC terms in order.
    constexpr int kRowBlock = 32, kOcBlock = 128;
    const int cv = C - C % kLanes;
    for (int r0 = lo; r0 < hi; r0 += kRowBlock) {
        const int r1 = std::min(hi, r0 + kRowBlock);
        for (int o0 = 0; o0 < OC; o0 += kOcBlock) {
            const int o1 = std::min(OC, o0 + kOcBlock);
            int i = 0;
            for (; i + kUpdNV * kLanes <= cv; i += kUpdNV * kLanes)
                input_rows<kUpdNV>(dinp, dout, w, C, OC, r0, r1, i, o0, o1);
            for (; i < cv; i += kLanes)
                input_rows<1>(dinp, dout, w, C, OC, r0, r1, i, o0, o1);
            for (int bt = r0; bt < r1; ++bt) {
                float* dx = dinp + at(bt, C);
                const float* d = dout + at(bt, OC);
                for (int oc = o0; oc < o1; ++oc)
                    for (int j = cv; j < C; ++j)
                        dx[j] += w[at(oc, C) + j] * d[oc];
            }
        }
    }
}

void matmul_backward_weight(float* dw, float* dbias, const float* dout, const float* inp, int BT,
                            int C, int OC, int olo, int ohi) {
    // dout's columns for up to kPack outputs are copied to a dense (BT, kPack) block first.
    std::vector<float> g(static_cast<std::size_t>(BT) * kPack);
    for (int o0 = olo; o0 < ohi; o0 += kPack) {
        const int n = std::min(kPack, ohi - o0);
        for (int bt = 0; bt < BT; ++bt)
            for (int q = 0; q < n; ++q)
                g[at(bt, kPack) + q] = dout[at(bt, OC) + o0 + q];
        if (dbias)
            for (int q = 0; q < n; ++q) {
                float sum = dbias[o0 + q];
                for (int bt = 0; bt < BT; ++bt)
                    sum += g[at(bt, kPack) + q];
                dbias[o0 + q] = sum;
            }
        int q = 0;
        for (; q + kUpdR <= n; q += kUpdR)
            weight_cols<kUpdR>(dw, g.data() + q, inp, BT, C, o0 + q);
        for (; q < n; ++q)
            weight_cols<1>(dw, g.data() + q, inp, BT, C, o0 + q);
    }
}

void attention_forward(float* out, float* preatt, float* att, const float* qkv, int T, int C,
                       int NH, int lo, int hi) {
    const int hs = C / NH;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
    for (int bt = lo; bt < hi; ++bt) {
        const int b = bt / T, t = bt % T;
        for (int h = 0; h < NH; ++h) {
            const float* q = qkv + at(bt, 3 * C) + h * hs;
            float* pre = preatt + at(at(b, NH) + h, T) * T + at(t, T);
            float* a = att + at(at(b, NH) + h, T) * T + at(t, T);
            float maxv = -1e30f;
            for (int t2 = 0; t2 <= t; ++t2) {
                const float* k = qkv + at(at(b, T) + t2, 3 * C) + C + h * hs;
                pre[t2] = dot(q, k, hs) * scale;
                if (pre[t2] > maxv) maxv = pre[t2];
            }
            lanes(0, t + 1, [&](int i, int n) {
                store_some(a + i, exp_lanes(load_some(pre + i, n) - maxv), n);
            });
            float sum = 0.0f;
            for (int t2 = 0; t2 <= t; ++t2)
                sum += a[t2];
            const float inv = sum == 0.0f ? 0.0f : 1.0f / sum;
            for (int t2 = 0; t2 < T; ++t2)
                a[t2] = t2 <= t ? a[t2] * inv : 0.0f;
            float* o = out + at(bt, C) + h * hs;
            for (int i = 0; i < hs; ++i)
                o[i] = 0.0f;
            for (int t2 = 0; t2 <= t; ++t2)
                axpy(o, a[t2], qkv + at(at(b, T) + t2, 3 * C) + 2 * C + h * hs, hs);
        }
    }
}

void attention_backward(float* dqkv, float* dpreatt, float* datt, const float* dout,
                        const float* qkv, const float* att, int T, int C, int NH, int lo, int hi) {
    const int hs = C / NH;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
    for (int bt = lo; bt < hi; ++bt) {
        const int b = bt / T, t = bt % T;
        for (int h = 0; h < NH; ++h) {
            const long row = at(at(b, NH) + h, T) * T + at(t, T);
            const float* a = att + row;
            float* da = datt + row;
            float* dpre = dpreatt + row;
            const float* q = qkv + at(bt, 3 * C) + h * hs;
            float* dq = dqkv + at(bt, 3 * C) + h * hs;
            const float* d = dout + at(bt, C) + h * hs;
            for (int t2 = 0; t2 <= t; ++t2) { // through the weighted sum of values
                const long kv = at(at(b, T) + t2, 3 * C) + 2 * C + h * hs;
                da[t2] += dot(qkv + kv, d, hs);
                axpy(dqkv + kv, a[t2], d, hs);
            }
            // Through the softmax: dpre[t3] += sum over t2 of a[t2] (delta - a[t3]) da[t2],
            // that is a[t3] (da[t3] - sum over t2 of a[t2] da[t2]).
            float ada = 0.0f;
            for (int t2 = 0; t2 <= t; ++t2)
                ada += a[t2] * da[t2];
            for (int t3 = 0; t3 <= t; ++t3)
                dpre[t3] += a[t3] * (da[t3] - ada);
            for (int t2 = 0; t2 <= t; ++t2) { // through q . k
                const long k = at(at(b, T) + t2, 3 * C) + C + h * hs;
                const float g = dpre[t2] * scale;
                axpy(dq, g, qkv + k, hs);
                axpy(dqkv + k, g, q, hs);
            }
        }
    }
}

void gelu_forward(float* out, const float* inp, int lo, int hi) {
    lanes(lo, hi, [&](int i, int n) {
        const Part x = load_some(inp + i, n);
        const Part th = tanh_lanes(kGeluScale * (x + 0.044715f * x * x * x));
        store_some(out + i, 0.5f * x * (1.0f + th), n);
    });
}

void gelu_backward(float* dinp, const float* inp, const float* dout, int lo, int hi) {
    lanes(lo, hi, [&](int i, int n) {
        const Part x = load_some(inp + i, n);
        const Part th = tanh_lanes(kGeluScale * (x + 0.044715f * x * x * x));
        const Part sech2 = 1.0f - th * th;
        const Part local =
            0.5f * (1.0f + th) + 0.5f * x * sech2 * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
        store_some(dinp + i, load_some(dinp + i, n) + local * load_some(dout + i, n), n);
    });
}

void residual_forward(float* out, const float* a, const float* b, int lo, int hi) {
#pragma omp simd
    for (int i = lo; i < hi; ++i)
        out[i] = a[i] + b[i];
}

void residual_backward(float* da, float* db, const float* dout, int lo, int hi) {
#pragma omp simd
    for (int i = lo; i < hi; ++i) {
        da[i] += dout[i];
        db[i] += dout[i];
    }
}


void softmax_forward(float* probs, const float* logits, int V, int Vp, int lo, int hi) {
    const int vv = V - V % kLanes;
    for (int bt = lo; bt < hi; ++bt) {
        const float* l = logits + at(bt, Vp);
        float* p = probs + at(bt, Vp);
        Part mv = Part{} - 1e30f;
        for (int i = 0; i < vv; i += kPart) {
            Part x;
            std::memcpy(&x, l + i, sizeof x);
            mv = x > mv ? x : mv;
        }
        float maxv = -1e30f;
        for (int i = 0; i < kPart; ++i)
            maxv = mv[i] > maxv ? mv[i] : maxv;
        for (int i = vv; i < V; ++i)
            maxv = l[i] > maxv ? l[i] : maxv;
        Vec sv{};
        for (int i = 0; i < vv; i += kLanes) {
            Vec x;
            load(x, l + i);
            exp_shifted(x, maxv);
            store(p + i, x);
            add(sv, x);
        }
        // The last V % 16 go through the same vector code, padded.
        float padded[kLanes];
        for (int i = 0; i < kLanes; ++i)
            padded[i] = vv + i < V ? l[vv + i] : maxv - 100.0f;
        Vec tail;
        load(tail, padded);
        exp_shifted(tail, maxv);
        store(padded, tail);
        float sum = lane_sum(sv);
        for (int i = vv; i < V; ++i) {
            p[i] = padded[i - vv];
            sum += p[i];
        }
        for (int i = 0; i < vv; i += kPart) {
            Part x;
            std::memcpy(&x, p + i, sizeof x);
            x = x / sum;
            std::memcpy(p + i, &x, sizeof x);
        }
        for (int i = vv; i < V; ++i)
            p[i] /= sum;
        for (int i = V; i < Vp; ++i)
            p[i] = 0.0f;
    }
}

void crossentropy_forward(float* losses, const float* probs, const int* targets, int Vp, int lo,
                          int hi) {
    for (int bt = lo; bt < hi; ++bt)
        losses[bt] = -std::log(probs[at(bt, Vp) + targets[bt]]);
}

void crossentropy_softmax_backward(float* dlogits, const float* dlosses, const float* probs,
                                   const int* targets, int V, int Vp, int lo, int hi) {
    for (int bt = lo; bt < hi; ++bt) {
        float* dl = dlogits + at(bt, Vp);
        const float* p = probs + at(bt, Vp);
#pragma omp simd
        for (int i = 0; i < V; ++i)
            dl[i] += (p[i] - (i == targets[bt] ? 1.0f : 0.0f)) * dlosses[bt];
    }
}

void adamw(float* params, const float* grads, float* m, float* v, long lo, long hi, float lr,
           float beta1, float beta2, float eps, float weight_decay, int t) {
    const float c1 = 1.0f - std::pow(beta1, static_cast<float>(t));
    const float c2 = 1.0f - std::pow(beta2, static_cast<float>(t));
#pragma omp simd
    for (long i = lo; i < hi; ++i) {
        m[i] = beta1 * m[i] + (1.0f - beta1) * grads[i];
        v[i] = beta2 * v[i] + (1.0f - beta2) * grads[i] * grads[i];
        const float mhat = m[i] / c1, vhat = v[i] / c2;
        params[i] -= lr * (mhat / (std::sqrt(vhat) + eps) + weight_decay * params[i]);
    }
}

} // namespace gpt2::layers
