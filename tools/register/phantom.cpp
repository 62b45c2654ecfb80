#include "phantom.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "register.h"
#include "transform.h"

namespace gsreg {
namespace {

constexpr double kPi = 3.14159265358979323846;

// SplitMix64: tiny, and unlike <random>'s distributions gives the same numbers everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  double uniform(double lo, double hi) { return lo + (hi - lo) * double(next() >> 11) * 0x1p-53; }
  double normal() {  // Box-Muller
    const double u1 = 1.0 - double(next() >> 11) * 0x1p-53;
    const double u2 = double(next() >> 11) * 0x1p-53;
    return std::sqrt(-2 * std::log(u1)) * std::cos(2 * kPi * u2);
  }

 private:
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t s_;
};

struct Ellipsoid {
  double c[3], r[3], value;
  double sharpness;  // 1 / edge width in units of normalized radius
  double cut2;       // beyond this normalized squared radius the edge term is negligible
};

struct Wave {
  double k[3], phase, amplitude;
};

// A sum of soft-edged ellipsoids plus a faint texture inside the outer one. The texture gives
// the flat interiors some structure so that the displacement is observable there too, not only
// at the edges (the aperture problem).
class Phantom {
 public:
  Phantom(int64_t size, Rng& rng) {
    const double s = double(size), scale = s / 96.0, mid = (s - 1) / 2;
    add({{mid, mid, mid}, {0.42 * s, 0.36 * s, 0.40 * s}, 0.3, 0, 0});
    for (int i = 0; i < 40; ++i) {
      Ellipsoid e{};
      for (double& r : e.r) r = rng.uniform(3, 12) * scale;
      for (double& c : e.c) c = mid + rng.uniform(-1, 1) * 0.25 * s;
      e.value = rng.uniform(-0.2, 0.5);
      add(e);
    }
    for (int i = 0; i < 8; ++i) {
      double d[3] = {rng.normal(), rng.normal(), rng.normal()};
      const double n = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
      const double wavelength = rng.uniform(10, 20) * scale;
      Wave w{};
      for (int a = 0; a < 3; ++a) w.k[a] = d[a] / n * 2 * kPi / wavelength;
      w.phase = rng.uniform(0, 2 * kPi);
      w.amplitude = 0.1 / std::sqrt(8.0);
      texture_.push_back(w);
    }
  }

  // Membership of the outer ellipsoid, in [0, 1].
  double outer(const double p[3]) const { return membership(ellipsoids_[0], p); }

  double operator()(const double p[3]) const {
    double v = 0;
    for (const Ellipsoid& e : ellipsoids_) v += e.value * membership(e, p);
    double t = 0;
    for (const Wave& w : texture_)
      t += w.amplitude * std::sin(w.k[0] * p[0] + w.k[1] * p[1] + w.k[2] * p[2] + w.phase);
    v += t * outer(p);
    return std::clamp(v, 0.0, 1.0);
  }

 private:
  static constexpr double kEdgeWidth = 0.7;  // voxels

  void add(Ellipsoid e) {
    const double rmin = std::min({e.r[0], e.r[1], e.r[2]});
    e.sharpness = rmin / kEdgeWidth;
    const double cut = 1 + 20 / e.sharpness;  // sigmoid(-20) ~ 2e-9
    e.cut2 = cut * cut;
    ellipsoids_.push_back(e);
  }

  static double membership(const Ellipsoid& e, const double p[3]) {
    double d2 = 0;
    for (int a = 0; a < 3; ++a) {
      const double q = (p[a] - e.c[a]) / e.r[a];
      d2 += q * q;
    }
    if (d2 > e.cut2) return 0;
    return 1 / (1 + std::exp(-(1 - std::sqrt(d2)) * e.sharpness));
  }

