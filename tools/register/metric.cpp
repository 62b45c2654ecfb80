#include "metric.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace gsreg {

const char* metric_name(Metric m) { return m == Metric::SSD ? "ssd" : "lncc"; }

Metric parse_metric(const std::string& s) {
  if (s == "ssd") return Metric::SSD;
  if (s == "lncc" || s == "cc") return Metric::LNCC;
  throw std::invalid_argument("unknown metric '" + s + "' (ssd or lncc)");
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

template double lncc_loss<float>(const float*, const float*, Dims, int, float*, const float*);
template double lncc_loss<double>(const double*, const double*, Dims, int, double*, const double*);

}  // namespace gsreg
