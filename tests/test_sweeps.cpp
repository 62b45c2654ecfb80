// Sweeps over interpolation x padding x alignCorners x 2D/3D, each with a few odd shapes, every
// dtype and every layout. Checks that need no second implementation:
// - layout invariance: channel-last, ND- and NC(D)HW-tagged tensors, and mixes of them, give
//   bit-identical results for the same logical data;
// - views: strided, permuted, offset and broadcast (stride 0) inputs, and strided outputs inside
//   bigger canary-filled buffers, give bit-identical results to contiguous copies and write
//   nothing outside the output views;
// - dtypes: FLOAT16/BF16 agree with FLOAT on the same (already rounded) data up to their final
//   rounding (SPEC §4.7), and DOUBLE agrees with FLOAT to FLOAT's precision.
// Every case derives its seed from its canonical problem string; both are printed on failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <tuple>

#include "support.h"

using namespace gstest;

namespace {

constexpr unsigned char kCanary = 0xCD;
const char* const kInterp[] = {"bilinear", "nearest", "bicubic"};
const char* const kPadding[] = {"zeros", "border", "reflection"};
const aclDataType kDtypes[] = {ACL_FLOAT16, ACL_BF16, ACL_FLOAT, ACL_DOUBLE};

// Logical shapes, spatial sizes outermost first (D, H, W).
struct Shape {
  int64_t N = 1, C = 1;
  std::vector<int64_t> in, out;

  int nd() const { return int(in.size()); }
  int64_t points() const { return prod(out); }
  std::vector<int64_t> in_dims() const { return cat({N, C}, in); }  // channel-first
  std::vector<int64_t> out_dims() const { return cat({N, C}, out); }
  std::vector<int64_t> grid_dims() const {
    auto d = cat({N}, out);
    d.push_back(nd());
    return d;
  }
  static int64_t prod(const std::vector<int64_t>& v) {
    return std::accumulate(v.begin(), v.end(), int64_t(1), std::multiplies<int64_t>());
  }
  static std::vector<int64_t> cat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
};

// Sizes drawn from {1, 2, 3, 5, 17}; each configuration takes two of these per dimensionality.
const std::vector<Shape>& shapes(int nd) {
  static const std::vector<Shape> s2 = {{1, 1, {1, 1}, {1, 1}},
                                        {2, 3, {5, 17}, {3, 2}},
                                        {1, 17, {3, 5}, {2, 3}},
                                        {3, 2, {17, 3}, {5, 5}},
                                        {2, 5, {2, 1}, {17, 1}}};
  static const std::vector<Shape> s3 = {{1, 3, {5, 3, 17}, {2, 3, 5}},
                                        {2, 2, {1, 17, 2}, {3, 1, 2}},
                                        {2, 1, {3, 2, 1}, {5, 1, 17}},
                                        {1, 5, {2, 5, 3}, {1, 2, 3}},
                                        {1, 1, {1, 1, 1}, {2, 2, 1}}};
  return nd == 2 ? s2 : s3;
}

struct Config {
  int nd;
  int64_t interp, padding;
  bool align;
  int index;  // position in the sweep, picks the shapes

