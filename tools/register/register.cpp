#include "register.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>

#include "gridsample/gridsample.h"
#include "transform.h"

namespace gsreg {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

constexpr int64_t kMinLevelSize = 8;
constexpr int64_t kSerialLevel = kParallelMin;  // NOTE [ Threads per level ]

// Sets this thread's operator thread count for a scope, then restores the previous one.
class ThreadScope {
 public:
  explicit ThreadScope(int32_t n) : saved_(gridsampleGetNumThreads()) {
    if (n > 0) gridsampleSetNumThreads(n);
  }
  ~ThreadScope() { gridsampleSetNumThreads(saved_); }
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int32_t saved_;
};

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

// The map from normalised coordinates of a grid of size d to its voxel coordinates.
Mat4 normalized_to_voxel(Dims d) {
  Mat4 m = identity4();
  for (size_t a = 0; a < 3; ++a) {
    const double s = double(d[int(a)]);
    m[a][a] = s / 2;
    m[a][3] = (s - 1) / 2;
  }
  return m;
}

// NOTE [ Linear stages in the deformable warp ]
// With a rigid or affine stage the deformable stage samples the moving image at A (x + u(x)),
// the transform that is written, in one interpolation (resampling the moving image through A
// first and warping that would blur it twice). Normalised coordinates make A one map G for
// every level (alignCorners false), so the warp's grid is G applied to the displaced grid, and
// the grid gradient goes back through G's linear part transposed.
// Points (x, y, z interleaved) through g (translation included), or vectors through the
// transpose of its linear part.
void map_points(const Mat4& g, bool transpose, std::vector<float>* v) {
  float m[3][3];
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 3; ++j) m[i][j] = float(transpose ? g[j][i] : g[i][j]);
  const float t[3] = {transpose ? 0.f : float(g[0][3]), transpose ? 0.f : float(g[1][3]),
                      transpose ? 0.f : float(g[2][3])};
  float* p = v->data();
  const int64_t n = int64_t(v->size() / 3);
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    float* q = p + 3 * i;
    const float x = q[0], y = q[1], z = q[2];
    for (size_t a = 0; a < 3; ++a) q[a] = m[a][0] * x + m[a][1] * y + m[a][2] * z + t[a];
  }
}

// Multiplies the components of an interleaved field by per-axis factors.
void scale_components(std::vector<float>* field, const float s[3]) {
  float* p = field->data();
  const int64_t n = int64_t(field->size() / 3);
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i)
    for (int a = 0; a < 3; ++a) p[3 * i + a] *= s[a];
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

// The metric's loss, dM/dW into grad (NOTE [ Registration model ]).
double metric_loss(const RegisterOptions& o, const std::vector<float>& warped,
                   const std::vector<float>& fixed, Dims d, float* grad, const float* weight) {
  switch (o.metric) {
    case Metric::SSD:
      return ssd_loss(warped.data(), fixed.data(), fixed.size(), grad, weight);
    case Metric::LNCC:
      return lncc_loss(warped.data(), fixed.data(), d, o.window, grad, weight);
    case Metric::MI:
      return mi_loss(warped.data(), fixed.data(), fixed.size(), o.bins, grad, weight);
  }
  return 0;
}

// NOTE [ Optimiser ]
// Adam (beta 0.9 / 0.999), per element. For the displacement model with its absolute epsilon
// (1e-8), as before. For the velocity model epsilon is relative: 5% of the largest
// sqrt(second moment) over the field, so that elements whose gradient is tiny compared with the
// field's largest take proportionally tiny steps instead of full ones. Plain Adam blows up the
// near-zero gradients of regions without information (a flat background, where LNCC's epsilon
// and the Gaussian smoothing of the gradient leave a residue) to steps of `lr` voxels.
struct Adam {
  double lr, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double relative_eps;  // 0: absolute eps only
  int64_t t = 0;
  std::vector<float> m, v;

