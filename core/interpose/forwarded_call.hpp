// Whom a call that libcoexec forwards came from. libcoexec defines some of
// libc's functions (pthread_create, the blocking calls) and hands each call
// on to the next definition. A later interposer that tells its callers
// apart by their return address (the PoCL adapter) would see libcoexec's
// instead; it asks coexec_interposed_caller() first, which answers with
// the program's, kept here for the length of the forwarded call.
#pragma once

namespace coexec::core {

// The calling thread's caller of the call being forwarded, or null.
const void*& forwarded_caller();

// Sets a caller slot (forwarded_caller(), or libcoexec-host.so's view of
// it through coexec_host_caller_slot()) for the scope of one forwarded call.
class ForwardedCall {
  public:
    ForwardedCall(const void*& slot, const void* caller) : slot_(slot), saved_(slot) {
        slot_ = caller;
    }
    ~ForwardedCall() { slot_ = saved_; }
    ForwardedCall(const ForwardedCall&) = delete;
    ForwardedCall& operator=(const ForwardedCall&) = delete;

  private:
    const void*& slot_;
    const void* saved_;
};

} // namespace coexec::core
