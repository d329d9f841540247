// Giving a coexec CPU away around a wait outside coexec.
#pragma once

#include <coexec/ext.h>
#include <nosv.h>
#include <nosv/error.h>

namespace coexec::adapter {

// While alive, a calling coexec thread holds no CPU: the constructor gives
// it away (coexec_block_enter), the destructor waits for one again
// (coexec_block_exit). A thread that is not a coexec thread, or is outside
// coexec already, is left as it is.
class CpuReleased {
  public:
    CpuReleased() : released_(nosv_self() != nullptr && coexec_block_enter() == NOSV_SUCCESS) {}
    ~CpuReleased() { retake(); }
    CpuReleased(const CpuReleased&) = delete;
    CpuReleased& operator=(const CpuReleased&) = delete;

    bool released() const { return released_; }
    // Takes a CPU again before the scope ends; the destructor then does
    // nothing.
    void retake() {
        if (!released_) return;
        released_ = false;
        coexec_block_exit();
    }

  private:
    bool released_;
};

} // namespace coexec::adapter
