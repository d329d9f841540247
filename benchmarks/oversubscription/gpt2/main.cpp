// GPT-2 training benchmark in the style of llm.c's CPU trainer.
#include "../common/args.hpp"
#include "../common/start_gate.hpp"
#include "../common/timer.hpp"
#include "tokens.hpp"
#include "train.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>

namespace {

using namespace gpt2;

const char* const kUsage =
    "usage: gpt2 [options]\n"
    "  --load FILE        llm.c checkpoint to start from (default: seeded random model)\n"
    "  --save FILE        write the model (llm.c format) after training\n"
    "  --tokens FILE      llm.c token file (default: a generated synthetic stream)\n"
    "  --write-tokens FILE  write the token stream used and continue\n"
    "  --layers N --heads N --channels N --vocab N --max-seq N   random model shape\n"
    "                     (default 4 4 256 50257 64)\n"
    "  --batch N          B (default 4)      --seq N   T (default: max-seq)\n"
    "  --steps N          training steps (default 3)\n"
    "  --seed N           model and data seed (default 1337)\n"
    "  --mode serial|forkjoin|tasks    execution (default forkjoin)\n"
    "  --kernel cpp|ocl   matmul kernels: C++ or OpenCL via PoCL (default cpp)\n"
    "  --t-gran N         time steps per row block (default 16)\n"
    "  --oc-split N       output-channel slices per matmul (default 4)\n"
    "  --lr X             AdamW learning rate (default 1e-4)\n"
    "  --same-batch       train on the first batch every step\n"
    "  --dump-grads FILE  after step 1's backward, write the loss and all gradients (float32)\n"
    "  --grad-check       compare each tensor's largest gradient with a finite difference\n";

struct Options {
    std::string load, save, tokens, write_tokens, mode, kernel, dump;
    Config cfg;
    int batch, seq, steps, seed;
    Granularity gran;
    float lr;
    bool same_batch, grad_check;
};

float parse_float(const std::string& s, const std::string& what) {
    try {
        std::size_t used = 0;
        const float v = std::stof(s, &used);
        if (used == s.size() && v > 0.0f && v < 1.0f) return v;
    } catch (const std::exception&) {
    }
    throw bench::UsageError(what + " must be a number in (0, 1), got '" + s + "'");
}

Options parse(int argc, char** argv) {
    bench::Args a(argc, argv,
                  {"load", "save", "tokens", "write-tokens", "layers", "heads", "channels", "vocab",
                   "max-seq", "batch", "seq", "steps", "seed", "mode", "kernel", "t-gran",
                   "oc-split", "lr", "dump-grads"},
                  {"same-batch", "grad-check"});
    if (!a.positional().empty())
        throw bench::UsageError("unexpected argument " + a.positional()[0]);
    Options o;
    o.load = a.get("load", "");
    o.save = a.get("save", "");
    o.tokens = a.get("tokens", "");
    o.write_tokens = a.get("write-tokens", "");
    o.dump = a.get("dump-grads", "");
    o.cfg.layers = a.get_int("layers", 4, 1, 64);
    o.cfg.heads = a.get_int("heads", 4, 1, 64);
    o.cfg.channels = a.get_int("channels", 256, 1, 4096);
    o.cfg.vocab = a.get_int("vocab", 50257, 2, 65535);
    o.cfg.max_seq_len = a.get_int("max-seq", 64, 1, 4096);
    o.cfg.padded_vocab = pad_vocab(o.cfg.vocab);
    if (o.cfg.channels % o.cfg.heads != 0)
        throw bench::UsageError("--channels must be a multiple of --heads");
    o.batch = a.get_int("batch", 4, 1, 1024);
    o.seq = a.get_int("seq", 0, 1, 4096);
    o.steps = a.get_int("steps", 3, 1, 1000000);
    o.seed = a.get_int("seed", 1337, 0, 1L << 30);
    o.mode = a.get_choice("mode", "forkjoin", {"serial", "forkjoin", "tasks"});
    o.kernel = a.get_choice("kernel", "cpp", {"cpp", "ocl"});
    o.gran.t_gran = a.get_int("t-gran", 16, 1, 4096);
    o.gran.oc_split = a.get_int("oc-split", 4, 1, 4096);
    o.lr = a.has("lr") ? parse_float(a.get("lr", ""), "--lr") : 1e-4f;
    o.same_batch = a.has("same-batch");
    o.grad_check = a.has("grad-check");
    return o;
}

void dump_grads(const std::string& path, float loss, const Params& g) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(&loss), sizeof loss);
    out.write(reinterpret_cast<const char*>(g.data()), g.total() * sizeof(float));
    if (!out) throw std::runtime_error("cannot write " + path);
}

