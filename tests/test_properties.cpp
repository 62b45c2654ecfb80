// Properties of the operators that need no oracle: the grid gradient against finite differences
// of the forward, the input gradient as the adjoint of the forward, the identity grid, nearest
// rounding, non-finite coordinates (SPEC §4.6), empty work and outputMask. Mostly in DOUBLE,
// where the properties hold to near machine precision.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "support.h"

using namespace gstest;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr unsigned char kCanary = 0xCD;

// Logical shapes, spatial sizes outermost first (D, H, W), all tensors channel-first.
struct Shape {
  int64_t N = 1, C = 1;
  std::vector<int64_t> in, out;

  int nd() const { return int(in.size()); }
  int64_t points() const { return prod(out); }  // output points per batch
  // Input size along grid component a (component 0 is x, which indexes the innermost dim W).
  int64_t axis_size(int a) const { return in[size_t(nd() - 1 - a)]; }
  std::vector<int64_t> in_dims() const { return cat({N, C}, in); }
  std::vector<int64_t> out_dims() const { return cat({N, C}, out); }
  std::vector<int64_t> grid_dims() const {
    auto d = cat({N}, out);
    d.push_back(nd());
    return d;
  }
  int64_t in_numel() const { return N * C * prod(in); }
  int64_t out_numel() const { return N * C * points(); }
  int64_t grid_numel() const { return N * points() * nd(); }

  static int64_t prod(const std::vector<int64_t>& v) {
    return std::accumulate(v.begin(), v.end(), int64_t(1), std::multiplies<int64_t>());
  }
  static std::vector<int64_t> cat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
};

std::string name(const Shape& s, Modes m, aclDataType t = ACL_DOUBLE) {
  return case_string(s.N, s.C, s.in, s.out, m, t, false);
}

struct Grads {
  std::vector<double> ig, gg;
};

