#include "futex.hpp"

#include <cerrno>
#include <ctime>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace coexec::shm {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));

bool futex_wait(std::atomic<uint32_t>& word, uint32_t expected, uint64_t timeout_ns) {
    timespec ts{};
    timespec* tsp = nullptr;
    if (timeout_ns != 0) {
        ts.tv_sec = time_t(timeout_ns / 1'000'000'000ULL);
        ts.tv_nsec = long(timeout_ns % 1'000'000'000ULL);
        tsp = &ts;
    }
    long rc = syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT, expected, tsp,
                      nullptr, 0);
    return !(rc == -1 && errno == ETIMEDOUT);
}

void futex_wake(std::atomic<uint32_t>& word, int count) {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, count, nullptr, nullptr, 0);
}

} // namespace coexec::shm
