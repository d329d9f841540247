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
// one ends, the thread keeps its CPU as an OpenMP root does between regions
// (coexec_keep_cpu): it runs its serial code there, and coexec takes the CPU
// only if that lasts long while others wait. Nothing happens on TBB's
// workers, on threads that others attached, after COEXEC_TBB_MASTER=off, or
// when coexec does not run.
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

// How many threads are hosted as masters now: coexec must stay joined while
// any is attached.
int hosted_masters();

} // namespace coexec::tbb_rml
