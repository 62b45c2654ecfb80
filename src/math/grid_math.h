// The mathematics of grid sampling (SPEC §4), written once for any number of spatial dims.
//
// Header-only and dependency-free so that every backend (cpu:ref, the fast CPU kernels, CUDA)
// includes this and nothing else defines the coordinate math. All functions are pure. The
// per-coordinate functions live in grid_math_generic-inl.h so that SIMD kernels can evaluate
// the same source on vectors of points (NOTE [ Lane-generic math ]); the integer taps below are
// the scalar view of one point.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#define GS_HD __host__ __device__ inline
#else
#define GS_HD inline
#endif

namespace gridsample::math {

enum class Interp : int { Bilinear = 0, Nearest = 1, Bicubic = 2 };
enum class Padding : int { Zeros = 0, Border = 1, Reflection = 2 };

// NOTE [ Non-finite and huge coordinates ]
// A coordinate that is NaN or +-Inf after unnormalizing and padding, or whose magnitude is at
// least kMaxCoord, samples nothing: forward writes 0, backward scatters nothing and its grid
// gradient is 0 (SPEC §4.6). The bound keeps every later integer computation (floor, the taps
// x0 - 1 .. x0 + 2, offsets) far from int64 overflow. Any in-bounds voxel index is below 2^62
// because a tensor's byte span is checked to fit in int64, so nothing addressable is lost.
// PyTorch instead converts such values to int64 (undefined behaviour) or uses a -100 sentinel.
constexpr double kMaxCoord = 4611686018427387904.0;  // 2^62

// This copy of the lane-generic functions serves scalars (see grid_math_generic-inl.h).
template <typename T>
using LaneEnable = std::enable_if_t<std::is_floating_point<T>::value, int>;

// Scalar forms of the five helpers the lane-generic math uses (NOTE [ Lane-generic math ]).
template <typename T>
GS_HD T where(bool c, T a, T b) {
  return c ? a : b;
}
GS_HD bool lane_all(bool c) { return c; }
GS_HD float lane_floor(float x) { return std::floor(x); }
GS_HD double lane_floor(double x) { return std::floor(x); }
GS_HD float lane_nearbyint(float x) { return std::nearbyint(x); }
GS_HD double lane_nearbyint(double x) { return std::nearbyint(x); }
GS_HD float lane_fmod(float x, float y) { return std::fmod(x, y); }
GS_HD double lane_fmod(double x, double y) { return std::fmod(x, y); }

#include "math/grid_math_generic-inl.h"

// The taps of one point along one axis: which input indices it reads, with which weights,
// and the derivative of each weight with respect to the grid value (chain rule applied).
template <typename T>
struct AxisTaps {
  int n;           // 1 (nearest), 2 (linear) or 4 (cubic)
  int64_t idx[4];  // input index along this axis
  bool ok[4];      // idx is inside [0, s); a tap outside reads 0 and receives nothing
  T w[4];          // weight of the tap
  T dw[4];         // d w / d u (before the multiplier)
  T mult;          // d u / d g: unnormalize times padding derivatives
};

// Fills the taps of grid value g along an axis of size s. Returns false when the point samples
// nothing (NOTE [ Non-finite and huge coordinates ]).
template <typename T>
GS_HD bool axis_taps(T g, int64_t s, Interp interp, Padding padding, bool align_corners,
                     AxisTaps<T>* a) {
  if (interp == Interp::Bicubic) {
    // The coordinate is not padded; padding applies to each integer tap instead.
    T m;
    const T u0 = unnormalize(g, s, align_corners, &m);
    if (!coord_ok(u0)) return false;
    const T x0 = lane_floor(u0);
    cubic_weights(u0 - x0, a->w, a->dw);
    a->n = 4;
    a->mult = m;
    const int64_t i0 = static_cast<int64_t>(x0) - 1;
    for (int k = 0; k < 4; ++k) {
      int64_t i = i0 + k;
      if (padding != Padding::Zeros) {
        T unused;
        i = static_cast<int64_t>(pad_coord(T(i), s, padding, align_corners, &unused));
      }
      a->idx[k] = i;
      a->ok[k] = i >= 0 && i < s;
    }
    return true;
  }
  T u;
  if (!linear_coord(g, s, padding, align_corners, &u, &a->mult)) return false;
  if (interp == Interp::Nearest) {
    const int64_t i = static_cast<int64_t>(lane_nearbyint(u));  // round half to even
    a->n = 1;
    a->idx[0] = i;
    a->ok[0] = i >= 0 && i < s;
    a->w[0] = 1;
    a->dw[0] = 0;
    return true;
  }
  const T x0 = lane_floor(u);
  const int64_t i0 = static_cast<int64_t>(x0);
  a->n = 2;
  a->idx[0] = i0;
  a->idx[1] = i0 + 1;
  a->ok[0] = i0 >= 0 && i0 < s;
  a->ok[1] = i0 + 1 >= 0 && i0 + 1 < s;
  linear_weights(u, x0, a->w);
  a->dw[0] = -1;
  a->dw[1] = 1;
  return true;
}

// The taps of one point in D spatial dims. Axis 0 is x (the grid's first component, indexing
// the innermost spatial dim W), axis 1 is y, axis 2 is z. Taps are enumerated with axis 0
// fastest, so in 3D linear mode tap 0..7 are PyTorch's tnw, tne, tsw, tse, bnw, bne, bsw, bse.
template <typename T, int D>
struct PointTaps {
  AxisTaps<T> ax[D];

  GS_HD int count() const {
    int c = 1;
    for (int a = 0; a < D; ++a) c *= ax[a].n;
    return c;
  }
  // Per-axis tap numbers of tap t.
  GS_HD void digits(int t, int k[D]) const {
    for (int a = 0; a < D; ++a) {
      k[a] = t % ax[a].n;
      t /= ax[a].n;
    }
  }
  GS_HD bool in_bounds(const int k[D]) const {
    for (int a = 0; a < D; ++a)
      if (!ax[a].ok[k[a]]) return false;
    return true;
  }
  GS_HD T weight(const int k[D]) const {
    T w = ax[0].w[k[0]];
    for (int a = 1; a < D; ++a) w *= ax[a].w[k[a]];
    return w;
  }
  // d weight / d u_axis: the derivative on `axis`, plain weights on the others.
  GS_HD T weight_grad(const int k[D], int axis) const {
    T w = axis == 0 ? ax[0].dw[k[0]] : ax[0].w[k[0]];
    for (int a = 1; a < D; ++a) w *= (a == axis ? ax[a].dw[k[a]] : ax[a].w[k[a]]);
    return w;
  }
};

// g[a] is the grid's component a; size[a] the input size along that axis (size[0] = W).
template <typename T, int D>
GS_HD bool point_taps(const T g[D], const int64_t size[D], Interp interp, Padding padding,
                      bool align_corners, PointTaps<T, D>* p) {
  for (int a = 0; a < D; ++a)
    if (!axis_taps(g[a], size[a], interp, padding, align_corners, &p->ax[a])) return false;
  return true;
}

}  // namespace gridsample::math
