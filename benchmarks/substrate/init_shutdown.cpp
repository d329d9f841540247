// Joining and leaving an instance: what every process started under coexec
// pays once. The first member of an instance creates the segment and
// discovers the CPUs; a later one only registers in it.
#include "benchmarks.hpp"
#include "child_process.hpp"
#include "nosv_util.hpp"

#include <atomic>
#include <chrono>
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
    // A member that stays in the segment while run_in_child's child joins
    // and leaves it.
    struct Member {
        std::atomic<bool> joined{false}, done{false};
    };
    SharedObject<Member> member;
    ChildGroup stays;
    stays.spawn([&] {
        use_segment(options.segment);
        Runtime runtime;
        member->joined.store(true, std::memory_order_release);
        while (!member->done.load(std::memory_order_acquire))
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return 0;
    });
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(options.timeout_s);
    while (!member->joined.load(std::memory_order_acquire) &&
           std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    Outcome outcome;
    if (member->joined.load(std::memory_order_acquire)) outcome = run_in_child(options, pairs);
    member->done.store(true, std::memory_order_release);
    const std::string error = stays.wait_all(std::chrono::seconds(options.timeout_s));
    if (outcome.error.empty() && !error.empty()) outcome.error = "the staying member: " + error;
    if (outcome.error.empty() && outcome.samples.empty()) outcome.error = "no member joined";
    return outcome;
}

} // namespace coexec::bench
