#include "layers.hpp"

#include <cmath>

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

void matmul_forward(float* out, const float* inp, const float* w, const float* bias, int C, int OC,
                    int lo, int hi, int olo, int ohi) {
    for (int bt = lo; bt < hi; ++bt) {
        const float* x = inp + at(bt, C);
        float* o = out + at(bt, OC);
        for (int oc = olo; oc < ohi; ++oc) {
            const float* wr = w + at(oc, C);
            float sum = bias ? bias[oc] : 0.0f;
            for (int i = 0; i < C; ++i)
                sum += x[i] * wr[i];
            o[oc] = sum;
        }
    }
}

void matmul_backward_input(float* dinp, const float* dout, const float* w, int C, int OC, int lo,
                           int hi) {
    for (int bt = lo; bt < hi; ++bt) {
        const float* d = dout + at(bt, OC);
        float* dx = dinp + at(bt, C);
        for (int oc = 0; oc < OC; ++oc) {
            const float* wr = w + at(oc, C);
            const float g = d[oc];
            for (int i = 0; i < C; ++i)
                dx[i] += wr[i] * g;
        }
    }
}

void matmul_backward_weight(float* dw, float* dbias, const float* dout, const float* inp, int BT,
                            int C, int OC, int olo, int ohi) {
    for (int oc = olo; oc < ohi; ++oc) {
        float* dwr = dw + at(oc, C);
        for (int bt = 0; bt < BT; ++bt) {
            const float g = dout[at(bt, OC) + oc];
            const float* x = inp + at(bt, C);
            if (dbias) dbias[oc] += g;
            for (int i = 0; i < C; ++i)
                dwr[i] += x[i] * g;
        }
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
    for (int i = lo; i < hi; ++i)
        out[i] = a[i] + b[i];
}

void residual_backward(float* da, float* db, const float* dout, int lo, int hi) {
    for (int i = lo; i < hi; ++i) {
        da[i] += dout[i];
        db[i] += dout[i];
    }
}

void softmax_forward(float* probs, const float* logits, int V, int Vp, int lo, int hi) {
    for (int bt = lo; bt < hi; ++bt) {
        const float* l = logits + at(bt, Vp);
        float* p = probs + at(bt, Vp);
        float maxv = -1e30f;
        for (int i = 0; i < V; ++i)
            maxv = l[i] > maxv ? l[i] : maxv;
        float sum = 0.0f;
        for (int i = 0; i < V; ++i) {
            p[i] = std::exp(l[i] - maxv);
            sum += p[i];
        }
        for (int i = 0; i < V; ++i)
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
        for (int i = 0; i < V; ++i)
            dl[i] += (p[i] - (i == targets[bt] ? 1.0f : 0.0f)) * dlosses[bt];
    }
}

void adamw(float* params, const float* grads, float* m, float* v, long lo, long hi, float lr,
           float beta1, float beta2, float eps, float weight_decay, int t) {
    const float c1 = 1.0f - std::pow(beta1, static_cast<float>(t));
    const float c2 = 1.0f - std::pow(beta2, static_cast<float>(t));
    for (long i = lo; i < hi; ++i) {
        m[i] = beta1 * m[i] + (1.0f - beta1) * grads[i];
        v[i] = beta2 * v[i] + (1.0f - beta2) * grads[i] * grads[i];
        const float mhat = m[i] / c1, vhat = v[i] / c2;
        params[i] -= lr * (mhat / (std::sqrt(vhat) + eps) + weight_decay * params[i]);
    }
}

} // namespace gpt2::layers
