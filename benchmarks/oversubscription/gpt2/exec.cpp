#include "exec.hpp"

#include <stdexcept>

namespace gpt2 {

namespace {

class SerialExec final : public Exec {
  public:
    void run(int n, Piece piece, DepsOf, int) override {
        for (int i = 0; i < n; ++i)
            piece(i);
    }
    void step(const std::function<void()>& body) override { body(); }
};

class ForkJoinExec final : public Exec {
  public:
    void run(int n, Piece piece, DepsOf, int chains) override {
        if (chains == 0) {
#pragma omp parallel for schedule(dynamic)
            for (int i = 0; i < n; ++i)
                piece(i);
            return;
        }
        const int per = n / chains;
#pragma omp parallel for schedule(dynamic)
        for (int c = 0; c < chains; ++c)
            for (int i = c * per; i < (c + 1) * per; ++i)
                piece(i);
    }
    void step(const std::function<void()>& body) override {
        body();
    }
};

class TaskExec final : public Exec {
  public:
    void run(int n, Piece piece, DepsOf deps, int) override {
        // Shared by the tasks of this call and freed with the last of them.
        auto fn = std::make_shared<const Piece>(std::move(piece));
        for (int i = 0; i < n; ++i)
            spawn(fn, i, fill(deps(i)));
    }
    void funnel(int n, const DepsOf& deps) override {
        for (int i = 0; i < n; ++i)
            spawn(nothing_, i, fill(deps(i)));
    }
    void step(const std::function<void()>& body) override {
#pragma omp parallel
#pragma omp single
        {
            body();
#pragma omp taskwait
        }
    }

  private:
    // Unused slots point at a private token with an empty range: no dependency.
    Deps fill(Deps d) const {
        for (Dep& x : d.in)
            if (!x.base) x = Dep{&none_, 0, 0};
        for (Dep& x : d.out)
            if (!x.base) x = Dep{&none_, 0, 0};
        return d;
    }

    static void spawn(std::shared_ptr<const Piece> fn, int i, const Deps& d) {
        bool any = false;
        for (const Dep& x : d.in)
            any |= x.hi > x.lo;
        for (const Dep& x : d.out)
            any |= x.hi > x.lo;
        if (!any) {
            // libomp's GOMP entry points misread a depend list that expands to nothing, so
            // a task without dependencies gets no depend clause at all.
#pragma omp task firstprivate(fn, i)
            (*fn)(i);
            return;
        }
        const char *a = d.in[0].base, *b = d.in[1].base, *c = d.in[2].base, *e = d.in[3].base;
        const char *o = d.out[0].base, *p = d.out[1].base;
        const int alo = d.in[0].lo, ahi = d.in[0].hi, blo = d.in[1].lo, bhi = d.in[1].hi;
        const int clo = d.in[2].lo, chi = d.in[2].hi, elo = d.in[3].lo, ehi = d.in[3].hi;
        const int olo = d.out[0].lo, ohi = d.out[0].hi, plo = d.out[1].lo, phi = d.out[1].hi;
        (void)a, (void)b, (void)c, (void)e, (void)o, (void)p; // GCC 12 misses their use below
        // clang-format off
#pragma omp task firstprivate(fn, i)                                                            \
    depend(iterator(j = alo : ahi), in : a[j]) depend(iterator(j = blo : bhi), in : b[j])       \
    depend(iterator(j = clo : chi), in : c[j]) depend(iterator(j = elo : ehi), in : e[j])       \
    depend(iterator(j = olo : ohi), inout : o[j]) depend(iterator(j = plo : phi), inout : p[j])
        (*fn)(i);
        // clang-format on
    }

    char none_ = 0;
    const std::shared_ptr<const Piece> nothing_ = std::make_shared<const Piece>([](int) {});
};

} // namespace

std::unique_ptr<Exec> make_exec(const std::string& name) {
    if (name == "serial") return std::make_unique<SerialExec>();
    if (name == "forkjoin") return std::make_unique<ForkJoinExec>();
    if (name == "tasks") return std::make_unique<TaskExec>();
    throw std::invalid_argument("unknown execution mode '" + name + "'");
}

} // namespace gpt2
