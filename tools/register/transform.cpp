#include "transform.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gsreg {

void displaced_grid(const Field& u, std::vector<float>* grid) {
  grid->resize(u.data.size());
  displaced_grid(u.data.data(), u.dims, grid->data());
}

void displaced_grid(const float* u, Dims d, float* grid) {
  const float sx = 2.f / float(d.x), sy = 2.f / float(d.y), sz = 2.f / float(d.z);
#pragma omp parallel for schedule(static) if (d.count() > kParallelMin)
  for (int64_t z = 0; z < d.z; ++z)
    for (int64_t y = 0; y < d.y; ++y) {
      const size_t row = size_t(3 * (z * d.y + y) * d.x);
      const float gy = float(y) + 0.5f, gz = float(z) + 0.5f;
      for (int64_t x = 0; x < d.x; ++x) {
        const size_t i = row + size_t(3 * x);
        // voxel_to_normalized: (2 i + 1) / s - 1 = (i + 0.5) * 2 / s - 1
        grid[i] = (float(x) + 0.5f + u[i]) * sx - 1;
        grid[i + 1] = (gy + u[i + 1]) * sy - 1;
        grid[i + 2] = (gz + u[i + 2]) * sz - 1;
      }
    }
}

void gaussian_smooth(std::vector<float>* data, Dims d, int channels, double sigma) {
  if (!(sigma > 0)) return;
  const int radius = std::max(1, int(std::ceil(3 * sigma)));
  std::vector<float> k(size_t(2 * radius + 1));
  float sum = 0;
  for (int i = -radius; i <= radius; ++i)
    sum += k[size_t(i + radius)] = float(std::exp(-0.5 * double(i * i) / (sigma * sigma)));
  for (float& w : k) w /= sum;
  const int64_t c = channels, row = d.x * c, plane = row * d.y;
  std::vector<float>& a = *data;
  std::vector<float> b(a.size());
  // x: along each row, channels interleaved.
#pragma omp parallel for schedule(static) if (d.count() > kParallelMin)
  for (int64_t r = 0; r < d.y * d.z; ++r) {
    const float* in = a.data() + r * row;
    float* out = b.data() + r * row;
    for (int64_t x = 0; x < d.x; ++x)
      for (int64_t ch = 0; ch < c; ++ch) {
        float acc = 0;
        for (int t = -radius; t <= radius; ++t) {
          const int64_t q = std::clamp<int64_t>(x + t, 0, d.x - 1);
          acc += k[size_t(t + radius)] * in[q * c + ch];
        }
        out[x * c + ch] = acc;
      }
  }
  // y: whole rows at a time (vectorised over x and channels).
#pragma omp parallel for schedule(static) if (d.count() > kParallelMin)
  for (int64_t z = 0; z < d.z; ++z)
    for (int64_t y = 0; y < d.y; ++y) {
      float* out = a.data() + z * plane + y * row;
      std::fill(out, out + row, 0.f);
      for (int t = -radius; t <= radius; ++t) {
        const float w = k[size_t(t + radius)];
        const float* in = b.data() + z * plane + std::clamp<int64_t>(y + t, 0, d.y - 1) * row;
        for (int64_t i = 0; i < row; ++i) out[i] += w * in[i];
      }
    }
    // z: whole rows at a time.
#pragma omp parallel for schedule(static) if (d.count() > kParallelMin)
  for (int64_t y = 0; y < d.y; ++y)
    for (int64_t z = 0; z < d.z; ++z) {
      float* out = b.data() + z * plane + y * row;
      std::fill(out, out + row, 0.f);
      for (int t = -radius; t <= radius; ++t) {
        const float w = k[size_t(t + radius)];
        const float* in = a.data() + std::clamp<int64_t>(z + t, 0, d.z - 1) * plane + y * row;
        for (int64_t i = 0; i < row; ++i) out[i] += w * in[i];
      }
    }
  a.swap(b);
}

namespace {

// d u_c / d axis at voxel (x, y, z), central differences, one-sided at the faces.
struct Diff {
  Dims d;
  const float* u;
  float operator()(int64_t x, int64_t y, int64_t z, int axis, int c) const {
    const int64_t pos = axis == 0 ? x : (axis == 1 ? y : z);
    const int64_t n = d[axis];
    if (n < 2) return 0;
    const int64_t stride = axis == 0 ? 3 : (axis == 1 ? 3 * d.x : 3 * d.x * d.y);
    const int64_t i = 3 * ((z * d.y + y) * d.x + x) + c;
    const int64_t lo = pos > 0 ? i - stride : i, hi = pos + 1 < n ? i + stride : i;
    const float span = float((pos + 1 < n) + (pos > 0));
    return (u[hi] - u[lo]) / span;
  }
};

}  // namespace

FieldNorms field_norms(const Field& v) {
  const Dims d = v.dims;
  const Diff diff{d, v.data.data()};
  double max_norm = 0, max_grad = 0;
#pragma omp parallel for schedule(static) \
    reduction(max                         \
              : max_norm, max_grad) if (d.count() > kParallelMin)
  for (int64_t z = 0; z < d.z; ++z)
    for (int64_t y = 0; y < d.y; ++y)
      for (int64_t x = 0; x < d.x; ++x) {
        const size_t i = size_t(3 * ((z * d.y + y) * d.x + x));
        double n2 = 0, g2 = 0;
        for (int c = 0; c < 3; ++c) {
          n2 += double(v.data[i + size_t(c)]) * v.data[i + size_t(c)];
          for (int a = 0; a < 3; ++a) {
            const double g = diff(x, y, z, a, c);
            g2 += g * g;
          }
        }
        max_norm = std::max(max_norm, n2);
        max_grad = std::max(max_grad, g2);
      }
  return {std::sqrt(max_norm), std::sqrt(max_grad)};
}

