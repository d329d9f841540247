#include "train.hpp"

#include "layers.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace gpt2 {

namespace {

bool layered_act(int a) {
    return a >= LN1 && a <= RESIDUAL3;
}
bool layered_param(int p) {
    return p >= LN1W && p <= FCPROJB;
}

} // namespace

// Geometry, dependency tokens and the kernel calls. Lambdas handed to Exec capture only
// values and pointers: in tasks mode they run after the calling function has returned.
struct Trainer::Impl {
    Config c;
    int B, T, BT, C, NH, L, V, Vp;
    int ntc, nblk, nos; // time blocks per sequence, row blocks, output-channel slices
    Granularity g;
    Exec& exec;
    std::unique_ptr<Matmul> mm;
    Params params, grads;
    Acts acts, dacts;
    Params m, v;
    std::vector<int> inputs, targets;
    std::vector<char> act_tok, dact_tok, param_tok; // dependency tokens, never read
    int t = 0;                                      // optimizer step

    Impl(const Config& cfg, Params p, int b, int tt, Granularity gr, Exec& ex)
        : c(cfg), B(b), T(tt), BT(b * tt), C(cfg.channels), NH(cfg.heads), L(cfg.layers),
          V(cfg.vocab), Vp(cfg.padded_vocab), g(gr), exec(ex), params(std::move(p)),
          grads(param_sizes(cfg)), acts(act_sizes(cfg, b, tt)), dacts(act_sizes(cfg, b, tt)),
          m(param_sizes(cfg)), v(param_sizes(cfg)), inputs(BT), targets(BT) {
        ntc = (T + g.t_gran - 1) / g.t_gran;
        nblk = B * ntc;
        nos = g.oc_split;
        act_tok.resize(static_cast<std::size_t>(kNumActs) * L * toks_per_act());
        dact_tok.resize(act_tok.size());
        param_tok.resize(static_cast<std::size_t>(kNumParams) * L * nos);
    }

    // ---- geometry ----
    std::pair<int, int> rows(int blk) const {
        const int b = blk / ntc, tc = blk % ntc;
        return {b * T + tc * g.t_gran, b * T + std::min(T, (tc + 1) * g.t_gran)};
    }
    std::pair<int, int> slice(int o, int OC) const {
        return {static_cast<int>(static_cast<long>(o) * OC / nos),
                static_cast<int>(static_cast<long>(o + 1) * OC / nos)};
    }

    // ---- tensors of layer l ----
    float* A(int a, int l) { return acts[a] + (layered_act(a) ? acts.size(a) / L * l : 0); }
    float* D(int a, int l) { return dacts[a] + (layered_act(a) ? dacts.size(a) / L * l : 0); }
    float* P(int k, int l) { return params[k] + (layered_param(k) ? params.size(k) / L * l : 0); }
    float* G(int k, int l) { return grads[k] + (layered_param(k) ? grads.size(k) / L * l : 0); }

    // ---- dependency tokens ----
    // Each activation has one token per row block, which every reader names, and one per
    // (row block, output slice) cell, written only by matmul_fwd's pieces; a funnel then
    // writes the row's token once all its cells are done. Readers of whole activations
    // (weight gradients, causal attention) so name one token per row block, not per cell:
    // libomp compares every pair of a task's dependences, and per-cell lists of thousands
    // of addresses made that comparison most of a step (docs/oversubscription.md). Cell
    // writers do not wait for the row's readers: each activation is written once a step,
    // and a step ends with a taskwait.
    std::size_t toks_per_act() const { return static_cast<std::size_t>(nblk) * (1 + nos); }
    const char* tok(int a, int l) const {
        return act_tok.data() + (static_cast<std::size_t>(a) * L + l) * toks_per_act();
    }
    const char* dtok(int a, int l) const {
        return dact_tok.data() + (static_cast<std::size_t>(a) * L + l) * toks_per_act();
    }
    const char* ptok(int p, int l) const {
        return param_tok.data() + (static_cast<std::size_t>(p) * L + l) * nos;
    }
    Dep blk(const char* base, int i) const { return {base, i, i + 1}; }
    Dep cells(const char* base, int i) const {
        return {base, nblk + i * nos, nblk + (i + 1) * nos};
    }
    Dep cell(const char* base, int i, int o) const {
        return {base, nblk + i * nos + o, nblk + i * nos + o + 1};
    }
    Dep all(const char* base) const { return {base, 0, nblk}; }
    Dep causal(const char* base, int i) const { return {base, i - i % ntc, i + 1}; }
    Dep pall(const char* base) const { return {base, 0, nos}; }
    Dep pcell(const char* base, int o) const { return {base, o, o + 1}; }

