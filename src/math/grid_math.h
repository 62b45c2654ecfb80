// The mathematics of grid sampling (SPEC §4), written once for any number of spatial dims.
//
// Header-only and dependency-free so that every backend (cpu:ref, the fast CPU kernels, CUDA)
// includes this and nothing else defines the coordinate math. All functions are pure.
#pragma once

#include <cmath>
#include <cstdint>

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

template <typename T>
GS_HD bool coord_ok(T u) {
  // Written so that NaN fails: every comparison with NaN is false.
  return u > T(-kMaxCoord) && u < T(kMaxCoord);
}

// SPEC §4.1. Evaluated in PyTorch's order of operations; `m` receives du/dg.
template <typename T>
GS_HD T unnormalize(T g, int64_t s, bool align_corners, T* m) {
  if (align_corners) {
    *m = T(s - 1) / 2;
    return ((g + 1) / 2) * T(s - 1);
  }
  *m = T(s) / 2;
  return ((g + 1) * T(s) - 1) / 2;
}

// Clamp into [0, s - 1]; `d` receives the derivative, 0 at or beyond either end (inclusive).
// NaN passes through unchanged so that the caller can reject it.
template <typename T>
GS_HD T clamp_coord(T u, int64_t s, T* d) {
  const T hi = T(s - 1);
  if (u <= 0) {
    *d = 0;
    return 0;
  }
  if (u >= hi) {
    *d = 0;
    return hi;
  }
  *d = 1;
  return u;
}

// Reflect into the domain (mirror lines 0 and s - 1 with align_corners, else -0.5 and
// s - 0.5); `d` receives the derivative sign (+1 or -1; 0 when the domain is one point).
template <typename T>
GS_HD T reflect_coord(T u, int64_t s, bool align_corners, T* d) {
  const T lo = align_corners ? T(0) : T(-0.5);
  const T span = align_corners ? T(s - 1) : T(s);
  if (span == 0) {
    *d = 0;
    return 0;
  }
  T x = u - lo;
  T sign = 1;
  if (x < 0) {
    sign = -1;
    x = -x;
  }
  const T r = std::fmod(x, span);
  // The parity of floor(x / span), taken without converting to an integer type (PyTorch's
  // int cast is undefined beyond INT_MAX). Large floats are even integers, so this is exact.
  const bool odd = std::fmod(std::floor(x / span), T(2)) == T(1);
  *d = odd ? -sign : sign;
  return odd ? lo + (span - r) : lo + r;
}

// SPEC §4.2: the padded coordinate and the padding part of the multiplier.
template <typename T>
GS_HD T pad_coord(T u, int64_t s, Padding padding, bool align_corners, T* d) {
  switch (padding) {
    case Padding::Border:
      return clamp_coord(u, s, d);
    case Padding::Reflection: {
      T dr, dc;
      const T r = reflect_coord(u, s, align_corners, &dr);
      const T c = clamp_coord(r, s, &dc);
      *d = dr * dc;
      return c;
    }
    case Padding::Zeros:
    default:
      *d = 1;
      return u;
  }
}

// Keys cubic convolution, A = -0.75 (SPEC §4.5): the four weights for fractional offset t and
// their derivatives with respect to t.
template <typename T>
GS_HD void cubic_weights(T t, T w[4], T dw[4]) {
  const T A = T(-0.75);
  auto w1 = [A](T x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };        // |x| <= 1
  auto w2 = [A](T x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };  // 1 < |x| < 2
  auto dw1 = [A](T x) { return (3 * (A + 2) * x - 2 * (A + 3)) * x; };       // W1'(x)
  auto dw2 = [A](T x) { return (3 * A * x - 10 * A) * x + 8 * A; };          // W2'(x)
  // PyTorch's order of operations: (1 - t) + 1, not 2 - t.
  w[0] = w2(t + 1);
  w[1] = w1(t);
  w[2] = w1(1 - t);
  w[3] = w2((1 - t) + 1);
  // Distances t + 1 and t grow with t; 1 - t and 2 - t shrink.
  dw[0] = dw2(t + 1);
  dw[1] = dw1(t);
  dw[2] = -dw1(1 - t);
  dw[3] = -dw2(2 - t);
}

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
  T m;
  const T u0 = unnormalize(g, s, align_corners, &m);
  if (interp == Interp::Bicubic) {
    // The coordinate is not padded; padding applies to each integer tap instead.
    if (!coord_ok(u0)) return false;
    const T x0 = std::floor(u0);
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
  T dpad;
  const T u = pad_coord(u0, s, padding, align_corners, &dpad);
  if (!coord_ok(u)) return false;
  a->mult = m * dpad;
  if (interp == Interp::Nearest) {
    const int64_t i = static_cast<int64_t>(std::nearbyint(u));  // round half to even
    a->n = 1;
    a->idx[0] = i;
    a->ok[0] = i >= 0 && i < s;
    a->w[0] = 1;
    a->dw[0] = 0;
    return true;
  }
  const T x0 = std::floor(u);
  const int64_t i0 = static_cast<int64_t>(x0);
  a->n = 2;
  a->idx[0] = i0;
  a->idx[1] = i0 + 1;
  a->ok[0] = i0 >= 0 && i0 < s;
  a->ok[1] = i0 + 1 >= 0 && i0 + 1 < s;
  a->w[0] = (x0 + 1) - u;
  a->w[1] = u - x0;
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
