#include "benchmarks.hpp"
#include "child_process.hpp"
#include "nosv_util.hpp"

namespace coexec::bench {

Outcome run_in_child(const Options& options, void (*body)(const Options&, SampleBuffer&)) {
    SharedObject<SampleBuffer> buffer;
    ChildGroup child;
    child.spawn([&] {
        // Its own segment, apart from the default one, so that other coexec
        // users neither skew the numbers nor are disturbed by them.
        use_segment(options.segment);
        body(options, *buffer);
        return 0;
    });
    Outcome outcome;
    outcome.error = child.wait_all(std::chrono::seconds(options.timeout_s));
    if (outcome.error.empty()) {
        outcome.samples = buffer->samples();
        outcome.locks_per_op = buffer->lock_samples();
    }
    if (outcome.error.empty() && int(outcome.samples.size()) != options.repeats)
        outcome.error = "child reported " + std::to_string(outcome.samples.size()) + " of " +
                        std::to_string(options.repeats) + " samples";
    return outcome;
}

} // namespace coexec::bench
