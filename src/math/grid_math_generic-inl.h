// The lane-generic part of the coordinate math (SPEC §4.1, §4.2, §4.3 and §4.5 weights): what the
// SIMD kernels evaluate on vectors of points, and the scalar code on one point.
//
// NOTE [ Lane-generic math ]
// T is a scalar floating type (float, double) or a SIMD lane type of a fast backend. The code uses
// only arithmetic operators, comparisons (bool for a scalar, a lane mask for a vector), `&` and `|`
// on their results, and five helpers found by unqualified lookup: where(c, a, b) (c ? a : b),
// lane_all(c) (c in every lane), lane_floor, lane_nearbyint and lane_fmod. grid_math.h defines
// them for scalars; a backend defines them for its lane types. Branches on data are written as
// where(), except shortcuts on lane_all(c), which return what the code they skip would have
// returned; branches on sizes and modes stay branches. The scalar results are those of the plain
// scalar code: every where() selects exactly the value the corresponding branch would have
// computed.
//
// No include guard, on purpose: grid_math.h includes this file into gridsample::math, and the
// Highway kernels (src/cpu/fast_kernels.cpp) include it again inside each per-target namespace,
// because a template defined outside a target's `#pragma GCC target` region cannot inline that
// target's intrinsics. One source, compiled once per target, as Highway's own -inl.h headers are.
// The includer provides <cmath>, <cstdint>, GS_HD, kMaxCoord, Padding and LaneEnable<T> (int if
// T is one of the lane types its copy serves, else no type): since Padding lives in
// gridsample::math, argument-dependent lookup also finds math's copy, and the constraint keeps it
// from competing for a backend's lane types (and the backend's copy from competing for scalars).

template <typename T, LaneEnable<T> = 0>
GS_HD auto coord_ok(T u) {
  // Written so that NaN fails: every comparison with NaN is false.
  return (u > T(-kMaxCoord)) & (u < T(kMaxCoord));
}

// SPEC §4.1. Evaluated in PyTorch's order of operations; `m` receives du/dg.
template <typename T, LaneEnable<T> = 0>
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
template <typename T, LaneEnable<T> = 0>
GS_HD T clamp_coord(T u, int64_t s, T* d) {
  const T hi = T(s - 1);
  const auto below = u <= T(0);
  const auto above = u >= hi;
  *d = where(below | above, T(0), T(1));
  return where(below, T(0), where(above, hi, u));
}

// Reflect into the domain (mirror lines 0 and s - 1 with align_corners, else -0.5 and
// s - 0.5); `d` receives the derivative sign (+1 or -1; 0 when the domain is one point).
// `inside_first`: whether to test first for every lane inside the domain. That pays where
// consecutive calls agree on the test, as on a coherent grid; on a scattered grid with points a
// little outside [-1, 1] the test goes either way, and its mispredicted branch costs more than
// the one-fold code that gives the same results (NOTE [ Scattered reflection ] in
// src/cpu/fast.cpp).
template <typename T, LaneEnable<T> = 0>
GS_HD T reflect_coord(T u, int64_t s, bool align_corners, T* d, bool inside_first = true) {
  const int64_t span_i = align_corners ? s - 1 : s;
  if (span_i == 0) {
    *d = T(0);
    return T(0);
  }
  const T lo = align_corners ? T(0) : T(-0.5);
  const T span = T(span_i);
  const T x0 = u - lo;
  // Inside the domain (the common case) nothing folds: 0 <= x0 < span gives fmod(x0, span) = x0
  // and floor(x0 / span) = 0 (x0 / span < 1 rounds below 1), so the general code below would
  // return lo + x0 with the sign +1 too; only faster, without the division.
  if (inside_first && lane_all((x0 >= T(0)) & (x0 < span))) {
    *d = T(1);
    return lo + x0;
  }
  const auto negative = x0 < T(0);
  const T x = where(negative, -x0, x0);
  const T sign = where(negative, T(-1), T(1));
  // One fold at most (|x0| < 2 span: a grid a little outside [-1, 1], as a scaled or rotated
  // affine grid gives): k = floor(x / span) is 0 below span and 1 from span up (x / span rounds
  // below 2), and fmod(x, span) is x or x - span (exact, by Sterbenz's lemma), so the general
  // code below would return these; only without its divisions.
  if (lane_all(x < T(2) * span)) {
    const auto fold = x >= span;
    const T r = where(fold, x - span, x);
    *d = where(fold, -sign, sign);
    return where(fold, lo + (span - r), lo + r);
  }
  const T r = lane_fmod(x, span);
  // The parity of k = floor(x / span), taken without converting to an integer type (PyTorch's
  // int cast is undefined beyond INT_MAX): h = k / 2 is exact, and h - floor(h) is 0.5 for odd
  // k, 0 for even k (large floats are even integers) and NaN for k = Inf or NaN (not odd).
  const T h = lane_floor(x / span) * T(0.5);
  const auto odd = h - lane_floor(h) == T(0.5);
  *d = where(odd, -sign, sign);
  return where(odd, lo + (span - r), lo + r);
}

// SPEC §4.2: the padded coordinate and the padding part of the multiplier (`inside_first`: as
// reflect_coord).
template <typename T, LaneEnable<T> = 0>
GS_HD T pad_coord(T u, int64_t s, Padding padding, bool align_corners, T* d,
                  bool inside_first = true) {
  switch (padding) {
    case Padding::Border:
      return clamp_coord(u, s, d);
    case Padding::Reflection: {
      T dr, dc;
      const T r = reflect_coord(u, s, align_corners, &dr, inside_first);
      const T c = clamp_coord(r, s, &dc);
      *d = dr * dc;
      return c;
    }
    case Padding::Zeros:
    default:
      *d = T(1);
      return u;
  }
}

// Bilinear and nearest (SPEC §4.2 - §4.4): the padded coordinate `u` and the multiplier du/dg
// of grid value g. The result is false (per lane) where the point samples nothing
// (NOTE [ Non-finite and huge coordinates ]). `inside_first`: as reflect_coord.
template <typename T, LaneEnable<T> = 0>
GS_HD auto linear_coord(T g, int64_t s, Padding padding, bool align_corners, T* u, T* mult,
                        bool inside_first = true) {
  T m, dpad;
  const T u0 = unnormalize(g, s, align_corners, &m);
  *u = pad_coord(u0, s, padding, align_corners, &dpad, inside_first);
  *mult = m * dpad;
  return coord_ok(*u);
}

// SPEC §4.3: the weights of the low tap x0 = floor(u) and of the high tap x0 + 1.
template <typename T, LaneEnable<T> = 0>
GS_HD void linear_weights(T u, T x0, T w[2]) {
  w[0] = (x0 + 1) - u;
  w[1] = u - x0;
}

// Keys cubic convolution, A = -0.75 (SPEC §4.5): the four weights for fractional offset t and
// their derivatives with respect to t.
template <typename T, LaneEnable<T> = 0>
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