  Adam(double learning_rate, size_t n, double relative_epsilon)
      : lr(learning_rate), relative_eps(relative_epsilon), m(n, 0.f), v(n, 0.f) {}
  void step(const std::vector<float>& g, std::vector<float>* x) {
    ++t;
    const float b1 = float(beta1), b2 = float(beta2);
    const float c1 = float(1 / (1 - std::pow(beta1, double(t))));
    const float c2 = float(1 / (1 - std::pow(beta2, double(t))));
    const float step = float(lr);
    const int64_t n = int64_t(g.size());
    float* xs = x->data();
    float vmax = 0;
#pragma omp parallel for schedule(static) reduction(max : vmax) if (n > kParallelMin)
    for (int64_t i = 0; i < n; ++i) {
      const size_t j = size_t(i);
      m[j] = b1 * m[j] + (1 - b1) * g[j];
      v[j] = b2 * v[j] + (1 - b2) * g[j] * g[j];
      vmax = std::max(vmax, v[j]);
    }
    const float e = float(eps) + float(relative_eps) * std::sqrt(vmax * c2);
#pragma omp parallel for schedule(static) if (n > kParallelMin)
    for (int64_t i = 0; i < n; ++i) {
      const size_t j = size_t(i);
      xs[i] -= step * (m[j] * c1) / (std::sqrt(v[j] * c2) + e);
    }
  }
};

}  // namespace

const char* transform_name(Transform t) { return t == Transform::SVF ? "svf" : "displacement"; }

RegisterOptions RegisterOptions::resolved() const {
  RegisterOptions o = *this;
  const bool svf = transform == Transform::SVF;
  if (o.lambda < 0) o.lambda = svf ? 0 : 3e-4;
  if (o.sigma_grad < 0) o.sigma_grad = svf ? 1 : 0;
  if (o.sigma_field < 0) o.sigma_field = svf ? 0.5 : 0;
  return o;
}

