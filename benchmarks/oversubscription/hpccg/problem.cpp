#include "problem.hpp"

namespace hpccg {

namespace {

// Appends the row of grid point (ix, iy, iz) and returns how many entries it has.
int add_row(CsrMatrix& a, int nx, int ny, int nz, int ix, int iy, int iz) {
    const int row = ix + nx * (iy + ny * iz);
    int count = 0;
    for (int dz = -1; dz <= 1; ++dz)
        for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx) {
                const int x = ix + dx, y = iy + dy, z = iz + dz;
                if (x < 0 || x >= nx || y < 0 || y >= ny || z < 0 || z >= nz) continue;
                const int col = x + nx * (y + ny * z);
                a.cols.push_back(col);
                a.vals.push_back(col == row ? 27.0 : -1.0);
                ++count;
            }
    return count;
}

} // namespace

Problem generate_problem(int nx, int ny, int nz) {
    Problem p;
    const int n = nx * ny * nz;
    p.a.nrows = n;
    p.a.rowptr.reserve(n + 1);
    p.a.cols.reserve(static_cast<std::size_t>(n) * 27);
    p.a.vals.reserve(static_cast<std::size_t>(n) * 27);
    p.b.resize(n);
    p.xexact.assign(n, 1.0);
    p.a.rowptr.push_back(0);
    for (int iz = 0; iz < nz; ++iz)
        for (int iy = 0; iy < ny; ++iy)
            for (int ix = 0; ix < nx; ++ix) {
                const int count = add_row(p.a, nx, ny, nz, ix, iy, iz);
                // Row sum with x = 1: 27 on the diagonal minus one per neighbour.
                p.b[p.a.rowptr.size() - 1] = 27.0 - (count - 1);
                p.a.rowptr.push_back(static_cast<int>(p.a.cols.size()));
            }
    return p;
}

} // namespace hpccg
