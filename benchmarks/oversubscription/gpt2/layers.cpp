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

// The matmuls work on register tiles of 16-float vectors (GCC/Clang vector extensions, so
// the same code maps to AVX-512, AVX2 or SSE). Each output element is summed in an order
// that depends only on the shapes, never on the tile or the lo/hi/olo/ohi range a piece
// covers, so every execution mode gets the same bits.
namespace {

constexpr int kLanes = 16;
typedef float Vec __attribute__((vector_size(kLanes * sizeof(float))));

inline void load(Vec& v, const float* p) {
    std::memcpy(&v, p, sizeof v);
}
inline void store(float* p, const Vec& v) {
    std::memcpy(p, &v, sizeof v);
}
// Sum of the lanes, halving the vector each time (always the same order).
inline float lane_sum(const Vec& v) {
    typedef float Vec8 __attribute__((vector_size(8 * sizeof(float))));
    typedef float Vec4 __attribute__((vector_size(4 * sizeof(float))));
    const Vec8 s8 = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                    __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
    const Vec4 s4 =
        __builtin_shufflevector(s8, s8, 0, 1, 2, 3) + __builtin_shufflevector(s8, s8, 4, 5, 6, 7);
    return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}

// lane_sum of a[0..3] into s[0..3], bit for bit, sharing the shuffles.
inline void lane_sum4(const Vec (&a)[4], float* s) {
    const Vec h01 = __builtin_shufflevector(a[0], a[1], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20,
                                            21, 22, 23) +
                    __builtin_shufflevector(a[0], a[1], 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26,
                                            27, 28, 29, 30, 31);
    const Vec h23 = __builtin_shufflevector(a[2], a[3], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20,
                                            21, 22, 23) +
                    __builtin_shufflevector(a[2], a[3], 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26,
                                            27, 28, 29, 30, 31);
    // Lanes 4k..4k+3 hold the four partial sums of a[k].
    const Vec q = __builtin_shufflevector(h01, h23, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24,
                                          25, 26, 27) +
                  __builtin_shufflevector(h01, h23, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28,
                                          29, 30, 31);
    const Vec r =
        q + __builtin_shufflevector(q, q, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
    for (int k = 0; k < 4; ++k)
        s[k] = r[4 * k] + r[4 * k + 1];
}

// out[bt + r][oc + q] for r < R, q < Q: lane-wise dot products over the first C - C % 16
// channels, then the lanes, then the remaining channels one by one.
template <int R, int Q>
void forward_tile(float* out, const float* inp, const float* w, const float* bias, int C, int OC,
                  int bt, int oc) {
    const int cv = C - C % kLanes;
    Vec acc[R][Q] = {};
    for (int i = 0; i < cv; i += kLanes) {
        Vec x[R], wv[Q];
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r)
            load(x[r], inp + at(bt + r, C) + i);
#pragma GCC unroll 16
        for (int q = 0; q < Q; ++q)
            load(wv[q], w + at(oc + q, C) + i);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
            for (int q = 0; q < Q; ++q)
                acc[r][q] += x[r] * wv[q];
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
        const float* x = inp + at(bt + r, C);
        float sums[Q];
        if constexpr (Q == 4)
            lane_sum4(acc[r], sums);
        else
            for (int q = 0; q < Q; ++q)
                sums[q] = lane_sum(acc[r][q]);
#pragma GCC unroll 16
        for (int q = 0; q < Q; ++q) {
            const float* wr = w + at(oc + q, C);
            float sum = sums[q];
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
    for (; bt + 4 <= hi; bt += 4)
        forward_tile<4, Q>(out, inp, w, bias, C, OC, bt, oc);
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
                acc[r][v] += x[v] * g;
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
    for (; bt + 4 <= hi; bt += 4)
        input_tile<4, NV>(dinp, dout, w, C, OC, bt, i, o0, o1);
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
    for (; i + 4 * kLanes <= cv; i += 4 * kLanes)
        weight_tile<R, 4>(dw, g, inp, BT, C, oc, i);
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

} // namespace

void matmul_forward(float* out, const float* inp, const float* w, const float* bias, int C, int OC,
                    int lo, int hi, int olo, int ohi) {
    // Four weight rows at a time against every row of the piece (those stay in L1).
    int oc = olo;
    for (; oc + 4 <= ohi; oc += 4)
        forward_rows<4>(out, inp, w, bias, C, OC, lo, hi, oc);
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
            for (; i + 4 * kLanes <= cv; i += 4 * kLanes)
                input_rows<4>(dinp, dout, w, C, OC, r0, r1, i, o0, o1);
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
        for (; q + 4 <= n; q += 4)
            weight_cols<4>(dw, g.data() + q, inp, BT, C, o0 + q);
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
                float dotp = 0.0f;
                for (int i = 0; i < hs; ++i)
                    dotp += q[i] * k[i];
                pre[t2] = dotp * scale;
                if (pre[t2] > maxv) maxv = pre[t2];
            }
            float sum = 0.0f;
            for (int t2 = 0; t2 <= t; ++t2) {
                a[t2] = std::exp(pre[t2] - maxv);
                sum += a[t2];
            }
            const float inv = sum == 0.0f ? 0.0f : 1.0f / sum;
            for (int t2 = 0; t2 < T; ++t2)
                a[t2] = t2 <= t ? a[t2] * inv : 0.0f;
            float* o = out + at(bt, C) + h * hs;
            for (int i = 0; i < hs; ++i)
                o[i] = 0.0f;
            for (int t2 = 0; t2 <= t; ++t2) {
                const float* v = qkv + at(at(b, T) + t2, 3 * C) + 2 * C + h * hs;
                for (int i = 0; i < hs; ++i)
                    o[i] += a[t2] * v[i];
            }
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
                const float* v = qkv + at(at(b, T) + t2, 3 * C) + 2 * C + h * hs;
                float* dv = dqkv + at(at(b, T) + t2, 3 * C) + 2 * C + h * hs;
                for (int i = 0; i < hs; ++i) {
                    da[t2] += v[i] * d[i];
                    dv[i] += a[t2] * d[i];
                }
            }
            for (int t2 = 0; t2 <= t; ++t2) // through the softmax
                for (int t3 = 0; t3 <= t; ++t3)
                    dpre[t3] += a[t2] * ((t2 == t3 ? 1.0f : 0.0f) - a[t3]) * da[t2];
            for (int t2 = 0; t2 <= t; ++t2) { // through q . k
                const float* k = qkv + at(at(b, T) + t2, 3 * C) + C + h * hs;
                float* dk = dqkv + at(at(b, T) + t2, 3 * C) + C + h * hs;
                for (int i = 0; i < hs; ++i) {
                    dq[i] += k[i] * dpre[t2] * scale;
                    dk[i] += q[i] * dpre[t2] * scale;
                }
            }
        }
    }
}

