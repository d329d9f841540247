// GPT-2's CPU kernels, forward and backward, each restricted to a slice of its work so the
// same code runs serially, as fork-join chunks or as tasks. Rows are flattened (b, t)
// positions in [lo, hi); backward kernels accumulate (+=) into zeroed gradients.
#pragma once

namespace gpt2::layers {

// out[bt] = wte[token[bt]] + wpe[t] for rows in [lo, hi).
void encoder_forward(float* out, const int* tokens, const float* wte, const float* wpe, int T,
                     int C, int lo, int hi);
void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* tokens, int T, int C,
                      int lo, int hi);

// Normalises each row over C channels; also stores its mean and 1/stddev.
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w,
                       const float* b, int C, int lo, int hi);
void layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                        const float* w, const float* mean, const float* rstd, int C, int lo,
                        int hi);

// out[bt][o] = bias[o] + inp[bt] . w[o] for rows [lo, hi) and outputs [olo, ohi); bias may
// be null. w is (OC, C).
void matmul_forward(float* out, const float* inp, const float* w, const float* bias, int C, int OC,
                    int lo, int hi, int olo, int ohi);
// dinp[bt] += sum_o dout[bt][o] * w[o] for rows [lo, hi).
void matmul_backward_input(float* dinp, const float* dout, const float* w, int C, int OC, int lo,
                           int hi);
// dw[o] += sum_bt dout[bt][o] * inp[bt], dbias[o] += sum_bt dout[bt][o], for outputs
// [olo, ohi) over all BT rows; dbias may be null.
void matmul_backward_weight(float* dw, float* dbias, const float* dout, const float* inp, int BT,
                            int C, int OC, int olo, int ohi);

// Causal multi-head self-attention for rows [lo, hi) (all within one sequence). qkv is
// (B, T, 3C); preatt and att are (B, NH, T, T); out is (B, T, C).
void attention_forward(float* out, float* preatt, float* att, const float* qkv, int T, int C,
                       int NH, int lo, int hi);
// Accumulates into dqkv for positions <= each row, so rows of one sequence must not run
// concurrently.
void attention_backward(float* dqkv, float* dpreatt, float* datt, const float* dout,
                        const float* qkv, const float* att, int T, int C, int NH, int lo, int hi);

// Tanh-approximated GELU over elements [lo, hi).
void gelu_forward(float* out, const float* inp, int lo, int hi);
void gelu_backward(float* dinp, const float* inp, const float* dout, int lo, int hi);

// out = a + b over elements [lo, hi); backward adds dout to both.
void residual_forward(float* out, const float* a, const float* b, int lo, int hi);
void residual_backward(float* da, float* db, const float* dout, int lo, int hi);

// Row-wise softmax over the first V of Vp logits (padding gets probability 0).
void softmax_forward(float* probs, const float* logits, int V, int Vp, int lo, int hi);
// losses[bt] = -log probs[bt][target[bt]].
void crossentropy_forward(float* losses, const float* probs, const int* targets, int Vp, int lo,
                          int hi);
// dlogits += (probs - onehot(target)) * dloss, the fused softmax + cross-entropy gradient.
void crossentropy_softmax_backward(float* dlogits, const float* dlosses, const float* probs,
                                   const int* targets, int V, int Vp, int lo, int hi);

// AdamW update of elements [lo, hi) at step t (1-based).
void adamw(float* params, const float* grads, float* m, float* v, long lo, long hi, float lr,
           float beta1, float beta2, float eps, float weight_decay, int t);

} // namespace gpt2::layers
