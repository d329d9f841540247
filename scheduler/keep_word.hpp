// The word through which a thread keeps its CPU while it runs code of its
// own (coexec_keep_cpu) or parks it while its task is paused (nosv_pause),
// and through which a monitor or a claimer may take that CPU.
#pragma once

#include <cstdint>

namespace coexec::scheduler {

// ThreadSlot::serial, decoded. A keep or a park lasts one period; the
// period number tells a monitor that saw the same word twice that the
// thread never came back in between. Only the thread moves Inside ->
// Outside or Parked -> Inside; a taker moves Outside or Parked -> Taken by
// compare-exchange against the thread's move back to Inside, so exactly one
// of them wins each period. A kept CPU is taken once it has been kept a
// while and some process waits (CpuBinding::take_long_kept()); a parked
// one at once, by whoever needs a CPU (Policy::take_parked_cpu()).
class KeepWord {
  public:
    enum class Mode : uint32_t { Inside = 0, Outside = 1, Taken = 2, Parked = 3 };

    constexpr KeepWord() = default;
    constexpr explicit KeepWord(uint32_t bits) : bits_(bits) {}

    constexpr uint32_t bits() const { return bits_; }
    constexpr uint32_t period() const { return bits_ >> kModeBits; }
    constexpr Mode mode() const { return Mode(bits_ & kModeMask); }

    // The word of the next period, with the thread outside coexec.
    constexpr KeepWord next_outside() const { return with(period() + 1, Mode::Outside); }
    // The word of the next period, with the thread asleep in coexec.
    constexpr KeepWord next_parked() const { return with(period() + 1, Mode::Parked); }
    // Whether a taker may take the thread's CPU in this period.
    constexpr bool away() const { return mode() == Mode::Outside || mode() == Mode::Parked; }
    // The same period, in `mode`.
    constexpr KeepWord in(Mode mode) const { return with(period(), mode); }

    friend constexpr bool operator==(KeepWord, KeepWord) = default;

  private:
    static constexpr uint32_t kModeBits = 2;
    static constexpr uint32_t kModeMask = (1u << kModeBits) - 1;
    static constexpr KeepWord with(uint32_t period, Mode mode) {
        return KeepWord(period << kModeBits | uint32_t(mode));
    }
    uint32_t bits_ = 0;
};

static_assert(KeepWord(5).period() == 1 && KeepWord(5).mode() == KeepWord::Mode::Outside);
static_assert(KeepWord(5).next_outside() == KeepWord(9));

} // namespace coexec::scheduler