void gelu_forward(float* out, const float* inp, int lo, int hi) {
    for (int i = lo; i < hi; ++i) {
        const float x = inp[i];
        out[i] = 0.5f * x * (1.0f + std::tanh(kGeluScale * (x + 0.044715f * x * x * x)));
    }
}

void gelu_backward(float* dinp, const float* inp, const float* dout, int lo, int hi) {
    for (int i = lo; i < hi; ++i) {
        const float x = inp[i];
        const float u = kGeluScale * (x + 0.044715f * x * x * x);
        const float th = std::tanh(u);
        const float sech2 = 1.0f - th * th;
        const float local =
            0.5f * (1.0f + th) + 0.5f * x * sech2 * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] += local * dout[i];
    }
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

namespace {

// e^x lane by lane, for x <= 0 (below -87 it clamps to about 1e-38): x = n ln2 + r with
// |r| <= ln2 / 2, e^r by its degree-7 Taylor polynomial (relative error ~1e-8), and 2^n
// put together in the exponent bits.
inline void exp_lanes(Vec& x) {
    typedef int VecI __attribute__((vector_size(kLanes * sizeof(int))));
    const Vec lowest = Vec{} - 87.0f;
    x = x < lowest ? lowest : x;
    const Vec n = (x * 1.44269504f + 12582912.0f) - 12582912.0f; // round(x / ln2)
    const Vec r = (x - n * 0.693359375f) - n * -2.12194440e-4f;  // ln2 in two parts
    Vec e = Vec{} + 1.0f / 5040.0f;
    e = e * r + 1.0f / 720.0f;
    e = e * r + 1.0f / 120.0f;
    e = e * r + 1.0f / 24.0f;
    e = e * r + 1.0f / 6.0f;
    e = e * r + 0.5f;
    e = e * r + 1.0f;
    e = e * r + 1.0f;
    const VecI bits = (__builtin_convertvector(n, VecI) + 127) << 23;
    Vec scale;
    std::memcpy(&scale, &bits, sizeof scale);
    x = e * scale;
}

} // namespace

void softmax_forward(float* probs, const float* logits, int V, int Vp, int lo, int hi) {
    const int vv = V - V % kLanes;
    for (int bt = lo; bt < hi; ++bt) {
        const float* l = logits + at(bt, Vp);
        float* p = probs + at(bt, Vp);
        Vec mv = Vec{} - 1e30f;
        for (int i = 0; i < vv; i += kLanes) {
            Vec x;
            load(x, l + i);
            mv = x > mv ? x : mv;
        }
        float maxv = -1e30f;
        for (int i = 0; i < kLanes; ++i)
            maxv = mv[i] > maxv ? mv[i] : maxv;
        for (int i = vv; i < V; ++i)
            maxv = l[i] > maxv ? l[i] : maxv;
        Vec sv{};
        for (int i = 0; i < vv; i += kLanes) {
            Vec x;
            load(x, l + i);
            x -= maxv;
            exp_lanes(x);
            store(p + i, x);
            sv += x;
        }
        // The last V % 16 go through the same vector code, padded.
        Vec tail = Vec{} - 100.0f;
        for (int i = vv; i < V; ++i)
            tail[i - vv] = l[i] - maxv;
        exp_lanes(tail);
        float sum = lane_sum(sv);
        for (int i = vv; i < V; ++i) {
            p[i] = tail[i - vv];
            sum += p[i];
        }
        for (int i = 0; i < vv; i += kLanes) {
            Vec x;
            load(x, p + i);
            store(p + i, x / sum);
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
