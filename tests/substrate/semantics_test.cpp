// nOS-V's documented semantics where a first reading of the API could
// differ (issue 16): repeated submits, a deadline wake before the task
// sleeps, reuse after completion, the immediate successor of a completed
// callback, the quantum between tasks of one process, and shutdown from a
// thread that did not init. One test per behaviour.
#include "support.hpp"

#include <coexec/ext.h>
#include <nosv.h>

#include <atomic>
#include <thread>

using namespace coexec;

namespace {

// ---- 7. shutdown from another thread --------------------------------------

// A thread other than the one that called nosv_init() cannot shut the
// process down: it gets an error and nothing changes, and the init thread
// still shuts down afterwards. (An adapter's coexec_init_quiet() belongs to
// the process: any thread may end that one.)
TEST(ApiSemantics, ShutdownFromAThreadThatDidNotInitFails) {
    test::ScopedSegment seg;
    ASSERT_EQ(nosv_init(), NOSV_SUCCESS);
    int rc = INT32_MIN;
    std::thread([&rc] { rc = nosv_shutdown(); }).join();
    EXPECT_EQ(rc, NOSV_ERR_INVALID_OPERATION);
    EXPECT_TRUE(coexec_is_active()) << "a refused shutdown left the instance";
    // A thread ends only its own inits, nested ones included.
    std::thread([&rc] {
        EXPECT_EQ(nosv_init(), NOSV_SUCCESS);
        EXPECT_EQ(nosv_init(), NOSV_SUCCESS);
        EXPECT_EQ(nosv_shutdown(), NOSV_SUCCESS);
        EXPECT_EQ(nosv_shutdown(), NOSV_SUCCESS);
        rc = nosv_shutdown();
    }).join();
    EXPECT_EQ(rc, NOSV_ERR_INVALID_OPERATION);
    EXPECT_TRUE(coexec_is_active());
    EXPECT_EQ(nosv_shutdown(), NOSV_SUCCESS);
    EXPECT_FALSE(coexec_is_active());
    EXPECT_EQ(nosv_shutdown(), NOSV_ERR_NOT_INITIALIZED);

    ASSERT_EQ(coexec_init_quiet(), NOSV_SUCCESS);
    std::thread([&rc] { rc = nosv_shutdown(); }).join();
    EXPECT_EQ(rc, NOSV_SUCCESS) << "an adapter's init is the process's";
    EXPECT_FALSE(coexec_is_active());
}

} // namespace
