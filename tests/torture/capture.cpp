#include "capture.hpp"

#include <cerrno>
#include <sys/mman.h>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace coexec::torture {

OutputCapture::OutputCapture() {
    fd_ = ::memfd_create("coexec-torture-member", MFD_CLOEXEC);
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "memfd_create");
}

OutputCapture::~OutputCapture() {
    if (fd_ >= 0) ::close(fd_);
}

std::string OutputCapture::tail(size_t max_bytes) const {
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || st.st_size <= 0) return {};
    const size_t size = size_t(st.st_size);
    const size_t from = size > max_bytes ? size - max_bytes : 0;
    std::string text(size - from, '\0');
    const ssize_t n = ::pread(fd_, text.data(), text.size(), off_t(from));
    text.resize(n > 0 ? size_t(n) : 0);
    if (from > 0) {
        // Start at a whole line.
        const size_t nl = text.find('\n');
        if (nl != std::string::npos) text.erase(0, nl + 1);
    }
    return text;
}

} // namespace coexec::torture
