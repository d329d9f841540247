#include "worker_thread.hpp"

#include "membership.hpp"
#include "real_pthread.hpp"

#include <nosv.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <new>

namespace coexec::pocl {
namespace {

// What the trampoline needs to run PoCL's own start routine.
struct StartRoutine {
    void* (*start)(void*);
    void* arg;
};

// Holds the coexec attachment of the current thread for its lifetime; the
// destructor also runs on pthread_exit, which unwinds the stack.
class Attachment {
  public:
    Attachment() {
        nosv_task_t task = nullptr;
        attached_ = nosv_attach(&task, nullptr, "pocl", NOSV_ATTACH_NONE) == NOSV_SUCCESS;
        if (!attached_) return;
        PoclMembership::instance().worker_attached();
        if (PoclMembership::instance().verbose())
            std::fprintf(stderr, "coexec-pocl: worker attached (cpu %d)\n",
                         nosv_get_current_system_cpu());
    }
    ~Attachment() {
        if (!attached_) return;
        nosv_detach(NOSV_DETACH_NONE);
        PoclMembership::instance().worker_detached();
    }
    Attachment(const Attachment&) = delete;
    Attachment& operator=(const Attachment&) = delete;

  private:
    bool attached_ = false;
};

void* worker_main(void* p) {
    StartRoutine routine = *static_cast<StartRoutine*>(p);
    delete static_cast<StartRoutine*>(p);
    Attachment attachment;
    return routine.start(routine.arg);
}

} // namespace

int create_worker(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*), void* arg) {
    auto routine = std::unique_ptr<StartRoutine>(new (std::nothrow) StartRoutine{start, arg});
    if (!routine) return EAGAIN;
    int rc = real_pthread().create(thread, attr, worker_main, routine.get());
    // On success the new thread owns (and frees) the routine.
    if (rc == 0) routine.release();
    return rc;
}

} // namespace coexec::pocl
