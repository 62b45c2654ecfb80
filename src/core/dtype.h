// Element types: the four supported dtypes, their storage types and conversions.
#pragma once

#include <cstdint>
#include <cstring>

namespace gridsample {

enum class DType : int { Float32 = 0, Float16 = 1, Float64 = 11, BFloat16 = 27 };

// Storage types for the two 16-bit formats; arithmetic is done in float (SPEC §4.7).
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

inline float to_float(Half h) {
  const uint32_t sign = uint32_t(h.bits & 0x8000u) << 16;
  const uint32_t exp = (h.bits >> 10) & 0x1fu;
  uint32_t mant = h.bits & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal: normalize
    uint32_t e = 113;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mant & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round to nearest even, with overflow to infinity and NaN kept quiet.
inline Half to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return Half{uint16_t(sign | 0x7e00u)};
  if (ax >= 0x477ff000u) return Half{uint16_t(sign | 0x7c00u)};  // rounds to >= 65520: Inf
  if (ax < 0x38800000u) {                                        // below 2^-14: subnormal
    if (ax < 0x33000000u) return Half{sign};                     // below 2^-25: rounds to 0
    const uint32_t e = ax >> 23;
    const uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14..24
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return Half{uint16_t(sign | h)};
  }
  uint32_t h = ((ax >> 13) - (112u << 10));
  const uint32_t rem = ax & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return Half{uint16_t(sign | h)};
}

inline float to_float(BFloat16 b) {
  const uint32_t bits = uint32_t(b.bits) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline BFloat16 to_bfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return BFloat16{uint16_t((x >> 16) | 0x40u)};
  x += 0x7fffu + ((x >> 16) & 1u);
  return BFloat16{uint16_t(x >> 16)};
}

// Compute type and conversions per storage type.
template <typename S>
struct Elem;
template <>
struct Elem<float> {
  using Acc = float;
  static float load(float v) { return v; }
  static float store(float v) { return v; }
};
template <>
struct Elem<double> {
  using Acc = double;
  static double load(double v) { return v; }
  static double store(double v) { return v; }
};
template <>
struct Elem<Half> {
  using Acc = float;
  static float load(Half v) { return to_float(v); }
  static Half store(float v) { return to_half(v); }
};
template <>
struct Elem<BFloat16> {
  using Acc = float;
  static float load(BFloat16 v) { return to_float(v); }
  static BFloat16 store(float v) { return to_bfloat16(v); }
};

inline int dtype_size(DType t) {
  switch (t) {
    case DType::Float16:
    case DType::BFloat16:
      return 2;
    case DType::Float32:
      return 4;
    case DType::Float64:
      return 8;
  }
  return 0;
}

inline const char* dtype_tag(DType t) {
  switch (t) {
    case DType::Float16:
      return "f16";
    case DType::BFloat16:
      return "bf16";
    case DType::Float32:
      return "f32";
    case DType::Float64:
      return "f64";
  }
  return "?";
}

// Calls f(S{}) with the storage type of t.
template <typename F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::Float16:
      return f(Half{});
    case DType::BFloat16:
      return f(BFloat16{});
    case DType::Float64:
      return f(double{});
    case DType::Float32:
    default:
      return f(float{});
  }
}

}  // namespace gridsample
