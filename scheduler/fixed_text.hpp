// Text in the segment's fixed-size character fields (names, labels, where
// the CPU list came from).
#pragma once

#include <cstddef>
#include <cstring>
#include <string_view>

namespace coexec::scheduler {

// Copies `text` into `field`, cut to fit, NUL-padded: a reader in another
// process always finds a terminated string.
template <size_t N>
void copy_text(char (&field)[N], std::string_view text) {
    std::memset(field, 0, N);
    text.copy(field, N - 1);
}

} // namespace coexec::scheduler
