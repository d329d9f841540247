// Affinity transparency (issue 16, behaviour 9; docs/affinity.md): a thread
// coexec manages shows, through sched_getaffinity and
// pthread_getaffinity_np, the mask it had before attach (a worker: the
// process's), however coexec pins it; a mask set on it is remembered, not
// applied, and detach restores it. The kernel's own view is read with the
// system call (test::kernel_affinity). Last, the kernel policy coexec gives
// the threads it manages.
#include "support.hpp"

#include <coexec/ext.h>
#include <nosv.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace coexec;

namespace {

cpu_set_t visible_sched(pid_t tid = 0) {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    EXPECT_EQ(sched_getaffinity(tid, sizeof mask, &mask), 0) << std::strerror(errno);
    return mask;
}

cpu_set_t visible_pthread(pthread_t thread) {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    EXPECT_EQ(pthread_getaffinity_np(thread, sizeof mask, &mask), 0);
    return mask;
}

cpu_set_t only(int cpu) {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    CPU_SET(size_t(cpu), &mask);
    return mask;
}

// A CPU of `mask` other than `not_this`, or -1.
int other_cpu(const cpu_set_t& mask, int not_this) {
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (c != not_this && CPU_ISSET(c, &mask)) return c;
    return -1;
}

// The kernel pins a thread that holds a CPU to exactly that CPU.
void expect_pinned_to_held_cpu() {
    const cpu_set_t kernel = test::kernel_affinity();
    EXPECT_EQ(CPU_COUNT(&kernel), 1);
    EXPECT_TRUE(CPU_ISSET(nosv_get_current_system_cpu(), &kernel));
}

// Joins a private instance for one test (the calling thread is not attached).
class Joined {
  public:
    explicit Joined(const std::string& config = "") : seg_(config), all_(test::kernel_affinity()) {
        EXPECT_EQ(nosv_init(), NOSV_SUCCESS);
    }
    ~Joined() {
        EXPECT_EQ(nosv_shutdown(), NOSV_SUCCESS);
        // Whatever a test did, the next one starts from the whole mask.
        sched_setaffinity(0, sizeof all_, &all_);
    }
    // The test thread's mask before anything: the whole machine, usually.
    const cpu_set_t& all() const { return all_; }
    bool several_cpus() const { return CPU_COUNT(&all_) > 1 && nosv_get_num_cpus() > 1; }

  private:
    test::ScopedSegment seg_;
    cpu_set_t all_;
};

} // namespace

TEST(Affinity, AnAttachedThreadSeesItsMaskFromBeforeAttach) {
    Joined joined;
    nosv_task_t t;
    ASSERT_EQ(nosv_attach(&t, nullptr, "affinity", NOSV_ATTACH_NONE), 0);
    cpu_set_t seen = visible_sched();
    EXPECT_TRUE(CPU_EQUAL(&seen, &joined.all())) << "sched_getaffinity(0)";
    seen = visible_sched(pid_t(::gettid()));
    EXPECT_TRUE(CPU_EQUAL(&seen, &joined.all())) << "sched_getaffinity(own tid)";
    seen = visible_pthread(pthread_self());
    EXPECT_TRUE(CPU_EQUAL(&seen, &joined.all())) << "pthread_getaffinity_np";
    expect_pinned_to_held_cpu(); // coexec's pinning, hidden from the program
    ASSERT_EQ(nosv_detach(NOSV_DETACH_NONE), 0);
    const cpu_set_t kernel = test::kernel_affinity();
    EXPECT_TRUE(CPU_EQUAL(&kernel, &joined.all())) << "detach restores it";
}

// The extension answers as sched_getaffinity(0) does, whatever the library
// order, for runtimes that would otherwise read the pin (libomp).
TEST(Affinity, TheVisibleAffinityExtensionShowsTheMaskAndNotThePin) {
    Joined joined;
    cpu_set_t mask;
    ASSERT_EQ(coexec_visible_affinity(sizeof mask, &mask), 0) << "not attached: the kernel's";
    EXPECT_TRUE(CPU_EQUAL(&mask, &joined.all()));
    nosv_task_t t;
    ASSERT_EQ(nosv_attach(&t, nullptr, "affinity", NOSV_ATTACH_NONE), 0);
    expect_pinned_to_held_cpu();
    CPU_ZERO(&mask);
    ASSERT_EQ(coexec_visible_affinity(sizeof mask, &mask), 0);
    EXPECT_TRUE(CPU_EQUAL(&mask, &joined.all())) << "attached: the mask from before attach";
    // Bad arguments get sched_getaffinity's answers, as errno values.
    EXPECT_EQ(coexec_visible_affinity(sizeof mask, nullptr), EFAULT);
    char tiny = 0;
    EXPECT_EQ(coexec_visible_affinity(sizeof tiny, &tiny), EINVAL);
    ASSERT_EQ(nosv_detach(NOSV_DETACH_NONE), 0);
}

namespace {
struct Seen {
    cpu_set_t sched, pthread, kernel;
    pid_t tid;
    int cpu;
};
void record_affinity(nosv_task_t task) {
    auto* s = static_cast<Seen*>(nosv_get_task_metadata(task));
    s->sched = visible_sched();
    s->pthread = visible_pthread(pthread_self());
    s->kernel = test::kernel_affinity();
    s->tid = pid_t(::gettid());
    s->cpu = nosv_get_current_system_cpu();
}
} // namespace

TEST(Affinity, AWorkerRunningATaskSeesTheProcessMaskNotItsCpu) {
    Joined joined;
    nosv_task_t self;
    ASSERT_EQ(nosv_attach(&self, nullptr, "main", NOSV_ATTACH_NONE), 0);
    nosv_task_type_t type;
    ASSERT_EQ(nosv_type_init(&type, record_affinity, nullptr, nullptr, "record", nullptr, nullptr,
                             NOSV_TYPE_INIT_NONE),
              0);
    for (int round = 0; round < 20; ++round) {
        nosv_task_t task;
        ASSERT_EQ(nosv_create(&task, type, sizeof(Seen), NOSV_CREATE_NONE), 0);
        ASSERT_EQ(nosv_submit(task, NOSV_SUBMIT_BLOCKING), 0);
        const Seen s = *static_cast<Seen*>(nosv_get_task_metadata(task));
        EXPECT_NE(s.tid, pid_t(::gettid())) << "ran on a worker";
        EXPECT_TRUE(CPU_EQUAL(&s.sched, &joined.all())) << "sched_getaffinity in a task";
        EXPECT_TRUE(CPU_EQUAL(&s.pthread, &joined.all())) << "pthread_getaffinity_np in a task";
        // What a library that sizes its pool from the mask would count.
        EXPECT_EQ(CPU_COUNT(&s.sched), CPU_COUNT(&joined.all()));
        EXPECT_EQ(CPU_COUNT(&s.kernel), 1) << "the worker itself is pinned";
        EXPECT_TRUE(CPU_ISSET(s.cpu, &s.kernel));
        ASSERT_EQ(nosv_destroy(task, NOSV_DESTROY_NONE), 0);
    }
    ASSERT_EQ(nosv_type_destroy(type, NOSV_TYPE_DESTROY_NONE), 0);
    ASSERT_EQ(nosv_detach(NOSV_DETACH_NONE), 0);
}

