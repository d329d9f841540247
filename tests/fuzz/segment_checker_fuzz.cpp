// libFuzzer target: the invariant checker behind `coexec check` on a
// segment full of arbitrary bytes. It must report problems, never read out
// of bounds or hang, whatever the segment holds.
#include "fuzz_support.hpp"
#include "scheduler/invariants.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace coexec;
    const shm::Segment& segment = fuzz::segment_from(data, size);
    std::vector<std::string> problems = scheduler::check_invariants(segment);
    for (const auto& p : problems)
        if (p.empty()) fuzz::fail("an empty problem description");
    return 0;
}
