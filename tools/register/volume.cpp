#include "volume.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gsreg {

Mat4 identity4() {
  Mat4 m{};
  for (int i = 0; i < 4; ++i) m[size_t(i)][size_t(i)] = 1;
  return m;
}

Mat4 multiply(const Mat4& a, const Mat4& b) {
  Mat4 c{};
  for (size_t i = 0; i < 4; ++i)
    for (size_t j = 0; j < 4; ++j)
      for (size_t k = 0; k < 4; ++k) c[i][j] += a[i][k] * b[k][j];
  return c;
}

Mat4 inverse(const Mat4& m) {
  // Gauss-Jordan with partial pivoting on [m | I].
  double a[4][8];
  for (size_t i = 0; i < 4; ++i)
    for (size_t j = 0; j < 8; ++j) a[i][j] = j < 4 ? m[i][j] : (j - 4 == i ? 1 : 0);
  double scale = 0;
  for (size_t i = 0; i < 4; ++i)
    for (size_t j = 0; j < 4; ++j) scale = std::max(scale, std::fabs(m[i][j]));
  for (size_t c = 0; c < 4; ++c) {
    size_t p = c;
    for (size_t r = c + 1; r < 4; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[p][c])) p = r;
    if (!(std::fabs(a[p][c]) > 1e-12 * scale)) throw std::runtime_error("singular affine matrix");
    for (size_t j = 0; j < 8; ++j) std::swap(a[c][j], a[p][j]);
    const double inv = 1 / a[c][c];
    for (size_t j = 0; j < 8; ++j) a[c][j] *= inv;
    for (size_t r = 0; r < 4; ++r) {
      if (r == c) continue;
      const double f = a[r][c];
      for (size_t j = 0; j < 8; ++j) a[r][j] -= f * a[c][j];
    }
  }
  Mat4 out{};
  for (size_t i = 0; i < 4; ++i)
    for (size_t j = 0; j < 4; ++j) out[i][j] = a[i][j + 4];
  return out;
}

std::array<double, 3> apply(const Mat4& m, double x, double y, double z) {
  std::array<double, 3> out{};
  for (size_t i = 0; i < 3; ++i) out[i] = m[i][0] * x + m[i][1] * y + m[i][2] * z + m[i][3];
  return out;
}

std::array<double, 3> spacing(const Mat4& m) {
  std::array<double, 3> s{};
  for (size_t j = 0; j < 3; ++j)
    s[j] = std::sqrt(m[0][j] * m[0][j] + m[1][j] * m[1][j] + m[2][j] * m[2][j]);
  return s;
}

}  // namespace gsreg
