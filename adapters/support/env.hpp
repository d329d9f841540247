// Environment settings of the adapters, read the same way by each.
#pragma once

#include <cstdlib>
#include <cstring>

namespace coexec::adapter {

// True when `name` is set, not empty and not "0" (COEXEC_VERBOSE=1).
inline bool env_flag(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr && v[0] != '\0' && std::strcmp(v, "0") != 0;
}

} // namespace coexec::adapter
