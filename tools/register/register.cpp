#include "register.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

namespace gsreg {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

constexpr int64_t kMinLevelSize = 8;

// Separable Gaussian (sigma 1 voxel, radius 3) along the axes where `axes[a]` is set, edge
// values repeated.
std::vector<float> smooth(const std::vector<float>& in, Dims d, const bool axes[3]) {
  constexpr int kRadius = 3;
  float k[2 * kRadius + 1];
  float sum = 0;
  for (int i = -kRadius; i <= kRadius; ++i) {
    k[i + kRadius] = std::exp(-0.5f * float(i * i));
    sum += k[i + kRadius];
  }
  for (float& w : k) w /= sum;
  std::vector<float> a = in, b(in.size());
  const int64_t stride[3] = {1, d.x, d.x * d.y};
  for (int axis = 0; axis < 3; ++axis) {
    if (!axes[axis]) continue;
    const int64_t n = d[axis];
    size_t i = 0;
    for (int64_t z = 0; z < d.z; ++z)
      for (int64_t y = 0; y < d.y; ++y)
        for (int64_t x = 0; x < d.x; ++x, ++i) {
          const int64_t pos = axis == 0 ? x : (axis == 1 ? y : z);
          float acc = 0;
          for (int t = -kRadius; t <= kRadius; ++t) {
            const int64_t q = std::clamp<int64_t>(pos + t, 0, n - 1);
            acc += k[t + kRadius] * a[size_t(int64_t(i) + (q - pos) * stride[axis])];
          }
          b[i] = acc;
        }
    a.swap(b);
  }
  return a;
}

// Grid (normalised) of x + u(x).
void displaced_grid(const Field& u, std::vector<float>* grid) {
  const Dims d = u.dims;
  grid->resize(u.data.size());
  size_t i = 0;
  for (int64_t z = 0; z < d.z; ++z)
    for (int64_t y = 0; y < d.y; ++y)
      for (int64_t x = 0; x < d.x; ++x, i += 3) {
        (*grid)[i] = voxel_to_normalized(double(x) + u.data[i], d.x);
        (*grid)[i + 1] = voxel_to_normalized(double(y) + u.data[i + 1], d.y);
        (*grid)[i + 2] = voxel_to_normalized(double(z) + u.data[i + 2], d.z);
      }
}

// Adds lambda * d/du of the diffusion energy to grad and returns the energy (without lambda).
double add_diffusion(const Field& u, double lambda, std::vector<float>* grad) {
  const Dims d = u.dims;
  const int64_t stride[3] = {3, 3 * d.x, 3 * d.x * d.y};
  const float two_lambda = float(2 * lambda);
  double energy = 0;
  size_t i = 0;
  for (int64_t z = 0; z < d.z; ++z)
    for (int64_t y = 0; y < d.y; ++y)
      for (int64_t x = 0; x < d.x; ++x, i += 3) {
        const int64_t pos[3] = {x, y, z};
        for (int axis = 0; axis < 3; ++axis) {
          if (pos[axis] + 1 >= d[axis]) continue;
          const size_t j = i + size_t(stride[axis]);
          for (int c = 0; c < 3; ++c) {
            const float diff = u.data[j + size_t(c)] - u.data[i + size_t(c)];
            energy += double(diff) * diff;
            (*grad)[i + size_t(c)] -= two_lambda * diff;
            (*grad)[j + size_t(c)] += two_lambda * diff;
          }
        }
      }
  return energy;
}

struct Adam {
  double lr, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  int64_t t = 0;
  std::vector<float> m, v;