Field resize_field(Runtime& rt, const Field& f, Dims to) {
  Field out(to);
  out.data = sample(rt, f.data, f.dims, 3, identity_grid(to), to, Padding::Border);
  // Displacements are in voxels of their own grid.
  const float scale[3] = {float(double(to.x) / double(f.dims.x)),
                          float(double(to.y) / double(f.dims.y)),
                          float(double(to.z) / double(f.dims.z))};
  for (size_t i = 0; i < out.data.size(); i += 3)
    for (int a = 0; a < 3; ++a) out.data[i + size_t(a)] *= scale[a];
  return out;
}

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
                                const RegisterOptions& given,
                                const std::function<void(const Progress&)>& progress) {
  if (given.levels < 1 || size_t(given.levels) != given.iters.size())
    throw std::invalid_argument("one iteration count per level is needed");
  if (given.window < 1 || given.window % 2 == 0)
    throw std::invalid_argument("the LNCC window must be odd");
  if (given.metric == Metric::MI && (given.bins < 4 || given.bins > 1024))
    throw std::invalid_argument("mutual information needs 4 to 1024 histogram bins");
  const RegisterOptions options = given.resolved();
  const int levels = options.levels;
  const bool svf = options.transform == Transform::SVF;
  if (!options.fixed_mask.empty() && options.fixed_mask.size() != size_t(fixed.dims.count()))
    throw std::invalid_argument("the fixed mask must be on the fixed grid");
  const bool masked = !options.fixed_mask.empty();

  // Pyramids, finest first, each image on its own grid (NOTE [ Moving grid ]; the mask's levels
  // are weights in [0, 1]).
  Pyramids py;
  py.fixed_dims = pyramid_dims(fixed.dims, levels);
  py.moving_dims = pyramid_dims(moving.dims, levels);
  py.fixed = {IntensityMap::of(fixed.data, "fixed")(fixed.data)};
  py.moving = {IntensityMap::of(moving.data, "moving")(moving.data)};
  py.mask = {options.fixed_mask};
  py.fixed_world = multiply(fixed.affine, normalized_to_voxel(fixed.dims));
  py.moving_world = multiply(moving.affine, normalized_to_voxel(moving.dims));
  auto coarser = [&](const std::vector<float>& image, Dims from, Dims to) {
    const bool halved[3] = {to.x != from.x, to.y != from.y, to.z != from.z};
    return sample(rt, smooth(image, from, halved), from, 1, identity_grid(to), to, Padding::Border);
  };
  for (size_t l = 1; l < size_t(levels); ++l) {
    const Dims f0 = py.fixed_dims[l - 1], f1 = py.fixed_dims[l];
    py.fixed.push_back(coarser(py.fixed.back(), f0, f1));
    py.moving.push_back(coarser(py.moving.back(), py.moving_dims[l - 1], py.moving_dims[l]));
    py.mask.push_back(masked ? coarser(py.mask.back(), f0, f1) : std::vector<float>());
  }
  const std::vector<Dims>& dims = py.fixed_dims;

  const int32_t user_threads = gridsampleGetNumThreads();
  RegisterResult result;
  // The linear map in normalised coordinates, fixed grid -> moving grid: the world map W without
  // linear stages (NOTE [ Moving grid ]), the identity on one grid.
  const bool one_grid = fixed.dims == moving.dims && fixed.affine == moving.affine;
  const bool stages = !options.rigid_iters.empty() || !options.affine_iters.empty();
  const bool linear = stages || !one_grid;
  Mat4 linear_map = identity4();
  if (!one_grid) linear_map = multiply(inverse(py.moving_world), py.fixed_world);
  if (stages) {
    // The rigid stage's centre and starting translation (world mm): the fixed image's centre of
    // mass, and the shift that takes it onto the moving one's.
    const auto cf = center_of_mass(py.fixed[0], fixed.dims);
    const auto cm = center_of_mass(py.moving[0], moving.dims);
    const auto wf = apply(fixed.affine, cf[0], cf[1], cf[2]);
    const auto wm = apply(moving.affine, cm[0], cm[1], cm[2]);
    const double centre[3] = {wf[0], wf[1], wf[2]};
    double shift[3] = {0, 0, 0};
    if (options.center_of_mass)
      for (size_t a = 0; a < 3; ++a) shift[a] = wm[a] - wf[a];
    const double no_rotation[3] = {0, 0, 0};
    linear_map = multiply(inverse(py.moving_world),
                          multiply(rigid_world(no_rotation, centre, shift), py.fixed_world));
    if (!options.rigid_iters.empty())
      linear_map = register_rigid(rt, py, centre, shift, options, progress);
    if (!options.affine_iters.empty())
      linear_map = register_affine(rt, py, options, linear_map, progress);
  }
  // Its voxel form: fixed voxel -> normalised -> moving normalised -> world -> fixed voxel.
  if (linear)
    result.affine = multiply(
        inverse(fixed.affine),
        multiply(py.moving_world, multiply(linear_map, inverse(normalized_to_voxel(fixed.dims)))));
  Field param, uc, u;  // param: v (svf) or u (displacement); uc = exp(v) on v's grid
  std::vector<float> grid, warped, residual, grad, grad_c, grad_v;
  for (int level = 0; level < levels; ++level) {
    const auto t_level = Clock::now();
    const size_t l = size_t(levels - 1 - level);
    const Dims d = dims[l];
    const std::vector<float>& f = py.fixed[l];
    // NOTE [ Half-resolution velocity ]
    // A velocity's scaling and squaring (K compositions and their gradients, each a 3-channel
    // GridSampler3D(Grad)) costs several times the image warp, and each level eight times the
    // one below. As VoxelMorph does (int_downsize 2), the velocity therefore lives on the grid
    // of the level below the image's at every level but the coarsest; its exponential is
    // upsampled to the image grid by one 3-channel GridSampler3D call, whose adjoint
    // (GridSampler3DGrad, input gradient only) carries the gradient back. The metric still sees
    // every voxel of each level, the finest included.
    const bool half = svf && options.half_resolution_velocity && level > 0;
    const Dims dv = half ? pyramid_dims(d, 2)[1] : d;
    if (level == 0)
      param = Field(dv);
    else if (param.dims != dv)
      param = resize_field(rt, param, dv);
    const bool upsampled = svf && dv != d;
    // NOTE [ Threads per level ]
    // A coarse level's operator runs take a few hundred microseconds; split over threads, each
    // run ends in a join that waits for the slowest thread, and on a machine whose cores are
    // shared that wait is a scheduler time slice (milliseconds), so coarse levels ran ten times
    // slower with two threads than with one. Levels under kSerialLevel voxels therefore run the
    // operators on one thread (gridsampleSetNumThreads applies to this thread's runs only).
    const ThreadScope threads(d.count() < kSerialLevel ? 1 : user_threads);
    WarpOp op(rt, py.moving_dims[l], d, Padding::Border);
    op.set_moving(py.moving[l]);
    std::unique_ptr<SvfIntegrator> integ;
    if (svf) integ = std::make_unique<SvfIntegrator>(rt, dv);
    std::unique_ptr<WarpOp> up;
    std::vector<float> up_grid;
    const float up_scale[3] = {float(double(d.x) / double(dv.x)), float(double(d.y) / double(dv.y)),
                               float(double(d.z) / double(dv.z))};
    if (upsampled) {
      up = std::make_unique<WarpOp>(rt, dv, d, Padding::Border, 3, true, false);
      up_grid = identity_grid(d);
      u = Field(d);
    }
    Adam adam(options.learning_rate, param.data.size(), svf ? 0.05 : 0.0);
    const int iters = options.iters[size_t(level)];
    const float du_dg[3] = {2.f / float(d.x), 2.f / float(d.y), 2.f / float(d.z)};
    const double n = double(d.count());
    double loss = 0;
    int squarings = 0;
    residual.resize(f.size());
    for (int it = 1; it <= iters; ++it) {
      const auto t_iter = Clock::now();
      // The number of squarings follows the field's size and roughness (NOTE [ Stationary
      // velocity fields ]); both change slowly, so they are measured every few iterations.
      if (svf && (it % 5 == 1 || it == 1)) squarings = squaring_steps(param);
      if (svf) integ->exp(param, upsampled ? &uc : &u, squarings);
      if (upsampled) {
        up->set_moving(uc.data.data());
        up->forward(up_grid.data(), u.data.data());
        scale_components(&u.data, up_scale);
      }
      const Field& disp = svf ? u : param;
      displaced_grid(disp, &grid);
      if (linear) map_points(linear_map, false, &grid);
      op.forward(grid, &warped);
      const float* weight = masked ? py.mask[l].data() : nullptr;
      const double m = metric_loss(options, warped, f, d, residual.data(), weight);
      op.backward(residual, &grad);
      if (linear) map_points(linear_map, true, &grad);
      scale_components(&grad, du_dg);
      if (upsampled) {
        scale_components(&grad, up_scale);
        grad_c.resize(uc.data.size());
        up->backward(grad.data(), nullptr, grad_c.data());
        grad.swap(grad_c);
      }
      if (svf) {
        integ->backward(grad, &grad_v);
        grad.swap(grad_v);
      }
      const double reg = options.lambda > 0 ? add_diffusion(param, options.lambda, &grad) : 0;
      gaussian_smooth(&grad, dv, 3, options.sigma_grad);
      adam.step(grad, &param.data);
      gaussian_smooth(&param.data, dv, 3, options.sigma_field);
      loss = (m + options.lambda * reg) / n;
      if (progress) {
        Progress p;
        p.level = level;
        p.levels = levels;
        p.dims = d;
        p.iter = it;
        p.iters = iters;
        p.loss = loss;
        p.metric = m / n;
        p.reg = reg / n;
        p.squarings = squarings;
        p.seconds = since(t_iter);
        progress(p);
      }
    }
    result.levels.push_back({d, iters, since(t_level), loss});
  }
  if (svf) {
    result.field = exp_field(rt, param);
    if (result.field.dims != fixed.dims) result.field = resize_field(rt, result.field, fixed.dims);
    result.velocity = std::move(param);
  } else {
    result.field = std::move(param);
  }
  if (linear) {
    // d(x) = A (x + u(x)) - x.
    const Dims d = result.field.dims;
    const Mat4& a = result.affine;
    float* f = result.field.data.data();
    for (int64_t z = 0; z < d.z; ++z)
      for (int64_t y = 0; y < d.y; ++y)
        for (int64_t x = 0; x < d.x; ++x) {
          float* p = f + 3 * ((z * d.y + y) * d.x + x);
          const auto q = apply(a, double(x) + p[0], double(y) + p[1], double(z) + p[2]);
          p[0] = float(q[0] - double(x));
          p[1] = float(q[1] - double(y));
          p[2] = float(q[2] - double(z));
        }
  }
  result.warped = apply_field(rt, moving, result.field, fixed.affine, Interp::Linear);
  return result;
}