// Runs the operators on contiguous channel-first tensors of dtype t. Outputs start as canaries so
// that an element the operator forgot to write shows up.
std::vector<double> run_forward(const Shape& s, Modes m, const std::vector<double>& x,
                                const std::vector<double>& g, aclDataType t = ACL_DOUBLE) {
  HostTensor in(s.in_dims(), t), grid(s.grid_dims(), t), out(s.out_dims(), t);
  in.set_values(x);
  grid.set_values(g);
  out.fill_bytes(kCanary);
  EXPECT_EQ(forward(in, grid, out, m), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  return out.values();
}

Grads run_backward(const Shape& s, Modes m, const std::vector<double>& go,
                   const std::vector<double>& x, const std::vector<double>& g,
                   aclDataType t = ACL_DOUBLE) {
  HostTensor gout(s.out_dims(), t), in(s.in_dims(), t), grid(s.grid_dims(), t), ig(s.in_dims(), t),
      gg(s.grid_dims(), t);
  gout.set_values(go);
  in.set_values(x);
  grid.set_values(g);
  ig.fill_bytes(kCanary);
  gg.fill_bytes(kCanary);
  EXPECT_EQ(backward(gout, in, grid, &ig, &gg, m), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  return {ig.values(), gg.values()};
}

// SPEC §4.1, in double.
double unnormalize(double g, int64_t s, bool align) {
  return align ? ((g + 1) / 2) * double(s - 1) : ((g + 1) * double(s) - 1) / 2;
}

// A grid value whose unnormalized coordinate is at least `gap` from every integer and
// half-integer. Every kink of the sampled function lies on such a point: corners change at
// integers, the border clamp acts at 0 and s - 1, and the reflection lines (-0.5 + k s, or
// k (s - 1)) map integers to integers. With s = 1 and alignCorners the coordinate is constant.
double smooth_grid_value(std::mt19937_64& rng, double lo, double hi, int64_t s, bool align) {
  std::uniform_real_distribution<double> d(lo, hi);
  for (;;) {
    const double g = d(rng);
    if (s == 1 && align) return g;
    const double u = unnormalize(g, s, align);
    if (std::fabs(u - std::nearbyint(2 * u) / 2) > 1e-3) return g;
  }
}

double grid_range(int64_t padding) { return padding == 2 ? 3.5 : padding == 1 ? 1.6 : 1.3; }

// Two shapes per dimensionality, with a size-1 axis in one of them.
std::vector<Shape> shapes(int nd) {
  if (nd == 2) return {{2, 3, {4, 5}, {3, 4}}, {1, 2, {1, 7}, {2, 5}}};
  return {{1, 2, {3, 4, 5}, {2, 2, 3}}, {2, 1, {2, 1, 3}, {1, 3, 2}}};
}

// ---------------------------------------------------------------------------------------------
// gridGrad against central differences of L(grid) = <forward(input, grid), gradOutput>.
// Each output point depends on its own grid point only, so perturbing one component of every
// point at once and reading each point's share of L gives every partial derivative with two
// forward calls per axis.
TEST(Properties, GridGradMatchesFiniteDifferences) {
  const double h = 1e-6;
  for (int nd : {2, 3})
    for (int64_t interp : {0, 2})
      for (int64_t padding : {0, 1, 2})
        for (bool align : {false, true})
          for (const Shape& s : shapes(nd)) {
            const Modes m{interp, padding, align};
            const std::string c = name(s, m);
            const uint64_t seed = seed_of(c);
            SCOPED_TRACE(c + " seed " + std::to_string(seed));
            std::mt19937_64 rng(seed);
            const auto x = uniform(rng, s.in_numel(), -1, 1);
            const auto go = uniform(rng, s.out_numel(), -1, 1);
            std::vector<double> g(size_t(s.grid_numel()));
            const double r = grid_range(padding);
            for (size_t i = 0; i < g.size(); ++i)
              g[i] = smooth_grid_value(rng, -r, r, s.axis_size(int(i % size_t(nd))), align);

            const Grads an = run_backward(s, m, go, x, g);
            std::vector<double> fd(g.size());
            for (int a = 0; a < nd; ++a) {
              auto gp = g, gm = g;
              for (int64_t p = 0; p < s.N * s.points(); ++p) {
                gp[size_t(p * nd + a)] += h;
                gm[size_t(p * nd + a)] -= h;
              }
              const auto op = run_forward(s, m, x, gp), om = run_forward(s, m, x, gm);
              for (int64_t n = 0; n < s.N; ++n)
                for (int64_t o = 0; o < s.points(); ++o) {
                  double dl = 0;
                  for (int64_t ch = 0; ch < s.C; ++ch) {
                    const size_t k = size_t((n * s.C + ch) * s.points() + o);
                    dl += go[k] * (op[k] - om[k]);
                  }
                  const size_t gi = size_t((n * s.points() + o) * nd + a);
                  fd[gi] = dl / (gp[gi] - gm[gi]);
                }
            }
            double scale = 0;
            for (double v : an.gg) scale = std::max(scale, std::fabs(v));
            EXPECT_GT(scale, 0) << "no point has a gradient; the check would be vacuous";
            EXPECT_LE(rel_max_err(an.gg, fd), 1e-6);
          }
}

// ---------------------------------------------------------------------------------------------
// inputGrad is the adjoint of the forward in the input: <F(x), g> == <x, F*(g)>. The error is
// measured against the sum of the absolute terms, the natural scale of a dot product's rounding.
TEST(Properties, InputGradIsAdjointOfForward) {
  for (int nd : {2, 3})
    for (int64_t interp : {0, 1, 2})
      for (int64_t padding : {0, 1, 2})
        for (bool align : {false, true})
          for (const Shape& s : shapes(nd)) {
            const Modes m{interp, padding, align};
            const std::string c = name(s, m);
            const uint64_t seed = seed_of(c);
            SCOPED_TRACE(c + " seed " + std::to_string(seed));
            std::mt19937_64 rng(seed);
            const auto x = uniform(rng, s.in_numel(), -1, 1);
            const auto go = uniform(rng, s.out_numel(), -1, 1);
            const double r = grid_range(padding);
            const auto g = uniform(rng, s.grid_numel(), -r, r);
            const auto out = run_forward(s, m, x, g);
            const auto ig = run_backward(s, m, go, x, g).ig;
            double lhs = 0, rhs = 0, scale = 0;
            for (size_t i = 0; i < out.size(); ++i) {
              lhs += out[i] * go[i];
              scale += std::fabs(out[i] * go[i]);
            }
            for (size_t i = 0; i < x.size(); ++i) {
              rhs += x[i] * ig[i];
              scale += std::fabs(x[i] * ig[i]);
            }
            EXPECT_GT(scale, 0) << "nothing was sampled; the check would be vacuous";
            EXPECT_LE(std::fabs(lhs - rhs), 1e-12 * scale) << "lhs " << lhs << " rhs " << rhs;
          }
}

// ---------------------------------------------------------------------------------------------
// The affine identity grid (PyTorch's affine_grid with the identity matrix) samples every voxel
// at its centre. Sizes whose grid values and coordinates are exact in binary (s - 1 a power of
// two with alignCorners, s a power of two without) reproduce the input exactly in every dtype;
// other sizes reproduce it up to the rounding of the coordinates.
std::vector<double> identity_grid(const Shape& s, bool align) {
  const int nd = s.nd();
  std::vector<double> g;
  g.reserve(size_t(s.grid_numel()));
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t o = 0; o < s.points(); ++o) {
      std::vector<int64_t> idx(static_cast<size_t>(nd));  // outermost first
      for (int64_t r = o, d = nd - 1; d >= 0; --d) {
        idx[size_t(d)] = r % s.out[size_t(d)];
        r /= s.out[size_t(d)];
      }
      for (int a = 0; a < nd; ++a) {
        const double i = double(idx[size_t(nd - 1 - a)]), sz = double(s.axis_size(a));
        if (align)
          g.push_back(sz == 1 ? 0.0 : -1 + 2 * i / (sz - 1));
        else
          g.push_back((2 * i + 1) / sz - 1);
      }
    }
  return g;
}

TEST(Properties, IdentityGridReproducesInput) {
  struct Sizes {
    std::vector<int64_t> in;
    bool align;
    bool exact;
  };
  const std::vector<Sizes> all = {
      {{3, 5}, true, true},      {{2, 17}, true, true},   {{1, 4}, false, true},
      {{8, 2}, false, true},     {{3, 9, 5}, true, true}, {{4, 1, 2}, false, true},
      {{4, 7}, true, false},     {{3, 6}, false, false},  {{6, 3, 7}, true, false},
      {{5, 3, 7}, false, false},
  };
  for (const Sizes& z : all)
    for (int64_t interp : {0, 1, 2})
      for (int64_t padding : {0, 1, 2})
        for (aclDataType t : {ACL_DOUBLE, ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
          if (!z.exact && t != ACL_DOUBLE) continue;
          const Shape s{2, 2, z.in, z.in};
          const Modes m{interp, padding, z.align};
          const std::string c = name(s, m, t);
          const uint64_t seed = seed_of(c);
          SCOPED_TRACE(c + " seed " + std::to_string(seed));
          std::mt19937_64 rng(seed);
          auto x = uniform(rng, s.in_numel(), -4, 4);
          for (double& v : x) v = round_to(t, v);
          const auto out = run_forward(s, m, x, identity_grid(s, z.align), t);
          if (z.exact || interp == 1)
            EXPECT_EQ(out, x);
          else
            EXPECT_LE(rel_max_err(out, x), 1e-12);
        }
}

// ---------------------------------------------------------------------------------------------
// Nearest: the grid gradient is exactly zero (SPEC §4.4), whatever the padding.
TEST(Properties, NearestGridGradIsZero) {
  for (int nd : {2, 3})
    for (int64_t padding : {0, 1, 2})
      for (bool align : {false, true})
        for (const Shape& s : shapes(nd)) {
          const Modes m{1, padding, align};
          const std::string c = name(s, m);
          const uint64_t seed = seed_of(c);
          SCOPED_TRACE(c + " seed " + std::to_string(seed));
          std::mt19937_64 rng(seed);
          const auto gg =
              run_backward(s, m, uniform(rng, s.out_numel(), -1, 1),
                           uniform(rng, s.in_numel(), -1, 1), uniform(rng, s.grid_numel(), -3, 3))
                  .gg;
          EXPECT_EQ(gg, std::vector<double>(gg.size(), 0.0));
        }
}

// Nearest rounds half to even (nearbyint), on every axis. Along an axis of size 4 without
// alignCorners, u = 2 g + 1.5, so g = -1, -0.5, 0, 0.5, 1 give u = -0.5, 0.5, 1.5, 2.5, 3.5:
// indices 0 (-0), 0, 2, 2 and 4 (out of bounds; clamped to 3 under border padding).
TEST(Properties, NearestRoundsHalfToEven) {
  const std::vector<double> xs = {-1, -0.5, 0, 0.5, 1};
  for (int nd : {2, 3})
    for (int axis = 0; axis < nd; ++axis)
      for (int64_t padding : {0, 1})
        for (aclDataType t : {ACL_DOUBLE, ACL_FLOAT}) {
          Shape s{1, 1, std::vector<int64_t>(size_t(nd), 1), std::vector<int64_t>(size_t(nd), 1)};
          s.in[size_t(nd - 1 - axis)] = 4;
          s.out[size_t(nd - 1)] = 5;
          const Modes m{1, padding, false};
          SCOPED_TRACE(name(s, m, t) + " axis " + std::to_string(axis));
          std::vector<double> g(size_t(5 * nd), 0.0);  // other axes: u = 0 on a size-1 axis
          for (size_t p = 0; p < 5; ++p) g[p * size_t(nd) + size_t(axis)] = xs[p];
          const std::vector<double> x = {10, 20, 30, 40};
          const double last = padding == 1 ? 40 : 0;
          EXPECT_EQ(run_forward(s, m, x, g, t), (std::vector<double>{10, 10, 30, 30, last}));
          const Grads gr = run_backward(s, m, {1, 2, 4, 8, 16}, x, g, t);
          EXPECT_EQ(gr.ig, (std::vector<double>{3, 0, 12, padding == 1 ? 16.0 : 0.0}));
        }
}

// ---------------------------------------------------------------------------------------------
// SPEC §4.6: a coordinate that is NaN or infinite after unnormalizing and padding, or too large
// for a 64-bit index, samples nothing. What that means per mode, for the special grid values
// below, is derived here from the SPEC's formulas (not from the library):
// - bicubic and zeros padding do not bring a coordinate back: the point samples nothing;
// - border clamps +-Inf and +-1e300 to an end, exactly like any value beyond it (+-3), with a
//   zero derivative; NaN stays NaN;
// - reflection: fmod(Inf, span) is NaN, but +-1e300 reflects to a finite coordinate; the sizes
//   are chosen with a power-of-two span, so that coordinate is exactly the first mirror line,
//   as for g = -1 (1e300 is a multiple of a large power of two);
// - a size-1 axis with alignCorners has u = g * 0: NaN for NaN and +-Inf, 0 for 1e300; and
//   reflection maps any u to 0 there (span 0), NaN included, as PyTorch does.
// Returns false when the point samples nothing, else the finite grid value with the same effect.
bool equivalent(double v, Modes m, int64_t s, double* eq) {
  const bool degenerate = s == 1 && m.align;
  if (std::isnan(v) || std::isinf(v)) {
    if (degenerate && m.interp != 2 && m.padding == 2) {
      *eq = 0;
      return true;
    }
    if (m.interp == 2 || m.padding != 1 || std::isnan(v) || degenerate) return false;
    *eq = v > 0 ? 3 : -3;
    return true;
  }
  if (degenerate) {
    *eq = 0;
    return true;
  }
  if (m.interp == 2 || m.padding == 0) return false;
  *eq = m.padding == 1 ? (v > 0 ? 3 : -3) : -1;
  return true;
}

TEST(Properties, NonFiniteAndHugeCoordinatesSampleNothing) {
  // Sizes: s - 1 a power of two with alignCorners, s a power of two without, and a size-1 axis.
  auto shape = [](int nd, bool align) {
    if (nd == 2) return align ? Shape{2, 2, {1, 5}, {4, 5}} : Shape{2, 2, {4, 1}, {4, 5}};
    return align ? Shape{1, 2, {3, 1, 5}, {2, 3, 4}} : Shape{1, 2, {2, 4, 1}, {2, 3, 4}};
  };
  const double specials[] = {kNaN, kInf, -kInf, 1e300, -1e300};
  for (aclDataType t : {ACL_DOUBLE, ACL_FLOAT})
    for (int nd : {2, 3})
      for (int64_t interp : {0, 1, 2})
        for (int64_t padding : {0, 1, 2})
          for (bool align : {false, true}) {
            const Shape s = shape(nd, align);
            const Modes m{interp, padding, align};
            const std::string c = name(s, m, t);
            const uint64_t seed = seed_of(c);
            SCOPED_TRACE(c + " seed " + std::to_string(seed));
            std::mt19937_64 rng(seed);
            const auto x = uniform(rng, s.in_numel(), -1, 1);
            const auto go = uniform(rng, s.out_numel(), -1, 1);
            auto g = uniform(rng, s.grid_numel(), -1.2, 1.2);
            for (double& v : g) v = round_to(t, v);
            // Every other point gets a special value, cycling through values and axes; every
            // sixth gets a second one on the next axis.
            auto g_eq = g, go_eq = go;
            std::vector<bool> nothing(size_t(s.N * s.points()), false);
            for (size_t p = 0; p < nothing.size(); p += 2) {
              const size_t k = p / 2;
              for (size_t j = 0; j < (p % 6 == 0 ? 2u : 1u); ++j) {
                const size_t a = (k / 5 + j) % size_t(nd);
                const double v = round_to(t, specials[(k + j) % 5]);  // 1e300 is Inf in FLOAT
                g[p * size_t(nd) + a] = v;
                double e;
                if (equivalent(v, m, s.axis_size(int(a)), &e))
                  g_eq[p * size_t(nd) + a] = e;
                else
                  nothing[p] = true;
              }
            }
            // A point that samples nothing is compared with one whose gradient is zero.
            for (size_t p = 0; p < nothing.size(); ++p) {
              if (!nothing[p]) continue;
              for (int a = 0; a < nd; ++a) g_eq[p * size_t(nd) + size_t(a)] = 0;
              const int64_t n = int64_t(p) / s.points(), o = int64_t(p) % s.points();
              for (int64_t ch = 0; ch < s.C; ++ch)
                go_eq[size_t((n * s.C + ch) * s.points() + o)] = 0;
            }
            const auto out = run_forward(s, m, x, g, t), out_eq = run_forward(s, m, x, g_eq, t);
            const Grads gr = run_backward(s, m, go, x, g, t),
                        gr_eq = run_backward(s, m, go_eq, x, g_eq, t);
            EXPECT_EQ(gr.ig, gr_eq.ig);
            for (size_t p = 0; p < nothing.size(); ++p) {
              SCOPED_TRACE("point " + std::to_string(p) + (nothing[p] ? " (samples nothing)" : ""));
              const int64_t n = int64_t(p) / s.points(), o = int64_t(p) % s.points();
              for (int64_t ch = 0; ch < s.C; ++ch) {
                const size_t k = size_t((n * s.C + ch) * s.points() + o);
                EXPECT_EQ(out[k], nothing[p] ? 0.0 : out_eq[k]) << "channel " << ch;
              }
              for (int a = 0; a < nd; ++a) {
                const size_t k = p * size_t(nd) + size_t(a);
                EXPECT_EQ(gr.gg[k], nothing[p] ? 0.0 : gr_eq.gg[k]) << "component " << a;
              }
            }
          }
}

// ---------------------------------------------------------------------------------------------
// Empty work succeeds (SPEC §2): a requested inputGrad is zero-filled, gridGrad is written.
TEST(Properties, EmptyWork) {
  for (int nd : {2, 3})
    for (int64_t interp : {0, 1, 2})
      for (aclDataType t : {ACL_DOUBLE, ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
        const std::vector<int64_t> in =
            nd == 2 ? std::vector<int64_t>{3, 4} : std::vector<int64_t>{2, 3, 4};
        const std::vector<int64_t> out =
            nd == 2 ? std::vector<int64_t>{2, 3} : std::vector<int64_t>{2, 1, 3};
        auto no_points = out;
        no_points[0] = 0;
        for (const Shape& s :
             {Shape{0, 2, in, out}, Shape{2, 0, in, out}, Shape{2, 3, in, no_points}}) {
          const Modes m{interp, 0, false};
          SCOPED_TRACE(name(s, m, t));
          HostTensor x(s.in_dims(), t), grid(s.grid_dims(), t), o(s.out_dims(), t),
              ig(s.in_dims(), t), gg(s.grid_dims(), t);
          x.fill(1);
          grid.fill(0.25);
          o.fill(1);
          EXPECT_EQ(forward(x, grid, o, m), ACLNN_SUCCESS) << aclGetRecentErrMsg();
          ig.fill_bytes(kCanary);
          gg.fill_bytes(kCanary);
          ASSERT_EQ(backward(o, x, grid, &ig, &gg, m), ACLNN_SUCCESS) << aclGetRecentErrMsg();
          EXPECT_EQ(ig.values(), std::vector<double>(size_t(ig.numel()), 0.0));
          EXPECT_EQ(gg.values(), std::vector<double>(size_t(gg.numel()), 0.0));
        }
      }
}

// ---------------------------------------------------------------------------------------------
// outputMask: an unrequested output is not touched (canaries stay) and may be null; a requested
// one equals the result with the full mask.
TEST(Properties, OutputMask) {
  for (int nd : {2, 3})
    for (int64_t interp : {0, 1, 2})
      for (aclDataType t : {ACL_DOUBLE, ACL_FLOAT16})
        for (const Shape& s : shapes(nd)) {
          const Modes m{interp, 2, true};
          const std::string c = name(s, m, t);
          const uint64_t seed = seed_of(c);
          SCOPED_TRACE(c + " seed " + std::to_string(seed));
          std::mt19937_64 rng(seed);
          HostTensor go(s.out_dims(), t), x(s.in_dims(), t), grid(s.grid_dims(), t);
          go.set_values(uniform(rng, s.out_numel(), -1, 1));
          x.set_values(uniform(rng, s.in_numel(), -1, 1));
          grid.set_values(uniform(rng, s.grid_numel(), -1.2, 1.2));
          const Grads full = run_backward(s, m, go.values(), x.values(), grid.values(), t);
          for (bool null_unrequested : {false, true})
            for (auto [mi, mg] : {std::pair{true, false}, {false, true}, {false, false}}) {
              SCOPED_TRACE(std::string("mask {") + (mi ? "true" : "false") + ", " +
                           (mg ? "true" : "false") + "}" + (null_unrequested ? " null" : ""));
              HostTensor ig(s.in_dims(), t), gg(s.grid_dims(), t);
              ig.fill_bytes(kCanary);
              gg.fill_bytes(kCanary);
              const auto ig0 = ig.bytes(), gg0 = gg.bytes();
              const HostTensor* pig = mi || !null_unrequested ? &ig : nullptr;
              const HostTensor* pgg = mg || !null_unrequested ? &gg : nullptr;
              ASSERT_EQ(backward(go, x, grid, pig, pgg, m, mi, mg), ACLNN_SUCCESS)
                  << aclGetRecentErrMsg();
              if (mi)
                EXPECT_EQ(ig.values(), full.ig);
              else
                EXPECT_TRUE(ig.bytes() == ig0) << "unrequested inputGrad was written";
              if (mg)
                EXPECT_EQ(gg.values(), full.gg);
              else
                EXPECT_TRUE(gg.bytes() == gg0) << "unrequested gridGrad was written";
            }
        }
}

}  // namespace