// For each parameter tensor, the element with the largest gradient is nudged by +-h and
// the loss difference compared with the analytic gradient (central difference).
void grad_check(Trainer& trainer, const Loader& loader) {
    const float loss = trainer.forward(loader.inputs(), loader.targets());
    trainer.backward();
    const Params& g = trainer.grads();
    Params& p = trainer.mutable_params();
    std::printf("grad-check loss %f\n", loss);
    for (int t = 0; t < kNumParams; ++t) {
        const float* gt = g[t];
        const std::size_t i =
            std::max_element(gt, gt + g.size(t),
                             [](float a, float b) { return std::fabs(a) < std::fabs(b); }) -
            gt;
        const float analytic = gt[i];
        const float saved = p[t][i];
        const float h = 1e-2f;
        p[t][i] = saved + h;
        const double up = trainer.forward(loader.inputs(), loader.targets());
        p[t][i] = saved - h;
        const double down = trainer.forward(loader.inputs(), loader.targets());
        p[t][i] = saved;
        std::printf("grad-check tensor %d analytic %.6e numeric %.6e\n", t, analytic,
                    (up - down) / (2 * h));
    }
}

int run(Options& o) {
    Params params = o.load.empty() ? random_params(o.cfg, o.seed) : load_checkpoint(o.load, o.cfg);
    const int T = o.seq ? o.seq : o.cfg.max_seq_len;
    if (T > o.cfg.max_seq_len)
        throw bench::UsageError("--seq exceeds the model's max sequence length");
    std::vector<std::uint16_t> stream =
        o.tokens.empty()
            ? synthetic_tokens(std::max(o.batch * T * 8 + 1, 4096), o.cfg.vocab, o.seed)
            : read_tokens(o.tokens, o.cfg.vocab);
    if (!o.write_tokens.empty()) write_tokens(o.write_tokens, stream);
    Loader loader(std::move(stream), o.batch, T);

    std::printf("[GPT-2]\nmax_seq_len: %d\nvocab_size: %d\npadded_vocab_size: %d\nnum_layers: %d\n"
                "num_heads: %d\nchannels: %d\nnum_parameters: %zu\n",
                o.cfg.max_seq_len, o.cfg.vocab, o.cfg.padded_vocab, o.cfg.layers, o.cfg.heads,
                o.cfg.channels, params.total());
    std::printf("batch size: %d\nseq_len: %d\nmode: %s kernel: %s t-gran: %d oc-split: %d "
                "threads: %d\n",
                o.batch, T, o.mode.c_str(), o.kernel.c_str(), o.gran.t_gran, o.gran.oc_split,
                omp_get_max_threads());

    auto exec = make_exec(o.mode);
    Trainer trainer(o.cfg, std::move(params), o.batch, T, o.gran, *exec, o.kernel);
    if (o.grad_check) {
        loader.next(false);
        grad_check(trainer, loader);
        return 0;
    }
    AdamW opt;
    opt.lr = o.lr;
    double total = 0.0, steady = 0.0;
    for (int step = 0; step < o.steps; ++step) {
        loader.next(o.same_batch);
        // Step 0 warms up (unless it is all): the others start together with step 1.
        if (step == (o.steps == 1 ? 0 : 1)) bench::await_start_gate();
        const double t0 = bench::now();
        float loss = 0.0f;
        if (step == 0 && !o.dump.empty()) {
            loss = trainer.forward(loader.inputs(), loader.targets());
            trainer.backward();
            dump_grads(o.dump, loss, trainer.grads());
            trainer.update(opt);
        } else {
            loss = trainer.step(loader.inputs(), loader.targets(), opt);
        }
        const double took = bench::now() - t0;
        total += took;
        if (step > 0 || o.steps == 1) steady += took; // step 0 warms up unless it is all
        std::printf("step %d: train loss %f (took %f ms)\n", step, loss, took * 1e3);
        std::fflush(stdout);
    }
    std::printf("Time per step: %g\n", total / o.steps);
    std::printf("Steady seconds: %.6f\n", steady); // run.py: the training steps after step 0
    if (!o.save.empty()) save_checkpoint(o.save, o.cfg, trainer.params());
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    Options o;
    try {
        o = parse(argc, argv);
    } catch (const bench::UsageError& e) {
        std::fprintf(stderr, "gpt2: %s\n%s", e.what(), kUsage);
        return 2;
    }
    try {
        return run(o);
    } catch (const bench::UsageError& e) {
        std::fprintf(stderr, "gpt2: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gpt2: %s\n", e.what());
        return 1;
    }
}