std::vector<float> affine_grid(const Mat4& voxel_affine, Dims d) {
  std::vector<float> grid(size_t(3 * d.count()));
  size_t i = 0;
  for (int64_t z = 0; z < d.z; ++z)
    for (int64_t y = 0; y < d.y; ++y)
      for (int64_t x = 0; x < d.x; ++x, i += 3) {
        const auto q = apply(voxel_affine, double(x), double(y), double(z));
        for (int a = 0; a < 3; ++a) grid[i + size_t(a)] = voxel_to_normalized(q[size_t(a)], d[a]);
      }
  return grid;
}

namespace {

// One level of a linear stage: the moving image's warp and grid gradient, planned once.
class LinearLevel {
 public:
  LinearLevel(Runtime& rt, const Pyramids& py, size_t l, const RegisterOptions& options)
      : threads_(py.fixed_dims[l].count() < kSerialLevel ? 1 : gridsampleGetNumThreads()),
        op_(rt, py.moving_dims[l], py.fixed_dims[l], Padding::Border),
        fixed_(py.fixed[l]),
        d_(py.fixed_dims[l]),
        options_(options),
        residual_(fixed_.size()),
        n_(identity_grid(d_)),
        weight_(py.mask[l].empty() ? nullptr : py.mask[l].data()) {
    op_.set_moving(py.moving[l]);
  }

