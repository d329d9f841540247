#include "master.h"

#include "hosted_thread.h"
#include "membership.h"
#include "server.h"

#include <coexec/ext.h>
#include <nosv.h>

#include <cstdlib>
#include <cstring>
#include <pthread.h>

namespace coexec::tbb_rml {

namespace {

// What coexec knows about the calling thread as a TBB master. Trivially
// destructible: the thread-exit detach goes through a pthread key.
struct MasterThread {
    enum class Role : unsigned char {
        unknown, // not looked at yet, or released since
        hosted,  // attached by us
        never,   // a worker, attached by others, or attaching failed
    };
    Role role = Role::unknown;
    bool holds = false; // holds its CPU (not after it kept or lent it)
    bool keeps = false; // keeps its CPU between algorithms; else lends it
    int depth = 0;      // nested MasterSections on this thread
    nosv_task_t task = nullptr;
};

thread_local MasterThread tls_master;

bool hosting_enabled() {
    // Read once: the setting is the process's, like COEXEC_OMP_ROOT.
    static const bool enabled = [] {
        const char* v = std::getenv("COEXEC_TBB_MASTER");
        if (v == nullptr || *v == '\0' || std::strcmp(v, "on") == 0) return true;
        if (std::strcmp(v, "off") != 0)
            log_line("COEXEC_TBB_MASTER=%s is neither on nor off; using on", v);
        return std::strcmp(v, "off") != 0;
    }();
    return enabled;
}

void release(MasterThread& m) {
    if (m.role != MasterThread::Role::hosted) return;
    // Back on a CPU first: nosv_detach needs one (a kept or lent CPU that
    // nobody took is still ours, and then this is cheap).
    if (!m.holds) coexec_block_exit();
    nosv_detach(NOSV_DETACH_NONE);
    if (m.keeps) TbbMembership::instance().release_keeper();
    TbbMembership::instance().master_detached();
    m = MasterThread{};
}

void on_thread_exit(void* value) {
    release(*static_cast<MasterThread*>(value));
}

// The key whose destructor detaches a hosted master when its thread ends.
pthread_key_t exit_key() {
    static const pthread_key_t key = [] {
        pthread_key_t k{};
        pthread_key_create(&k, on_thread_exit);
        return k;
    }();
    return key;
}

// Makes the calling thread a coexec thread holding a CPU; false when it
// must stay as it is.
bool attach(MasterThread& m) {
    if (Worker::current() != nullptr || nosv_self() != nullptr || !hosting_enabled() ||
        !TbbMembership::instance().start()) {
        m.role = MasterThread::Role::never;
        return false;
    }
    // The thread runs the application's serial code too: outside coexec
    // it keeps the affinity it chose.
    if (nosv_attach(&m.task, nullptr, "tbb", COEXEC_ATTACH_KEEP_AFFINITY) != NOSV_SUCCESS) {
        if (TbbMembership::instance().verbose())
            log_line("a thread running TBB algorithms could not attach; it runs unmanaged");
        m = MasterThread{};
        m.role = MasterThread::Role::never;
        return false;
    }
    TbbMembership::instance().master_attached();
    m.keeps = TbbMembership::instance().claim_keeper();
    pthread_setspecific(exit_key(), &m);
    m.role = MasterThread::Role::hosted;
    m.holds = true;
    return true;
}

bool enter() {
    MasterThread& m = tls_master;
    if (m.depth > 0) {
        ++m.depth;
        return true;
    }
    switch (m.role) {
    case MasterThread::Role::never:
        return false;
    case MasterThread::Role::unknown:
        if (!attach(m)) return false;
        break;
    case MasterThread::Role::hosted:
        // coexec ended under us (a fork child, or a shutdown): start over.
        if (nosv_self() != m.task) {
            m = MasterThread{};
            if (!attach(m)) return false;
            break;
        }
        if (!m.holds) m.holds = coexec_block_exit() == NOSV_SUCCESS;
        break;
    }
    // TBB's spin loops now yield to waiting coexec work, and sleeps release
    // the CPU, as on a worker.
    set_on_coexec_cpu(m.holds);
    m.depth = 1;
    return true;
}

void leave() {
    MasterThread& m = tls_master;
    if (--m.depth > 0) return;
    set_on_coexec_cpu(false);
    if (m.holds) m.holds = (m.keeps ? coexec_keep_cpu() : coexec_lend_cpu()) != NOSV_SUCCESS;
}

} // namespace

MasterSection::MasterSection() : entered_(enter()) {}

MasterSection::~MasterSection() {
    if (entered_) leave();
}

void release_master_thread() {
    MasterThread& m = tls_master;
    if (m.depth > 0) return; // inside TBB still: the section ends first
    release(m);
    pthread_setspecific(exit_key(), nullptr);
}

} // namespace coexec::tbb_rml