  Adam(double learning_rate, size_t n) : lr(learning_rate), m(n, 0.f), v(n, 0.f) {}
  void step(const std::vector<float>& g, std::vector<float>* x) {
    ++t;
    const float b1 = float(beta1), b2 = float(beta2);
    const float c1 = float(1 / (1 - std::pow(beta1, double(t))));
    const float c2 = float(1 / (1 - std::pow(beta2, double(t))));
    const float step = float(lr), e = float(eps);
    for (size_t i = 0; i < g.size(); ++i) {
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      (*x)[i] -= step * (m[i] * c1) / (std::sqrt(v[i] * c2) + e);
    }
  }
};

Field upsample(Runtime& rt, const Field& coarse, Dims fine) {
  Field f(fine);
  f.data = sample(rt, coarse.data, coarse.dims, 3, identity_grid(fine), fine, Padding::Border);
  // Displacements are in voxels of their own grid.
  const float scale[3] = {float(double(fine.x) / double(coarse.dims.x)),
                          float(double(fine.y) / double(coarse.dims.y)),
                          float(double(fine.z) / double(coarse.dims.z))};
  for (size_t i = 0; i < f.data.size(); i += 3)
    for (int a = 0; a < 3; ++a) f.data[i + size_t(a)] *= scale[a];
  return f;
}

}  // namespace

IntensityMap IntensityMap::of(const std::vector<float>& v, const char* which) {
  if (v.empty()) throw std::runtime_error(std::string("the ") + which + " image is empty");
  std::vector<float> s = v;
  const size_t k = size_t(double(s.size() - 1) * 0.995);
  std::nth_element(s.begin(), s.begin() + std::ptrdiff_t(k), s.end());
  float hi = s[k];
  const auto [mn, mx] = std::minmax_element(v.begin(), v.end());
  const float lo = *mn;
  if (!(hi > lo)) hi = *mx;
  if (!(hi > lo)) throw std::runtime_error(std::string("the ") + which + " image is constant");
  return {lo, 1 / (hi - lo)};
}

std::vector<float> IntensityMap::operator()(const std::vector<float>& v) const {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = (v[i] - lo) * scale;
  return out;
}

std::vector<Dims> pyramid_dims(Dims dims, int levels) {
  std::vector<Dims> out = {dims};
  for (int l = 1; l < levels; ++l) {
    Dims d = out.back();
    for (int64_t* s : {&d.x, &d.y, &d.z})
      if (*s >= 2 * kMinLevelSize) *s = (*s + 1) / 2;
    out.push_back(d);
  }
  return out;
}

RegisterResult register_volumes(Runtime& rt, const Volume& fixed, const Volume& moving,
                                const RegisterOptions& options,
                                const std::function<void(const Progress&)>& progress) {
  if (fixed.dims != moving.dims)
    throw std::invalid_argument("fixed and moving must share one grid (resample first)");
  if (options.levels < 1 || size_t(options.levels) != options.iters.size())
    throw std::invalid_argument("one iteration count per level is needed");
  const int levels = options.levels;
  const std::vector<Dims> dims = pyramid_dims(fixed.dims, levels);

  // Pyramids, finest first.
  std::vector<std::vector<float>> pf = {IntensityMap::of(fixed.data, "fixed")(fixed.data)};
  std::vector<std::vector<float>> pm = {IntensityMap::of(moving.data, "moving")(moving.data)};
  for (int l = 1; l < levels; ++l) {
    const Dims from = dims[size_t(l - 1)], to = dims[size_t(l)];
    const bool halved[3] = {to.x != from.x, to.y != from.y, to.z != from.z};
    const std::vector<float> grid = identity_grid(to);
    for (auto* p : {&pf, &pm})
      p->push_back(sample(rt, smooth(p->back(), from, halved), from, 1, grid, to, Padding::Border));
  }

  RegisterResult result;
  Field u;
  std::vector<float> grid, warped, residual, grad;
  for (int level = 0; level < levels; ++level) {
    const auto t_level = Clock::now();
    const size_t l = size_t(levels - 1 - level);
    const Dims d = dims[l];
    const std::vector<float>& f = pf[l];
    u = level == 0 ? Field(d) : upsample(rt, u, d);
    WarpOp op(rt, d, d, Padding::Border);
    op.set_moving(pm[l]);
    Adam adam(options.learning_rate, u.data.size());
    const int iters = options.iters[size_t(level)];
    const float du_dg[3] = {2.f / float(d.x), 2.f / float(d.y), 2.f / float(d.z)};
    const double n = double(d.count());
    double loss = 0;
    residual.resize(f.size());
    for (int it = 1; it <= iters; ++it) {
      const auto t_iter = Clock::now();
      displaced_grid(u, &grid);
      op.forward(grid, &warped);
      double sse = 0;
      for (size_t i = 0; i < f.size(); ++i) {
        const float r = warped[i] - f[i];
        sse += double(r) * r;
        residual[i] = 2 * r;  // dE/dW
      }
      op.backward(residual, &grad);
      for (size_t i = 0; i < grad.size(); i += 3)
        for (int a = 0; a < 3; ++a) grad[i + size_t(a)] *= du_dg[a];
      const double reg = add_diffusion(u, options.lambda, &grad);
      adam.step(grad, &u.data);
      loss = (sse + options.lambda * reg) / n;
      if (progress) {
        Progress p;
        p.level = level;
        p.levels = levels;
        p.dims = d;
        p.iter = it;
        p.iters = iters;
        p.loss = loss;
        p.mse = sse / n;
        p.reg = reg / n;
        p.seconds = since(t_iter);
        progress(p);
      }
    }
    result.levels.push_back({d, iters, since(t_level), loss});
  }
  result.field = std::move(u);
  result.warped = warp(rt, moving, result.field);
  return result;
}