  // dE/d[M | t] (rows of the normalised map g = M n + t, row-major 3x4): one GridSampler3D warp,
  // one GridSampler3DGrad grid gradient G(x), then sum_x G(x) n(x)^T and sum_x G(x).
  std::array<double, 12> gradient(const Mat4& g) {
    grid_ = n_;
    map_points(g, false, &grid_);
    op_.forward(grid_, &warped_);
    metric_ = metric_loss(options_, warped_, fixed_, d_, residual_.data(), weight_);
    op_.backward(residual_, &gg_);
    std::array<double, 12> acc{};
    for (size_t i = 0; i < gg_.size(); i += 3)
      for (size_t a = 0; a < 3; ++a) {
        const double v = gg_[i + a];
        acc[4 * a + 0] += v * n_[i];
        acc[4 * a + 1] += v * n_[i + 1];
        acc[4 * a + 2] += v * n_[i + 2];
        acc[4 * a + 3] += v;
      }
    return acc;
  }

  // Reports the last gradient()'s metric (per voxel) as iteration `it` (0-based) of `iters`.
  void report(const ProgressFn& progress, const char* stage, size_t level, size_t levels, int it,
              int iters, Clock::time_point t0) const {
    if (!progress) return;
    Progress p;
    p.stage = stage;
    p.level = int(level);
    p.levels = int(levels);
    p.dims = d_;
    p.iter = it + 1;
    p.iters = iters;
    p.loss = p.metric = metric_ / double(d_.count());
    p.seconds = since(t0);
    progress(p);
  }

 private:
  ThreadScope threads_;  // NOTE [ Threads per level ]
  WarpOp op_;
  const std::vector<float>& fixed_;
  Dims d_;
  const RegisterOptions& options_;
  std::vector<float> warped_, residual_, gg_, grid_;
  const std::vector<float> n_;  // the voxels' normalised coordinates
  const float* weight_;         // the fixed mask's level, or null
  double metric_ = 0;
};

// Rotations about x, y, z and their derivatives.
Mat4 axis_rotation(int axis, double angle, bool derivative) {
  const double c = std::cos(angle), s = std::sin(angle);
  Mat4 r{};
  const size_t i = size_t((axis + 1) % 3), j = size_t((axis + 2) % 3);
  if (derivative) {
    r[i][i] = -s, r[i][j] = -c, r[j][i] = c, r[j][j] = -s;
  } else {
    r = identity4();
    r[i][i] = c, r[i][j] = -s, r[j][i] = s, r[j][j] = c;
  }
  return r;
}

}  // namespace