  Modes modes() const { return {interp, padding, align}; }
  std::vector<Shape> picked() const {
    const auto& all = shapes(nd);
    return {all[size_t(index) % all.size()], all[size_t(index + 2) % all.size()]};
  }
};

std::string config_name(const Config& c) {
  return std::to_string(c.nd) + "d_" + kInterp[c.interp] + "_" + kPadding[c.padding] + "_ac" +
         (c.align ? "1" : "0");
}
void PrintTo(const Config& c, std::ostream* os) { *os << config_name(c); }

std::vector<Config> all_configs() {
  std::vector<Config> v;
  for (int nd : {2, 3})
    for (int64_t i : {0, 1, 2})
      for (int64_t p : {0, 1, 2})
        for (bool a : {false, true}) v.push_back({nd, i, p, a, int(v.size())});
  return v;
}

// ---------------------------------------------------------------------------------------------
// Layouts. Values are kept in logical channel-first order; a channel-last tensor holds the same
// logical element (n, c, spatial...) at view index (n, spatial..., c).
enum class Layout { ND, NC, CL };  // ND tag, NCHW/NCDHW tag, NHWC/NDHWC tag

const char* layout_name(Layout l, int nd) {
  switch (l) {
    case Layout::ND:
      return "nd";
    case Layout::NC:
      return nd == 3 ? "ncdhw" : "nchw";
    case Layout::CL:
      return nd == 3 ? "ndhwc" : "nhwc";
  }
  return "?";
}

aclFormat format_of(Layout l, int nd) {
  switch (l) {
    case Layout::NC:
      return nd == 3 ? ACL_FORMAT_NCDHW : ACL_FORMAT_NCHW;
    case Layout::CL:
      return nd == 3 ? ACL_FORMAT_NDHWC : ACL_FORMAT_NHWC;
    default:
      return ACL_FORMAT_ND;
  }
}

// View dims of a feature tensor with channel-first dims `cf`.
std::vector<int64_t> view_dims(const std::vector<int64_t>& cf, Layout l) {
  if (l != Layout::CL) return cf;
  std::vector<int64_t> v = {cf[0]};
  v.insert(v.end(), cf.begin() + 2, cf.end());
  v.push_back(cf[1]);
  return v;
}

// Flat view index of the channel-first flat index f.
int64_t view_index(const std::vector<int64_t>& cf, int64_t f, Layout l) {
  if (l != Layout::CL) return f;
  std::vector<int64_t> idx(cf.size());
  for (size_t d = cf.size(); d-- > 0;) {
    idx[d] = f % cf[d];
    f /= cf[d];
  }
  const std::vector<int64_t> vd = view_dims(cf, l), vi = view_dims(idx, l);
  int64_t r = 0;
  for (size_t d = 0; d < vd.size(); ++d) r = r * vd[d] + vi[d];
  return r;
}

void set_feature(HostTensor& t, const std::vector<int64_t>& cf, Layout l,
                 const std::vector<double>& v) {
  for (int64_t i = 0; i < int64_t(v.size()); ++i) t.set(view_index(cf, i, l), v[size_t(i)]);
}

std::vector<double> get_feature(const HostTensor& t, const std::vector<int64_t>& cf, Layout l) {
  std::vector<double> v(size_t(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[size_t(i)] = t.get(view_index(cf, i, l));
  return v;
}

// A view over fresh storage: `order` lists the view's dims from outermost to innermost in
// memory, each dim is padded by `pad` elements, and dims in `zero` get stride 0 (broadcast).
HostTensor make_view(const std::vector<int64_t>& dims, const std::vector<int>& order, int64_t pad,
                     int64_t offset, const std::vector<int>& zero, aclDataType t, aclFormat f) {
  std::vector<int64_t> strides(dims.size(), 0);
  int64_t s = 1;
  for (size_t i = order.size(); i-- > 0;) {
    const int d = order[i];
    if (std::find(zero.begin(), zero.end(), d) != zero.end()) continue;
    strides[size_t(d)] = s;
    s *= dims[size_t(d)] + pad;
  }
  return HostTensor::strided(dims, strides, offset, t, f);
}

std::vector<int> iota_order(size_t n) {
  std::vector<int> o(n);
  std::iota(o.begin(), o.end(), 0);
  return o;
}

// ---------------------------------------------------------------------------------------------
// Data and results, in logical order (features channel-first).
struct Data {
  std::vector<double> x, g, go;
};
struct Result {
  std::vector<double> out, ig, gg;
};

Data make_data(const Shape& s, aclDataType t, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Data d;
  d.x = uniform(rng, Shape::prod(s.in_dims()), -1, 1);
  d.g = uniform(rng, Shape::prod(s.grid_dims()), -1.2, 1.2);
  d.go = uniform(rng, Shape::prod(s.out_dims()), -1, 1);
  for (auto* v : {&d.x, &d.g, &d.go})
    for (double& e : *v) e = round_to(t, e);
  return d;
}

// Makes v (logical dims `dims`) constant along the dims in `bdims`, so that a stride-0 view
// and a contiguous copy hold the same logical data.
void broadcast_along(std::vector<double>& v, const std::vector<int64_t>& dims,
                     const std::vector<int>& bdims) {
  for (int64_t i = 0; i < int64_t(v.size()); ++i) {
    int64_t src = 0, rem = i, mul = 1;
    for (size_t d = dims.size(); d-- > 0;) {
      const int64_t c = rem % dims[d];
      rem /= dims[d];
      if (std::find(bdims.begin(), bdims.end(), int(d)) == bdims.end()) src += c * mul;
      mul *= dims[d];
    }
    v[size_t(i)] = v[size_t(src)];
  }
}

// Bit-identical, so that -0 and +0 (and NaN payloads) count as different.
::testing::AssertionResult same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size())
    return ::testing::AssertionFailure() << "sizes " << a.size() << " and " << b.size();
  int64_t bad = 0, first = -1;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(double)) != 0) {
      if (first < 0) first = int64_t(i);
      ++bad;
    }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << a.size() << " elements differ; first at " << first << ": "
         << a[size_t(first)] << " vs " << b[size_t(first)];
}

