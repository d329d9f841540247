// A member's stdout and stderr, captured in an anonymous memory file so a
// killed member leaves nothing on disk, and the harness can show the tail of
// what a failing member printed.
#pragma once

#include <string>

namespace coexec::torture {

class OutputCapture {
  public:
    // Creates the memory file (close-on-exec: only the member it is dup2()ed
    // into inherits it). Throws std::system_error on failure.
    OutputCapture();
    ~OutputCapture();
    OutputCapture(const OutputCapture&) = delete;
    OutputCapture& operator=(const OutputCapture&) = delete;

    int fd() const { return fd_; }
    // The last `max_bytes` bytes written so far, cut at a line start.
    std::string tail(size_t max_bytes = 4096) const;

  private:
    int fd_ = -1;
};

} // namespace coexec::torture