    // ---- kernel calls ----
    // fn(lo, hi) over each row block; deps(i) for block i.
    // chains: see Exec::run (1 = all blocks accumulate into one output, B = per sequence).
    template <typename Fn, typename DepFn>
    void rows_op(Fn fn, DepFn deps, int chains = 0) {
        exec.run(
            nblk,
            [this, fn](int i) {
                auto [lo, hi] = rows(i);
                fn(lo, hi);
            },
            [deps](int i) { return deps(i); }, chains);
    }

    void matmul_fwd(float* out, const char* out_tok, const float* inp, const char* inp_tok,
                    const float* w, const float* bias, int in_c, int OC) {
        Matmul* k = mm.get();
        exec.run(
            nblk * nos,
            [=, this](int i) {
                auto [lo, hi] = rows(i / nos);
                auto [olo, ohi] = slice(i % nos, OC);
                k->forward(out, inp, w, bias, in_c, OC, lo, hi, olo, ohi);
            },
            [=, this](int i) {
                Deps d;
                d.in[0] = blk(inp_tok, i / nos);
                d.out[0] = cell(out_tok, i / nos, i % nos);
                return d;
            });
        exec.funnel(nblk, [=, this](int i) {
            Deps d;
            d.in[0] = cells(out_tok, i);
            d.out[0] = blk(out_tok, i);
            return d;
        });
    }

    void matmul_bwd(float* dinp, const char* dinp_tok, const float* dout, const char* dout_tok,
                    const float* inp, const char* inp_tok, const float* w, float* dw, float* db,
                    const char* dw_tok, int in_c, int OC) {
        Matmul* k = mm.get();
        rows_op([=](int lo, int hi) { k->backward_input(dinp, dout, w, in_c, OC, lo, hi); },
                [=, this](int i) {
                    Deps d;
                    d.in[0] = blk(dout_tok, i);
                    d.out[0] = blk(dinp_tok, i);
                    return d;
                });
        const int bt = BT;
        exec.run(
            nos,
            [=, this](int o) {
                auto [olo, ohi] = slice(o, OC);
                k->backward_weight(dw, db, dout, inp, bt, in_c, OC, olo, ohi);
            },
            [=, this](int o) {
                Deps d;
                d.in[0] = all(dout_tok);
                d.in[1] = all(inp_tok);
                d.out[0] = pcell(dw_tok, o);
                return d;
            });
    }

    void layernorm_fwd(float* out, float* mean, float* rstd, const char* out_tok, const float* inp,
                       const char* inp_tok, const float* w, const float* b) {
        const int ch = C;
        rows_op([=](int lo,
                    int hi) { layers::layernorm_forward(out, mean, rstd, inp, w, b, ch, lo, hi); },
                [=, this](int i) {
                    Deps d;
                    d.in[0] = blk(inp_tok, i);
                    d.out[0] = blk(out_tok, i);
                    return d;
                });
    }