::testing::AssertionResult same_result(const Result& a, const Result& b) {
  for (auto [x, y, what] : {std::tuple{&a.out, &b.out, "out"},
                            {&a.ig, &b.ig, "inputGrad"},
                            {&a.gg, &b.gg, "gridGrad"}}) {
    auto r = same_bits(*x, *y);
    if (!r) return r << " (" << what << ")";
  }
  return ::testing::AssertionSuccess();
}

// No byte of t's storage outside its view differs from `before`.
::testing::AssertionResult untouched_outside_view(const HostTensor& t,
                                                  const std::vector<unsigned char>& before) {
  const std::vector<unsigned char> after = t.bytes();
  std::vector<bool> in_view(after.size(), false);
  const size_t base = size_t(t.base() - t.storage->data()), es = size_t(dtype_bytes(t.dtype));
  for (int64_t i = 0; i < t.numel(); ++i)
    for (size_t b = 0; b < es; ++b) in_view[base + size_t(t.elem_offset(i)) * es + b] = true;
  int64_t bad = 0;
  for (size_t i = 0; i < after.size(); ++i) bad += !in_view[i] && after[i] != before[i];
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " bytes outside the view were written";
}

// The tensors of one forward + backward run, any views.
struct Tensors {
  HostTensor x, g, go, out, ig, gg;
  Layout lx = Layout::ND, lgo = Layout::ND, lout = Layout::ND, lig = Layout::ND;
};

// Contiguous tensors with the given layouts (grid: ND tag for channel-first runs, else the
// channel-last tag, which a grid must ignore).
Tensors contiguous(const Shape& s, aclDataType t, Layout lx, Layout lgo, Layout lout, Layout lig) {
  const int nd = s.nd();
  Tensors r;
  r.lx = lx;
  r.lgo = lgo;
  r.lout = lout;
  r.lig = lig;
  r.x = HostTensor(view_dims(s.in_dims(), lx), t, format_of(lx, nd));
  r.g = HostTensor(s.grid_dims(), t, format_of(lx, nd));
  r.go = HostTensor(view_dims(s.out_dims(), lgo), t, format_of(lgo, nd));
  r.out = HostTensor(view_dims(s.out_dims(), lout), t, format_of(lout, nd));
  r.ig = HostTensor(view_dims(s.in_dims(), lig), t, format_of(lig, nd));
  r.gg = HostTensor(s.grid_dims(), t, format_of(lx, nd));
  return r;
}

