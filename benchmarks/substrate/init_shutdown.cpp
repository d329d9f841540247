// Joining and leaving an instance: what every process started under coexec
// pays once. The first member of an instance creates the segment and
// discovers the CPUs; a later one only registers in it.
#include "benchmarks.hpp"
#include "child_process.hpp"
#include "nosv_util.hpp"

#include <atomic>
#include <thread>

namespace coexec::bench {
namespace {

// Nanoseconds of one nosv_init + nosv_shutdown pair.
double one_pair() {
    const uint64_t start = now_ns();
    check(nosv_init(), "nosv_init");
    check(nosv_shutdown(), "nosv_shutdown");
    return double(now_ns() - start);
}

void pairs(const Options& options, SampleBuffer& out) {
    one_pair();
    for (int r = 0; r < options.repeats; ++r)
        out.push(one_pair());
}

} // namespace

Outcome measure_init_fresh(const Options& options) {
    // Alone on its segment: the last member out removes it, so every
    // nosv_init creates it again.
    return run_in_child(options, pairs);
}

Outcome measure_init_joining(const Options& options) {
    struct Holder {
        std::atomic<bool> joined{false}, done{false};
    };
    SharedObject<Holder> holder;
    SharedObject<SampleBuffer> buffer;
    ChildGroup children;
    const std::string segment = options.segment + "-join";
    children.spawn([&] {
        use_segment(segment);
        Runtime member;
        holder->joined.store(true, std::memory_order_release);
        while (!holder->done.load(std::memory_order_acquire))
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return 0;
    });
    children.spawn([&] {
        use_segment(segment);
        while (!holder->joined.load(std::memory_order_acquire))
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        pairs(options, *buffer);
        holder->done.store(true, std::memory_order_release);
        return 0;
    });
    Outcome outcome;
    outcome.error = children.wait_all(std::chrono::seconds(options.timeout_s));
    if (outcome.error.empty()) outcome.samples = buffer->samples();
    if (outcome.error.empty() && int(outcome.samples.size()) != options.repeats)
        outcome.error = "the joining child reported " + std::to_string(outcome.samples.size()) +
                        " of " + std::to_string(options.repeats) + " samples";
    return outcome;
}

} // namespace coexec::bench