    void layernorm_bwd(float* dinp, const char* dinp_tok, float* dw, float* db, const char* dw_tok,
                       const float* dout, const char* dout_tok, const float* inp,
                       const char* inp_tok, const float* w, const float* mean, const float* rstd,
                       const char* out_tok) {
        const int ch = C;
        rows_op(
            [=](int lo, int hi) {
                layers::layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, ch, lo, hi);
            },
            [=, this](int i) {
                Deps d;
                d.in[0] = blk(dout_tok, i);
                d.in[1] = blk(inp_tok, i);
                d.in[2] = blk(out_tok, i);
                d.out[0] = blk(dinp_tok, i);
                d.out[1] = pall(dw_tok);
                return d;
            },
            1);
    }

    void residual_fwd(float* out, const char* out_tok, const float* a, const char* a_tok,
                      const float* b, const char* b_tok) {
        const int ch = C;
        rows_op([=](int lo, int hi) { layers::residual_forward(out, a, b, lo * ch, hi * ch); },
                [=, this](int i) {
                    Deps d;
                    d.in[0] = blk(a_tok, i);
                    d.in[1] = blk(b_tok, i);
                    d.out[0] = blk(out_tok, i);
                    return d;
                });
    }

    void residual_bwd(float* da, const char* da_tok, float* db, const char* db_tok,
                      const float* dout, const char* dout_tok) {
        const int ch = C;
        rows_op([=](int lo, int hi) { layers::residual_backward(da, db, dout, lo * ch, hi * ch); },
                [=, this](int i) {
                    Deps d;
                    d.in[0] = blk(dout_tok, i);
                    d.out[0] = blk(da_tok, i);
                    d.out[1] = blk(db_tok, i);
                    return d;
                });
    }

    void forward_body();
    void backward_body();
};

void Trainer::Impl::forward_body() {
    const int* in = inputs.data();
    const int* tg = targets.data();
    const int tt = T, ch = C, nh = NH, v = V, vp = Vp;
    float* enc = A(ENCODED, 0);
    const float* wte = P(WTE, 0);
    const float* wpe = P(WPE, 0);
    rows_op([=](int lo, int hi) { layers::encoder_forward(enc, in, wte, wpe, tt, ch, lo, hi); },
            [=, this](int i) {
                Deps d;
                d.out[0] = blk(tok(ENCODED, 0), i);
                return d;
            });
    for (int l = 0; l < L; ++l) {
        float* res = l == 0 ? enc : A(RESIDUAL3, l - 1);
        const char* res_tok = l == 0 ? tok(ENCODED, 0) : tok(RESIDUAL3, l - 1);
        layernorm_fwd(A(LN1, l), A(LN1_MEAN, l), A(LN1_RSTD, l), tok(LN1, l), res, res_tok,
                      P(LN1W, l), P(LN1B, l));
        matmul_fwd(A(QKV, l), tok(QKV, l), A(LN1, l), tok(LN1, l), P(QKVW, l), P(QKVB, l), C,
                   3 * C);
        float *atty = A(ATTY, l), *pre = A(PREATT, l), *att = A(ATT, l), *qkv = A(QKV, l);
        const char *atty_tok = tok(ATTY, l), *qkv_tok = tok(QKV, l);
        rows_op([=](int lo,
                    int hi) { layers::attention_forward(atty, pre, att, qkv, tt, ch, nh, lo, hi); },
                [=, this](int i) {
                    Deps d;
                    d.in[0] = causal(qkv_tok, i);
                    d.out[0] = blk(atty_tok, i);
                    return d;
                });
        matmul_fwd(A(ATTPROJ, l), tok(ATTPROJ, l), atty, atty_tok, P(ATTPROJW, l), P(ATTPROJB, l),
                   C, C);
        residual_fwd(A(RESIDUAL2, l), tok(RESIDUAL2, l), res, res_tok, A(ATTPROJ, l),
                     tok(ATTPROJ, l));
        layernorm_fwd(A(LN2, l), A(LN2_MEAN, l), A(LN2_RSTD, l), tok(LN2, l), A(RESIDUAL2, l),
                      tok(RESIDUAL2, l), P(LN2W, l), P(LN2B, l));
        matmul_fwd(A(FCH, l), tok(FCH, l), A(LN2, l), tok(LN2, l), P(FCW, l), P(FCB, l), C, 4 * C);
        float *fch = A(FCH, l), *gelu = A(FCH_GELU, l);
        const char *fch_tok = tok(FCH, l), *gelu_tok = tok(FCH_GELU, l);
        rows_op([=](int lo, int hi) { layers::gelu_forward(gelu, fch, lo * 4 * ch, hi * 4 * ch); },
                [=, this](int i) {
                    Deps d;
                    d.in[0] = blk(fch_tok, i);
                    d.out[0] = blk(gelu_tok, i);
                    return d;
                });
        matmul_fwd(A(FCPROJ, l), tok(FCPROJ, l), gelu, gelu_tok, P(FCPROJW, l), P(FCPROJB, l),
                   4 * C, C);
        residual_fwd(A(RESIDUAL3, l), tok(RESIDUAL3, l), A(RESIDUAL2, l), tok(RESIDUAL2, l),
                     A(FCPROJ, l), tok(FCPROJ, l));
    }
    layernorm_fwd(A(LNF, 0), A(LNF_MEAN, 0), A(LNF_RSTD, 0), tok(LNF, 0), A(RESIDUAL3, L - 1),
                  tok(RESIDUAL3, L - 1), P(LNFW, 0), P(LNFB, 0));
    matmul_fwd(A(LOGITS, 0), tok(LOGITS, 0), A(LNF, 0), tok(LNF, 0), wte, nullptr, C, Vp);
    float *logits = A(LOGITS, 0), *probs = A(PROBS, 0), *losses = A(LOSSES, 0);
    rows_op([=](int lo, int hi) { layers::softmax_forward(probs, logits, v, vp, lo, hi); },
            [=, this](int i) {
                Deps d;
                d.in[0] = blk(tok(LOGITS, 0), i);
                d.out[0] = blk(tok(PROBS, 0), i);
                return d;
            });
    rows_op([=](int lo, int hi) { layers::crossentropy_forward(losses, probs, tg, vp, lo, hi); },
            [=, this](int i) {
                Deps d;
                d.in[0] = blk(tok(PROBS, 0), i);
                d.out[0] = blk(tok(LOSSES, 0), i);
                return d;
            });
}