// Fills inputs, canary-fills outputs, runs forward and backward, checks the canaries outside
// the output views and returns the results in logical order.
Result run(const Shape& s, Modes m, const Data& d, Tensors& t) {
  set_feature(t.x, s.in_dims(), t.lx, d.x);
  t.g.set_values(d.g);
  set_feature(t.go, s.out_dims(), t.lgo, d.go);
  for (HostTensor* o : {&t.out, &t.ig, &t.gg}) o->fill_bytes(kCanary);
  const auto out0 = t.out.bytes(), ig0 = t.ig.bytes(), gg0 = t.gg.bytes();
  EXPECT_EQ(forward(t.x, t.g, t.out, m), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_EQ(backward(t.go, t.x, t.g, &t.ig, &t.gg, m), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_TRUE(untouched_outside_view(t.out, out0)) << "out";
  EXPECT_TRUE(untouched_outside_view(t.ig, ig0)) << "inputGrad";
  EXPECT_TRUE(untouched_outside_view(t.gg, gg0)) << "gridGrad";
  return {get_feature(t.out, s.out_dims(), t.lout), get_feature(t.ig, s.in_dims(), t.lig),
          t.gg.values()};
}

Result run_contiguous(const Shape& s, Modes m, aclDataType t, const Data& d,
                      Layout l = Layout::ND) {
  Tensors ts = contiguous(s, t, l, l, l, l);
  return run(s, m, d, ts);
}

struct Ctx {
  std::string name;
  uint64_t seed;
};
Ctx context(const Shape& s, Modes m, aclDataType t, Layout l = Layout::ND) {
  std::string n = case_string(s.N, s.C, s.in, s.out, m, t, l == Layout::CL);
  if (l == Layout::ND) n = n.substr(0, n.rfind('_') + 1) + "nd";
  return {n, seed_of(n)};
}

class Sweep : public ::testing::TestWithParam<Config> {};

// ---------------------------------------------------------------------------------------------
TEST_P(Sweep, LayoutsAreBitIdentical) {
  const Config c = GetParam();
  const int nd = c.nd;
  for (const Shape& s : c.picked())
    for (aclDataType t : kDtypes) {
      const Ctx ctx = context(s, c.modes(), t);
      SCOPED_TRACE(ctx.name + " seed " + std::to_string(ctx.seed));
      const Data d = make_data(s, t, ctx.seed);
      const Result base = run_contiguous(s, c.modes(), t, d);
      for (Layout l : {Layout::NC, Layout::CL}) {
        SCOPED_TRACE(std::string("layout ") + layout_name(l, nd));
        EXPECT_TRUE(same_result(run_contiguous(s, c.modes(), t, d, l), base));
      }
      // Each feature tensor reads its own format tag (SPEC §2).
      for (auto [lx, lgo, lout, lig] : {std::tuple{Layout::CL, Layout::NC, Layout::ND, Layout::CL},
                                        {Layout::ND, Layout::CL, Layout::CL, Layout::NC}}) {
        SCOPED_TRACE(std::string("mixed: input ") + layout_name(lx, nd) + ", gradOutput " +
                     layout_name(lgo, nd) + ", out " + layout_name(lout, nd) + ", inputGrad " +
                     layout_name(lig, nd));
        Tensors ts = contiguous(s, t, lx, lgo, lout, lig);
        EXPECT_TRUE(same_result(run(s, c.modes(), d, ts), base));
      }
    }
}

// ---------------------------------------------------------------------------------------------
// Non-contiguous views against contiguous copies of the same logical data.
TEST_P(Sweep, ViewsMatchContiguousCopies) {
  const Config c = GetParam();
  const int nd = c.nd, rank = nd + 2;
  const Modes m = c.modes();
  // Feature dims in view order: 0 = N, 1 = C, 2.. spatial (channel-first) or 1.. spatial,
  // rank - 1 = C (channel-last). Grid: 0 = N, 1.. spatial, rank - 1 = component.
  std::vector<int> rev = iota_order(size_t(rank));  // N, C, then spatial innermost-first
  std::reverse(rev.begin() + 2, rev.end());
  std::vector<int> c_last = {0};  // channel-first view stored channel-last
  for (int i = 2; i < rank; ++i) c_last.push_back(i);
  c_last.push_back(1);
  std::vector<int> c_outer = iota_order(size_t(rank));  // C outermost, then N
  std::swap(c_outer[0], c_outer[1]);
  std::vector<int> k_outer = {rank - 1};  // grid component outermost
  for (int i = 0; i < rank - 1; ++i) k_outer.push_back(i);
  std::vector<int> k_mid = iota_order(size_t(rank));  // component right after N
  k_mid.erase(k_mid.end() - 1);
  k_mid.insert(k_mid.begin() + 1, rank - 1);
  const std::vector<int> plain = iota_order(size_t(rank));
  std::vector<int> cl_as_cf = {0, rank - 1};  // channel-last view stored channel-first
  for (int i = 1; i < rank - 1; ++i) cl_as_cf.push_back(i);

  struct Variant {
    const char* name;
    Layout l;  // of every feature tensor
    std::vector<int> ox, og, ogo, oout, oig, ogg;
    int64_t pad;
    std::vector<int> bx, bg, bgo;  // broadcast (stride-0) dims of the inputs, in view order
  };
  // Storage orders of input, grid, gradOutput, out, inputGrad, gridGrad; padding per dim;
  // broadcast dims of input, grid, gradOutput. On channel-last views the orders named for
  // channel-first ones are simply other permutations.
  // clang-format off
  const std::vector<Variant> variants = {
      {"permuted, padded, offset", Layout::ND,
       c_last, k_outer, rev, rev, c_outer, k_mid, 1, {}, {}, {}},
      {"channel-last tag, channel-first memory", Layout::CL,
       cl_as_cf, k_mid, c_outer, plain, rev, k_outer, 2, {}, {}, {}},
      {"broadcast N of input and grid, C of gradOutput", Layout::ND,
       plain, plain, plain, c_last, plain, plain, 1, {0}, {0}, {1}},
      {"broadcast C of input, a spatial dim of grid, N of gradOutput", Layout::CL,
       plain, rev, plain, plain, plain, plain, 0, {rank - 1}, {nd}, {0}},
  };
  // clang-format on

  for (const Shape& s : c.picked())
    for (aclDataType t : kDtypes) {
      const Ctx ctx = context(s, m, t);
      SCOPED_TRACE(ctx.name + " seed " + std::to_string(ctx.seed));
      for (const Variant& v : variants) {
        SCOPED_TRACE(v.name);
        // Broadcast dims are given in view order; the data is logical (channel-first).
        auto to_cf = [&](std::vector<int> dims) {
          if (v.l == Layout::CL)
            for (int& d : dims) d = d == 0 ? 0 : d == rank - 1 ? 1 : d + 1;
          return dims;
        };
        Data d = make_data(s, t, ctx.seed);
        broadcast_along(d.x, s.in_dims(), to_cf(v.bx));
        broadcast_along(d.g, s.grid_dims(), v.bg);
        broadcast_along(d.go, s.out_dims(), to_cf(v.bgo));
        const Result base = run_contiguous(s, m, t, d);

        const aclFormat f = format_of(v.l, nd);
        Tensors ts;
        ts.lx = ts.lgo = ts.lout = ts.lig = v.l;
        ts.x = make_view(view_dims(s.in_dims(), v.l), v.ox, v.pad, 3, v.bx, t, f);
        ts.g = make_view(s.grid_dims(), v.og, v.pad + 1, 5, v.bg, t, ACL_FORMAT_ND);
        ts.go = make_view(view_dims(s.out_dims(), v.l), v.ogo, v.pad, 7, v.bgo, t, f);
        ts.out = make_view(view_dims(s.out_dims(), v.l), v.oout, v.pad, 2, {}, t, f);
        ts.ig = make_view(view_dims(s.in_dims(), v.l), v.oig, v.pad + 1, 1, {}, t, f);
        ts.gg = make_view(s.grid_dims(), v.ogg, v.pad, 4, {}, t, ACL_FORMAT_ND);
        EXPECT_TRUE(same_result(run(s, m, d, ts), base));
      }
    }
}

// ---------------------------------------------------------------------------------------------
// Precision. 16-bit dtypes are computed in FLOAT and rounded once (SPEC §4.7), so against FLOAT
// on the same rounded data each output differs by its final rounding only: half an ulp, here
// bounded by one epsilon of the dtype relative to the output's largest magnitude. DOUBLE and
// FLOAT differ by FLOAT's rounding inside the computation.
//
// The scale is at least the size of one term of the output's sums: a result that cancels to
// rounding noise (bicubic weights sum to 1, so on a size-1 axis under border padding every
// gridGrad is 0 up to rounding) has no meaningful relative error.
double max_abs(const std::vector<double>& v) {
  double r = 0;
  for (double e : v) r = std::max(r, std::fabs(e));
  return r;
}

::testing::AssertionResult close(const std::vector<double>& got, const std::vector<double>& ref,
                                 double tol, double floor) {
  const double scale = std::max(max_abs(ref), floor);
  double err = 0;
  size_t at = 0;
  for (size_t i = 0; i < ref.size(); ++i)
    if (std::fabs(got[i] - ref[i]) > err) {
      err = std::fabs(got[i] - ref[i]);
      at = i;
    }
  if (err <= tol * scale) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "error " << err << " at " << at << " (" << got[at] << " vs " << ref[at] << ") exceeds "
         << tol << " x " << scale;
}

TEST_P(Sweep, DtypesAgree) {
  const Config c = GetParam();
  const Modes m = c.modes();
  for (const Shape& s : c.picked()) {
    double mult = 0;  // the largest du/dg (SPEC §4.1)
    for (int64_t sz : s.in) mult = std::max(mult, double(c.align ? sz - 1 : sz) / 2);
    for (aclDataType t : {ACL_FLOAT16, ACL_BF16, ACL_DOUBLE}) {
      const Ctx ctx = context(s, m, t);
      SCOPED_TRACE(ctx.name + " seed " + std::to_string(ctx.seed));
      // DOUBLE is compared on data rounded to FLOAT, so both see the same numbers.
      const Data d = make_data(s, t == ACL_DOUBLE ? ACL_FLOAT : t, ctx.seed);
      const Result ref = run_contiguous(s, m, ACL_FLOAT, d);
      const Result got = run_contiguous(s, m, t, d);
      const double tol = t == ACL_FLOAT16 ? std::ldexp(1.0, -10)
                         : t == ACL_BF16  ? std::ldexp(1.0, -7)
                                          : 1e-5;
      const double x = max_abs(d.x), go = max_abs(d.go);
      EXPECT_TRUE(close(got.out, ref.out, tol, x)) << "out";
      EXPECT_TRUE(close(got.ig, ref.ig, tol, go)) << "inputGrad";
      EXPECT_TRUE(close(got.gg, ref.gg, tol, mult * x * go)) << "gridGrad";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, Sweep, ::testing::ValuesIn(all_configs()),
                         [](const ::testing::TestParamInfo<Config>& i) {
                           return config_name(i.param);
                         });

}  // namespace