namespace {
// The kernel's mask of a thread created with `attr` (nullptr: defaults).
cpu_set_t kernel_mask_of_new_thread(const pthread_attr_t* attr) {
    cpu_set_t seen;
    CPU_ZERO(&seen);
    pthread_t thread;
    auto body = [](void* out) -> void* {
        *static_cast<cpu_set_t*>(out) = test::kernel_affinity();
        return nullptr;
    };
    EXPECT_EQ(pthread_create(&thread, attr, body, &seen), 0);
    EXPECT_EQ(pthread_join(thread, nullptr), 0);
    return seen;
}

void record_new_thread_affinity(nosv_task_t task) {
    auto* s = static_cast<Seen*>(nosv_get_task_metadata(task));
    std::thread([s] { s->kernel = test::kernel_affinity(); }).join();
}
} // namespace

// A thread that a pinned thread creates with default attributes starts from
// the creator's visible mask; attributes with a mask of their own keep it.
TEST(Affinity, AThreadCreatedWithDefaultAttributesStartsFromTheVisibleMask) {
    Joined joined;
    if (!joined.several_cpus()) GTEST_SKIP() << "needs two CPUs";
    nosv_task_t t;
    ASSERT_EQ(nosv_attach(&t, nullptr, "creator", NOSV_ATTACH_NONE), 0);
    expect_pinned_to_held_cpu();
    cpu_set_t seen = kernel_mask_of_new_thread(nullptr);
    EXPECT_TRUE(CPU_EQUAL(&seen, &joined.all())) << "pthread_create with default attributes";
    std::thread([&] { seen = test::kernel_affinity(); }).join();
    EXPECT_TRUE(CPU_EQUAL(&seen, &joined.all())) << "std::thread";
    // Attributes with a mask of their own: that mask.
    const int other = other_cpu(joined.all(), nosv_get_current_system_cpu());
    pthread_attr_t attr;
    ASSERT_EQ(pthread_attr_init(&attr), 0);
    const cpu_set_t one = only(other);
    ASSERT_EQ(pthread_attr_setaffinity_np(&attr, sizeof one, &one), 0);
    seen = kernel_mask_of_new_thread(&attr);
    EXPECT_TRUE(CPU_EQUAL(&seen, &one)) << "attributes with a mask";
    ASSERT_EQ(pthread_attr_destroy(&attr), 0);
    EXPECT_EQ(coexec_pthread_create_caller(), nullptr) << "outside a forwarded call";
    ASSERT_EQ(nosv_detach(NOSV_DETACH_NONE), 0);
    // Not managed any more: plain inheritance of the restored mask.
    seen = kernel_mask_of_new_thread(nullptr);
    EXPECT_TRUE(CPU_EQUAL(&seen, &joined.all()));
}

TEST(Affinity, AThreadThatATaskCreatesStartsFromTheProcessMask) {
    Joined joined;
    if (!joined.several_cpus()) GTEST_SKIP() << "needs two CPUs";
    nosv_task_t self;
    ASSERT_EQ(nosv_attach(&self, nullptr, "main", NOSV_ATTACH_NONE), 0);
    nosv_task_type_t type;
    ASSERT_EQ(nosv_type_init(&type, record_new_thread_affinity, nullptr, nullptr, "spawner",
                             nullptr, nullptr, NOSV_TYPE_INIT_NONE),
              0);
    nosv_task_t task;
    ASSERT_EQ(nosv_create(&task, type, sizeof(Seen), NOSV_CREATE_NONE), 0);
    ASSERT_EQ(nosv_submit(task, NOSV_SUBMIT_BLOCKING), 0);
    const Seen s = *static_cast<Seen*>(nosv_get_task_metadata(task));
    EXPECT_TRUE(CPU_EQUAL(&s.kernel, &joined.all()));
    ASSERT_EQ(nosv_destroy(task, NOSV_DESTROY_NONE), 0);
    ASSERT_EQ(nosv_type_destroy(type, NOSV_TYPE_DESTROY_NONE), 0);
    ASSERT_EQ(nosv_detach(NOSV_DETACH_NONE), 0);
}

