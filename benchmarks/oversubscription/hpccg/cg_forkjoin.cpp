#include "../common/start_gate.hpp"
#include "../common/timer.hpp"
#include "cg.hpp"

#include <cmath>

namespace hpccg {

CgResult solve_forkjoin(const Problem& p, AlignedVec<double>& x, ForkJoinKernels k, int max_iter) {
    using bench::ScopedTimer;
    const int n = p.a.nrows;
    AlignedVec<double> r(n), pv(n), ap(n);
    CgResult res;
    bench::await_start_gate();
    const double t0 = bench::now();
    double rtrans = 0.0;
    {
        ScopedTimer t(res.waxpby);
        k.vec.waxpby(1.0, x.data(), 0.0, x.data(), pv.data(), 0, n);
    }
    {
        ScopedTimer t(res.spmv);
        k.spmv.spmv(p.a, pv.data(), ap.data(), 0, n);
    }
    {
        ScopedTimer t(res.waxpby);
        k.vec.waxpby(1.0, p.b.data(), -1.0, ap.data(), r.data(), 0, n);
    }
    {
        ScopedTimer t(res.ddot);
        rtrans = k.vec.dot(r.data(), r.data(), 0, n);
    }
    double normr = std::sqrt(rtrans);
    res.residuals.push_back(normr);
    for (int iter = 1; iter < max_iter && normr > 0.0; ++iter) {
        if (iter == 1) {
            ScopedTimer t(res.waxpby);
            k.vec.waxpby(1.0, r.data(), 0.0, r.data(), pv.data(), 0, n);
        } else {
            const double old = rtrans;
            {
                ScopedTimer t(res.ddot);
                rtrans = k.vec.dot(r.data(), r.data(), 0, n);
            }
            ScopedTimer t(res.waxpby);
            k.vec.waxpby(1.0, r.data(), rtrans / old, pv.data(), pv.data(), 0, n);
        }
        normr = std::sqrt(rtrans);
        res.residuals.push_back(normr);
        if (rtrans == 0.0) break; // converged exactly: another update would divide 0 by 0
        {
            ScopedTimer t(res.spmv);
            k.spmv.spmv(p.a, pv.data(), ap.data(), 0, n);
        }
        double pap = 0.0;
        {
            ScopedTimer t(res.ddot);
            pap = k.vec.dot(pv.data(), ap.data(), 0, n);
        }
        const double alpha = rtrans / pap;
        ScopedTimer t(res.waxpby);
        k.vec.waxpby(1.0, x.data(), alpha, pv.data(), x.data(), 0, n);
        k.vec.waxpby(1.0, r.data(), -alpha, ap.data(), r.data(), 0, n);
        res.iterations = iter; // Mantevo's niters: the last iteration that updated x
    }
    res.total = bench::now() - t0;
    return res;
}

} // namespace hpccg
