// TBB's "external" threads (the application's own threads that run parallel
// algorithms, the main thread most often) as coexec threads while they work
// in TBB. Such a thread computes its share of every algorithm beside TBB's
// workers; left outside coexec, the kernel may run it on the CPU that coexec
// granted a worker, which then waits behind it (docs/tbb.md, *Masters*).
#pragma once

namespace coexec::tbb_rml {

// Brackets one blocking TBB call on the calling thread (execute_and_wait,
// wait). The outermost one on a thread that is not a coexec thread already
// makes it one: the first time it attaches (label "tbb", keeping its own
// affinity outside coexec), later it takes a CPU again. When the outermost
// one ends, the first such thread of the process to attach (the main thread
// most often; once it detaches, the next one to attach) keeps its CPU, as an
// OpenMP root does between regions (coexec_keep_cpu): its serial code, an
// OpenMP region it opens, run there, and coexec takes the CPU only if that
// lasts long while others wait. The others lend it (coexec_lend_cpu), so
// that work that needs a CPU claims it at once: a program may have hundreds
// of threads that call TBB, and kept CPUs would stay out of their reach for
// tens of milliseconds each. Nothing happens on TBB's workers, on threads that others attached, after
// COEXEC_TBB_MASTER=off, or when coexec does not run.
class MasterSection {
  public:
    MasterSection();
    ~MasterSection();
    MasterSection(const MasterSection&) = delete;
    MasterSection& operator=(const MasterSection&) = delete;

  private:
    const bool entered_;
};

// Detaches the calling thread if it is a master that coexec hosts (for the
// main thread at exit, which gets no thread-exit destructor).
void release_master_thread();

} // namespace coexec::tbb_rml
