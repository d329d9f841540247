// Futex wait/wake on words inside the shared segment (never FUTEX_PRIVATE:
// waiters and wakers live in different processes).
#pragma once

#include <atomic>
#include <cstdint>

namespace coexec::shm {

// Sleeps while `word` still holds `expected`, at most `timeout_ns` (0 means
// forever). Returns false on timeout. Spurious returns are possible.
bool futex_wait(std::atomic<uint32_t>& word, uint32_t expected, uint64_t timeout_ns = 0);

// Wakes up to `count` waiters of `word`.
void futex_wake(std::atomic<uint32_t>& word, int count = 1);

} // namespace coexec::shm
