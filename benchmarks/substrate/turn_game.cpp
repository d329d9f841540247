#include "turn_game.hpp"

#include "nosv_util.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>

namespace coexec::bench {

void futex_wait_while(std::atomic<uint32_t>& word, uint32_t value) {
    ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT, value, nullptr, nullptr,
              0);
}

void futex_wake_all(std::atomic<uint32_t>& word) {
    ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr, nullptr,
              0);
}

void futex_await_turn(Court& court, uint32_t turn) {
    // Acquire pairs with the other player's release store of the counter.
    for (uint32_t seen; (seen = court.turn.load(std::memory_order_acquire)) != turn;)
        futex_wait_while(court.turn, seen);
}

void PassClock::on_pass(int64_t k) {
    if (k % per_repeat_ != 0) return;
    const uint64_t now = now_ns();
    const uint64_t locks = locks_ ? locks_->read() : 0;
    const double handoffs = double(2 * per_repeat_);
    if (k >= 2 * per_repeat_ && locks_)
        out_.push(double(now - mark_) / handoffs, double(locks - lock_mark_) / handoffs);
    else if (k >= 2 * per_repeat_)
        out_.push(double(now - mark_) / handoffs);
    mark_ = now;
    lock_mark_ = locks;
}

} // namespace coexec::bench
