// libFuzzer target: the `coexec top/ps/info` reader on a segment full of
// arbitrary bytes. Every view, text and JSON, is rendered: none may read
// out of bounds, hang or throw, whatever the segment holds.
#include "fuzz_support.hpp"
#include "tools/snapshot.hpp"
#include "tools/views.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace coexec;
    shm::Segment& segment = fuzz::segment_from(data, size);
    // One snapshot, also used as the "previous" one of `top`'s %CPU column
    // (a second of the same bytes would only double the run time).
    cli::Snapshot second = cli::take_snapshot(segment, "/coexec.fuzz.u0");
    const cli::Snapshot& first = second;
    size_t out = 0; // keeps the rendering from being optimised away
    for (const auto& l : cli::cpu_table(second))
        out += l.size();
    for (const auto& l : cli::process_table(second, &first, false))
        out += l.size();
    for (const auto& l : cli::process_table(second, nullptr, true))
        out += l.size();
    for (const auto& l : cli::runtime_table(second))
        out += l.size();
    for (const auto& l : cli::info_lines(second, "all"))
        out += l.size();
    out += cli::top_title(second).size();
    // dump() throws on strings that are not UTF-8: the reader must have
    // made every name printable.
    out += cli::top_json(second).dump(2).size();
    out += cli::processes_json(second).dump().size();
    out += cli::cpus_json(second).dump().size();
    out += cli::info_json(second, "all").dump().size();
    if (out == 0) fuzz::fail("nothing rendered");
    return 0;
}