  std::vector<Ellipsoid> ellipsoids_;
  std::vector<Wave> texture_;
};

// Per component a sum of random plane waves of at most two cycles across each axis, scaled so
// that the largest norm is max_displacement.
Field random_smooth_field(Dims d, double max_displacement, Rng& rng) {
  Field f(d);
  constexpr int kWaves = 6;
  Wave waves[3][kWaves];
  for (auto& component : waves)
    for (Wave& w : component) {
      for (int a = 0; a < 3; ++a) w.k[a] = rng.uniform(-2, 2) * 2 * kPi / double(d[a]);
      w.phase = rng.uniform(0, 2 * kPi);
      w.amplitude = rng.normal();
    }
  double max_norm = 0;
  size_t i = 0;
  for (int64_t z = 0; z < d.z; ++z)
    for (int64_t y = 0; y < d.y; ++y)
      for (int64_t x = 0; x < d.x; ++x, i += 3) {
        double n2 = 0;
        for (int a = 0; a < 3; ++a) {
          double v = 0;
          for (const Wave& w : waves[a])
            v += w.amplitude *
                 std::sin(w.k[0] * double(x) + w.k[1] * double(y) + w.k[2] * double(z) + w.phase);
          f.data[i + size_t(a)] = float(v);
          n2 += v * v;
        }
        max_norm = std::max(max_norm, std::sqrt(n2));
      }
  const double scale = max_norm > 0 ? max_displacement / max_norm : 0;
  for (float& v : f.data) v = float(v * scale);
  return f;
}

// A seeded affine map about the volume's centre, voxel coordinates: a rotation of 3 to 10 degrees
// about a random axis, a scaling of each axis by 1 +- (5 to 10%), a shift of 2 to 5 voxels in a
// random direction.
Mat4 random_affine(Dims d, Rng& rng) {
  double axis[3] = {rng.normal(), rng.normal(), rng.normal()};
  const double len = std::sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]);
  for (double& v : axis) v /= len;
  const double angle = rng.uniform(3, 10) * kPi / 180;
  const double c = std::cos(angle), s = std::sin(angle);
  double r[3][3];  // Rodrigues
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 3; ++j) r[i][j] = (i == j ? c : 0) + (1 - c) * axis[i] * axis[j];
  r[0][1] -= s * axis[2], r[1][0] += s * axis[2];
  r[0][2] += s * axis[1], r[2][0] -= s * axis[1];
  r[1][2] -= s * axis[0], r[2][1] += s * axis[0];
  double scale[3];
  for (double& v : scale) v = 1 + (rng.uniform(0, 1) < 0.5 ? -1 : 1) * rng.uniform(0.05, 0.10);
  double dir[3] = {rng.normal(), rng.normal(), rng.normal()};
  const double dlen = std::sqrt(dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]);
  const double shift = rng.uniform(2, 5);
  const double mid[3] = {double(d.x - 1) / 2, double(d.y - 1) / 2, double(d.z - 1) / 2};
  Mat4 a = identity4();
  for (size_t i = 0; i < 3; ++i) {
    double off = mid[i] + shift * dir[i] / dlen;
    for (size_t j = 0; j < 3; ++j) {
      a[i][j] = r[i][j] * scale[j];
      off -= a[i][j] * mid[j];
    }
    a[i][3] = off;
  }
  return a;
}

}  // namespace

SyntheticPair make_synthetic_pair(int64_t size, double max_displacement, uint64_t seed) {
  Rng rng(seed);
  const Phantom phantom(size, rng);
  SyntheticPair pair;
  const Dims d{size, size, size};
  pair.truth = random_smooth_field(d, max_displacement, rng);
  pair.fixed = Volume(d, identity4());
  pair.moving = Volume(d, identity4());
  pair.mask.assign(size_t(d.count()), 0);
  size_t i = 0;
  for (int64_t z = 0; z < d.z; ++z)
    for (int64_t y = 0; y < d.y; ++y)
      for (int64_t x = 0; x < d.x; ++x, ++i) {
        const double p[3] = {double(x), double(y), double(z)};
        const float* u = &pair.truth.data[3 * i];
        const double q[3] = {p[0] + u[0], p[1] + u[1], p[2] + u[2]};
        pair.moving.data[i] = float(phantom(p));
        pair.fixed.data[i] = float(phantom(q));
        pair.mask[i] = phantom.outer(q) >= 0.5;
      }
  return pair;
}

