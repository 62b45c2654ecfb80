#include "metric.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace gsreg {

const char* metric_name(Metric m) {
  return m == Metric::SSD ? "ssd" : (m == Metric::LNCC ? "lncc" : "mi");
}

Metric parse_metric(const std::string& s) {
  if (s == "ssd") return Metric::SSD;
  if (s == "lncc" || s == "cc") return Metric::LNCC;
  if (s == "mi") return Metric::MI;
  throw std::invalid_argument("unknown metric '" + s + "' (ssd, lncc or mi)");
}

double ssd_loss(const float* w, const float* f, size_t n, float* grad, const float* weight) {
  double s = 0;
#pragma omp parallel for schedule(static) reduction(+ : s) if (int64_t(n) > kParallelMin)
  for (int64_t i = 0; i < int64_t(n); ++i) {
    const float m = weight != nullptr ? weight[i] : 1.f;
    const float r = w[i] - f[i];
    s += double(m) * r * r;
    grad[i] = 2 * m * r;
  }
  return s;
}

namespace {

// out = zero-padded box sum of `in` over a cube of radius r; tmp is scratch of the same size.
// Running sums along each axis (three additions per voxel and pass, whatever the window),
// accumulated in double and restarted for every line, so that the cancellations of the variance
// terms do not see drift.
template <typename T>
void box_sum(const T* in, T* out, T* tmp, Dims d, int r) {
  const int64_t row = d.x, plane = d.x * d.y;
  // x, into tmp.
#pragma omp parallel for schedule(static) if (d.count() > kParallelMin)
  for (int64_t l = 0; l < d.y * d.z; ++l) {
    const T* src = in + l * row;
    T* dst = tmp + l * row;
    double acc = 0;
    for (int64_t q = 0; q <= std::min<int64_t>(r, d.x - 1); ++q) acc += double(src[q]);
    for (int64_t x = 0; x < d.x; ++x) {
      dst[x] = T(acc);
      if (x + r + 1 < d.x) acc += double(src[x + r + 1]);
      if (x - r >= 0) acc -= double(src[x - r]);
    }
  }
  // y, into out: whole rows, a row of accumulators per plane.
#pragma omp parallel if (d.count() > kParallelMin)
  {
    std::vector<double> acc(static_cast<size_t>(row));
#pragma omp for schedule(static)
    for (int64_t z = 0; z < d.z; ++z) {
      const T* src = tmp + z * plane;
      T* dst = out + z * plane;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t q = 0; q <= std::min<int64_t>(r, d.y - 1); ++q)
        for (int64_t x = 0; x < row; ++x) acc[size_t(x)] += double(src[q * row + x]);
      for (int64_t y = 0; y < d.y; ++y) {
        for (int64_t x = 0; x < row; ++x) dst[y * row + x] = T(acc[size_t(x)]);
        if (y + r + 1 < d.y)
          for (int64_t x = 0; x < row; ++x) acc[size_t(x)] += double(src[(y + r + 1) * row + x]);
        if (y - r >= 0)
          for (int64_t x = 0; x < row; ++x) acc[size_t(x)] -= double(src[(y - r) * row + x]);
      }
    }
  }
  // z, into tmp: rows of one y at a time, a row of accumulators per y; then copied back.
#pragma omp parallel if (d.count() > kParallelMin)
  {
    std::vector<double> acc(static_cast<size_t>(row));
#pragma omp for schedule(static)
    for (int64_t y = 0; y < d.y; ++y) {
      const T* src = out + y * row;
      T* dst = tmp + y * row;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t q = 0; q <= std::min<int64_t>(r, d.z - 1); ++q)
        for (int64_t x = 0; x < row; ++x) acc[size_t(x)] += double(src[q * plane + x]);
      for (int64_t z = 0; z < d.z; ++z) {
        for (int64_t x = 0; x < row; ++x) dst[z * plane + x] = T(acc[size_t(x)]);
        if (z + r + 1 < d.z)
          for (int64_t x = 0; x < row; ++x) acc[size_t(x)] += double(src[(z + r + 1) * plane + x]);
        if (z - r >= 0)
          for (int64_t x = 0; x < row; ++x) acc[size_t(x)] -= double(src[(z - r) * plane + x]);
      }
    }
  }
  std::copy(tmp, tmp + plane * d.z, out);
}

}  // namespace

