#include "inspect.hpp"

#include "capture.hpp"
#include "spawn.hpp"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace coexec::torture {
namespace {

// A gdb Python script that prints the member's runtime: every thread
// context it knows (workers and attached threads), its ready queue, and the
// tasks named in `tasks` (addresses the member printed). Needs the debug
// information of libcoexec; without it gdb says so and the stacks remain.
std::string runtime_script(const std::vector<std::string>& tasks) {
    std::string py = R"(python
import gdb
def show(expr):
    try:
        gdb.write("%s = %s\n" % (expr, gdb.parse_and_eval(expr)))
    except gdb.error as e:
        gdb.write("%s: %s\n" % (expr, e))
try:
    sym = gdb.lookup_global_symbol("coexec::core::Runtime::instance_") or \
        gdb.lookup_static_symbol("coexec::core::Runtime::instance_")
    rt = sym.value()["_M_b"]["_M_p"]
    gdb.write("runtime %s\n" % rt)
    r = rt.dereference()
    slots = r["workers_"]["by_slot_"]["_M_impl"]
    n = int(slots["_M_finish"] - slots["_M_start"])
    for i in range(n):
        ctx = slots["_M_start"][i]
        if int(ctx) == 0:
            continue
        c = ctx.dereference()
        p, h, b, w = c["pending"], c["held"], c["binding"], c["work"]
        batch = [str(p["batch"][k]) for k in range(int(p["batch_next"]), int(p["batch_end"]))]
        gdb.write("context slot %d: worker %s attached %s cpu %s lent %s kept %s current %s "
                  "assigned %s immediate %s batch %s\n" % (i, c["worker"], c["attach"]["attached"],
                  h["cpu"], b["lent_cpu"], b["kept_cpu"], w["current"], h["assigned"],
                  w["immediate"], batch))
    q = r["ready_"]["queue_"]
    qt = q.type.template_argument(0)
    gdb.write("queue = %s\n" % q.address.cast(qt.pointer().pointer()).dereference().dereference())
except gdb.error as e:
    gdb.write("runtime: %s\n" % e)
end
)";
    for (const auto& t : tasks)
        py += "python show(\"*(nosv_task*)" + t + "\")\n";
    return py;
}

} // namespace

std::string inspect_process(pid_t pid, const std::vector<std::string>& tasks) {
    if (::access("/usr/bin/gdb", X_OK) != 0) return "  (gdb is not installed: no stacks)\n";
    OutputCapture script;
    const std::string text = runtime_script(tasks);
    if (::write(script.fd(), text.data(), text.size()) != ssize_t(text.size())) return {};
    // A process may not be traced by a child of its own under Yama's
    // default policy unless it says so.
    if (pid == ::getpid()) ::prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    OutputCapture out;
    const std::string script_path =
        "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(script.fd());
    pid_t gdb =
        test_support::spawn({"/usr/bin/timeout", "60", "/usr/bin/gdb", "-p", std::to_string(pid),
                             "-batch", "-nx", "-ex", "thread apply all bt", "-x", script_path},
                            {}, -1, out.fd(), out.fd());
    int status = 0;
    ::waitpid(gdb, &status, 0);
    return out.tail(32000);
}

std::vector<std::string> task_addresses(const std::string& text) {
    std::vector<std::string> out;
    for (size_t at = text.find("task "); at != std::string::npos; at = text.find("task ", at + 1)) {
        const size_t open = text.find("(0x", at);
        const size_t close = text.find(')', open);
        if (open == std::string::npos || close == std::string::npos || open > at + 16) continue;
        out.push_back(text.substr(open + 1, close - open - 1));
    }
    return out;
}

} // namespace coexec::torture
