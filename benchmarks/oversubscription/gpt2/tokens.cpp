#include "tokens.hpp"

#include <fstream>
#include <random>
#include <stdexcept>

namespace gpt2 {

namespace {
constexpr std::int32_t kTokenMagic = 20240520;
}

std::vector<std::uint16_t> read_tokens(const std::string& path, int vocab) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open token file " + path);
    std::int32_t h[256] = {};
    if (!in.read(reinterpret_cast<char*>(h), sizeof h))
        throw std::runtime_error(path + ": too short for a token file header");
    if (h[0] != kTokenMagic) throw std::runtime_error(path + ": not an llm.c token file");
    if (h[1] != 1) throw std::runtime_error(path + ": unsupported token file version");
    if (h[2] < 0) throw std::runtime_error(path + ": negative token count");
    std::vector<std::uint16_t> t(static_cast<std::size_t>(h[2]));
    if (!in.read(reinterpret_cast<char*>(t.data()), t.size() * sizeof(std::uint16_t)))
        throw std::runtime_error(path + ": truncated token data");
    for (std::uint16_t v : t)
        if (v >= vocab)
            throw std::runtime_error(path + ": token " + std::to_string(v) +
                                     " is outside the vocabulary");
    return t;
}

void write_tokens(const std::string& path, const std::vector<std::uint16_t>& tokens) {
    std::int32_t h[256] = {};
    h[0] = kTokenMagic;
    h[1] = 1;
    h[2] = static_cast<std::int32_t>(tokens.size());
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(h), sizeof h);
    out.write(reinterpret_cast<const char*>(tokens.data()), tokens.size() * sizeof(std::uint16_t));
    if (!out) throw std::runtime_error("cannot write token file " + path);
}

std::vector<std::uint16_t> synthetic_tokens(int count, int vocab, unsigned seed) {
    std::mt19937 rng(seed);
    const int words = std::min(vocab, 65535);
    std::uniform_int_distribution<int> pick(0, words - 1);
    std::vector<std::vector<std::uint16_t>> phrases(8);
    for (auto& ph : phrases)
        for (int i = 0; i < 12; ++i)
            ph.push_back(static_cast<std::uint16_t>(pick(rng)));
    std::uniform_int_distribution<int> which(0, static_cast<int>(phrases.size()) - 1);
    std::vector<std::uint16_t> out;
    while (static_cast<int>(out.size()) < count)
        for (std::uint16_t v : phrases[which(rng)])
            out.push_back(v);
    out.resize(count);
    return out;
}

Loader::Loader(std::vector<std::uint16_t> tokens, int B, int T)
    : tokens_(std::move(tokens)), B_(B), T_(T), inputs_(B * T), targets_(B * T) {
    if (tokens_.size() < static_cast<std::size_t>(B) * T + 1)
        throw std::runtime_error("token stream shorter than one batch (B*T+1 tokens)");
}

void Loader::next(bool repeat) {
    const std::size_t n = static_cast<std::size_t>(B_) * T_;
    if (started_ && !repeat) pos_ += n;
    if (repeat) pos_ = 0;
    if (pos_ + n + 1 > tokens_.size()) pos_ = 0;
    started_ = true;
    for (std::size_t i = 0; i < n; ++i) {
        inputs_[i] = tokens_[pos_ + i];
        targets_[i] = tokens_[pos_ + i + 1];
    }
}

} // namespace gpt2