Mat4 register_affine(Runtime& rt, const Pyramids& py, const RegisterOptions& options,
                     const Mat4& initial, const ProgressFn& progress) {
  const size_t levels = py.fixed_dims.size();
  Mat4 m = initial;
  const size_t na = std::min(options.affine_iters.size(), levels);
  for (size_t level = 0; level < na; ++level) {
    LinearLevel stage(rt, py, levels - 1 - level, options);
    std::vector<float> params(12), grad(12);
    for (size_t a = 0; a < 3; ++a)
      for (size_t j = 0; j < 4; ++j) params[4 * a + j] = float(m[a][j]);
    Adam adam(options.affine_lr, 12, 0.0);
    for (int it = 0; it < options.affine_iters[level]; ++it) {
      const auto t_iter = Clock::now();
      for (size_t a = 0; a < 3; ++a)
        for (size_t j = 0; j < 4; ++j) m[a][j] = params[4 * a + j];
      const std::array<double, 12> acc = stage.gradient(m);
      stage.report(progress, "affine", level, levels, it, options.affine_iters[level], t_iter);
      for (size_t k = 0; k < 12; ++k) grad[k] = float(acc[k]);
      adam.step(grad, &params);
    }
    for (size_t a = 0; a < 3; ++a)
      for (size_t j = 0; j < 4; ++j) m[a][j] = params[4 * a + j];
  }
  return m;
}

Mat4 rigid_world(const double angles[3], const double c[3], const double t[3]) {
  Mat4 r =
      multiply(axis_rotation(2, angles[2], false),
               multiply(axis_rotation(1, angles[1], false), axis_rotation(0, angles[0], false)));
  for (size_t i = 0; i < 3; ++i) {
    double off = c[i] + t[i];
    for (size_t j = 0; j < 3; ++j) off -= r[i][j] * c[j];
    r[i][3] = off;
  }
  return r;
}

std::array<double, 3> center_of_mass(const std::vector<float>& image, Dims d) {
  double s = 0, m[3] = {0, 0, 0};
  size_t i = 0;
  for (int64_t z = 0; z < d.z; ++z)
    for (int64_t y = 0; y < d.y; ++y)
      for (int64_t x = 0; x < d.x; ++x, ++i) {
        const double w = std::max(0.0, double(image[i]));
        s += w, m[0] += w * double(x), m[1] += w * double(y), m[2] += w * double(z);
      }
  if (!(s > 0)) return {double(d.x - 1) / 2, double(d.y - 1) / 2, double(d.z - 1) / 2};
  return {m[0] / s, m[1] / s, m[2] / s};
}

Mat4 register_rigid(Runtime& rt, const Pyramids& py, const double centre[3],
                    const double initial[3], const RegisterOptions& options,
                    const ProgressFn& progress) {
  const size_t levels = py.fixed_dims.size();
  const Mat4& p = py.fixed_world;
  const Mat4 q_inv = inverse(py.moving_world);
  // The translation's unit: the fixed volume's mean half extent (mm), the length of P's columns.
  const std::array<double, 3> half = spacing(p);
  const double unit = (half[0] + half[1] + half[2]) / 3;
  // params: the three angles, then the translation in `unit`s.
  std::vector<float> params = {
      0, 0, 0, float(initial[0] / unit), float(initial[1] / unit), float(initial[2] / unit)};
  std::vector<float> grad(6);
  auto world = [&](const std::vector<float>& v) {
    const double angles[3] = {v[0], v[1], v[2]};
    const double t[3] = {v[3] * unit, v[4] * unit, v[5] * unit};
    return rigid_world(angles, centre, t);
  };
  const size_t nr = std::min(options.rigid_iters.size(), levels);
  for (size_t level = 0; level < nr; ++level) {
    LinearLevel stage(rt, py, levels - 1 - level, options);
    Adam adam(options.affine_lr, 6, 0.0);
    for (int it = 0; it < options.rigid_iters[level]; ++it) {
      const auto t_iter = Clock::now();
      const std::array<double, 12> acc =
          stage.gradient(multiply(q_inv, multiply(world(params), p)));
      stage.report(progress, "rigid", level, levels, it, options.rigid_iters[level], t_iter);
      // dE/dT = Q^-T dE/dG P^T (dE/dG's last row is zero).
      Mat4 dg{}, dt{};
      for (size_t i = 0; i < 3; ++i)
        for (size_t j = 0; j < 4; ++j) dg[i][j] = acc[4 * i + j];
      for (size_t i = 0; i < 4; ++i)
        for (size_t j = 0; j < 4; ++j)
          for (size_t k = 0; k < 4; ++k)
            for (size_t c = 0; c < 4; ++c) dt[i][j] += q_inv[k][i] * dg[k][c] * p[j][c];
      double dr[3][3];
      for (size_t i = 0; i < 3; ++i)
        for (size_t j = 0; j < 3; ++j) dr[i][j] = dt[i][j] - dt[i][3] * centre[j];
      Mat4 r[3], dr_da[3];
      for (int a = 0; a < 3; ++a) {
        r[a] = axis_rotation(a, params[size_t(a)], false);
        dr_da[a] = axis_rotation(a, params[size_t(a)], true);
      }
      const Mat4 partial[3] = {multiply(r[2], multiply(r[1], dr_da[0])),
                               multiply(r[2], multiply(dr_da[1], r[0])),
                               multiply(dr_da[2], multiply(r[1], r[0]))};
      for (size_t a = 0; a < 3; ++a) {
        double g = 0;
        for (size_t i = 0; i < 3; ++i)
          for (size_t j = 0; j < 3; ++j) g += dr[i][j] * partial[a][i][j];
        grad[a] = float(g);
        grad[3 + a] = float(dt[a][3] * unit);
      }
      adam.step(grad, &params);
    }
  }
  return multiply(q_inv, multiply(world(params), p));
}

