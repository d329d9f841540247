#include "../common/start_gate.hpp"
#include "../common/timer.hpp"
#include "cg.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

namespace hpccg {

namespace {

// Row blocks and, for each, the range of blocks its SpMV rows read from.
struct Blocking {
    int n, size, count;
    std::vector<int> first_read, last_read;

    Blocking(const CsrMatrix& a, int wanted) : n(a.nrows) {
        size = (n + wanted - 1) / wanted;
        count = (n + size - 1) / size;
        for (int b = 0; b < count; ++b) {
            int lo = a.cols[a.rowptr[begin(b)]], hi = lo;
            for (int k = a.rowptr[begin(b)]; k < a.rowptr[end(b)]; ++k) {
                lo = std::min(lo, a.cols[k]);
                hi = std::max(hi, a.cols[k]);
            }
            first_read.push_back(lo / size);
            last_read.push_back(hi / size + 1); // exclusive, for the depend iterator
        }
    }
    int begin(int b) const { return b * size; }
    int end(int b) const { return std::min(n, (b + 1) * size); }
};

// Everything the tasks share. Task dependencies order every access, so plain fields are
// safe: OpenMP guarantees a dependent task sees its predecessors' writes.
struct State {
    const Problem& p;
    Kernels& k;
    Blocking blk;
    double* x;
    AlignedVec<double> r, pv, ap, part_rr, part_pap;
    double rtrans = 0, alpha = 0, beta = 0;
    // First iteration whose tasks do nothing because the residual reached exactly zero.
    // Written only by the scalar task of that iteration. Tasks of iteration j read it after
    // the scalar task of j (their depend chain), so every write that could make j skip
    // happens-before the read; a concurrent write by a later scalar task stores a value
    // > j, which does not change j's decision. Relaxed order is therefore enough.
    std::atomic<int> stop_at{std::numeric_limits<int>::max()};
    bool skip(int iter) const { return iter >= stop_at.load(std::memory_order_relaxed); }
    int iterations = 0;
    std::vector<double> residuals;

    State(const Problem& prob, Kernels& kern, int blocks, double* xv)
        : p(prob), k(kern), blk(prob.a, blocks), x(xv), r(prob.a.nrows), pv(prob.a.nrows),
          ap(prob.a.nrows), part_rr(blk.count), part_pap(blk.count) {}

    double sum(const AlignedVec<double>& parts) const {
        double s = 0.0;
        for (double v : parts)
            s += v; // fixed order: results repeat run to run
        return s;
    }
};

// r = b - A x and the first residual, in plain parallel loops (set-up, not timed as CG).
void initial_residual(State& s) {
    const int n = s.blk.n;
    s.k.waxpby(1.0, s.x, 0.0, s.x, s.pv.data(), 0, n);
    s.k.spmv(s.p.a, s.pv.data(), s.ap.data(), 0, n);
    s.k.waxpby(1.0, s.p.b.data(), -1.0, s.ap.data(), s.r.data(), 0, n);
    s.rtrans = s.k.dot(s.r.data(), s.r.data(), 0, n);
    s.residuals.push_back(std::sqrt(s.rtrans));
    if (s.rtrans == 0.0) s.stop_at.store(1, std::memory_order_relaxed);
}

// rtrans = r.r from the block partials, beta = rtrans / previous rtrans (0 at iteration 1,
// which makes p = r exactly), and the residual history.
void scalar_beta(State& s, int iter) {
    if (s.skip(iter)) return;
    if (iter == 1) {
        s.beta = 0.0;
    } else {
        const double old = s.rtrans;
        s.rtrans = s.sum(s.part_rr);
        s.beta = s.rtrans / old;
    }
    s.residuals.push_back(std::sqrt(s.rtrans));
    if (s.rtrans == 0.0)
        s.stop_at.store(iter, std::memory_order_relaxed);
    else
        s.iterations = iter;
}

// Creates the tasks of one CG iteration (iter >= 1). Every variable a task uses is a
// pointer or a value, so the tasks' implicit firstprivate copies stay valid after this
// function returns; the pointed-to data lives in State until the final taskwait.
void spawn_iteration(State& state, int iter) {
    State* s = &state;
    const int nb = s->blk.count;
    const int size = s->blk.size;
    double* r = s->r.data();
    double* pv = s->pv.data();
    double* ap = s->ap.data();
    double* x = s->x;
    double* prr = s->part_rr.data();
    double* ppap = s->part_pap.data();
    double* rtrans = &s->rtrans;
    double* alpha = &s->alpha;
    double* beta = &s->beta;

    // clang-format off
#pragma omp task depend(iterator(j = 0 : nb), in : prr[j]) depend(inout : rtrans[0])           \
    depend(out : beta[0])
    // clang-format on
    scalar_beta(*s, iter);
    for (int b = 0; b < nb; ++b) {
        const int lo = s->blk.begin(b), hi = s->blk.end(b);
#pragma omp task depend(in : beta[0], r[lo]) depend(inout : pv[lo])
        if (!s->skip(iter)) s->k.waxpby(1.0, r, *beta, pv, pv, lo, hi);
    }
    for (int b = 0; b < nb; ++b) {
        const int lo = s->blk.begin(b), hi = s->blk.end(b);
        const int rlo = s->blk.first_read[b], rhi = s->blk.last_read[b];
#pragma omp task depend(iterator(j = rlo : rhi), in : pv[j * size]) depend(out : ap[lo])
        if (!s->skip(iter)) s->k.spmv(s->p.a, pv, ap, lo, hi);
#pragma omp task depend(in : pv[lo], ap[lo]) depend(out : ppap[b])
        if (!s->skip(iter)) ppap[b] = s->k.dot(pv, ap, lo, hi);
    }
    // clang-format off
#pragma omp task depend(iterator(j = 0 : nb), in : ppap[j]) depend(in : rtrans[0])             \
    depend(out : alpha[0])
    // clang-format on
    if (!s->skip(iter)) *alpha = *rtrans / s->sum(s->part_pap);
    for (int b = 0; b < nb; ++b) {
        const int lo = s->blk.begin(b), hi = s->blk.end(b);
#pragma omp task depend(in : alpha[0], pv[lo]) depend(inout : x[lo])
        if (!s->skip(iter)) s->k.waxpby(1.0, x, *alpha, pv, x, lo, hi);
#pragma omp task depend(in : alpha[0], ap[lo]) depend(inout : r[lo]) depend(out : prr[b])
        if (!s->skip(iter)) {
            s->k.waxpby(1.0, r, -*alpha, ap, r, lo, hi);
            prr[b] = s->k.dot(r, r, lo, hi);
        }
    }
}

} // namespace

CgResult solve_tasks(const Problem& p, AlignedVec<double>& x, Kernels& per_task, int blocks,
                     int max_iter) {
    State s(p, per_task, blocks, x.data());
    CgResult res;
    bench::await_start_gate();
    const double t0 = bench::now();
    initial_residual(s);
#pragma omp parallel
#pragma omp single
    {
        for (int iter = 1; iter < max_iter; ++iter)
            spawn_iteration(s, iter);
#pragma omp taskwait
    }
    res.total = bench::now() - t0;
    res.iterations = s.iterations;
    res.residuals = std::move(s.residuals);
    return res;
}

} // namespace hpccg
