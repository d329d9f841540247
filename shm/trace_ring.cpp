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
    lost_ = 0;
    pending_since_ns_ = 0;
}

void TraceRingReader::poll(const TraceRing& ring, uint64_t now, std::vector<TraceEvent>& out) {
    const uint64_t head = ring.head.load(std::memory_order_acquire);
    if (head < next_) { // only a corrupt (or re-formatted) ring goes back
        next_ = head;
        pending_since_ns_ = 0;
    }
    if (head - next_ > kTraceRingSize) { // overwritten before we got to them
        lost_ += head - kTraceRingSize - next_;
        next_ = head - kTraceRingSize;
        pending_since_ns_ = 0;
    }
    while (next_ < head) {
        const TraceRecord& r = ring.records[next_ & kMask];
        // Acquire pairs with the writer's publishing release.
        const uint64_t before = r.seq.load(std::memory_order_acquire);
        if (before == written(next_)) {
            uint64_t w[7];
            for (int i = 0; i < 7; ++i)
                w[i] = r.words[i].load(rlx);
            // Acquire fence: pairs with the writer's release fence after its
            // claim (see trace_append()), so a record overwritten while we
            // copied it shows a newer `seq` here.
            std::atomic_thread_fence(std::memory_order_acquire);
            if (r.seq.load(rlx) == before)
                out.push_back(decode(w));
            else
                ++lost_;
        } else if (before > written(next_)) {
            ++lost_; // a later lap has it
        } else {
            // Claimed but not written yet, or dropped: wait for it a while.
            const bool waited =
                pending_since_ns_ != 0 && now - pending_since_ns_ >= kPendingTimeoutNs;
            if (!waited && head - next_ < kTraceRingSize / 2) {
                if (pending_since_ns_ == 0) pending_since_ns_ = now;
                return;
            }
            ++lost_;
        }
        ++next_;
        pending_since_ns_ = 0;
    }
}

} // namespace coexec::shm