namespace {
// What a new thread sees of its own affinity before it attaches, while
// attached, and after it detached.
struct NewThreadView {
    cpu_set_t kernel_before, sched_before, pthread_before;
    cpu_set_t sched_attached, pthread_attached, kernel_after;
    int attach_rc = -1;
    std::atomic<bool> done{false};
};

void* view_own_affinity(void* p) {
    auto* v = static_cast<NewThreadView*>(p);
    v->kernel_before = test::kernel_affinity();
    v->sched_before = visible_sched();
    v->pthread_before = visible_pthread(pthread_self());
    nosv_task_t t;
    v->attach_rc = nosv_attach(&t, nullptr, "created", NOSV_ATTACH_NONE);
    if (v->attach_rc == 0) {
        v->sched_attached = visible_sched();
        v->pthread_attached = visible_pthread(pthread_self());
        EXPECT_EQ(nosv_detach(NOSV_DETACH_NONE), 0);
        v->kernel_after = test::kernel_affinity();
    }
    v->done.store(true);
    return nullptr;
}

// Creates a thread with `attr` that fills `v`, and waits for it without
// holding a CPU (it needs one to attach).
void create_viewer(const pthread_attr_t* attr, NewThreadView& v) {
    pthread_t thread;
    ASSERT_EQ(pthread_create(&thread, attr, view_own_affinity, &v), 0);
    while (!v.done.load())
        nosv_waitfor(1'000'000, nullptr);
    ASSERT_EQ(pthread_join(thread, nullptr), 0);
}

void expect_view(const NewThreadView& v, const cpu_set_t& want, const char* creator) {
    EXPECT_TRUE(CPU_EQUAL(&v.kernel_before, &want)) << creator << ": kernel mask at start";
    EXPECT_TRUE(CPU_EQUAL(&v.sched_before, &want)) << creator << ": sched_getaffinity";
    EXPECT_TRUE(CPU_EQUAL(&v.pthread_before, &want)) << creator << ": pthread_getaffinity_np";
    ASSERT_EQ(v.attach_rc, 0) << creator;
    EXPECT_TRUE(CPU_EQUAL(&v.sched_attached, &want)) << creator << ": attached, sched_getaffinity";
    EXPECT_TRUE(CPU_EQUAL(&v.pthread_attached, &want))
        << creator << ": attached, pthread_getaffinity_np";
    EXPECT_TRUE(CPU_EQUAL(&v.kernel_after, &want)) << creator << ": detached, kernel mask";
}

struct CreateInTask {
    const pthread_attr_t* attr;
    NewThreadView view;
};
void create_viewer_in_task(nosv_task_t task) {
    auto* c = static_cast<CreateInTask*>(nosv_get_task_metadata(task));
    create_viewer(c->attr, c->view);
}
} // namespace

// Attributes of the program's that name no mask (pthread_attr_init's, as
// nOS-V's affinity-support test passes them) are as good as none: the new
// thread starts from the creator's visible mask, not from its pin, and keeps
// showing it once it attaches itself. The attributes are left as they were.
TEST(Affinity, AThreadCreatedWithAttributesWithoutAMaskStartsFromTheVisibleMask) {
    Joined joined;
    if (!joined.several_cpus()) GTEST_SKIP() << "needs two CPUs";
    nosv_task_t self;
    ASSERT_EQ(nosv_attach(&self, nullptr, "creator", NOSV_ATTACH_NONE), 0);
    expect_pinned_to_held_cpu();
    pthread_attr_t attr;
    ASSERT_EQ(pthread_attr_init(&attr), 0);
    NewThreadView by_attached;
    create_viewer(&attr, by_attached);
    expect_view(by_attached, joined.all(), "an attached creator");
    // A task on a worker: the worker's visible mask is the process's.
    nosv_task_type_t type;
    ASSERT_EQ(nosv_type_init(&type, create_viewer_in_task, nullptr, nullptr, "creator", nullptr,
                             nullptr, NOSV_TYPE_INIT_NONE),
              0);
    nosv_task_t task;
    ASSERT_EQ(nosv_create(&task, type, sizeof(CreateInTask), NOSV_CREATE_NONE), 0);
    auto* in_task = new (nosv_get_task_metadata(task)) CreateInTask{&attr, {}};
    ASSERT_EQ(nosv_submit(task, NOSV_SUBMIT_BLOCKING), 0);
    expect_view(in_task->view, joined.all(), "a task");
    in_task->~CreateInTask();
    ASSERT_EQ(nosv_destroy(task, NOSV_DESTROY_NONE), 0);
    ASSERT_EQ(nosv_type_destroy(type, NOSV_TYPE_DESTROY_NONE), 0);
    cpu_set_t in_attr;
    ASSERT_EQ(pthread_attr_getaffinity_np(&attr, sizeof in_attr, &in_attr), 0);
    EXPECT_EQ(CPU_COUNT(&in_attr), CPU_SETSIZE) << "the attributes still name no mask";
    ASSERT_EQ(pthread_attr_destroy(&attr), 0);
    ASSERT_EQ(nosv_detach(NOSV_DETACH_NONE), 0);
}

TEST(Affinity, ASetWhileAttachedIsRememberedNotAppliedAndDetachRestoresIt) {
    Joined joined;
    if (!joined.several_cpus()) GTEST_SKIP() << "needs two CPUs";
    nosv_task_t t;
    ASSERT_EQ(nosv_attach(&t, nullptr, "affinity", NOSV_ATTACH_NONE), 0);
    const int held = nosv_get_current_system_cpu();
    const int elsewhere = other_cpu(joined.all(), held);
    ASSERT_GE(elsewhere, 0);
    // Naming only another CPU would migrate a plain thread off the one it
    // holds: here nothing moves.
    const cpu_set_t narrowed = only(elsewhere);
    ASSERT_EQ(sched_setaffinity(0, sizeof narrowed, &narrowed), 0);
    EXPECT_EQ(nosv_get_current_system_cpu(), held);
    expect_pinned_to_held_cpu();
    EXPECT_EQ(sched_getcpu(), held);
    cpu_set_t seen = visible_sched();
    EXPECT_TRUE(CPU_EQUAL(&seen, &narrowed));
    seen = visible_pthread(pthread_self());
    EXPECT_TRUE(CPU_EQUAL(&seen, &narrowed));
    // Scheduling points do not apply it either.
    for (int round = 0; round < 10; ++round) {
        ASSERT_EQ(nosv_yield(NOSV_YIELD_NONE), 0);
        expect_pinned_to_held_cpu();
    }
    // The pthread variant remembers too; the last mask set wins.
    const cpu_set_t held_only = only(held);
    ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof held_only, &held_only), 0);
    ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof narrowed, &narrowed), 0);
    expect_pinned_to_held_cpu();
    ASSERT_EQ(nosv_detach(NOSV_DETACH_NONE), 0);
    cpu_set_t kernel = test::kernel_affinity();
    EXPECT_TRUE(CPU_EQUAL(&kernel, &narrowed)) << "detach restores the remembered mask";
    // Detached, the calls are the kernel's again.
    ASSERT_EQ(sched_setaffinity(0, sizeof joined.all(), &joined.all()), 0);
    kernel = test::kernel_affinity();
    EXPECT_TRUE(CPU_EQUAL(&kernel, &joined.all()));
}

TEST(Affinity, DetachWithoutRestoreKeepsThePinAndShowsIt) {
    Joined joined;
    nosv_task_t t;
    ASSERT_EQ(nosv_attach(&t, nullptr, "affinity", NOSV_ATTACH_NONE), 0);
    const cpu_set_t pin = only(nosv_get_current_system_cpu());
    ASSERT_EQ(nosv_detach(NOSV_DETACH_NO_RESTORE_AFFINITY), 0);
    const cpu_set_t kernel = test::kernel_affinity();
    const cpu_set_t seen = visible_sched();
    if (joined.several_cpus()) {
        EXPECT_TRUE(CPU_EQUAL(&kernel, &pin));
    }
    EXPECT_TRUE(CPU_EQUAL(&seen, &kernel)) << "no longer managed: the kernel's mask";
}