Volume resample_to_spacing(Runtime& rt, const Volume& image, double voxel_mm) {
  const std::array<double, 3> sp = spacing(image.affine);
  double f[3];
  Dims d;
  for (int a = 0; a < 3; ++a) f[a] = voxel_mm / sp[size_t(a)];
  d.x = std::max<int64_t>(4, int64_t(std::ceil(double(image.dims.x) / f[0] - 1e-6)));
  d.y = std::max<int64_t>(4, int64_t(std::ceil(double(image.dims.y) / f[1] - 1e-6)));
  d.z = std::max<int64_t>(4, int64_t(std::ceil(double(image.dims.z) / f[2] - 1e-6)));
  // New voxel i has its centre at old voxel coordinate (i + 0.5) f - 0.5.
  Mat4 scale = identity4();
  for (size_t a = 0; a < 3; ++a) {
    scale[a][a] = f[a];
    scale[a][3] = 0.5 * f[a] - 0.5;
  }
  Volume smoothed = image;
  // Anti-aliasing before subsampling (isotropic, by the largest factor).
  const double fmax = std::max({f[0], f[1], f[2]});
  if (fmax > 1) gaussian_smooth(&smoothed.data, image.dims, 1, 0.4 * fmax);
  return resample_onto(rt, smoothed, Volume(d, multiply(image.affine, scale)));
}

SyntheticPair make_image_pair(Runtime& rt, const Volume& image, double voxel_mm,
                              double max_displacement, uint64_t seed, bool with_affine) {
  SyntheticPair pair;
  pair.moving = voxel_mm > 0 ? resample_to_spacing(rt, image, voxel_mm) : image;
  const Dims d = pair.moving.dims;
  Rng rng(seed);
  // A velocity of smooth waves, scaled (twice, by the ratio) until its exponential's largest
  // displacement is max_displacement.
  Field v = random_smooth_field(d, max_displacement, rng);
  Field u = exp_field(rt, v);
  for (int round = 0; round < 3 && max_displacement > 0; ++round) {
    const double m = field_norms(u).max_norm;
    if (!(m > 0)) break;
    for (float& x : v.data) x = float(x * max_displacement / m);
    u = exp_field(rt, v);
  }
  if (with_affine) {
    // truth(x) = A (x + u(x)) - x: the diffeomorphism, then the affine map (drawn after the
    // velocity, so that the diffeomorphism is the same as without).
    pair.affine = random_affine(d, rng);
    size_t i = 0;
    for (int64_t z = 0; z < d.z; ++z)
      for (int64_t y = 0; y < d.y; ++y)
        for (int64_t x = 0; x < d.x; ++x, i += 3) {
          float* p = &u.data[i];
          const auto q = apply(pair.affine, double(x) + p[0], double(y) + p[1], double(z) + p[2]);
          p[0] = float(q[0] - double(x));
          p[1] = float(q[1] - double(y));
          p[2] = float(q[2] - double(z));
        }
  }
  pair.truth = std::move(u);
  pair.fixed = warp(rt, pair.moving, pair.truth);
  // Score inside the anatomy: fixed voxels above 10% of its 99.5th percentile.
  const IntensityMap map = IntensityMap::of(pair.fixed.data, "image");
  pair.mask.assign(size_t(d.count()), 0);
  for (size_t i = 0; i < pair.mask.size(); ++i)
    pair.mask[i] = (pair.fixed.data[i] - map.lo) * map.scale > 0.1f;
  return pair;
}

}  // namespace gsreg
