// SIMD lane types for the lane-generic math (NOTE [ Lane-generic math ] in
// src/math/grid_math_generic-inl.h): a vector of T with the arithmetic operators, comparisons
// that yield a lane mask, and where / lane_all / lane_floor / lane_nearbyint / lane_fmod.
//
// Included by fast_kernels.cpp inside each Highway per-target namespace (hence no include
// guard), after `namespace hn = hwy::HWY_NAMESPACE`.

template <class DF>
struct LaneMask {
  hn::Mask<DF> m;
};

template <class DF>
struct Lanes {
  using T = hn::TFromD<DF>;
  hn::Vec<DF> v;

  Lanes() = default;
  HWY_INLINE Lanes(hn::Vec<DF> x) : v(x) {}  // NOLINT: implicit on purpose
  // A scalar converts like T(a) in the scalar code, then fills every lane.
  template <typename A, std::enable_if_t<std::is_arithmetic<A>::value, int> = 0>
  HWY_INLINE Lanes(A a) : v(hn::Set(DF(), static_cast<T>(a))) {}  // NOLINT
};

template <typename T>
struct IsLanes : std::false_type {};
template <class DF>
struct IsLanes<Lanes<DF>> : std::true_type {};
// This copy of the lane-generic math serves Lanes only (see grid_math_generic-inl.h).
template <typename T>
using LaneEnable = std::enable_if_t<IsLanes<T>::value, int>;

template <typename A>
constexpr bool kScalar = std::is_arithmetic<A>::value;

// Binary operators: vector op vector, and with a scalar on either side (as `g + 1` is written).
#define GS_LANES_BINARY(op, fn)                                          \
  template <class DF>                                                    \
  HWY_INLINE Lanes<DF> operator op(Lanes<DF> a, Lanes<DF> b) {           \
    return hn::fn(a.v, b.v);                                             \
  }                                                                      \
  template <class DF, typename A, std::enable_if_t<kScalar<A>, int> = 0> \
  HWY_INLINE Lanes<DF> operator op(Lanes<DF> a, A b) {                   \
    return hn::fn(a.v, Lanes<DF>(b).v);                                  \
  }                                                                      \
  template <class DF, typename A, std::enable_if_t<kScalar<A>, int> = 0> \
  HWY_INLINE Lanes<DF> operator op(A a, Lanes<DF> b) {                   \
    return hn::fn(Lanes<DF>(a).v, b.v);                                  \
  }
GS_LANES_BINARY(+, Add)
GS_LANES_BINARY(-, Sub)
GS_LANES_BINARY(*, Mul)
GS_LANES_BINARY(/, Div)
#undef GS_LANES_BINARY

template <class DF>
HWY_INLINE Lanes<DF> operator-(Lanes<DF> a) {
  return hn::Neg(a.v);
}

#define GS_LANES_COMPARE(op, fn)                                  \
  template <class DF>                                             \
  HWY_INLINE LaneMask<DF> operator op(Lanes<DF> a, Lanes<DF> b) { \
    return {hn::fn(a.v, b.v)};                                    \
  }
GS_LANES_COMPARE(<, Lt)
GS_LANES_COMPARE(<=, Le)
GS_LANES_COMPARE(>, Gt)
GS_LANES_COMPARE(>=, Ge)
GS_LANES_COMPARE(==, Eq)
#undef GS_LANES_COMPARE

template <class DF>
HWY_INLINE LaneMask<DF> operator&(LaneMask<DF> a, LaneMask<DF> b) {
  return {hn::And(a.m, b.m)};
}
template <class DF>
HWY_INLINE LaneMask<DF> operator|(LaneMask<DF> a, LaneMask<DF> b) {
  return {hn::Or(a.m, b.m)};
}

template <class DF>
HWY_INLINE Lanes<DF> where(LaneMask<DF> c, Lanes<DF> a, Lanes<DF> b) {
  return hn::IfThenElse(c.m, a.v, b.v);
}

template <class DF>
HWY_INLINE bool lane_all(LaneMask<DF> c) {
  return hn::AllTrue(DF(), c.m);
}

template <class DF>
HWY_INLINE Lanes<DF> lane_floor(Lanes<DF> x) {
  return hn::Floor(x.v);
}

// Round half to even, as std::nearbyint in the default rounding mode.
template <class DF>
HWY_INLINE Lanes<DF> lane_nearbyint(Lanes<DF> x) {
  return hn::Round(x.v);
}

// NOTE [ Exact vector fmod ]
// std::fmod is exact, and reflection padding depends on its last bit, so the vector form must be
// exact too. The math calls it with x >= 0 (or NaN) and y a positive integer no larger than an
// input size (span). While x < 2^22 (float; 2^50 for double) and y <= 2^22, with
// q = floor(x / y) rounded: q is floor(x / y) or one more, q * y <= x + y < 2^23 is an exact
// integer, and r = x - q * y is exact (a multiple of ulp(x) no larger than max(x, y) in
// magnitude); if q was one too many, r + y is exact too. Other lanes (huge coordinates, NaN, Inf)
// are rare and take std::fmod lane by lane. fast.cpp only accepts sizes up to 2^22 (max_axis).
template <typename T>
constexpr T kExactFmodBound = sizeof(T) == 4 ? T(4194304.0) : T(1125899906842624.0);

template <class DF>
HWY_INLINE Lanes<DF> lane_fmod(Lanes<DF> x, Lanes<DF> y) {
  using T = hn::TFromD<DF>;
  const DF df;
  const auto fast = hn::Lt(x.v, hn::Set(df, kExactFmodBound<T>));
  if (HWY_LIKELY(hn::AllTrue(df, fast))) {
    const auto q = hn::Floor(hn::Div(x.v, y.v));
    const auto r = hn::Sub(x.v, hn::Mul(q, y.v));
    return hn::IfThenElse(hn::Lt(r, hn::Zero(df)), hn::Add(r, y.v), r);
  }
  constexpr size_t kMax = HWY_MAX_BYTES / sizeof(T);
  alignas(64) T xs[kMax], ys[kMax];
  hn::Store(x.v, df, xs);
  hn::Store(y.v, df, ys);
  for (size_t i = 0; i < hn::Lanes(df); ++i) xs[i] = std::fmod(xs[i], ys[i]);
  return hn::Load(df, xs);
}
