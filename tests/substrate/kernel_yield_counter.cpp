// Preloaded after libcoexec-host.so by the host-threads tests: counts the
// calls that reach the kernel's sched_yield through this definition (the
// next one after libcoexec-host.so's), and hands each on to the C library.
#include <atomic>
#include <dlfcn.h>

extern "C" {

__attribute__((visibility("default"))) std::atomic<int> coexec_test_kernel_yields{0};

__attribute__((visibility("default"))) int sched_yield() noexcept {
    coexec_test_kernel_yields.fetch_add(1, std::memory_order_relaxed);
    static const auto next = reinterpret_cast<int (*)()>(::dlsym(RTLD_NEXT, "sched_yield"));
    return next ? next() : 0;
}
}