void Trainer::Impl::backward_body() {
    const int* in = inputs.data();
    const int* tg = targets.data();
    const int tt = T, ch = C, nh = NH, v = V, vp = Vp;
    float *dlogits = D(LOGITS, 0), *dlosses = D(LOSSES, 0), *probs = A(PROBS, 0);
    rows_op(
        [=](int lo, int hi) {
            layers::crossentropy_softmax_backward(dlogits, dlosses, probs, tg, v, vp, lo, hi);
        },
        [=, this](int i) {
            Deps d;
            d.in[0] = blk(tok(PROBS, 0), i);
            d.out[0] = blk(dtok(LOGITS, 0), i);
            return d;
        });
    matmul_bwd(D(LNF, 0), dtok(LNF, 0), dlogits, dtok(LOGITS, 0), A(LNF, 0), tok(LNF, 0), P(WTE, 0),
               G(WTE, 0), nullptr, ptok(WTE, 0), C, Vp);
    layernorm_bwd(D(RESIDUAL3, L - 1), dtok(RESIDUAL3, L - 1), G(LNFW, 0), G(LNFB, 0),
                  ptok(LNFW, 0), D(LNF, 0), dtok(LNF, 0), A(RESIDUAL3, L - 1),
                  tok(RESIDUAL3, L - 1), P(LNFW, 0), A(LNF_MEAN, 0), A(LNF_RSTD, 0), tok(LNF, 0));
    for (int l = L - 1; l >= 0; --l) {
        float* res = l == 0 ? A(ENCODED, 0) : A(RESIDUAL3, l - 1);
        const char* res_tok = l == 0 ? tok(ENCODED, 0) : tok(RESIDUAL3, l - 1);
        float* dres = l == 0 ? D(ENCODED, 0) : D(RESIDUAL3, l - 1);
        const char* dres_tok = l == 0 ? dtok(ENCODED, 0) : dtok(RESIDUAL3, l - 1);
        residual_bwd(D(RESIDUAL2, l), dtok(RESIDUAL2, l), D(FCPROJ, l), dtok(FCPROJ, l),
                     D(RESIDUAL3, l), dtok(RESIDUAL3, l));
        matmul_bwd(D(FCH_GELU, l), dtok(FCH_GELU, l), D(FCPROJ, l), dtok(FCPROJ, l), A(FCH_GELU, l),
                   tok(FCH_GELU, l), P(FCPROJW, l), G(FCPROJW, l), G(FCPROJB, l), ptok(FCPROJW, l),
                   4 * C, C);
        float *dfch = D(FCH, l), *dgelu = D(FCH_GELU, l), *fch = A(FCH, l);
        const char *dfch_tok = dtok(FCH, l), *dgelu_tok = dtok(FCH_GELU, l), *fch_tok = tok(FCH, l);
        rows_op([=](int lo,
                    int hi) { layers::gelu_backward(dfch, fch, dgelu, lo * 4 * ch, hi * 4 * ch); },
                [=, this](int i) {
                    Deps d;
                    d.in[0] = blk(dgelu_tok, i);
                    d.in[1] = blk(fch_tok, i);
                    d.out[0] = blk(dfch_tok, i);
                    return d;
                });
        matmul_bwd(D(LN2, l), dtok(LN2, l), dfch, dfch_tok, A(LN2, l), tok(LN2, l), P(FCW, l),
                   G(FCW, l), G(FCB, l), ptok(FCW, l), C, 4 * C);
        layernorm_bwd(D(RESIDUAL2, l), dtok(RESIDUAL2, l), G(LN2W, l), G(LN2B, l), ptok(LN2W, l),
                      D(LN2, l), dtok(LN2, l), A(RESIDUAL2, l), tok(RESIDUAL2, l), P(LN2W, l),
                      A(LN2_MEAN, l), A(LN2_RSTD, l), tok(LN2, l));
        residual_bwd(dres, dres_tok, D(ATTPROJ, l), dtok(ATTPROJ, l), D(RESIDUAL2, l),
                     dtok(RESIDUAL2, l));
        matmul_bwd(D(ATTY, l), dtok(ATTY, l), D(ATTPROJ, l), dtok(ATTPROJ, l), A(ATTY, l),
                   tok(ATTY, l), P(ATTPROJW, l), G(ATTPROJW, l), G(ATTPROJB, l), ptok(ATTPROJW, l),
                   C, C);
        float *dqkv = D(QKV, l), *dpre = D(PREATT, l), *datt = D(ATT, l), *datty = D(ATTY, l);
        const float *qkv = A(QKV, l), *att = A(ATT, l);
        const char *dqkv_tok = dtok(QKV, l), *datty_tok = dtok(ATTY, l);
        const char *qkv_tok = tok(QKV, l), *atty_tok = tok(ATTY, l);
        rows_op(
            [=](int lo, int hi) {
                layers::attention_backward(dqkv, dpre, datt, datty, qkv, att, tt, ch, nh, lo, hi);
            },
            [=, this](int i) {
                Deps d;
                d.in[0] = blk(datty_tok, i);
                d.in[1] = causal(qkv_tok, i);
                d.in[2] = blk(atty_tok, i);
                d.out[0] = causal(dqkv_tok, i);
                return d;
            },
            B);
        matmul_bwd(D(LN1, l), dtok(LN1, l), dqkv, dqkv_tok, A(LN1, l), tok(LN1, l), P(QKVW, l),
                   G(QKVW, l), G(QKVB, l), ptok(QKVW, l), C, 3 * C);
        layernorm_bwd(dres, dres_tok, G(LN1W, l), G(LN1B, l), ptok(LN1W, l), D(LN1, l),
                      dtok(LN1, l), res, res_tok, P(LN1W, l), A(LN1_MEAN, l), A(LN1_RSTD, l),
                      tok(LN1, l));
    }
    float *dwte = G(WTE, 0), *dwpe = G(WPE, 0), *denc = D(ENCODED, 0);
    rows_op([=](int lo, int hi) { layers::encoder_backward(dwte, dwpe, denc, in, tt, ch, lo, hi); },
            [=, this](int i) {
                Deps d;
                d.in[0] = blk(dtok(ENCODED, 0), i);
                d.out[0] = pall(ptok(WTE, 0));
                d.out[1] = pall(ptok(WPE, 0));
                return d;
            },
            1);
}

