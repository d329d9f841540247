// The two calls of libtbb's binary interface in which an application thread
// runs and waits for parallel work: every blocking algorithm (parallel_for,
// parallel_reduce, parallel_invoke, ...) ends in execute_and_wait(), and
// task_group::wait() in wait(). When this library is preloaded (`coexec run
// --tbb`) the program's calls reach these definitions first; each brackets
// libtbb's own with a MasterSection. Loaded by TBB itself instead (found next
// to libtbb), it interposes nothing, and masters stay outside coexec.
//
// The declarations repeat those of oneTBB 2021's detail/_task.h, whose
// mangled names are part of libtbb.so.12's stable interface; like
// rml_interface.h they are written here so that the adapter needs no TBB
// headers.

#include "master.h"
#include "support/next_definition.hpp"

#include <atomic>

namespace tbb::detail {
namespace d1 {
class task;
class task_group_context;
class wait_context;
} // namespace d1

namespace r1 {
__attribute__((visibility("default"))) void execute_and_wait(d1::task& t,
                                                             d1::task_group_context& t_ctx,
                                                             d1::wait_context& wait_ctx,
                                                             d1::task_group_context& w_ctx);
__attribute__((visibility("default"))) void wait(d1::wait_context& wait_ctx,
                                                 d1::task_group_context& ctx);
} // namespace r1
} // namespace tbb::detail

namespace {

using execute_and_wait_fn = void (*)(tbb::detail::d1::task&, tbb::detail::d1::task_group_context&,
                                     tbb::detail::d1::wait_context&,
                                     tbb::detail::d1::task_group_context&);
using wait_fn = void (*)(tbb::detail::d1::wait_context&, tbb::detail::d1::task_group_context&);

std::atomic<execute_and_wait_fn> libtbb_execute_and_wait{nullptr};
std::atomic<wait_fn> libtbb_wait{nullptr};

} // namespace

namespace tbb::detail::r1 {

void execute_and_wait(d1::task& t, d1::task_group_context& t_ctx, d1::wait_context& wait_ctx,
                      d1::task_group_context& w_ctx) {
    auto real = coexec::adapter::required_next_definition(
        libtbb_execute_and_wait,
        "_ZN3tbb6detail2r116execute_and_waitERNS0_2d14taskERNS2_18task_group_contextERNS2_"
        "12wait_contextES6_",
        "tbb");
    coexec::tbb_rml::MasterSection section;
    real(t, t_ctx, wait_ctx, w_ctx);
}

void wait(d1::wait_context& wait_ctx, d1::task_group_context& ctx) {
    auto real = coexec::adapter::required_next_definition(
        libtbb_wait, "_ZN3tbb6detail2r14waitERNS0_2d112wait_contextERNS2_18task_group_contextE",
        "tbb");
    coexec::tbb_rml::MasterSection section;
    real(wait_ctx, ctx);
}

} // namespace tbb::detail::r1