Volume warp(Runtime& rt, const Volume& moving, const Field& u) {
  if (u.dims != moving.dims) throw std::invalid_argument("warp: field and image grids differ");
  std::vector<float> grid;
  displaced_grid(u, &grid);
  Volume out(u.dims, moving.affine);
  out.data = sample(rt, moving.data, moving.dims, 1, grid, u.dims, Padding::Border);
  return out;
}

Field inverse_transform(Runtime& rt, const Field& velocity, Dims out, const Mat4& affine) {
  Field neg = velocity;
  for (float& x : neg.data) x = -x;
  Field w = exp_field(rt, neg);
  if (w.dims != out) w = resize_field(rt, w, out);
  if (affine == identity4()) return w;
  // y -> z + w(z) - y with z = A^-1 y: w sampled at z (border padding, as everywhere a field is
  // resampled).
  const Mat4 a_inv = inverse(affine);
  Field inv(out);
  inv.data = sample(rt, w.data, out, 3, affine_grid(a_inv, out), out, Padding::Border);
  size_t i = 0;
  for (int64_t z = 0; z < out.z; ++z)
    for (int64_t y = 0; y < out.y; ++y)
      for (int64_t x = 0; x < out.x; ++x, i += 3) {
        const auto q = apply(a_inv, double(x), double(y), double(z));
        inv.data[i] += float(q[0] - double(x));
        inv.data[i + 1] += float(q[1] - double(y));
        inv.data[i + 2] += float(q[2] - double(z));
      }
  return inv;
}

Volume apply_field(Runtime& rt, const Volume& moving, const Field& u, const Mat4& affine,
                   Interp interp) {
  const Mat4 to_moving = multiply(inverse(moving.affine), affine);
  const Dims d = u.dims, md = moving.dims;
  std::vector<float> grid(size_t(3 * d.count()));
#pragma omp parallel for schedule(static) if (d.count() > kParallelMin)
  for (int64_t z = 0; z < d.z; ++z)
    for (int64_t y = 0; y < d.y; ++y)
      for (int64_t x = 0; x < d.x; ++x) {
        const size_t i = size_t(3 * ((z * d.y + y) * d.x + x));
        const auto p = apply(to_moving, double(x) + u.data[i], double(y) + u.data[i + 1],
                             double(z) + u.data[i + 2]);
        for (int a = 0; a < 3; ++a) grid[i + size_t(a)] = voxel_to_normalized(p[size_t(a)], md[a]);
      }
  Volume out(d, affine);
  out.data = sample(rt, moving.data, md, 1, grid, d, Padding::Zeros, interp);
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
