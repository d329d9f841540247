// The first line of a small kernel file: a /proc, sysfs or cgroup entry.
#pragma once

#include <fstream>
#include <string>

namespace coexec::scheduler {

// Stores the first line of `path` in `out`, without trailing spaces. Returns
// false when the file cannot be opened or is empty.
inline bool read_line(const std::string& path, std::string& out) {
    std::ifstream in(path);
    if (!in || !std::getline(in, out)) return false;
    while (!out.empty() && (out.back() == '\n' || out.back() == ' '))
        out.pop_back();
    return true;
}

} // namespace coexec::scheduler
