// Token files in llm.c's format (header of 256 int32: magic 20240520, version 1, count;
// then uint16 tokens) and a batch loader over them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpt2 {

// Reads every token; throws std::runtime_error on a bad file or a token >= vocab.
std::vector<std::uint16_t> read_tokens(const std::string& path, int vocab);
// Writes tokens in the same format.
void write_tokens(const std::string& path, const std::vector<std::uint16_t>& tokens);
// A deterministic, learnable synthetic stream (a few repeating phrases) of `count` tokens.
std::vector<std::uint16_t> synthetic_tokens(int count, int vocab, unsigned seed);

// Hands out consecutive (inputs, targets) batches of B x T tokens, wrapping at the end.
class Loader {
  public:
    // Throws when the stream holds fewer than B*T+1 tokens.
    Loader(std::vector<std::uint16_t> tokens, int B, int T);
    // Advances to the next batch (or stays on the first one when `repeat` is set).
    void next(bool repeat);
    const std::vector<int>& inputs() const { return inputs_; }
    const std::vector<int>& targets() const { return targets_; }

  private:
    std::vector<std::uint16_t> tokens_;
    int B_, T_;
    std::size_t pos_ = 0;
    bool started_ = false;
    std::vector<int> inputs_, targets_;
};

} // namespace gpt2