// The largest first step (voxels, and Frobenius norm of its Jacobian): NOTE [ Stationary
// velocity fields ].
constexpr double kFirstStep = 0.5;

int squaring_steps(const Field& v) {
  const FieldNorms n = field_norms(v);
  const double worst = std::max(n.max_norm, n.max_gradient);
  int k = 1;
  while (k < 12 && worst / double(int64_t(1) << k) > kFirstStep) ++k;
  return k;
}

SvfIntegrator::SvfIntegrator(Runtime& rt, Dims d)
    : d_(d), op_(std::make_unique<WarpOp>(rt, d, d, Padding::Border, 3, true)) {}

int SvfIntegrator::exp(const Field& v, Field* u, int steps) {
  if (v.dims != d_) throw std::invalid_argument("SvfIntegrator: wrong field size");
  const int k = steps > 0 ? steps : squaring_steps(v);
  const size_t n = v.data.size();
  u_.resize(size_t(k));
  grids_.resize(size_t(k));
  if (u->dims != d_ || u->data.size() != v.data.size()) *u = Field(d_);
  const float scale = 1.f / float(int64_t(1) << k);
  float* cur = u->data.data();
  const float* vin = v.data.data();
#pragma omp parallel for schedule(static) if (int64_t(n) > kParallelMin)
  for (int64_t i = 0; i < int64_t(n); ++i) cur[i] = vin[i] * scale;
  sampled_.resize(n);
  for (int s = 0; s < k; ++s) {
    u_[size_t(s)].assign(u->data.begin(), u->data.end());
    grids_[size_t(s)].resize(n);
    displaced_grid(u->data.data(), d_, grids_[size_t(s)].data());
    op_->set_moving(u->data.data());
    op_->forward(grids_[size_t(s)].data(), sampled_.data());
    float* out = u->data.data();
    const float* add = sampled_.data();
#pragma omp parallel for schedule(static) if (int64_t(n) > kParallelMin)
    for (int64_t i = 0; i < int64_t(n); ++i) out[i] += add[i];
  }
  return k;
}

void SvfIntegrator::backward(const std::vector<float>& grad_u, std::vector<float>* grad_v) {
  const size_t n = grad_u.size();
  g_ = grad_u;
  g_grid_.resize(n);
  g_input_.resize(n);
  const float du_dg[3] = {2.f / float(d_.x), 2.f / float(d_.y), 2.f / float(d_.z)};
  for (size_t s = u_.size(); s-- > 0;) {
    op_->set_moving(u_[s].data());
    op_->set_grid(grids_[s].data());
    op_->backward(g_.data(), g_grid_.data(), g_input_.data());
    float* g = g_.data();
    const float* gg = g_grid_.data();
    const float* gi = g_input_.data();
#pragma omp parallel for schedule(static) if (int64_t(n) > kParallelMin)
    for (int64_t p = 0; p < int64_t(n / 3); ++p)
      for (int a = 0; a < 3; ++a) {
        const size_t i = size_t(3 * p + a);
        g[i] += gi[i] + gg[i] * du_dg[a];
      }
  }
  const float scale = 1.f / float(int64_t(1) << u_.size());
  grad_v->resize(n);
  for (size_t i = 0; i < n; ++i) (*grad_v)[i] = g_[i] * scale;
}

Field exp_field(Runtime& rt, const Field& v, int steps) {
  SvfIntegrator integ(rt, v.dims);
  Field u;
  integ.exp(v, &u, steps);
  return u;
}

std::vector<float> jacobian_determinant(const Field& u) {
  const Dims d = u.dims;
  const Diff diff{d, u.data.data()};
  std::vector<float> det(size_t(d.count()));
#pragma omp parallel for schedule(static) if (d.count() > kParallelMin)
  for (int64_t z = 0; z < d.z; ++z)
    for (int64_t y = 0; y < d.y; ++y)
      for (int64_t x = 0; x < d.x; ++x) {
        double j[3][3];
        for (int c = 0; c < 3; ++c)
          for (int a = 0; a < 3; ++a) j[c][a] = (c == a) + double(diff(x, y, z, a, c));
        det[size_t((z * d.y + y) * d.x + x)] =
            float(j[0][0] * (j[1][1] * j[2][2] - j[1][2] * j[2][1]) -
                  j[0][1] * (j[1][0] * j[2][2] - j[1][2] * j[2][0]) +
                  j[0][2] * (j[1][0] * j[2][1] - j[1][1] * j[2][0]));
      }
  return det;
}

JacobianStats jacobian_stats(const std::vector<float>& det) {
  JacobianStats s;
  if (det.empty()) return s;
  s.min = s.max = det[0];
  int64_t folded = 0;
  for (float v : det) {
    s.min = std::min(s.min, double(v));
    s.max = std::max(s.max, double(v));
    folded += v <= 0;
  }
  s.folded_share = double(folded) / double(det.size());
  return s;
}

}  // namespace gsreg
