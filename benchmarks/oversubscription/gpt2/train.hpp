// One GPT-2 training step (forward, backward, AdamW) expressed as kernel pieces over
// (batch, time-block) row blocks and output-channel slices, run by an Exec strategy.
#pragma once

#include "exec.hpp"
#include "matmul.hpp"
#include "model.hpp"

#include <memory>
#include <vector>

namespace gpt2 {

// Task granularity: time steps per row block (batch granularity is 1) and how many slices
// the output channels of each matmul are cut into.
struct Granularity {
    int t_gran = 16;
    int oc_split = 4;
};

// AdamW hyper-parameters (the paper's values).
struct AdamW {
    float lr = 1e-4f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.0f;
};

// Owns parameters, gradients, optimizer state and activations for batches of B x T.
class Trainer {
  public:
    // matmul_kind: "cpp" or "ocl".
    Trainer(const Config& c, Params params, int B, int T, Granularity g, Exec& exec,
            const std::string& matmul_kind);
    ~Trainer();
    Trainer(const Trainer&) = delete;
    Trainer& operator=(const Trainer&) = delete;

    // Forward with targets; returns the mean loss.
    float forward(const std::vector<int>& inputs, const std::vector<int>& targets);
    // Zeroes gradients and runs the backward pass of the last forward().
    void backward();
    // One AdamW step with the current gradients.
    void update(const AdamW& opt);
    // forward + backward + update as one unit of work (one task graph in tasks mode).
    float step(const std::vector<int>& inputs, const std::vector<int>& targets, const AdamW& opt);

    const Params& params() const;
    // Writable parameters, for finite-difference checks; changes apply to the next forward.
    Params& mutable_params();
    const Params& grads() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace gpt2