template <typename T>
double lncc_loss(const T* w, const T* f, Dims d, int window, T* grad, const T* weight) {
  if (window < 1 || window % 2 == 0) throw std::invalid_argument("the LNCC window must be odd");
  const int r = window / 2;
  const size_t n = size_t(d.count());
  const T inv_n = T(1) / T(window * window * window);
  const T eps = T(1e-5);
  std::vector<T> sf(n), sw(n), sff(n), sww(n), sfw(n), tmp(n), prod(n);
  auto box_of = [&](auto fill, std::vector<T>& out) {
#pragma omp parallel for schedule(static) if (int64_t(n) > kParallelMin)
    for (int64_t i = 0; i < int64_t(n); ++i) prod[size_t(i)] = fill(size_t(i));
    box_sum(prod.data(), out.data(), tmp.data(), d, r);
  };
  box_of([&](size_t i) { return f[i]; }, sf);
  box_of([&](size_t i) { return w[i]; }, sw);
  box_of([&](size_t i) { return f[i] * f[i]; }, sff);
  box_of([&](size_t i) { return w[i] * w[i]; }, sww);
  box_of([&](size_t i) { return f[i] * w[i]; }, sfw);
  double loss = 0;
  // Per window: sf <- mean F, sw <- mean W, sff <- alpha, sww <- beta.
#pragma omp parallel for schedule(static) reduction(+ : loss) if (int64_t(n) > kParallelMin)
  for (int64_t ii = 0; ii < int64_t(n); ++ii) {
    const size_t i = size_t(ii);
    const T mf = sf[i] * inv_n, mw = sw[i] * inv_n;
    const T a = sfw[i] * inv_n - mf * mw;
    const T b = std::max(T(0), sff[i] * inv_n - mf * mf);
    const T c = std::max(T(0), sww[i] * inv_n - mw * mw);
    const T den = b * c + eps;
    const T m = weight != nullptr ? weight[i] : T(1);
    loss -= double(m * a * a / den);
    sf[i] = mf;
    sw[i] = mw;
    sff[i] = -2 * m * a / den;
    sww[i] = m * a * a * b / (den * den);
  }
  if (grad == nullptr) return loss;
  // Box(alpha) -> sfw, Box(alpha <F>) -> prod-derived, and so on.
  std::vector<T> box_alpha(n), box_alpha_mf(n), box_beta(n), box_beta_mw(n);
  box_of([&](size_t i) { return sff[i]; }, box_alpha);
  box_of([&](size_t i) { return sff[i] * sf[i]; }, box_alpha_mf);
  box_of([&](size_t i) { return sww[i]; }, box_beta);
  box_of([&](size_t i) { return sww[i] * sw[i]; }, box_beta_mw);
#pragma omp parallel for schedule(static) if (int64_t(n) > kParallelMin)
  for (int64_t ii = 0; ii < int64_t(n); ++ii) {
    const size_t i = size_t(ii);
    grad[i] =
        (f[i] * box_alpha[i] - box_alpha_mf[i] + 2 * w[i] * box_beta[i] - 2 * box_beta_mw[i]) *
        inv_n;
  }
  return loss;
}

namespace {

// Voxels per histogram chunk (NOTE [ Mutual information ]): fixed, so that the sums do not depend
// on the thread count.
constexpr int64_t kMiChunk = int64_t(1) << 14;

// Where a voxel falls in the joint histogram: fixed row i, first column k - 1 (stored as k, the
// table having one padding column in front), the fraction u = t - k and s = dt/dW.
struct MiTap {
  int64_t i, k;
  double u, s;
};

template <typename T>
MiTap mi_tap(T w, T f, int bins) {
  const double b = double(bins);
  const double fc = std::clamp(double(f), 0.0, 1.0), wc = std::clamp(double(w), 0.0, 1.0);
  const double t = wc * (b - 1);
  const int64_t k = std::min<int64_t>(int64_t(t), bins - 2);
  return {std::min<int64_t>(int64_t(fc * b), bins - 1), k, t - double(k),
          double(w) >= 0 && double(w) <= 1 ? b - 1 : 0.0};
}

// Cubic B-spline weights of the columns k - 1 .. k + 2 at t = k + u, and their t-derivatives.
inline void bspline3(double u, double w[4]) {
  const double v = 1 - u, u2 = u * u, u3 = u2 * u;
  w[0] = v * v * v / 6;
  w[1] = (3 * u3 - 6 * u2 + 4) / 6;
  w[2] = (-3 * u3 + 3 * u2 + 3 * u + 1) / 6;
  w[3] = u3 / 6;
}
inline void bspline3_derivative(double u, double d[4]) {
  const double v = 1 - u;
  d[0] = -v * v / 2;
  d[1] = (3 * u * u - 4 * u) / 2;
  d[2] = (-3 * u * u + 2 * u + 1) / 2;
  d[3] = u * u / 2;
}

}  // namespace