// With thread_affinity.compat_support=false (as nOS-V's attach test runs),
// an attached thread sees coexec's pin, and a detach without restore keeps
// the mask it saw while attached.
TEST(Affinity, WithoutCompatSupportAnAttachedThreadSeesItsPin) {
    Joined joined("thread_affinity.compat_support=false");
    if (!joined.several_cpus()) GTEST_SKIP() << "needs two CPUs";
    nosv_task_t t;
    ASSERT_EQ(nosv_attach(&t, nullptr, "affinity", NOSV_ATTACH_NONE), 0);
    const cpu_set_t pin = only(nosv_get_current_system_cpu());
    const cpu_set_t attached = visible_sched();
    cpu_set_t by_pthread;
    ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof by_pthread, &by_pthread), 0);
    EXPECT_TRUE(CPU_EQUAL(&attached, &pin));
    EXPECT_TRUE(CPU_EQUAL(&by_pthread, &pin));
    ASSERT_EQ(nosv_detach(NOSV_DETACH_NO_RESTORE_AFFINITY), 0);
    const cpu_set_t after = visible_sched();
    EXPECT_TRUE(CPU_EQUAL(&after, &attached));
}

// The flag holds for a thread that keeps its affinity too: the kernel mask
// stays what it was while attached (coexec's pin, when coexec pinned it), a
// set still pending is dropped, and the calls show what the kernel has.
TEST(Affinity, DetachWithoutRestoreKeepsTheKernelMaskOfAThreadThatKeepsItsAffinity) {
    Joined joined;
    if (!joined.several_cpus()) GTEST_SKIP() << "needs two CPUs";
    nosv_task_t t;
    ASSERT_EQ(nosv_attach(&t, nullptr, "keeper", COEXEC_ATTACH_KEEP_AFFINITY), 0);
    // Lent, it moves itself to another CPU; taking its CPU back, coexec
    // pins it there.
    const int held = nosv_get_current_system_cpu();
    const int elsewhere = other_cpu(joined.all(), held);
    ASSERT_GE(elsewhere, 0);
    ASSERT_EQ(coexec_lend_cpu(), 0);
    const cpu_set_t mine = only(elsewhere);
    ASSERT_EQ(sched_setaffinity(0, sizeof mine, &mine), 0);
    ASSERT_EQ(coexec_block_exit(), 0);
    const cpu_set_t pin = only(nosv_get_current_system_cpu());
    ASSERT_FALSE(CPU_EQUAL(&pin, &mine));
    cpu_set_t kernel = test::kernel_affinity();
    ASSERT_TRUE(CPU_EQUAL(&kernel, &pin)) << "pinned while attached";
    ASSERT_EQ(nosv_detach(NOSV_DETACH_NO_RESTORE_AFFINITY), 0);
    kernel = test::kernel_affinity();
    EXPECT_TRUE(CPU_EQUAL(&kernel, &pin)) << "the pin stays, not its own mask";
    cpu_set_t seen = visible_sched();
    EXPECT_TRUE(CPU_EQUAL(&seen, &kernel)) << "no longer managed: the kernel's mask";
    // Not pinned, with a set pending: the set is dropped with the rest.
    ASSERT_EQ(sched_setaffinity(0, sizeof joined.all(), &joined.all()), 0);
    ASSERT_EQ(nosv_attach(&t, nullptr, "keeper", COEXEC_ATTACH_KEEP_AFFINITY), 0);
    const cpu_set_t attached = test::kernel_affinity();
    const cpu_set_t pending = only(nosv_get_current_system_cpu());
    ASSERT_EQ(sched_setaffinity(0, sizeof pending, &pending), 0);
    ASSERT_EQ(nosv_detach(NOSV_DETACH_NO_RESTORE_AFFINITY), 0);
    kernel = test::kernel_affinity();
    EXPECT_TRUE(CPU_EQUAL(&kernel, &attached)) << "the mask it had while attached";
    seen = visible_sched();
    EXPECT_TRUE(CPU_EQUAL(&seen, &kernel));
}

