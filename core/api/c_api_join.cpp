// The exported calls for joinable tasks: nosv_join, nosv_join_all,
// nosv_wait, nosv_wait_all and nosv_set_result (argument checks here; the
// wait itself in join.cpp).
#include <nosv.h>

#include "core/api/c_api_support.hpp"
#include "core/runtime/runtime.hpp"

#include <algorithm>
#include <vector>

using coexec::core::Runtime;
using coexec::core::RuntimeSection;
using coexec::core::this_thread_context;
using coexec::core::ThreadContext;
using coexec::core::valid;

namespace {

// Waits for `tasks`; with `results`, a join: gathers each task's result
// and destroys the tasks once all completed (none when any did not).
int join_tasks(nosv_task_t* tasks, void** results, size_t n, uint64_t timeout, bool join) {
    RuntimeSection section;
    Runtime* rt = Runtime::get();
    if (!rt) return NOSV_ERR_NOT_INITIALIZED;
    if (n == 0) return NOSV_SUCCESS;
    if (!tasks) return NOSV_ERR_INVALID_PARAMETER;
    for (size_t i = 0; i < n; ++i)
        if (!valid(tasks[i]) || !tasks[i]->join) return NOSV_ERR_INVALID_PARAMETER;
    if (n > 1) {
        // The same task twice would be joined (destroyed) twice.
        std::vector<nosv_task_t> sorted(tasks, tasks + n);
        std::sort(sorted.begin(), sorted.end());
        if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
            return NOSV_ERR_INVALID_PARAMETER;
    }
    if (int rc = rt->tasks().join_wait(tasks, n, timeout); rc != NOSV_SUCCESS) return rc;
    if (!join) return NOSV_SUCCESS;
    // Complete: the runtime no longer refers to the tasks (JoinState::complete).
    for (size_t i = 0; i < n; ++i) {
        if (results) results[i] = tasks[i]->join->result();
        rt->ready().delete_task(tasks[i]);
    }
    return NOSV_SUCCESS;
}

} // namespace

COEXEC_API int nosv_join(nosv_task_t task, void** resval, uint64_t timeout) {
    void* result = nullptr;
    int rc = join_tasks(&task, &result, 1, timeout, true);
    if (rc == NOSV_SUCCESS && resval) *resval = result;
    return rc;
}

COEXEC_API int nosv_join_all(nosv_task_t* tasks, void** resvals, size_t ntasks, uint64_t timeout) {
    return join_tasks(tasks, resvals, ntasks, timeout, true);
}

COEXEC_API int nosv_wait(nosv_task_t task, uint64_t timeout) {
    return join_tasks(&task, nullptr, 1, timeout, false);
}

COEXEC_API int nosv_wait_all(nosv_task_t* tasks, size_t ntasks, uint64_t timeout) {
    return join_tasks(tasks, nullptr, ntasks, timeout, false);
}

COEXEC_API int nosv_set_result(void* resval) {
    if (!Runtime::get()) return NOSV_ERR_NOT_INITIALIZED;
    ThreadContext* self = this_thread_context();
    if (!self || !self->work.current) return NOSV_ERR_OUTSIDE_TASK;
    if (!self->work.current->join) return NOSV_ERR_INVALID_OPERATION; // nobody could gather it
    self->work.current->join->set_result(resval);
    return NOSV_SUCCESS;
}
