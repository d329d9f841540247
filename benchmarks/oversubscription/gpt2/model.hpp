// GPT-2 model shape and storage, laid out as in llm.c's CPU trainer so its checkpoints load.
#pragma once

#include "../common/aligned.hpp"

#include <array>
#include <cstddef>
#include <string>

namespace gpt2 {

using bench::AlignedVec;

// The model's shape. padded_vocab rounds vocab up to a multiple of 128 (llm.c's layout).
struct Config {
    int max_seq_len = 64;
    int vocab = 50257;
    int padded_vocab = 50304;
    int layers = 4;
    int heads = 4;
    int channels = 256;
};

// Rounds the vocabulary size up as llm.c does.
inline int pad_vocab(int v) {
    return (v + 127) / 128 * 128;
}

// The 16 parameter tensors, in checkpoint order.
enum Param {
    WTE,
    WPE,
    LN1W,
    LN1B,
    QKVW,
    QKVB,
    ATTPROJW,
    ATTPROJB,
    LN2W,
    LN2B,
    FCW,
    FCB,
    FCPROJW,
    FCPROJB,
    LNFW,
    LNFB,
    kNumParams
};

// The activations kept for the backward pass.
enum Act {
    ENCODED,
    LN1,
    LN1_MEAN,
    LN1_RSTD,
    QKV,
    ATTY,
    PREATT,
    ATT,
    ATTPROJ,
    RESIDUAL2,
    LN2,
    LN2_MEAN,
    LN2_RSTD,
    FCH,
    FCH_GELU,
    FCPROJ,
    RESIDUAL3,
    LNF,
    LNF_MEAN,
    LNF_RSTD,
    LOGITS,
    PROBS,
    LOSSES,
    kNumActs
};

// Element counts of each parameter tensor (layered ones hold all layers).
std::array<std::size_t, kNumParams> param_sizes(const Config& c);
// Element counts of each activation tensor for a batch of B sequences of length T.
std::array<std::size_t, kNumActs> act_sizes(const Config& c, int B, int T);

// Several float tensors carved out of one aligned allocation, zero-initialised.
template <std::size_t N>
class TensorSet {
  public:
    TensorSet() = default;
    explicit TensorSet(const std::array<std::size_t, N>& sizes) : sizes_(sizes) {
        std::size_t total = 0;
        for (std::size_t s : sizes)
            total += s;
        mem_.assign(total, 0.0f);
        std::size_t off = 0;
        for (std::size_t i = 0; i < N; ++i) {
            offsets_[i] = off;
            off += sizes[i];
        }
    }
    float* operator[](std::size_t i) { return mem_.data() + offsets_[i]; }
    const float* operator[](std::size_t i) const { return mem_.data() + offsets_[i]; }
    std::size_t size(std::size_t i) const { return sizes_[i]; }
    std::size_t offset(std::size_t i) const { return offsets_[i]; }
    float* data() { return mem_.data(); }
    const float* data() const { return mem_.data(); }
    std::size_t total() const { return mem_.size(); }
    void zero() { std::fill(mem_.begin(), mem_.end(), 0.0f); }

  private:
    std::array<std::size_t, N> sizes_{};
    std::array<std::size_t, N> offsets_{};
    AlignedVec<float> mem_;
};

using Params = TensorSet<kNumParams>;
using Acts = TensorSet<kNumActs>;

// Weights drawn from N(0, 0.02) with a fixed seed, layernorm scales 1, biases 0.
Params random_params(const Config& c, unsigned seed);

// llm.c checkpoint (header of 256 int32: magic 20240326, version 3, maxT, V, L, NH, C, Vp;
// then the parameters as float32). Both throw std::runtime_error with the reason.
Params load_checkpoint(const std::string& path, Config& c);
void save_checkpoint(const std::string& path, const Config& c, const Params& p);

} // namespace gpt2
