// The coordinate math of src/math/grid_math.h against independent formulas, bit for bit. cpu:ref
// evaluates this math on scalars and cpu:fast on vectors (NOTE [ Lane-generic math ]);
// tests/test_fast.cpp checks that the two agree, and this file that the scalar form is the math
// PyTorch writes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "math/grid_math.h"

namespace {

template <typename T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// PyTorch's reflect_coordinates (aten/src/ATen/native/GridSampler.h), the domain given by twice
// its ends: mirror lines 0 and s - 1 with align_corners, -0.5 and s - 0.5 without.
template <typename T>
T textbook_reflect(T in, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return T(0);
  const T min = T(twice_low) / 2;
  const T span = T(twice_high - twice_low) / 2;
  in = std::fabs(in - min);
  const T extra = std::fmod(in, span);
  const int flips = static_cast<int>(std::floor(in / span));
  return flips % 2 == 0 ? extra + min : span - extra + min;
}

// Values where the fold is delicate: the mirror lines and a few ulps either side of every
// multiple of the span up to 3 spans out, both signs, plus uniform values over that range.
template <typename T>
std::vector<T> reflect_probes(int64_t s, bool align, std::mt19937_64& rng) {
  const T lo = align ? T(0) : T(-0.5);
  const T span = T(align ? s - 1 : s);
  std::vector<T> v;
  for (int k = -3; k <= 3; ++k) {
    T x = lo + T(k) * span;
    for (int i = 0; i < 4; ++i) x = std::nextafter(x, T(-1e9));
    for (int i = 0; i < 9; ++i, x = std::nextafter(x, T(1e9))) v.push_back(x);
  }
  std::uniform_real_distribution<double> u(-3.0 * double(span), 3.0 * double(span));
  for (int i = 0; i < 2000; ++i) v.push_back(T(u(rng)));
  return v;
}

template <typename T>
void check_reflect() {
  std::mt19937_64 rng(7);
  for (int64_t s : {2, 3, 5, 16, 100, 1000, 4097}) {
    for (bool align : {false, true}) {
      for (T u : reflect_probes<T>(s, align, rng)) {
        T d = 0;
        const T got = gridsample::math::reflect_coord(u, s, align, &d);
        const T want =
            align ? textbook_reflect(u, 0, 2 * (s - 1)) : textbook_reflect(u, -1, 2 * s - 1);
        ASSERT_TRUE(same_bits(got, want))
            << "s " << s << " align " << align << " u " << u << ": " << got << " vs " << want;
        ASSERT_TRUE(d == T(1) || d == T(-1));
        // Without the inside-the-domain shortcut (NOTE [ Scattered reflection ]): the same bits.
        T d2 = 0;
        const T folded = gridsample::math::reflect_coord(u, s, align, &d2, false);
        ASSERT_TRUE(same_bits(folded, got) && d2 == d)
            << "s " << s << " align " << align << " u " << u << ": " << folded << " vs " << got;
      }
    }
  }
}

TEST(Math, ReflectionIsPyTorchsFoldFloat) { check_reflect<float>(); }
TEST(Math, ReflectionIsPyTorchsFoldDouble) { check_reflect<double>(); }

}  // namespace