Trainer::Trainer(const Config& c, Params params, int B, int T, Granularity g, Exec& exec,
                 const std::string& matmul_kind)
    : impl_(std::make_unique<Impl>(c, std::move(params), B, T, g, exec)) {
    if (T > c.max_seq_len) throw std::invalid_argument("T exceeds the model's max_seq_len");
    if (g.t_gran < 1 || g.oc_split < 1) throw std::invalid_argument("granularity must be >= 1");
    Impl& s = *impl_;
    const Region regions[] = {{s.params.data(), s.params.total()},
                              {s.grads.data(), s.grads.total()},
                              {s.acts.data(), s.acts.total()},
                              {s.dacts.data(), s.dacts.total()}};
    s.mm = make_matmul(matmul_kind, regions, 4);
}

Trainer::~Trainer() = default;

const Params& Trainer::params() const {
    return impl_->params;
}
Params& Trainer::mutable_params() {
    return impl_->params;
}
const Params& Trainer::grads() const {
    return impl_->grads;
}

namespace {

float mean_loss(const float* losses, int n) {
    double sum = 0.0;
    for (int i = 0; i < n; ++i)
        sum += losses[i];
    return static_cast<float>(sum / n);
}

void check_batch(const std::vector<int>& tokens, int n, int vocab) {
    if (static_cast<int>(tokens.size()) != n) throw std::invalid_argument("batch has wrong size");
    for (int t : tokens)
        if (t < 0 || t >= vocab) throw std::invalid_argument("token outside the vocabulary");
}

} // namespace

