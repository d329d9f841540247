// How the pieces of each kernel call run: serially, as an OpenMP parallel loop (fork-join),
// or as OpenMP tasks ordered only by depend clauses on per-block tokens (data-flow).
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <string>

namespace gpt2 {

// Dependency tokens base[lo..hi): a task depends on the addresses, never reads them.
struct Dep {
    const char* base = nullptr;
    int lo = 0, hi = 0;
};

// What one piece reads and writes, at most four inputs and two outputs.
struct Deps {
    std::array<Dep, 4> in{};
    std::array<Dep, 2> out{};
};

// Runs kernel pieces; one object per strategy.
class Exec {
  public:
    using Piece = std::function<void(int)>;
    using DepsOf = std::function<Deps(int)>;
    virtual ~Exec() = default;
    // Runs piece(i) for every i in [0, n); deps(i) orders them where the strategy needs it
    // (tasks). With chains == 0 the pieces of one call touch disjoint outputs. With
    // chains == k > 0 they form k equal contiguous runs whose pieces accumulate into shared
    // outputs: each run must execute in order (fork-join parallelises over runs only; the
    // tasks' deps already serialise them).
    virtual void run(int n, Piece piece, DepsOf deps, int chains = 0) = 0;
    // For every i in [0, n), a step with no work that waits for deps(i).in and then counts
    // as having written deps(i).out, so later pieces may name one token for many. Only
    // strategies that order pieces by their deps (tasks) do anything.
    virtual void funnel(int /*n*/, const DepsOf& /*deps*/) {}
    // Runs `body` (which calls run) and returns when all its pieces are done.
    virtual void step(const std::function<void()>& body) = 0;
};

// "serial", "forkjoin" or "tasks"; throws std::invalid_argument otherwise.
std::unique_ptr<Exec> make_exec(const std::string& name);

} // namespace gpt2
