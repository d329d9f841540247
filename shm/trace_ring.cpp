#include "trace_ring.hpp"

#include <cstring>

namespace coexec::shm {

namespace {

constexpr auto rlx = std::memory_order_relaxed;
constexpr uint64_t kMask = kTraceRingSize - 1;

constexpr uint64_t writing(uint64_t index) {
    return 2 * index + 1;
}
constexpr uint64_t written(uint64_t index) {
    return 2 * index + 2;
}

// Payload layout: 0 time; 1 kind | cpu << 16 | pid << 32; 2 tid | proc << 32
// | thread << 48; 3 detail; 4..6 the label.
void encode(const TraceEvent& e, uint64_t (&w)[7]) {
    w[0] = e.time_ns;
    w[1] = uint64_t(uint8_t(e.kind)) | uint64_t(uint16_t(int16_t(e.cpu))) << 16 |
           uint64_t(uint32_t(e.pid)) << 32;
    w[2] = uint64_t(uint32_t(e.tid)) | uint64_t(uint16_t(int16_t(e.proc))) << 32 |
           uint64_t(uint16_t(int16_t(e.thread))) << 48;
    w[3] = e.detail;
    static_assert(sizeof e.label == 3 * sizeof(uint64_t));
    std::memcpy(&w[4], e.label.data(), sizeof e.label);
}

TraceEvent decode(const uint64_t (&w)[7]) {
    TraceEvent e;
    e.time_ns = w[0];
    e.kind = TraceKind(uint8_t(w[1]));
    e.cpu = int16_t(uint16_t(w[1] >> 16));
    e.pid = int32_t(uint32_t(w[1] >> 32));
    e.tid = int32_t(uint32_t(w[2]));
    e.proc = int16_t(uint16_t(w[2] >> 32));
    e.thread = int16_t(uint16_t(w[2] >> 48));
    e.detail = w[3];
    std::memcpy(e.label.data(), &w[4], sizeof e.label);
    return e;
}

} // namespace

std::string_view TraceEvent::label_text() const {
    const void* nul = std::memchr(label.data(), 0, label.size());
    return {label.data(),
            nul ? size_t(static_cast<const char*>(nul) - label.data()) : label.size()};
}

bool trace_append(TraceRing& ring, const TraceEvent& event) {
    // Relaxed: the index only has to be unique; the record's `seq` carries
    // the ordering readers rely on.
    const uint64_t index = ring.head.fetch_add(1, rlx);
    TraceRecord& r = ring.records[index & kMask];
    uint64_t seen = r.seq.load(rlx);
    // Claim the slot from an earlier lap. A slot a later lap already
    // claimed, or one an earlier writer is still writing, is left alone: two
    // writers must never interleave their payload stores, and a writer
    // cannot tell a slow writer from a dead one (taking over from a slow one
    // tore records). A writer that died mid-record so costs that slot one
    // record per lap, each one counted lost by the readers.
    do {
        if (seen >= writing(index) || (seen & 1) != 0) return false;
    } while (!r.seq.compare_exchange_weak(seen, writing(index), rlx));
    // Release fence: a reader that sees any payload store below, and then
    // issues its acquire fence, also sees `seq` odd (or later) on its
    // second read, so it never accepts a half-written record.
    std::atomic_thread_fence(std::memory_order_release);
    uint64_t w[7];
    encode(event, w);
    for (int i = 0; i < 7; ++i)
        r.words[i].store(w[i], rlx);
    // Release: a reader that sees `written` sees the whole payload. Nobody
    // else writes `seq` while it is odd, so a plain store suffices.
    r.seq.store(written(index), std::memory_order_release);
    return true;
}

const char* trace_kind_name(TraceKind kind) {
    static constexpr const char* names[kTraceKinds] = {
        "none",    "grant", "handoff", "wake", "reclaim", "idle", "sleep", "lend",
        "release", "evict", "preempt", "join", "leave",   "reap", "label"};
    const auto i = size_t(kind);
    return i < kTraceKinds ? names[i] : "?";
}

void TraceRingReader::start(const TraceRing& ring) {
    next_ = ring.head.load(std::memory_order_acquire);
    pending_.clear();
    overwritten_ = 0;
    unfinished_ = 0;
}

TraceRingReader::Read TraceRingReader::read(const TraceRing& ring, uint64_t index,
                                            std::vector<TraceEvent>& out) {
    const TraceRecord& r = ring.records[index & kMask];
    // Acquire pairs with the writer's publishing release.
    const uint64_t before = r.seq.load(std::memory_order_acquire);
    if (before > written(index)) return Read::Overwritten; // a later lap has it
    if (before != written(index)) return Read::NotYet;     // claimed, not written, or dropped
    uint64_t w[7];
    for (int i = 0; i < 7; ++i)
        w[i] = r.words[i].load(rlx);
    // Acquire fence: pairs with the writer's release fence after its claim
    // (see trace_append()), so a record overwritten while we copied it
    // shows a newer `seq` here.
    std::atomic_thread_fence(std::memory_order_acquire);
    if (r.seq.load(rlx) != before) return Read::Overwritten;
    out.push_back(decode(w));
    return Read::Done;
}

void TraceRingReader::poll(const TraceRing& ring, std::vector<TraceEvent>& out) {
    const uint64_t head = ring.head.load(std::memory_order_acquire);
    if (head < next_) { // only a corrupt (or re-formatted) ring goes back
        next_ = head;
        unfinished_ += pending_.size();
        pending_.clear();
    }
    if (head - next_ > kTraceRingSize) { // overwritten before we got to them
        overwritten_ += head - kTraceRingSize - next_;
        next_ = head - kTraceRingSize;
    }
    // The pending records first: each is complete now, overwritten, lapped
    // (a later index owns its slot, so its writer can no longer finish it
    // there), or still pending.
    std::erase_if(pending_, [&](uint64_t index) {
        switch (read(ring, index, out)) {
        case Read::Done:
            return true;
        case Read::Overwritten:
            ++overwritten_;
            return true;
        case Read::NotYet:
            break;
        }
        if (head - index < kTraceRingSize) return false;
        ++unfinished_;
        return true;
    });
    for (; next_ < head; ++next_) {
        switch (read(ring, next_, out)) {
        case Read::Done:
            break;
        case Read::Overwritten:
            ++overwritten_;
            break;
        case Read::NotYet:
            // Fewer than kTraceRingSize: every index here is within one lap
            // of head, and the lapped ones were erased above.
            pending_.push_back(next_);
            break;
        }
    }
}

void TraceRingReader::abandon_pending() {
    unfinished_ += pending_.size();
    pending_.clear();
}

} // namespace coexec::shm