TEST(Affinity, AnotherThreadQueriesAndSetsARememberedMaskByTidAndPthread) {
    Joined joined;
    if (!joined.several_cpus()) GTEST_SKIP() << "needs two CPUs";
    std::atomic<pid_t> tid{0};
    std::atomic<int> held{-1};
    std::atomic<int> step{0};
    cpu_set_t own_set{}, kernel_while_attached{}, seen_by_itself{};
    std::thread attached([&] {
        nosv_task_t t;
        ASSERT_EQ(nosv_attach(&t, nullptr, "remote", NOSV_ATTACH_NONE), 0);
        held.store(nosv_get_current_system_cpu());
        own_set = only(other_cpu(joined.all(), held.load()));
        EXPECT_EQ(sched_setaffinity(0, sizeof own_set, &own_set), 0);
        tid.store(pid_t(::gettid()));
        // Holds its CPU (without spinning on it) until the main thread is done.
        while (step.load() == 0)
            nosv_waitfor(1'000'000, nullptr);
        kernel_while_attached = test::kernel_affinity();
        seen_by_itself = visible_sched();
        EXPECT_EQ(nosv_get_current_system_cpu(), held.load());
        ASSERT_EQ(nosv_detach(NOSV_DETACH_NONE), 0);
        step.store(2);
        while (step.load() != 3)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    while (tid.load() == 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    // The main thread is no coexec thread; it asks about the attached one.
    cpu_set_t seen = visible_sched(tid.load());
    EXPECT_TRUE(CPU_EQUAL(&seen, &own_set)) << "sched_getaffinity(tid)";
    seen = visible_pthread(attached.native_handle());
    EXPECT_TRUE(CPU_EQUAL(&seen, &own_set)) << "pthread_getaffinity_np(thread)";
    // A set from here is remembered for it and does not move it.
    const cpu_set_t remote_set = joined.all();
    ASSERT_EQ(sched_setaffinity(tid.load(), sizeof remote_set, &remote_set), 0);
    seen = visible_pthread(attached.native_handle());
    EXPECT_TRUE(CPU_EQUAL(&seen, &remote_set));
    const cpu_set_t pin = only(held.load());
    cpu_set_t kernel = test::kernel_affinity(tid.load());
    EXPECT_TRUE(CPU_EQUAL(&kernel, &pin)) << "still pinned to the CPU it holds";
    const cpu_set_t via_pthread = only(other_cpu(joined.all(), held.load()));
    ASSERT_EQ(pthread_setaffinity_np(attached.native_handle(), sizeof via_pthread, &via_pthread),
              0);
    step.store(1);
    while (step.load() != 2)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_TRUE(CPU_EQUAL(&kernel_while_attached, &pin));
    EXPECT_TRUE(CPU_EQUAL(&seen_by_itself, &via_pthread));
    kernel = test::kernel_affinity(tid.load());
    EXPECT_TRUE(CPU_EQUAL(&kernel, &via_pthread)) << "its detach restored the remote set";
    // Detached: remote calls reach the kernel.
    seen = visible_sched(tid.load());
    EXPECT_TRUE(CPU_EQUAL(&seen, &kernel));
    step.store(3);
    attached.join();
}

namespace {
struct Parked {
    std::atomic<pid_t> tid{0};
    std::atomic<bool> release{false};
    std::atomic<bool> done{false};
};
} // namespace

TEST(Affinity, ATaskOnAWorkerIsSeenByTidFromOutside) {
    Joined joined;
    Parked parked;
    nosv_task_type_t type;
    ASSERT_EQ(nosv_type_init(
                  &type,
                  [](nosv_task_t task) {
                      auto* p = *static_cast<Parked**>(nosv_get_task_metadata(task));
                      p->tid.store(pid_t(::gettid()));
                      while (!p->release.load())
                          nosv_waitfor(1'000'000, nullptr);
                  },
                  nullptr,
                  [](nosv_task_t task) {
                      (*static_cast<Parked**>(nosv_get_task_metadata(task)))->done.store(true);
                  },
                  "parked", nullptr, nullptr, NOSV_TYPE_INIT_NONE),
              0);
    nosv_task_t task;
    ASSERT_EQ(nosv_create(&task, type, sizeof(Parked*), NOSV_CREATE_NONE), 0);
    *static_cast<Parked**>(nosv_get_task_metadata(task)) = &parked;
    ASSERT_EQ(nosv_submit(task, NOSV_SUBMIT_NONE), 0);
    while (parked.tid.load() == 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    // The main thread is no coexec thread; the worker is, and shows the
    // process's mask.
    cpu_set_t seen = visible_sched(parked.tid.load());
    EXPECT_TRUE(CPU_EQUAL(&seen, &joined.all()));
    const cpu_set_t kernel = test::kernel_affinity(parked.tid.load());
    if (joined.several_cpus()) {
        EXPECT_EQ(CPU_COUNT(&kernel), 1);
    }
    parked.release.store(true);
    while (!parked.done.load())
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    // Between tasks the worker is still coexec's.
    seen = visible_sched(parked.tid.load());
    EXPECT_TRUE(CPU_EQUAL(&seen, &joined.all()));
    ASSERT_EQ(nosv_destroy(task, NOSV_DESTROY_NONE), 0);
    ASSERT_EQ(nosv_type_destroy(type, NOSV_TYPE_DESTROY_NONE), 0);
}

TEST(Affinity, AnotherProcessTidGoesToTheKernel) {
    Joined joined;
    nosv_task_t t;
    ASSERT_EQ(nosv_attach(&t, nullptr, "affinity", NOSV_ATTACH_NONE), 0);
    // The parent process (the test runner) is no thread of ours.
    const pid_t parent = ::getppid();
    const cpu_set_t seen = visible_sched(parent);
    const cpu_set_t kernel = test::kernel_affinity(parent);
    EXPECT_TRUE(CPU_EQUAL(&seen, &kernel));
    ASSERT_EQ(nosv_detach(NOSV_DETACH_NONE), 0);
}

TEST(Affinity, ConcurrentAttachAndDetachWhileOthersQueryAndSet) {
    Joined joined;
    constexpr int kThreads = 4;
    constexpr int kRounds = 200;
    std::vector<std::thread> threads;
    std::atomic<pid_t> tids[kThreads] = {};
    std::atomic<int> running{kThreads};
    std::atomic<bool> stop{false};
    // What went wrong, by kind: attach failed, an attached thread saw
    // another mask, a detached one kept a pin, a query, a set.
    std::atomic<long> failed_attach{0}, bad_own{0}, bad_detached{0}, bad_query{0}, bad_set{0};
    std::atomic<long> queries{0};
    for (int i = 0; i < kThreads; ++i)
        threads.emplace_back([&, i] {
            tids[i].store(pid_t(::gettid()));
            for (int r = 0; r < kRounds; ++r) {
                nosv_task_t t;
                if (nosv_attach(&t, nullptr, "churn", NOSV_ATTACH_NONE) != 0) {
                    failed_attach.fetch_add(1);
                    break;
                }
                const cpu_set_t seen = visible_sched();
                if (!CPU_EQUAL(&seen, &joined.all())) bad_own.fetch_add(1);
                if (r % 3 == 0) nosv_yield(NOSV_YIELD_NONE);
                nosv_detach(NOSV_DETACH_NONE);
                // Detached: the kernel has the whole mask back.
                const cpu_set_t kernel = test::kernel_affinity();
                if (!CPU_EQUAL(&kernel, &joined.all())) bad_detached.fetch_add(1);
            }
            running.fetch_sub(1);
            // Alive (its tid valid) until the querier is done.
            while (!stop.load())
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
        });
    for (auto& tid : tids)
        while (tid.load() == 0)
            std::this_thread::yield();
    // Attached or not, every thread always shows the whole mask: a query
    // races the registration, never sees coexec's pin. Sets of the same
    // mask race detach's restore.
    // At least one pass, however soon the churners finish (a loaded machine
    // may run all their rounds before the querier starts).
    std::thread querier([&] {
        do {
            for (int i = 0; i < kThreads; ++i) {
                cpu_set_t seen;
                CPU_ZERO(&seen);
                const int rc = (i % 2) ? pthread_getaffinity_np(threads[size_t(i)].native_handle(),
                                                                sizeof seen, &seen)
                                       : sched_getaffinity(tids[i].load(), sizeof seen, &seen);
                if (rc != 0 || !CPU_EQUAL(&seen, &joined.all())) bad_query.fetch_add(1);
                if (sched_setaffinity(tids[i].load(), sizeof joined.all(), &joined.all()) != 0)
                    bad_set.fetch_add(1);
                queries.fetch_add(1);
            }
        } while (running.load() > 0);
    });
    querier.join();
    stop.store(true);
    for (auto& t : threads)
        t.join();
    EXPECT_EQ(failed_attach.load(), 0);
    EXPECT_EQ(bad_own.load(), 0);
    EXPECT_EQ(bad_detached.load(), 0);
    EXPECT_EQ(bad_query.load(), 0);
    EXPECT_EQ(bad_set.load(), 0);
    EXPECT_GT(queries.load(), 0);
}

// A remote set that lands while a thread attaches is kept: whichever side
// of the registration it falls on, the thread has that mask after detach.
// (The mask attach registered was once read before the registry's mutex
// was taken; a set between the two was undone at detach, as nOS-V's own
// affinity-support test showed.)
TEST(Affinity, ARemoteSetRacingAnAttachIsNotUndoneByTheDetach) {
    Joined joined;
    if (!joined.several_cpus()) GTEST_SKIP() << "needs two CPUs";
    constexpr int kRounds = 3000;
    const cpu_set_t masks[2] = {joined.all(), only(other_cpu(joined.all(), -1))};
    std::atomic<pid_t> tid{0};
    std::atomic<int> round{-1}, attached_round{-1};
    std::atomic<long> lost{0};
    std::atomic<bool> checked{false};
    std::thread churn([&] {
        tid.store(pid_t(::gettid()));
        for (int r = 0; r < kRounds; ++r) {
            while (round.load() != r)
                std::this_thread::yield();
            nosv_task_t t;
            if (nosv_attach(&t, nullptr, "churn", NOSV_ATTACH_NONE) == 0)
                nosv_detach(NOSV_DETACH_NONE);
            attached_round.store(r);
        }
        while (!checked.load()) // alive (its tid valid) for the last check
            std::this_thread::yield();
    });
    while (tid.load() == 0)
        std::this_thread::yield();
    ASSERT_EQ(sched_setaffinity(tid.load(), sizeof masks[1], &masks[1]), 0);
    for (int r = 0; r < kRounds; ++r) {
        const cpu_set_t& want = masks[r % 2];
        round.store(r); // the churn thread attaches while we set
        EXPECT_EQ(sched_setaffinity(tid.load(), sizeof want, &want), 0);
        while (attached_round.load() != r)
            std::this_thread::yield();
        const cpu_set_t kernel = test::kernel_affinity(tid.load());
        if (!CPU_EQUAL(&kernel, &want)) lost.fetch_add(1);
    }
    checked.store(true);
    churn.join();
    EXPECT_EQ(lost.load(), 0) << "of " << kRounds << " sets";
}

TEST(Affinity, OutsideCoexecAThreadsOwnSetReachesTheKernel) {
    Joined joined;
    if (!joined.several_cpus()) GTEST_SKIP() << "needs two CPUs";
    nosv_task_t t;
    ASSERT_EQ(nosv_attach(&t, nullptr, "affinity", NOSV_ATTACH_NONE), 0);
    const int held = nosv_get_current_system_cpu();
    const cpu_set_t narrowed = only(other_cpu(joined.all(), held));
    ASSERT_EQ(coexec_block_enter(), 0);
    // What an adapter does for serial code between parallel regions.
    ASSERT_EQ(sched_setaffinity(0, sizeof narrowed, &narrowed), 0);
    cpu_set_t kernel = test::kernel_affinity();
    EXPECT_TRUE(CPU_EQUAL(&kernel, &narrowed));
    cpu_set_t seen = visible_sched();
    EXPECT_TRUE(CPU_EQUAL(&seen, &narrowed));
    ASSERT_EQ(coexec_block_exit(), 0);
    expect_pinned_to_held_cpu();
    seen = visible_sched();
    EXPECT_TRUE(CPU_EQUAL(&seen, &narrowed));
    // Lent, a thread bound by coexec stays bound: its set is remembered.
    ASSERT_EQ(coexec_lend_cpu(), 0);
    ASSERT_EQ(sched_setaffinity(0, sizeof joined.all(), &joined.all()), 0);
    kernel = test::kernel_affinity();
    EXPECT_EQ(CPU_COUNT(&kernel), 1);
    ASSERT_EQ(coexec_block_exit(), 0);
    ASSERT_EQ(nosv_detach(NOSV_DETACH_NONE), 0);
    kernel = test::kernel_affinity();
    EXPECT_TRUE(CPU_EQUAL(&kernel, &joined.all()));
}

// A thread stays bound to its CPU through coexec_block_enter/_exit unless it
// sets a mask of its own meanwhile, so it asks for that CPU first when it
// comes back. Two threads each hold a CPU; the one on the lower CPU leaves,
// so both are free when the other comes back: only its binding can make it
// pick its own over the lower one.
TEST(Affinity, BackFromABlockingCallAThreadGetsItsOwnFreeCpu) {
    Joined joined;
    if (!joined.several_cpus()) GTEST_SKIP() << "needs two CPUs";
    std::atomic<int> cpus[2] = {-1, -1};
    std::atomic<bool> lower_left{false};
    std::atomic<int> before{-1}, after{-1};
    auto player = [&](int me) {
        nosv_task_t t;
        ASSERT_EQ(nosv_attach(&t, nullptr, "player", NOSV_ATTACH_NONE), 0);
        cpus[me].store(nosv_get_current_logical_cpu());
        while (cpus[1 - me].load() < 0)
            std::this_thread::yield();
        if (cpus[me].load() < cpus[1 - me].load()) {
            ASSERT_EQ(nosv_detach(NOSV_DETACH_NONE), 0);
            lower_left.store(true);
            return;
        }
        while (!lower_left.load())
            std::this_thread::yield();
        before.store(nosv_get_current_logical_cpu());
        ASSERT_EQ(coexec_block_enter(), 0);
        ASSERT_EQ(coexec_block_exit(), 0);
        after.store(nosv_get_current_logical_cpu());
        expect_pinned_to_held_cpu();
        ASSERT_EQ(nosv_detach(NOSV_DETACH_NONE), 0);
    };
    std::thread a(player, 0), b(player, 1);
    a.join();
    b.join();
    ASSERT_NE(cpus[0].load(), cpus[1].load());
    EXPECT_GE(before.load(), 0);
    EXPECT_EQ(after.load(), before.load());
}

TEST(Affinity, AThreadThatKeepsItsAffinityGetsASetWhenItLeavesItsCpu) {
    Joined joined;
    if (!joined.several_cpus()) GTEST_SKIP() << "needs two CPUs";
    nosv_task_t t;
    ASSERT_EQ(nosv_attach(&t, nullptr, "keeper", COEXEC_ATTACH_KEEP_AFFINITY), 0);
    const int held = nosv_get_current_system_cpu();
    const cpu_set_t narrowed = only(held);
    // Holding its CPU: remembered, the kernel mask is left alone.
    const cpu_set_t before = test::kernel_affinity();
    ASSERT_EQ(sched_setaffinity(0, sizeof narrowed, &narrowed), 0);
    cpu_set_t kernel = test::kernel_affinity();
    EXPECT_TRUE(CPU_EQUAL(&kernel, &before));
    cpu_set_t seen = visible_sched();
    EXPECT_TRUE(CPU_EQUAL(&seen, &narrowed));
    // Outside coexec it runs with its own affinity: the one it set.
    ASSERT_EQ(coexec_lend_cpu(), 0);
    kernel = test::kernel_affinity();
    EXPECT_TRUE(CPU_EQUAL(&kernel, &narrowed));
    // There its own sets apply at once.
    ASSERT_EQ(sched_setaffinity(0, sizeof joined.all(), &joined.all()), 0);
    kernel = test::kernel_affinity();
    EXPECT_TRUE(CPU_EQUAL(&kernel, &joined.all()));
    ASSERT_EQ(coexec_block_exit(), 0);
    seen = visible_sched();
    EXPECT_TRUE(CPU_EQUAL(&seen, &joined.all()));
    ASSERT_EQ(nosv_detach(NOSV_DETACH_NONE), 0);
    kernel = test::kernel_affinity();
    EXPECT_TRUE(CPU_EQUAL(&kernel, &joined.all()));
}

TEST(Affinity, MaskSizesAndBadArgumentsGetTheKernelsAnswers) {
    Joined joined;
    // The answers of a plain thread first (the kernel's, through libc).
    const size_t sizes[] = {0, 1, 4, 7, 8, 12, 16, 64, 128, 130, 256, 1024};
    struct Answer {
        int rc, err;
    };
    auto get = [](size_t size) {
        std::vector<unsigned char> buf(size + 8, 0xAB);
        errno = 0;
        const int rc = sched_getaffinity(0, size, reinterpret_cast<cpu_set_t*>(buf.data()));
        const int err = rc ? errno : 0;
        // Bytes past what the kernel fills are zeroed; nothing past size.
        for (size_t i = sizeof(long); rc == 0 && i < size; ++i) {
            EXPECT_EQ(buf[i], 0) << "byte " << i << " of " << size;
        }
        for (size_t i = size; i < size + 8; ++i)
            EXPECT_EQ(buf[i], 0xAB) << "written past " << size;
        return Answer{rc, err};
    };
    auto pget = [](size_t size) {
        std::vector<unsigned char> buf(size + 8, 0);
        return pthread_getaffinity_np(pthread_self(), size,
                                      reinterpret_cast<cpu_set_t*>(buf.data()));
    };
    std::vector<Answer> plain;
    std::vector<int> plain_p;
    for (size_t s : sizes) {
        plain.push_back(get(s));
        plain_p.push_back(pget(s));
    }
    errno = 0;
    EXPECT_EQ(sched_getaffinity(0, sizeof(cpu_set_t), nullptr), -1);
    const int plain_null = errno;
    cpu_set_t empty;
    CPU_ZERO(&empty);
    errno = 0;
    EXPECT_EQ(sched_setaffinity(0, sizeof empty, &empty), -1);
    const int plain_empty = errno;

    nosv_task_t t;
    ASSERT_EQ(nosv_attach(&t, nullptr, "sizes", NOSV_ATTACH_NONE), 0);
    for (size_t i = 0; i < std::size(sizes); ++i) {
        const Answer a = get(sizes[i]);
        EXPECT_EQ(a.rc, plain[i].rc) << "size " << sizes[i];
        EXPECT_EQ(a.err, plain[i].err) << "size " << sizes[i];
        EXPECT_EQ(pget(sizes[i]), plain_p[i]) << "size " << sizes[i];
    }
    // The visible mask comes out whole for a small buffer the kernel takes.
    unsigned long word = 0;
    ASSERT_EQ(sched_getaffinity(0, sizeof word, reinterpret_cast<cpu_set_t*>(&word)), 0);
    unsigned long all_word = 0;
    std::memcpy(&all_word, &joined.all(), sizeof all_word);
    EXPECT_EQ(word, all_word);
    errno = 0;
    EXPECT_EQ(sched_getaffinity(0, sizeof(cpu_set_t), nullptr), -1);
    EXPECT_EQ(errno, plain_null);
    errno = 0;
    EXPECT_EQ(sched_setaffinity(0, sizeof empty, &empty), -1);
    EXPECT_EQ(errno, plain_empty);
    EXPECT_EQ(pthread_setaffinity_np(pthread_self(), sizeof empty, &empty), plain_empty);
    EXPECT_EQ(pthread_setaffinity_np(pthread_self(), 0, &joined.all()), plain_empty)
        << "no byte read: an empty mask";
    errno = 0;
    EXPECT_EQ(sched_setaffinity(0, sizeof(cpu_set_t), nullptr), -1);
    EXPECT_EQ(errno, EFAULT);
    // A CPU that is not online is no CPU.
    const cpu_set_t offline = only(CPU_SETSIZE - 1);
    errno = 0;
    EXPECT_EQ(sched_setaffinity(0, sizeof offline, &offline), -1);
    EXPECT_EQ(errno, EINVAL);
    // One byte naming CPU 0 is a whole mask (the rest reads as zero).
    const unsigned char first = 1;
    ASSERT_EQ(sched_setaffinity(0, 1, reinterpret_cast<const cpu_set_t*>(&first)), 0);
    const cpu_set_t seen = visible_sched();
    const cpu_set_t cpu0 = only(0);
    EXPECT_TRUE(CPU_EQUAL(&seen, &cpu0));
    // A mask larger than a cpu_set_t: only the kernel's bytes count.
    std::vector<unsigned char> big(2 * sizeof(cpu_set_t), 0xFF);
    ASSERT_EQ(sched_setaffinity(0, big.size(), reinterpret_cast<const cpu_set_t*>(big.data())), 0);
    const cpu_set_t widened = visible_sched();
    cpu_set_t common;
    CPU_AND(&common, &widened, &joined.all());
    EXPECT_TRUE(CPU_EQUAL(&common, &joined.all())) << "every online CPU";
    ASSERT_EQ(nosv_detach(NOSV_DETACH_NONE), 0);
}

TEST(Affinity, AForkedChildOfAnAttachedThreadRunsOnTheMaskItShowed) {
    Joined joined;
    nosv_task_t t;
    ASSERT_EQ(nosv_attach(&t, nullptr, "forker", NOSV_ATTACH_NONE), 0);
    expect_pinned_to_held_cpu();
    test::Shared<cpu_set_t> child_kernel, child_seen;
    const pid_t pid = test::fork_child([&] {
        *child_kernel = test::kernel_affinity();
        sched_getaffinity(0, sizeof(cpu_set_t), &*child_seen);
        return 0;
    });
    EXPECT_EQ(test::wait_child(pid), 0);
    EXPECT_TRUE(CPU_EQUAL(&*child_kernel, &joined.all())) << "not the parent's pin";
    EXPECT_TRUE(CPU_EQUAL(&*child_seen, &joined.all()));
    ASSERT_EQ(nosv_detach(NOSV_DETACH_NONE), 0);
}

TEST(Affinity, AfterShutdownCallsReachTheKernel) {
    cpu_set_t all;
    {
        Joined joined;
        all = joined.all();
        nosv_task_t t;
        ASSERT_EQ(nosv_attach(&t, nullptr, "x", NOSV_ATTACH_NONE), 0);
        ASSERT_EQ(nosv_detach(NOSV_DETACH_NONE), 0);
    }
    const cpu_set_t one = only(other_cpu(all, -1));
    ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    cpu_set_t kernel = test::kernel_affinity();
    EXPECT_TRUE(CPU_EQUAL(&kernel, &one));
    ASSERT_EQ(sched_setaffinity(0, sizeof all, &all), 0);
    kernel = test::kernel_affinity();
    EXPECT_TRUE(CPU_EQUAL(&kernel, &all));
}

// The kernel policy of a managed thread (CpuBinding::adopt): SCHED_BATCH
// from attach to detach, so that a thread woken with a CPU does not preempt
// the thread that gave it; SCHED_OTHER again after detach.
namespace {
void record_policy(nosv_task_t task) {
    *static_cast<int*>(nosv_get_task_metadata(task)) = sched_getscheduler(0);
}

// The kernel policy a task of this process runs under on a pool worker.
int policy_on_a_worker() {
    nosv_task_type_t type;
    EXPECT_EQ(nosv_type_init(&type, record_policy, nullptr, nullptr, "policy", nullptr, nullptr,
                             NOSV_TYPE_INIT_NONE),
              0);
    nosv_task_t task;
    EXPECT_EQ(nosv_create(&task, type, sizeof(int), NOSV_CREATE_NONE), 0);
    EXPECT_EQ(nosv_submit(task, NOSV_SUBMIT_BLOCKING), 0);
    const int policy = *static_cast<int*>(nosv_get_task_metadata(task));
    EXPECT_EQ(nosv_destroy(task, NOSV_DESTROY_NONE), 0);
    EXPECT_EQ(nosv_type_destroy(type, NOSV_TYPE_DESTROY_NONE), 0);
    return policy;
}
} // namespace

TEST(KernelPolicy, AManagedThreadRunsUnderSchedBatchUntilDetach) {
    Joined joined;
    ASSERT_EQ(sched_getscheduler(0), SCHED_OTHER);
    nosv_task_t self;
    ASSERT_EQ(nosv_attach(&self, nullptr, "policy", NOSV_ATTACH_NONE), 0);
    EXPECT_EQ(sched_getscheduler(0), SCHED_BATCH) << "attached";
    EXPECT_EQ(policy_on_a_worker(), SCHED_BATCH) << "on a worker";
    ASSERT_EQ(nosv_detach(NOSV_DETACH_NONE), 0);
    EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER) << "detach gives SCHED_OTHER back";
}

TEST(KernelPolicy, SchedBatchCanBeTurnedOff) {
    Joined joined("threads.sched_batch=false");
    nosv_task_t self;
    ASSERT_EQ(nosv_attach(&self, nullptr, "policy", NOSV_ATTACH_NONE), 0);
    EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER) << "attached";
    EXPECT_EQ(policy_on_a_worker(), SCHED_OTHER) << "on a worker";
    ASSERT_EQ(nosv_detach(NOSV_DETACH_NONE), 0);
}

TEST(KernelPolicy, APolicyTheProgramChoseIsLeftAlone) {
    Joined joined;
    const sched_param none{};
    ASSERT_EQ(sched_setscheduler(0, SCHED_IDLE, &none), 0) << std::strerror(errno);
    nosv_task_t self;
    ASSERT_EQ(nosv_attach(&self, nullptr, "policy", NOSV_ATTACH_NONE), 0);
    EXPECT_EQ(sched_getscheduler(0), SCHED_IDLE) << "attached";
    ASSERT_EQ(nosv_detach(NOSV_DETACH_NONE), 0);
    EXPECT_EQ(sched_getscheduler(0), SCHED_IDLE) << "detached";
    // A policy set while attached stays too.
    ASSERT_EQ(sched_setscheduler(0, SCHED_OTHER, &none), 0);
    ASSERT_EQ(nosv_attach(&self, nullptr, "policy", NOSV_ATTACH_NONE), 0);
    ASSERT_EQ(sched_setscheduler(0, SCHED_IDLE, &none), 0);
    ASSERT_EQ(nosv_detach(NOSV_DETACH_NONE), 0);
    EXPECT_EQ(sched_getscheduler(0), SCHED_IDLE) << "set while attached";
    // SCHED_IDLE -> SCHED_OTHER needs no privilege since Linux 2.6.39.
    EXPECT_EQ(sched_setscheduler(0, SCHED_OTHER, &none), 0) << std::strerror(errno);
}