Volume warp(Runtime& rt, const Volume& moving, const Field& u) {
  if (u.dims != moving.dims) throw std::invalid_argument("warp: field and image grids differ");
  std::vector<float> grid;
  displaced_grid(u, &grid);
  Volume out(u.dims, moving.affine);
  out.data = sample(rt, moving.data, moving.dims, 1, grid, u.dims, Padding::Border);
  return out;
}

Volume resample_onto(Runtime& rt, const Volume& moving, const Volume& target) {
  const Mat4 to_moving = multiply(inverse(moving.affine), target.affine);
  const Dims d = target.dims, md = moving.dims;
  std::vector<float> grid(size_t(3 * d.count()));
  int64_t inside = 0;
  size_t i = 0;
  for (int64_t z = 0; z < d.z; ++z)
    for (int64_t y = 0; y < d.y; ++y)
      for (int64_t x = 0; x < d.x; ++x, i += 3) {
        const auto p = apply(to_moving, double(x), double(y), double(z));
        inside += p[0] > -0.5 && p[0] < double(md.x) - 0.5 && p[1] > -0.5 &&
                  p[1] < double(md.y) - 0.5 && p[2] > -0.5 && p[2] < double(md.z) - 0.5;
        for (int a = 0; a < 3; ++a) grid[i + size_t(a)] = voxel_to_normalized(p[size_t(a)], md[a]);
      }
  if (inside == 0)
    throw std::runtime_error("the moving image does not overlap the fixed image in world space");
  Volume out(d, target.affine);
  out.data = sample(rt, moving.data, md, 1, grid, d, Padding::Zeros);
  return out;
}

double mse(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += double(a[i] - b[i]) * double(a[i] - b[i]);
  return a.empty() ? 0 : s / double(a.size());
}

double ncc(const std::vector<float>& a, const std::vector<float>& b) {
  const double n = double(a.size());
  double ma = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i) ma += a[i], mb += b[i];
  ma /= n, mb /= n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = a[i] - ma, y = b[i] - mb;
    sab += x * y, saa += x * x, sbb += y * y;
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0;
}

ErrorStats field_error(const Field& u, const Field& truth, const std::vector<uint8_t>& mask) {
  std::vector<double> e;
  e.reserve(size_t(u.dims.count()));
  for (size_t i = 0; i < size_t(u.dims.count()); ++i) {
    if (!mask.empty() && mask[i] == 0) continue;
    double s = 0;
    for (size_t a = 0; a < 3; ++a) {
      const double diff = double(u.data[3 * i + a]) - double(truth.data[3 * i + a]);
      s += diff * diff;
    }
    e.push_back(std::sqrt(s));
  }
  ErrorStats st;
  st.count = int64_t(e.size());
  if (e.empty()) return st;
  double sum = 0;
  for (double v : e) sum += v;
  st.mean = sum / double(e.size());
  const size_t k = size_t(std::ceil(0.95 * double(e.size()))) - 1;
  std::nth_element(e.begin(), e.begin() + std::ptrdiff_t(k), e.end());
  st.p95 = e[k];
  return st;
}

}  // namespace gsreg
