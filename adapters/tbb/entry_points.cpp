// The four C entry points that libtbb looks up in libirml.so.1 (by dlsym, or
// through its weak references when the library is preloaded).

#include "master.h"
#include "membership.h"
#include "rml_interface.h"
#include "server.h"

#include <new>

using coexec::tbb_rml::factory;
using coexec::tbb_rml::Server;
using coexec::tbb_rml::tbb_client;
using coexec::tbb_rml::tbb_factory;
using coexec::tbb_rml::tbb_server;
using coexec::tbb_rml::TbbMembership;
using coexec::tbb_rml::version_type;

extern "C" {

// Opens the factory for a client of `client_version`. Succeeds only when
// coexec is running for this process: any other status makes TBB fall back to
// its private server (silently, so the one line comes from TbbMembership).
__attribute__((visibility("default"))) factory::status_type
__RML_open_factory(factory& f, version_type& server_version, version_type client_version) {
    server_version = coexec::tbb_rml::server_version;
    // Worker threads run code of this library until the process ends, so
    // TBB must never dlclose it.
    f.library_handle = reinterpret_cast<void*>(factory::dont_unload);
    if (client_version != coexec::tbb_rml::supported_client_version) {
        coexec::tbb_rml::log_line("TBB speaks RML version %u, not %u; TBB uses its own worker "
                                  "threads",
                                  client_version, coexec::tbb_rml::supported_client_version);
        return factory::st_incompatible;
    }
    return TbbMembership::instance().start() ? factory::st_success : factory::st_not_found;
}

// Called when TBB releases its resources (normally at exit).
__attribute__((visibility("default"))) factory::status_type __RML_close_factory(factory&) {
    // Usually on the main thread at exit, which no thread-exit hook detaches.
    coexec::tbb_rml::release_master_thread();
    TbbMembership::instance().stop();
    return factory::st_success;
}

// Creates the server for TBB's market. TBB falls back to its private server
// (with a warning of its own) on any status but st_success.
__attribute__((visibility("default"))) factory::status_type
__TBB_make_rml_server(tbb_factory&, tbb_server*& server, tbb_client& client) {
    TbbMembership& membership = TbbMembership::instance();
    if (!membership.active()) return factory::st_not_found;
    Server* created = new (std::nothrow) Server(client);
    if (created == nullptr) return factory::st_not_found;
    server = created;
    if (membership.verbose())
        coexec::tbb_rml::log_line("TBB connected: its workers are coexec threads (up to %u, "
                                  "default concurrency %u)",
                                  client.max_job_count(), created->default_concurrency());
    return factory::st_success;
}

// Describes this server to TBB (printed when TBB_VERSION=1).
__attribute__((visibility("default"))) void
__TBB_call_with_my_server_info(coexec::tbb_rml::server_info_callback_t callback, void* arg) {
    callback(arg, "coexec RML server (TBB workers are coexec threads)");
}

} // extern "C"