float Trainer::forward(const std::vector<int>& inputs, const std::vector<int>& targets) {
    Impl& s = *impl_;
    check_batch(inputs, s.BT, s.V);
    check_batch(targets, s.BT, s.V);
    s.inputs = inputs;
    s.targets = targets;
    s.exec.step([&s] { s.forward_body(); });
    return mean_loss(s.A(LOSSES, 0), s.BT);
}

void Trainer::backward() {
    Impl& s = *impl_;
    s.grads.zero();
    s.dacts.zero();
    std::fill(s.D(LOSSES, 0), s.D(LOSSES, 0) + s.BT, 1.0f / s.BT);
    s.exec.step([&s] { s.backward_body(); });
}

void Trainer::update(const AdamW& o) {
    Impl& s = *impl_;
    ++s.t;
    const long n = static_cast<long>(s.params.total());
    const int pieces = 64;
    float *p = s.params.data(), *g = s.grads.data(), *m = s.m.data(), *v = s.v.data();
    const int t = s.t;
    s.exec.step([&] {
        s.exec.run(
            pieces,
            [=](int i) {
                layers::adamw(p, g, m, v, n * i / pieces, n * (i + 1) / pieces, o.lr, o.beta1,
                              o.beta2, o.eps, o.weight_decay, t);
            },
            [](int) { return Deps{}; });
    });
}

float Trainer::step(const std::vector<int>& inputs, const std::vector<int>& targets,
                    const AdamW& opt) {
    Impl& s = *impl_;
    check_batch(inputs, s.BT, s.V);
    check_batch(targets, s.BT, s.V);
    s.inputs = inputs;
    s.targets = targets;
    s.grads.zero();
    s.dacts.zero();
    std::fill(s.D(LOSSES, 0), s.D(LOSSES, 0) + s.BT, 1.0f / s.BT);
    // Forward and backward form one dependency graph: no barrier between them.
    s.exec.step([&s] {
        s.forward_body();
        s.backward_body();
    });
    const float loss = mean_loss(s.A(LOSSES, 0), s.BT);
    update(opt);
    return loss;
}

} // namespace gpt2
