// Element values of host buffers in the four dtypes, as doubles, for the tests (support.cpp) and
// the fuzzers (fuzz/). The FLOAT16/BF16 conversions are the test side's own, written
// independently of the library's (through double arithmetic), so that a bug there cannot hide
// the same bug in the library.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "acl/acl_base.h"

namespace gstest {

inline float half_to_float(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const float v = e == 0    ? std::ldexp(float(m), -24)
                  : e == 31 ? (m ? NAN : INFINITY)
                            : std::ldexp(float(m | 0x400), e - 25);
  return (h & 0x8000) ? -v : v;
}

// Round to nearest even, through double (every float is exact there).
inline uint16_t float_to_half(float f) {
  if (std::isnan(f)) return 0x7e00;
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(double(f));
  if (a >= 65520.0) return sign | 0x7c00;
  int e;
  std::frexp(a, &e);                    // a = m * 2^e, m in [0.5, 1)
  const int q = std::max(e - 11, -24);  // quantum exponent: 11 significant bits, min 2^-24
  const double r = std::ldexp(std::nearbyint(std::ldexp(a, -q)), q);  // round half to even
  if (r == 0) return sign;
  int re;
  std::frexp(r, &re);
  if (re - 1 < -14) return sign | uint16_t(std::ldexp(r, 24));  // subnormal
  const uint16_t exp = uint16_t(re - 1 + 15);
  const uint16_t mant = uint16_t(std::ldexp(r, 11 - re) - 1024);
  return sign | uint16_t(exp << 10) | mant;
}

inline float bf16_to_float(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint16_t float_to_bf16(float f) {
  if (std::isnan(f)) return 0x7fc0;
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t lower = u & 0xffffu, upper = u >> 16;
  return uint16_t(upper + (lower > 0x8000u || (lower == 0x8000u && (upper & 1u))));
}

// v as a float; a finite v beyond float's range becomes +-Inf (the plain conversion is undefined
// there, and UBSan's float-cast-overflow says so).
inline float to_float(double v) {
  if (std::isfinite(v) && std::fabs(v) > 3.4028234663852886e38) return v > 0 ? INFINITY : -INFINITY;
  return float(v);
}

// The element of type t at p.
inline double to_double(aclDataType t, const void* p) {
  switch (t) {
    case ACL_FLOAT16:
    case ACL_BF16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return t == ACL_FLOAT16 ? half_to_float(h) : bf16_to_float(h);
    }
    case ACL_DOUBLE: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
    default: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
  }
}

// Stores v, rounded to type t, at p.
inline void from_double(aclDataType t, double v, void* p) {
  switch (t) {
    case ACL_FLOAT16:
    case ACL_BF16: {
      const float f = to_float(v);
      const uint16_t h = t == ACL_FLOAT16 ? float_to_half(f) : float_to_bf16(f);
      std::memcpy(p, &h, 2);
      break;
    }
    case ACL_DOUBLE:
      std::memcpy(p, &v, 8);
      break;
    default: {
      const float f = to_float(v);
      std::memcpy(p, &f, 4);
    }
  }
}

// The gridGrad error floor (NOTE [ gridGrad tolerance ] in support.h): a tenth of the size of the
// terms a gridGrad element sums, C * max|input| * max|gradOutput| * the largest unnormalization
// factor over the input sizes `sizes[0..nd)`.
inline double grid_grad_floor(int64_t C, double amax_in, double amax_go, const int64_t* sizes,
                              int nd, bool align_corners) {
  double m_max = 0;
  for (int i = 0; i < nd; ++i)
    m_max = std::max(m_max, align_corners ? double(sizes[i] - 1) / 2 : double(sizes[i]) / 2);
  return 0.1 * double(C) * amax_in * amax_go * m_max;
}

}  // namespace gstest