template <typename T>
double mi_loss(const T* w, const T* f, size_t n, int bins, T* grad, const T* weight, double* mi) {
  if (bins < 4) throw std::invalid_argument("mutual information needs at least 4 bins");
  const int64_t cols = bins + 2, cells = int64_t(bins) * cols;
  const int64_t chunks = (int64_t(n) + kMiChunk - 1) / kMiChunk;
  std::vector<double> part(size_t(std::max<int64_t>(chunks, 1) * cells), 0.0);
#pragma omp parallel for schedule(static) if (int64_t(n) > kParallelMin)
  for (int64_t c = 0; c < chunks; ++c) {
    double* h = part.data() + c * cells;
    const int64_t end = std::min<int64_t>(int64_t(n), (c + 1) * kMiChunk);
    for (int64_t x = c * kMiChunk; x < end; ++x) {
      const double m = weight != nullptr ? double(weight[x]) : 1.0;
      if (m == 0) continue;
      const MiTap p = mi_tap(w[x], f[x], bins);
      double b[4];
      bspline3(p.u, b);
      double* row = h + p.i * cols + p.k;
      for (int q = 0; q < 4; ++q) row[q] += m * b[q];
    }
  }
  // The chunks' histograms, summed in order.
  std::vector<double> hist(size_t(cells), 0.0);
  for (int64_t c = 0; c < chunks; ++c)
    for (int64_t e = 0; e < cells; ++e) hist[size_t(e)] += part[size_t(c * cells + e)];
  double total = 0;
  for (double v : hist) total += v;
  if (!(total > 0)) {
    if (grad != nullptr) std::fill(grad, grad + n, T(0));
    if (mi != nullptr) *mi = 0;
    return 0;
  }
  // p log p summed over the cells and both marginals, then the table log(p / pW) for the gradient.
  std::vector<double> pf(size_t(bins), 0.0), pw(size_t(cols), 0.0);
  double joint = 0;
  for (int64_t i = 0; i < bins; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const double p = hist[size_t(i * cols + j)] / total;
      hist[size_t(i * cols + j)] = p;
      pf[size_t(i)] += p;
      pw[size_t(j)] += p;
      if (p > 0) joint += p * std::log(p);
    }
  double marginals = 0;
  for (double p : pf)
    if (p > 0) marginals += p * std::log(p);
  for (double p : pw)
    if (p > 0) marginals += p * std::log(p);
  const double value = joint - marginals;
  if (mi != nullptr) *mi = value;
  if (grad == nullptr) return -total * value;
  for (int64_t i = 0; i < bins; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      double& p = hist[size_t(i * cols + j)];
      p = p > 0 ? std::log(p / pw[size_t(j)]) : 0.0;
    }
#pragma omp parallel for schedule(static) if (int64_t(n) > kParallelMin)
  for (int64_t x = 0; x < int64_t(n); ++x) {
    const double m = weight != nullptr ? double(weight[x]) : 1.0;
    const MiTap p = mi_tap(w[x], f[x], bins);
    if (m == 0 || p.s == 0) {
      grad[x] = T(0);
      continue;
    }
    double d[4];
    bspline3_derivative(p.u, d);
    const double* row = hist.data() + p.i * cols + p.k;
    grad[x] = T(-m * p.s * (d[0] * row[0] + d[1] * row[1] + d[2] * row[2] + d[3] * row[3]));
  }
  return -total * value;
}

template double mi_loss<float>(const float*, const float*, size_t, int, float*, const float*,
                               double*);
template double mi_loss<double>(const double*, const double*, size_t, int, double*, const double*,
                                double*);

template double lncc_loss<float>(const float*, const float*, Dims, int, float*, const float*);
template double lncc_loss<double>(const double*, const double*, Dims, int, double*, const double*);

}  // namespace gsreg
