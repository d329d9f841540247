#include "model.hpp"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <random>
#include <stdexcept>

namespace gpt2 {

namespace {

constexpr std::int32_t kCheckpointMagic = 20240326;

std::size_t sz(long v) {
    return static_cast<std::size_t>(v);
}

} // namespace

std::array<std::size_t, kNumParams> param_sizes(const Config& c) {
    const long C = c.channels, L = c.layers, Vp = c.padded_vocab, maxT = c.max_seq_len;
    return {sz(Vp * C),        sz(maxT * C), sz(L * C), sz(L * C), sz(L * 3 * C * C), sz(L * 3 * C),
            sz(L * C * C),     sz(L * C),    sz(L * C), sz(L * C), sz(L * 4 * C * C), sz(L * 4 * C),
            sz(L * C * 4 * C), sz(L * C),    sz(C),     sz(C)};
}

std::array<std::size_t, kNumActs> act_sizes(const Config& c, int B, int T) {
    const long C = c.channels, L = c.layers, NH = c.heads, Vp = c.padded_vocab;
    const long BT = static_cast<long>(B) * T;
    return {sz(BT * C),
            sz(L * BT * C),
            sz(L * BT),
            sz(L * BT),
            sz(L * BT * 3 * C),
            sz(L * BT * C),
            sz(L * B * NH * T * T),
            sz(L * B * NH * T * T),
            sz(L * BT * C),
            sz(L * BT * C),
            sz(L * BT * C),
            sz(L * BT),
            sz(L * BT),
            sz(L * BT * 4 * C),
            sz(L * BT * 4 * C),
            sz(L * BT * C),
            sz(L * BT * C),
            sz(BT * C),
            sz(BT),
            sz(BT),
            sz(BT * Vp),
            sz(BT * Vp),
            sz(BT)};
}

Params random_params(const Config& c, unsigned seed) {
    Params p(param_sizes(c));
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    for (int t : {WTE, WPE, QKVW, ATTPROJW, FCW, FCPROJW})
        std::generate(p[t], p[t] + p.size(t), [&] { return normal(rng); });
    // Padded vocabulary rows stay zero, as in llm.c's checkpoints.
    std::fill(p[WTE] + static_cast<std::size_t>(c.vocab) * c.channels, p[WTE] + p.size(WTE), 0.0f);
    for (int t : {LN1W, LN2W, LNFW})
        std::fill(p[t], p[t] + p.size(t), 1.0f);
    return p;
}

Params load_checkpoint(const std::string& path, Config& c) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open checkpoint " + path);
    std::int32_t h[256] = {};
    if (!in.read(reinterpret_cast<char*>(h), sizeof h))
        throw std::runtime_error(path + ": too short for a checkpoint header");
    if (h[0] != kCheckpointMagic) throw std::runtime_error(path + ": not an llm.c checkpoint");
    if (h[1] != 1 && h[1] != 3)
        throw std::runtime_error(path + ": unsupported checkpoint version " + std::to_string(h[1]));
    c.max_seq_len = h[2];
    c.vocab = h[3];
    c.layers = h[4];
    c.heads = h[5];
    c.channels = h[6];
    c.padded_vocab = h[1] == 3 ? h[7] : h[3];
    if (c.max_seq_len < 1 || c.vocab < 1 || c.layers < 1 || c.heads < 1 || c.channels < 1 ||
        c.channels % c.heads != 0 || c.padded_vocab < c.vocab || c.channels > 65536 ||
        c.layers > 1024 || c.vocab > (1 << 24) || c.max_seq_len > (1 << 16))
        throw std::runtime_error(path + ": implausible model shape in header");
    Params p(param_sizes(c));
    if (!in.read(reinterpret_cast<char*>(p.data()), p.total() * sizeof(float)))
        throw std::runtime_error(path + ": truncated parameters");
    return p;
}

void save_checkpoint(const std::string& path, const Config& c, const Params& p) {
    std::int32_t h[256] = {};
    h[0] = kCheckpointMagic;
    h[1] = 3;
    h[2] = c.max_seq_len;
    h[3] = c.vocab;
    h[4] = c.layers;
    h[5] = c.heads;
    h[6] = c.channels;
    h[7] = c.padded_vocab;
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(h), sizeof h);
    out.write(reinterpret_cast<const char*>(p.data()), p.total() * sizeof(float));
    if (!out) throw std::runtime_error("cannot write checkpoint " + path);
}

} // namespace gpt2
