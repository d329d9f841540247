#include "pocl_modules.hpp"

#include <coexec/ext.h>

#include <dlfcn.h>

#include <array>
#include <string_view>

namespace coexec::pocl {
namespace {

std::string_view basename_of(const char* path) {
    std::string_view p(path);
    auto slash = p.rfind('/');
    return slash == std::string_view::npos ? p : p.substr(slash + 1);
}

} // namespace

Module module_of(const void* address) {
    Dl_info info{};
    if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) return Module::Other;
    std::string_view name = basename_of(info.dli_fname);
    // Debian builds PoCL with loadable drivers: the pthread driver is its own
    // object next to libpocl.so (…/pocl/libpocl-devices-pthread.so).
    if (name.starts_with("libpocl-devices-pthread.")) return Module::PoclPthread;
    if (name.starts_with("libpocl.") || name.starts_with("libpocl-devices-"))
        return Module::PoclOther;
    return Module::Other;
}

Module caller_module(const void* return_address) {
    struct Entry {
        const void* address = nullptr;
        Module module = Module::Other;
    };
    // Thread-local, so no synchronisation is needed.
    thread_local std::array<Entry, 8> cache{};
    thread_local unsigned next = 0;
    for (const Entry& e : cache)
        if (e.address == return_address) return e.module;
    Module m = module_of(return_address);
    // PoCL's waits are this adapter's to manage: libcoexec's wrappers (of
    // a hosted program thread's waits) leave them alone from now on.
    if (is_pocl(m)) coexec_leave_blocking_calls_from(return_address);
    cache[next++ % cache.size()] = Entry{return_address, m};
    return m;
}

} // namespace coexec::pocl
