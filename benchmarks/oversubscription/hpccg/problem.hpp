// The HPCCG linear system: Mantevo's 27-point stencil on an nx*ny*nz grid, in CSR form.
#pragma once

#include "../common/aligned.hpp"

namespace hpccg {

using bench::AlignedVec;

// A square sparse matrix in compressed-sparse-row form.
struct CsrMatrix {
    int nrows = 0;
    AlignedVec<int> rowptr; // nrows + 1 offsets into cols/vals
    AlignedVec<int> cols;
    AlignedVec<double> vals;
};

// A x = b with A the stencil matrix (diagonal 27, every neighbour -1) and b chosen so that
// the exact solution is all ones.
struct Problem {
    CsrMatrix a;
    AlignedVec<double> b;
    AlignedVec<double> xexact;
};

// Builds the system for a grid of nx*ny*nz points (row = ix + nx*(iy + ny*iz)).
Problem generate_problem(int nx, int ny, int nz);

} // namespace hpccg
