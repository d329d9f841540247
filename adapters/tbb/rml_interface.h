// The RML (resource management layer) interface that oneTBB 2021 speaks to an
// external thread server, declared by coexec itself.
//
// oneTBB keeps these classes internal, so only their binary shape is a
// contract: the order of the virtual functions (the Itanium C++ ABI lays the
// vtable out in declaration order, destructors first as two slots), the data
// members of the factory structs, and the C entry points' signatures. Names
// and namespaces are ours; nothing here is shared with TBB at the source level.
// Verified against Debian's libtbb.so.12 (2021.8) by tests/tbb.
#pragma once

#include <cstddef>

namespace coexec::tbb_rml {

// Version number both sides exchange in __RML_open_factory. TBB 2021 sends 2.
using version_type = unsigned;
inline constexpr version_type supported_client_version = 2;
// What this server reports as its own version (TBB does not check it).
inline constexpr version_type server_version = 2;

// Root of every RML object: a virtual destructor and a version query.
class versioned_object {
  public:
    virtual ~versioned_object() = default;
    // Incremented by the owner on incompatible changes; constant per object.
    virtual version_type version() const = 0;
};

// Opaque per-worker state that the client creates and destroys.
class job {};

// What the client (TBB's market) implements; the server calls it.
class client : public versioned_object {
  public:
    using size_type = unsigned;
    // Upper bound on worker threads the server may ever create.
    virtual size_type max_job_count() const = 0;
    // Stack size, in bytes, that each worker thread needs at least.
    virtual std::size_t min_stack_size() const = 0;
    // Creates the state of one worker; called once on that worker's thread.
    virtual job* create_one_job() = 0;
    // Last call of a connection, after cleanup() ran for every job.
    virtual void acknowledge_close_connection() = 0;
    // Destroys a job; never while another thread works on it.
    virtual void cleanup(job& j) = 0;
};

// What the server implements; the client calls it.
class server : public versioned_object {
  public:
    // Asks every worker to call cleanup() and leave; acknowledge_close_connection
    // follows once they all did. `exiting` means exit() is running.
    virtual void request_close_connection(bool exiting = false) = 0;
    // Gives the calling thread's processor to someone else for a moment.
    virtual void yield() = 0;
    // Hint: the client started (+) or blocked (-) threads of its own.
    virtual void independent_thread_number_changed(int delta) = 0;
    // How many workers the server can run at once (hardware minus the main thread).
    virtual unsigned default_concurrency() const = 0;
};

// TBB's extension of the client: the work loop of one worker.
class tbb_client : public client {
  public:
    // Runs TBB work on the calling worker; returns when it has none left.
    virtual void process(job& j) = 0;
};

// TBB's extension of the server: the demand signal.
class tbb_server : public server {
  public:
    // The client wants `delta` more (or, if negative, fewer) workers running.
    virtual void adjust_job_count_estimate(int delta) = 0;
};

// The factory object lives in libtbb; the server only reads and writes the
// plain data members below, so their order and types must match exactly.
struct factory {
    enum status_type { st_success = 0, st_connection_exists, st_not_found, st_incompatible };
    // Stored handle value that tells TBB never to dlclose the server library.
    static constexpr std::size_t dont_unload = 1;

    status_type (*wait_to_close_routine)(factory&);
    void* library_handle;
};

struct tbb_factory : factory {
    status_type (*make_server_routine)(tbb_factory&, tbb_server*&, tbb_client&);
    void (*call_with_server_info_routine)(void (*)(void*, const char*), void*);
};

// A callback that receives a description of the server (used by TBB_VERSION=1).
using server_info_callback_t = void (*)(void* arg, const char* server_info);

} // namespace coexec::tbb_rml
