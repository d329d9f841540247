// A member of the instance that replaces its image (execve) while it holds
// a CPU, as a shell script, `env` or `pyenv exec` does under `coexec run`:
//
//     exec-probe LEVELS [PROGRAM ARGS...]
//
// It joins (nosv_init), attaches its main thread, which then holds a CPU,
// and, while LEVELS > 0, replaces itself with `exec-probe LEVELS-1 ...`
// without leaving: each image is a new member, of the same process, that
// waits for a CPU while the images before it held theirs. At LEVELS 0 it
// replaces itself with PROGRAM when one is given (a program that never
// joins: the CPU it held stays held but for coexec), else it detaches,
// leaves and exits.
//
// Exit status: 0 when the last image left, 2 for bad arguments, 11 when
// nosv_init failed, 12 when the attach failed, 13 when execv failed.
#include <nosv.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s LEVELS [PROGRAM ARGS...]\n", argv[0]);
        return 2;
    }
    char* end = nullptr;
    const long levels = std::strtol(argv[1], &end, 10);
    if (*end != '\0' || levels < 0) {
        std::fprintf(stderr, "exec-probe: LEVELS must be a count, not '%s'\n", argv[1]);
        return 2;
    }
    if (nosv_init() != NOSV_SUCCESS) return 11;
    nosv_task_t self = nullptr;
    if (nosv_attach(&self, nullptr, "main", NOSV_ATTACH_NONE) != NOSV_SUCCESS) return 12;
    if (levels > 0 || argc > 2) {
        // Still attached, still a member: the image goes, what it held stays.
        std::vector<char*> next;
        const std::string fewer = std::to_string(levels - 1);
        if (levels > 0) {
            next.push_back(argv[0]);
            next.push_back(const_cast<char*>(fewer.c_str()));
            for (int i = 2; i < argc; ++i)
                next.push_back(argv[i]);
        } else {
            for (int i = 2; i < argc; ++i)
                next.push_back(argv[i]);
        }
        next.push_back(nullptr);
        ::execv(levels > 0 ? "/proc/self/exe" : next[0], next.data());
        std::perror("exec-probe: execv");
        return 13;
    }
    nosv_detach(NOSV_DETACH_NONE);
    return nosv_shutdown() == NOSV_SUCCESS ? 0 : 11;
}
