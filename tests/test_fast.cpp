// cpu:fast against cpu:ref, chosen with GRIDSAMPLE_IMPL (NOTE [ Forcing an implementation ]),
// once per SIMD target this CPU can run (the Highway way: every compiled path that the host
// supports is tested), and the determinism of cpu:fast across thread counts and runs.
//
// Sweeps: 2D/3D x interpolation x padding x alignCorners (one test each), and inside each test
// every dtype x {channel-first, channel-last} x {contiguous, padded strides with offsets, a
// broadcast input and, in half the cases, a flipped input (negative stride)} x two shapes with
// odd sizes. Grids reach past the borders and include exact
// corners, ties for nearest, NaN, +-Inf and huge values.
//
// Expected agreement (NOTE [ Fast kernel layouts ] in src/cpu/fast_kernels.cpp): out and
// inputGrad bit-identical to cpu:ref (NaN matching NaN), in every layout, dtype and SIMD target;
// gridGrad within NOTE [ gridGrad tolerance ] (tests/support.h).
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <string>
#include <thread>

#include "gridsample/gridsample.h"
#include "support.h"

using namespace gstest;

namespace {

const char* const kInterp[] = {"bilinear", "nearest", "bicubic"};
const char* const kPadding[] = {"zeros", "border", "reflection"};
const aclDataType kDtypes[] = {ACL_FLOAT, ACL_DOUBLE, ACL_FLOAT16, ACL_BF16};

const char* dtype_tag(aclDataType t) {
  switch (t) {
    case ACL_FLOAT16:
      return "f16";
    case ACL_BF16:
      return "bf16";
    case ACL_DOUBLE:
      return "f64";
    default:
      return "f32";
  }
}

// Sets GRIDSAMPLE_IMPL for the lifetime of the object.
class ForceImpl {
 public:
  explicit ForceImpl(const char* name) { setenv("GRIDSAMPLE_IMPL", name, 1); }
  ~ForceImpl() { unsetenv("GRIDSAMPLE_IMPL"); }
  ForceImpl(const ForceImpl&) = delete;
  ForceImpl& operator=(const ForceImpl&) = delete;
};

// The SIMD targets to test: those this CPU supports among the ones the library compiles
// (HWY_TARGETS here sees the library's HWY_DISABLED_TARGETS, set for both in CMake).
std::vector<int64_t> targets() {
  std::vector<int64_t> t;
  const int64_t supported = hwy::SupportedTargets();
  for (int i = 0; i < 63; ++i) {
    const int64_t bit = int64_t(1) << i;
    if ((bit & HWY_TARGETS & supported) != 0) t.push_back(bit);
  }
  return t;
}

// Runs f once per target, with dispatch restricted to that target.
void for_each_target(const std::function<void(const std::string&)>& f) {
  for (int64_t t : targets()) {
    hwy::SetSupportedTargetsForTest(t);
    f(hwy::TargetName(t));
  }
  hwy::SetSupportedTargetsForTest(0);
}

struct Case {
  int nd = 3;
  int64_t N = 1, C = 1;
  std::vector<int64_t> in, out;  // spatial sizes, outermost first
  Modes m;
  aclDataType dt = ACL_FLOAT;
  bool channel_last = false;
  bool strided = false;
  bool flip = false;         // strided only: the input's outermost spatial dim runs backwards
  bool rows_padded = false;  // strided only: the two innermost dims contiguous, the others padded
  bool overlap = false;      // the input's channel and x strides both 1: overlapping windows
  bool coherent = false;     // a warped identity grid instead of random values
  double amp = 0.7;          // coherent only: the displacement's amplitude in input voxels
  uint64_t seed = 1;

  std::string name() const {
    std::string s = std::to_string(nd) + "d_n" + std::to_string(N) + "c" + std::to_string(C) + "_i";
    for (size_t i = 0; i < in.size(); ++i) s += (i ? "x" : "") + std::to_string(in[i]);
    s += "_o";
    for (size_t i = 0; i < out.size(); ++i) s += (i ? "x" : "") + std::to_string(out[i]);
    s += std::string("_") + kInterp[m.interp] + "_" + kPadding[m.padding] + "_ac" +
         (m.align ? "1" : "0") + "_" + dtype_tag(dt) + (channel_last ? "_cl" : "_cf") +
         (strided ? "_strided" : "") + (flip ? "_flip" : "") + (overlap ? "_overlap" : "");
    return s + " seed " + std::to_string(seed);
  }
  // View dims of a feature tensor with `sp` spatial sizes.
  std::vector<int64_t> feature(const std::vector<int64_t>& sp) const {
    std::vector<int64_t> d = {N};
    if (!channel_last) d.push_back(C);
    d.insert(d.end(), sp.begin(), sp.end());
    if (channel_last) d.push_back(C);
    return d;
  }
  std::vector<int64_t> grid() const {
    std::vector<int64_t> d = {N};
    d.insert(d.end(), out.begin(), out.end());
    d.push_back(nd);
    return d;
  }
  aclFormat format() const {
    if (channel_last) return nd == 3 ? ACL_FORMAT_NDHWC : ACL_FORMAT_NHWC;
    return nd == 3 ? ACL_FORMAT_NCDHW : ACL_FORMAT_NCHW;
  }
};

// A tensor of the given view dims: contiguous, or with every dim padded and an offset; with
// `broadcast`, the batch dim of a strided view gets stride 0, and with `flip` the outermost
// spatial dim runs backwards (a negative stride, as PyTorch's flip; inputs only). With
// `overlap` (inputs only), channel c of column x is the element of column x + c: windows of
// W + C - 1 elements, the channel and x strides both 1, as an as_strided view gives.
HostTensor make(const Case& c, const std::vector<int64_t>& dims, aclFormat f, int salt,
                bool broadcast = false, bool flip = false, bool overlap = false) {
  if (overlap) {
    const size_t cd = c.channel_last ? dims.size() - 1 : 1;
    std::vector<int64_t> st(dims.size());
    st[cd] = st[dims.size() - 1 - (c.channel_last ? 1 : 0)] = 1;
    int64_t s = dims[dims.size() - 1 - (c.channel_last ? 1 : 0)] + c.C - 1;
    for (size_t i = dims.size(); i-- > 0;) {
      if (st[i] != 0) continue;
      st[i] = s;
      s *= dims[i];
    }
    return HostTensor::strided(dims, st, 2 + salt, c.dt, f);
  }
  if (!c.strided) return HostTensor(dims, c.dt, f);
  std::vector<int64_t> st(dims.size());
  int64_t s = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    st[i] = s;
    const bool pad = !c.rows_padded || i + 2 < dims.size();
    s *= dims[i] + (pad ? 1 + int64_t((i + size_t(salt)) % 2) : 0);
  }
  if (broadcast) st[0] = 0;
  int64_t offset = 3 + salt;
  if (flip) {
    const size_t a = c.channel_last ? 1 : 2;
    offset += (dims[a] - 1) * st[a];
    st[a] = -st[a];
  }
  return HostTensor::strided(dims, st, offset, c.dt, f);
}

struct Inputs {
  HostTensor x, g, go;
};

// Standard-ish random data; grid values past the borders, plus special values at fixed places.
Inputs make_inputs(const Case& c) {
  std::mt19937_64 rng(c.seed);
  Inputs in{make(c, c.feature(c.in), c.format(), 0, /*broadcast=*/c.N > 1 && c.seed % 3 == 0,
                 c.flip, c.overlap),
            make(c, c.grid(), ACL_FORMAT_ND, 1), make(c, c.feature(c.out), c.format(), 2)};
  auto fill = [&](HostTensor& t, double lo, double hi) {
    auto v = uniform(rng, t.numel(), lo, hi);
    for (double& e : v) e = round_to(c.dt, e);
    t.set_values(v);
  };
  fill(in.x, -2, 2);
  fill(in.g, -1.15, 1.15);
  fill(in.go, -2, 2);
  const double inf = std::numeric_limits<double>::infinity();
  if (c.coherent) {
    // The identity plus a smooth displacement of up to `amp` (0.7) input voxels per axis, and a
    // few points that sample nothing (NaN, Inf, huge): a registration field's grid.
    std::vector<double> g(size_t(in.g.numel()));
    int64_t pts = 1;
    for (int64_t s : c.out) pts *= s;
    for (int64_t i = 0; i < c.N * pts; ++i) {
      int64_t rest = i % pts;
      double phase = 0;
      int64_t idx[3] = {};
      for (int a = 0; a < c.nd; ++a) {  // axis order: x first
        const int64_t so = c.out[size_t(c.nd - 1 - a)];
        idx[a] = rest % so;
        rest /= so;
        phase += double(idx[a]) / double(so) * (a + 1);
      }
      for (int a = 0; a < c.nd; ++a) {
        const int64_t si = c.in[size_t(c.nd - 1 - a)], so = c.out[size_t(c.nd - 1 - a)];
        double u = (double(idx[a]) + 0.5) * double(si) / double(so) - 0.5;
        u += c.amp * std::sin(6.28318 * phase + a);
        const double v =
            c.m.align ? (si > 1 ? 2 * u / double(si - 1) - 1 : 0) : (2 * u + 1) / double(si) - 1;
        g[size_t(i * c.nd + a)] = round_to(c.dt, v);
      }
    }
    const double nothing[] = {std::nan(""), inf, -inf, 1e30};
    for (size_t i = 0, k = 0; i < g.size(); i += 97, ++k) g[i] = nothing[k % 4];
    in.g.set_values(g);
    return in;
  }
  const double special[] = {-1,           1,   0,    0.25, -0.5, 0.5,
                            std::nan(""), inf, -inf, 1e30, -3e9, 1.0 / 3};
  const int64_t n = in.g.numel();
  for (int64_t i = 0, k = 0; i < n; i += 7, ++k)
    if (k % 2 == 0) in.g.set(i, round_to(c.dt, special[size_t(k / 2) % std::size(special)]));
  return in;
}

struct Outputs {
  std::vector<double> out, ig, gg;
};

// Runs forward and (unless told not to) backward with one implementation; outputs start as a
// canary so that an element left unwritten shows up.
Outputs run(const Case& c, const Inputs& in, const char* impl, bool with_backward = true) {
  ForceImpl force(impl);
  Outputs r;
  HostTensor out = make(c, c.feature(c.out), c.format(), 3);
  HostTensor ig = make(c, c.feature(c.in), c.format(), 4);
  HostTensor gg = make(c, c.grid(), ACL_FORMAT_ND, 5);
  for (HostTensor* t : {&out, &ig, &gg}) t->fill(1234.5);
  EXPECT_EQ(forward(in.x, in.g, out, c.m), ACLNN_SUCCESS)
      << impl << " " << c.name() << ": " << aclGetRecentErrMsg();
  if (with_backward) {
    EXPECT_EQ(backward(in.go, in.x, in.g, &ig, &gg, c.m), ACLNN_SUCCESS)
        << impl << " " << c.name() << ": " << aclGetRecentErrMsg();
  }
  r.out = out.values();
  r.ig = ig.values();
  r.gg = gg.values();
  return r;
}

// Bit-identical, NaN matching NaN; reports the first difference.
::testing::AssertionResult same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (std::memcmp(&a[i], &b[i], sizeof(double)) != 0)
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a[i] << " vs " << b[i] << " (of " << a.size() << ")";
  }
  return ::testing::AssertionSuccess();
}

// Sets this thread's run thread count (gridsampleSetNumThreads); returns the previous count.
int set_threads(int n) {
  const int saved = gridsampleGetNumThreads();
  EXPECT_EQ(gridsampleSetNumThreads(n), ACL_SUCCESS);
  return saved;
}

// out and inputGrad bit-identical to cpu:ref's, gridGrad within NOTE [ gridGrad tolerance ].
void expect_same_as_ref(const Case& c, const Inputs& in, const Outputs& fast, const Outputs& ref) {
  EXPECT_TRUE(same_bits(fast.out, ref.out)) << "out";
  EXPECT_TRUE(same_bits(fast.ig, ref.ig)) << "inputGrad";
  EXPECT_EQ(
      grid_grad_mismatch(c.dt, fast.gg, ref.gg, grid_grad_floor(in.x, in.go, c.C, c.in, c.m.align)),
      "")
      << "gridGrad";
}

// cpu:fast against cpu:ref, with 1 thread and with 3: with as many items as threads, the backward
// runs one call per item (NOTE [ Item backward ] in src/cpu/fast.cpp), else through slabs.
void check_case(const Case& c, const std::string& target) {
  SCOPED_TRACE(c.name() + " target " + target);
  const Inputs in = make_inputs(c);
  const Outputs ref = run(c, in, "cpu:ref");
  const int saved = set_threads(1);
  for (int threads : {1, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    set_threads(threads);
    expect_same_as_ref(c, in, run(c, in, "cpu:fast"), ref);
  }
  set_threads(saved);
}

struct Config {
  int nd;
  int64_t interp, padding;
  bool align;
};

void PrintTo(const Config& c, std::ostream* os) {
  *os << c.nd << "d_" << kInterp[c.interp] << "_" << kPadding[c.padding] << "_ac" << c.align;
}

std::string config_name(const ::testing::TestParamInfo<Config>& i) {
  return std::to_string(i.param.nd) + "d_" + kInterp[i.param.interp] + "_" +
         kPadding[i.param.padding] + "_ac" + (i.param.align ? "1" : "0");
}

std::vector<Config> all_configs() {
  std::vector<Config> v;
  for (int nd : {2, 3})
    for (int64_t i : {0, 1, 2})
      for (int64_t p : {0, 1, 2})
        for (bool a : {false, true}) v.push_back({nd, i, p, a});
  return v;
}

class FastVsRef : public ::testing::TestWithParam<Config> {};

TEST_P(FastVsRef, Sweep) {
  const Config& k = GetParam();
  // Five shapes per dimensionality, sizes from {1, 2, 3, 5, 17}: C = 17 reaches the channel rows
  // (full and partial vectors; C = 5 too in FLOAT16/BF16), C = 1 and 3 the per-channel loops; 30 to
  // 85 points per item, binned into 2 to 5 slabs; the third shape samples too few points to pay for
  // the workspace copy of a channel-first input, which is then read per channel. One input point:
  // planes of one point whose channel stride is 1, like rows'. The last: 17 channels whose
  // backward updates are too sparse for rows (rows_ok in src/cpu/fast.cpp).
  struct Shape {
    int64_t N, C;
    std::vector<int64_t> in, out;
  };
  const std::vector<Shape> shapes = k.nd == 2 ? std::vector<Shape>{{2, 5, {5, 17}, {5, 17}},
                                                                   {1, 3, {3, 2}, {2, 17}},
                                                                   {1, 5, {17, 17}, {1, 2}},
                                                                   {1, 2, {1, 1}, {3, 2}},
                                                                   {1, 17, {17, 17}, {2, 3}}}
                                              : std::vector<Shape>{{2, 3, {5, 3, 17}, {2, 3, 5}},
                                                                   {1, 17, {2, 5, 1}, {3, 1, 17}},
                                                                   {1, 5, {17, 5, 3}, {1, 1, 2}},
                                                                   {1, 3, {1, 1, 1}, {2, 1, 3}},
                                                                   {1, 17, {5, 5, 5}, {1, 2, 2}}};
  uint64_t seed = uint64_t(k.nd * 1000 + k.interp * 100 + k.padding * 10 + k.align);
  for_each_target([&](const std::string& target) {
    for (aclDataType dt : kDtypes)
      for (bool cl : {false, true})
        for (bool strided : {false, true})
          for (const Shape& s : shapes) {
            Case c;
            c.nd = k.nd;
            c.N = s.N;
            c.C = s.C;
            c.in = s.in;
            c.out = s.out;
            c.m = {k.interp, k.padding, k.align};
            c.dt = dt;
            c.channel_last = cl;
            c.strided = strided;
            c.seed = ++seed;
            c.flip = strided && c.seed % 2 == 1;
            check_case(c, target);
          }
  });
}

INSTANTIATE_TEST_SUITE_P(Fast, FastVsRef, ::testing::ValuesIn(all_configs()), config_name);

// Larger problems, so that every thread gets work, inputGrad is cut into channel regions and
// slabs, and vectors are full: bit-identical results for 1, 2, 3 and 8 threads and repeated runs,
// and the same comparison with cpu:ref as above.
TEST(FastDeterminism, ThreadCounts) {
  std::vector<Case> cases;
  auto add = [&](int nd, int64_t N, int64_t C, std::vector<int64_t> in, std::vector<int64_t> out,
                 Modes m, aclDataType dt, bool cl) {
    Case c;
    c.nd = nd;
    c.N = N;
    c.C = C;
    c.in = in;
    c.out = out;
    c.m = m;
    c.dt = dt;
    c.channel_last = cl;
    c.seed = 77 + cases.size();
    cases.push_back(c);
  };
  // Each large enough (2^18 tap reads) for cpu:fast to use 8 threads.
  add(3, 1, 1, {19, 16, 17}, {32, 32, 32}, {0, 0, false}, ACL_FLOAT, false);  // slabs only
  add(3, 1, 3, {24, 12, 10}, {24, 24, 24}, {0, 2, true}, ACL_BF16, false);    // FLOAT32 acc
  add(3, 2, 8, {16, 10, 14}, {12, 12, 16}, {0, 2, false}, ACL_FLOAT, true);   // channel rows
  add(2, 1, 2, {40, 37}, {96, 100}, {2, 1, true}, ACL_DOUBLE, false);         // bicubic
  add(2, 3, 5, {31, 33}, {128, 150}, {1, 0, false}, ACL_FLOAT16, false);      // nearest, copy
  const int saved = set_threads(1);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name());
    const Inputs in = make_inputs(c);
    set_threads(1);
    const Outputs first = run(c, in, "cpu:fast");
    for (int threads : {1, 2, 3, 8}) {
      set_threads(threads);
      for (int rep = 0; rep < 2; ++rep) {
        SCOPED_TRACE("threads " + std::to_string(threads) + " run " + std::to_string(rep));
        const Outputs o = run(c, in, "cpu:fast");
        EXPECT_TRUE(same_bits(o.out, first.out)) << "out";
        EXPECT_TRUE(same_bits(o.ig, first.ig)) << "inputGrad";
        EXPECT_TRUE(same_bits(o.gg, first.gg)) << "gridGrad";
      }
    }
    check_case(c, "default");  // against cpu:ref, with 1 and 3 threads
  }
  set_threads(saved);
}

// gridsampleSetNumThreads applies to the calling thread only; 0 restores the default; a
// negative count is refused and changes nothing.
TEST(FastThreads, SettingIsPerCallingThread) {
  const int fallback = gridsampleGetNumThreads();
  ASSERT_EQ(gridsampleSetNumThreads(5), ACL_SUCCESS);
  EXPECT_EQ(gridsampleGetNumThreads(), 5);
  int other = -1;
  std::thread([&] { other = gridsampleGetNumThreads(); }).join();
  EXPECT_EQ(other, fallback);
  EXPECT_EQ(gridsampleSetNumThreads(-1), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("gridsampleSetNumThreads"), std::string::npos);
  EXPECT_EQ(gridsampleGetNumThreads(), 5);
  ASSERT_EQ(gridsampleSetNumThreads(0), ACL_SUCCESS);
  EXPECT_EQ(gridsampleGetNumThreads(), fallback);
}

// cpu:fast's outputs for c, with its log (GRIDSAMPLE_VERBOSE: the path it took).
Outputs logged_run(const Case& c, const Inputs& in, std::string* log, bool with_backward = true) {
  setenv("GRIDSAMPLE_VERBOSE", "1", 1);
  ::testing::internal::CaptureStderr();
  const Outputs fast = run(c, in, "cpu:fast", with_backward);
  *log = ::testing::internal::GetCapturedStderr();
  unsetenv("GRIDSAMPLE_VERBOSE");
  return fast;
}

// Coherent grids take the direct slab path (NOTE [ Direct slabs ] in src/cpu/fast.cpp) and, with
// 4 to 15 channels, gathers (NOTE [ Coherent grids ]), random ones the listed slabs and channel
// rows: all bit-identical to cpu:ref, across dtypes, layouts, modes and views. 8 threads, which
// one item of planes does not pay for (items_pay in src/cpu/fast.cpp).
TEST(FastDirect, CoherentGridsMatchReference) {
  const int saved = set_threads(8);
  struct K {
    int nd;
    int64_t C, interp, padding;
    aclDataType dt;
    bool cl, strided;
  };
  const K ks[] = {
      {3, 5, 0, 1, ACL_FLOAT, false, false},  {3, 2, 0, 0, ACL_DOUBLE, true, false},
      {3, 4, 1, 2, ACL_FLOAT16, false, true}, {3, 3, 2, 1, ACL_BF16, true, false},
      {2, 3, 0, 1, ACL_FLOAT, false, true},   {2, 8, 1, 0, ACL_DOUBLE, false, false},
      {2, 5, 2, 2, ACL_FLOAT, true, false},   {2, 2, 0, 2, ACL_BF16, false, false},
  };
  uint64_t seed = 300;
  int split = 0, direct = 0;
  for (const K& k : ks) {
    Case c;
    c.nd = k.nd;
    c.C = k.C;
    c.in = k.nd == 3 ? std::vector<int64_t>{16, 48, 48} : std::vector<int64_t>{64, 300};
    c.out = k.nd == 3 ? std::vector<int64_t>{16, 46, 50} : std::vector<int64_t>{128, 290};
    c.m = {k.interp, k.padding, seed % 2 == 0};
    c.dt = k.dt;
    c.channel_last = k.cl;
    c.strided = k.strided;
    c.seed = seed++;
    for (bool coherent : {true, false}) {
      c.coherent = coherent;
      SCOPED_TRACE(c.name() + (coherent ? " coherent" : " random"));
      const Inputs in = make_inputs(c);
      const Outputs ref = run(c, in, "cpu:ref");
      std::string log;
      const Outputs fast = logged_run(c, in, &log);
      if (coherent) {  // one item on 8 threads: split (NOTE [ Split items ]) or direct slabs
        split += log.find("split items") != std::string::npos;
        direct += log.find("direct slabs") != std::string::npos;
      } else {
        EXPECT_NE(log.find("listed slabs"), std::string::npos) << log;
      }
      expect_same_as_ref(c, in, fast, ref);
      // On 2 threads, one item of planes on a random grid costs less than the slabs, and is
      // taken without counting the slabs' points (NOTE [ Cost sample ]).
      if (!coherent && k.C < 4 && !k.cl && (k.dt == ACL_FLOAT || k.dt == ACL_DOUBLE)) {
        set_threads(2);
        const Outputs two = logged_run(c, in, &log);
        set_threads(8);
        EXPECT_NE(log.find("item backward"), std::string::npos) << log;
        EXPECT_EQ(log.find("scan/entries"), std::string::npos) << log;
        expect_same_as_ref(c, in, two, ref);
      }
      // NOTE [ Coherent grids ]: FLOAT/DOUBLE channel-first rows give way to gathers, and with as
      // many items as threads the backward to one pass per item; a random grid's forward takes
      // rows from 8 channels on (kRowsMinCForward in fast.cpp), except from an input of at most
      // 2 MiB read fewer than twice per point (pack_input).
      if (k.C < 4 || k.cl || (k.dt != ACL_FLOAT && k.dt != ACL_DOUBLE)) continue;
      int64_t in_points = 1, out_points = 1;
      for (int64_t v : c.in) in_points *= v;
      for (int64_t v : c.out) out_points *= v;
      const int64_t taps = k.interp == 0 ? 1 << k.nd : k.interp == 1 ? 1 : 16;
      const bool few_reads = k.C * in_points * (k.dt == ACL_DOUBLE ? 8 : 4) <= (int64_t(2) << 20) &&
                             taps * out_points < 2 * in_points;
      const bool rows = !coherent && k.C >= 8 && !few_reads;
      EXPECT_NE(log.find(rows ? ": channel rows" : ": gathers"), std::string::npos) << log;
      if (!coherent) continue;
      Case items = c;
      items.N = 2;
      set_threads(1);
      const Inputs in2 = make_inputs(items);
      const Outputs fast2 = logged_run(items, in2, &log);
      EXPECT_NE(log.find("item backward"), std::string::npos) << log;
      expect_same_as_ref(items, in2, fast2, run(items, in2, "cpu:ref"));
      set_threads(8);
    }
  }
  EXPECT_EQ(split + direct, int(std::size(ks)));
  EXPECT_GT(split, 0);
  EXPECT_GT(direct, 0);
  set_threads(saved);
}

// NOTE [ Split items ] (src/cpu/fast.cpp): one item of FLOAT or DOUBLE planes on a coherent grid,
// on more threads than items, runs as parts of its points, the taps below each part's split
// replayed at the end: bit-identical to cpu:ref on 2 threads (N = 2: 4), and whatever 3 and 8
// threads take (their parts may wait too much: kMaxWaiting), both gradients or inputGrad alone.
// Points that sample nothing or far away (make_inputs' every 97th value) are replaced by their
// neighbours: with border padding a 1e30 samples the far edge, and its part would leave the next
// nothing to do before the replay. A grid flipped along the outermost axis, whose later points
// sample the input below the earlier ones, takes the slabs.
TEST(FastSplit, PartsMatchReference) {
  const int saved = set_threads(1);
  uint64_t seed = 900;
  for (int nd : {2, 3})
    for (int64_t interp : {0, 1, 2})
      for (aclDataType dt : {ACL_FLOAT, ACL_DOUBLE}) {
        Case c;
        c.nd = nd;
        c.N = seed % 4 == 0 ? 2 : 1;
        c.C = 1 + int64_t(seed % 3);
        c.in = nd == 3 ? std::vector<int64_t>{48, 40, 44} : std::vector<int64_t>{200, 150};
        c.out = nd == 3 ? std::vector<int64_t>{56, 40, 48} : std::vector<int64_t>{320, 320};
        c.m = {interp, int64_t(seed % 3), seed % 2 == 0};
        c.dt = dt;
        c.channel_last = seed % 5 == 1;
        c.strided = seed % 3 == 2;
        c.coherent = true;
        c.amp = 2.5;
        c.seed = seed++;
        SCOPED_TRACE(c.name());
        Inputs in = make_inputs(c);
        std::vector<double> g = in.g.values();
        for (size_t i = 0; i < g.size(); i += 97)
          g[i] = g[i < size_t(nd) ? i + size_t(nd) : i - size_t(nd)];
        in.g.set_values(g);
        const Outputs ref = run(c, in, "cpu:ref");
        for (int threads : {2, 3, 8}) {
          SCOPED_TRACE("threads " + std::to_string(threads));
          set_threads(int(c.N) * threads);
          std::string log;
          const Outputs fast = logged_run(c, in, &log);
          if (threads == 2) {
            EXPECT_NE(log.find("split items"), std::string::npos) << log;
          }
          expect_same_as_ref(c, in, fast, ref);
        }
        set_threads(int(c.N) * 2);
        HostTensor ig = make(c, c.feature(c.in), c.format(), 4);
        ig.fill(1234.5);
        {
          ForceImpl force("cpu:fast");
          EXPECT_EQ(backward(in.go, in.x, in.g, &ig, nullptr, c.m, true, false), ACLNN_SUCCESS);
        }
        EXPECT_TRUE(same_bits(ig.values(), ref.ig)) << "inputGrad only";
        // Flipped along the outermost axis: still coherent along rows, but the parts would wait.
        for (size_t i = size_t(nd - 1); i < g.size(); i += size_t(nd)) g[i] = -g[i];
        in.g.set_values(g);
        std::string log;
        const Outputs fast = logged_run(c, in, &log);
        EXPECT_EQ(log.find("split items"), std::string::npos) << log;
        expect_same_as_ref(c, in, fast, run(c, in, "cpu:ref"));
      }
  set_threads(saved);
}

// NOTE [ Rows ahead ] (src/cpu/fast_kernels.cpp): a forward on a coherent grid prefetches its tap
// rows ahead, rows of up to 128 bytes a point where its input and output together pass 16 MiB,
// else points of up to 16 bytes; on a random grid nowhere. Hints only: out bit-identical to
// cpu:ref whichever.
TEST(FastRowsAhead, WideRowsPastTheCaches) {
  const int saved = set_threads(2);
  uint64_t seed = 900;
  for (bool big : {false, true})
    for (bool coherent : {true, false}) {
      Case c;
      c.C = 16;
      c.channel_last = true;
      c.in = {32, 64, 64};
      c.out = {big ? 33 : 16, 64, 64};  // 17.0 MB or 12.6 MB of input and output
      c.m = {0, 1, true};
      c.coherent = coherent;
      c.seed = seed++;
      SCOPED_TRACE(c.name() + (coherent ? " coherent" : " random"));
      const Inputs in = make_inputs(c);
      const Outputs ref = run(c, in, "cpu:ref", false);
      std::string log;
      const Outputs fast = logged_run(c, in, &log, false);
      const char* ahead = !coherent ? "rows ahead up to 0 bytes"
                          : big     ? "rows ahead up to 128 bytes"
                                    : "rows ahead up to 16 bytes";
      EXPECT_NE(log.find(std::string("channel rows, ") + ahead), std::string::npos) << log;
      EXPECT_TRUE(same_bits(fast.out, ref.out));
    }
  set_threads(saved);
}

// NOTE [ Items' own rows ] (src/cpu/fast.cpp): a forward whose items' input rows fit in L2, with
// at least as many items as threads, copies each item's rows and computes its points on one
// thread; more threads than items, or bigger rows, keep the two phases. out bit-identical to
// cpu:ref on any thread count, FLOAT, DOUBLE and BF16 (whose rows are FLOAT).
TEST(FastOwnRows, ItemsReadTheirOwnRows) {
  const int saved = set_threads(1);
  uint64_t seed = 1000;
  for (aclDataType dt : {ACL_FLOAT, ACL_DOUBLE, ACL_BF16})
    for (bool big : {false, true}) {
      Case c;
      c.nd = 2;
      c.N = 3;
      c.C = 8;
      c.dt = dt;
      c.in = big ? std::vector<int64_t>{256, 160} : std::vector<int64_t>{40, 56};
      c.out = c.in;
      c.m = {0, int64_t(seed % 3), seed % 2 == 0};
      c.seed = seed++;
      SCOPED_TRACE(c.name());
      const Inputs in = make_inputs(c);
      const Outputs ref = run(c, in, "cpu:ref", false);
      for (int threads : {1, 2, 3, 4}) {
        SCOPED_TRACE("threads " + std::to_string(threads));
        set_threads(threads);
        std::string log;
        const Outputs fast = logged_run(c, in, &log, false);
        // (Rows of 8 channels of 256 x 160 FLOAT take 1.3 MB, past kL2Bytes.)
        const bool own = !big && threads <= c.N;
        EXPECT_NE(log.find(": channel rows"), std::string::npos) << log;
        EXPECT_EQ(log.find("(items' own rows)") != std::string::npos, own) << log;
        EXPECT_TRUE(same_bits(fast.out, ref.out));
      }
    }
  set_threads(saved);
}

// NOTE [ Forward copies ] (src/cpu/fast.cpp): a forward reads its input in place (no workspace)
// with FLOAT16/BF16 16n channels channel-last below four tap reads per input point, and
// channel-first below one read per two input points where an item's rows take at most 4 MiB;
// otherwise it copies the input into rows. Past 4 MiB a smooth FLOAT grid reads in place too,
// with the workspace kept. Either way out is bit-identical to cpu:ref, on 1 and 2 threads.
TEST(FastForwardCopies, ForwardCopiesWhereTheyPay) {
  const int saved = set_threads(1);
  struct K {
    aclDataType dt;  // ACL_FLOAT16 stands for both 16-bit types
    bool channel_last, coherent;
    int64_t C, interp;
    std::vector<int64_t> in, out;
    bool in_place, no_workspace;
  };
  // 40 x 64 inputs: 20 x 32 nearest is a read per four input points, 40 x 64 one per point,
  // bilinear's 20 x 32 one too (FLOAT and DOUBLE, whose rows fit 2 MiB, copy from two), 80 x 128
  // bilinear sixteen. 256 x 272 x 16 FLOAT channels take 4.5 MB, and 128 x 136 nearest reads a
  // quarter of them.
  const std::vector<int64_t> small = {40, 64}, big = {256, 272};
  const std::vector<K> ks = {
      {ACL_FLOAT16, false, false, 16, 1, small, {20, 32}, true, true},
      {ACL_FLOAT16, false, false, 16, 1, small, {40, 64}, false, false},
      {ACL_FLOAT16, false, false, 4, 0, small, {20, 32}, false, false},
      {ACL_FLOAT16, false, false, 8, 1, small, {28, 45}, true, true},
      {ACL_FLOAT16, true, false, 16, 1, small, {40, 64}, true, true},
      {ACL_FLOAT16, true, false, 32, 0, small, {20, 32}, true, true},
      {ACL_FLOAT16, true, false, 16, 0, small, {80, 128}, false, false},
      {ACL_FLOAT16, true, false, 24, 1, small, {20, 32}, false, false},
      {ACL_FLOAT16, true, false, 8, 1, small, {20, 32}, false, false},
      {ACL_FLOAT, false, false, 16, 1, small, {20, 32}, true, true},
      {ACL_DOUBLE, false, false, 16, 0, small, {40, 64}, false, false},
      {ACL_FLOAT, false, false, 16, 1, big, {128, 136}, false, false},
      {ACL_FLOAT, false, true, 16, 1, big, {128, 136}, true, false},
      {ACL_FLOAT16, false, true, 16, 1, big, {128, 136}, false, false},
  };
  uint64_t seed = 1100;
  for (const K& k : ks)
    for (aclDataType dt : k.dt == ACL_FLOAT16 ? std::vector<aclDataType>{ACL_FLOAT16, ACL_BF16}
                                              : std::vector<aclDataType>{k.dt}) {
      Case c;
      c.nd = 2;
      c.N = 2;
      c.C = k.C;
      c.dt = dt;
      c.channel_last = k.channel_last;
      c.in = k.in;
      c.out = k.out;
      c.m = {k.interp, int64_t(seed % 3), seed % 2 == 0};
      c.coherent = k.coherent || (k.in == small && seed % 2 == 0);
      c.seed = seed++;
      SCOPED_TRACE(c.name());
      const Inputs in = make_inputs(c);
      const Outputs ref = run(c, in, "cpu:ref", false);
      for (int threads : {1, 2}) {
        SCOPED_TRACE("threads " + std::to_string(threads));
        set_threads(threads);
        std::string log;
        const Outputs fast = logged_run(c, in, &log, false);
        EXPECT_EQ(log.find("workspace 0 bytes") != std::string::npos, k.no_workspace) << log;
        if (!k.channel_last) {
          EXPECT_EQ(log.find(": gathers, ") != std::string::npos, k.in_place) << log;
        }
        EXPECT_TRUE(same_bits(fast.out, ref.out));
      }
    }
  set_threads(saved);
}

// NOTE [ Pair rows ] (src/cpu/fast.cpp): a channel-first FLOAT forward of 2 to 7 channels on a
// random grid (nearest: up to 15 channels, on any grid) with two or more tap reads per input point
// copies the input into rows and gathers channels two by two from them (odd counts end with one
// channel); with fewer reads (nearest's one read per input point too), or bilinear and bicubic on a
// coherent grid, or nearest with 2 channels on more threads than items, it gathers from the
// planes, and bilinear and bicubic with 9 channels read rows a row at a time. Every mode, 2D and
// 3D, plain and strided (flipped) views, 1 to 3 threads: out bit-identical to cpu:ref.
TEST(FastPairRows, ForwardMatchesReference) {
  const int saved = set_threads(1);
  uint64_t seed = 700;
  for (int nd : {2, 3})
    for (int64_t interp : {0, 1, 2})
      for (int64_t C : {2, 3, 7, 9}) {
        Case c;
        c.nd = nd;
        c.C = C;
        c.N = 2;
        c.in = nd == 3 ? std::vector<int64_t>{6, 9, 11} : std::vector<int64_t>{21, 23};
        c.out = nd == 3 ? std::vector<int64_t>{10, 11, 12} : std::vector<int64_t>{30, 41};
        c.m = {interp, int64_t(seed % 3), seed % 2 == 0};
        c.strided = seed % 4 == 1;
        c.flip = c.strided;
        for (const char* kind : {"rows", "few reads", "one read", "coherent", "upsampled"}) {
          Case k = c;
          k.seed = ++seed;
          const std::string what(kind);
          if (what == "few reads")  // under two tap reads per input point, bicubic's too
            k.out = nd == 3 ? std::vector<int64_t>{2, 2, 3} : std::vector<int64_t>{5, 6};
          if (what == "one read")  // as many output points as input points, enough for 3 threads
            k.in = k.out =
                nd == 3 ? std::vector<int64_t>{12, 14, 14} : std::vector<int64_t>{48, 48};
          if (what == "upsampled") {  // four reads per input point, enough for 3 threads
            k.in = nd == 3 ? std::vector<int64_t>{6, 7, 7} : std::vector<int64_t>{24, 24};
            k.out = nd == 3 ? std::vector<int64_t>{12, 14, 14} : std::vector<int64_t>{48, 48};
          }
          k.coherent = what == "coherent";
          SCOPED_TRACE(k.name() + " " + what);
          const Inputs in = make_inputs(k);
          const Outputs ref = run(k, in, "cpu:ref");
          for (int threads : {1, 2, 3}) {
            set_threads(threads);
            std::string log;
            const Outputs fast = logged_run(k, in, &log);
            const bool one_read = interp != 1;  // nearest: one tap read per input point
            // Nearest with 2 channels on several threads reads the planes, but where each thread
            // copies its own items' rows (NOTE [ Items' own rows ]: as many items as threads).
            const bool threads_ok = threads <= k.N || interp != 1 || C != 2;
            const bool rows =
                (C < 8 || interp == 1) &&
                (what == "rows" || (what == "coherent" && interp == 1) ||
                 (what == "one read" && one_read) || (what == "upsampled" && threads_ok));
            EXPECT_EQ(log.find("fwd") != std::string::npos &&
                          log.find(": gathers from channel rows") != std::string::npos,
                      rows)
                << log;
            EXPECT_TRUE(same_bits(fast.out, ref.out)) << "out, threads " << threads;
          }
        }
      }
  set_threads(saved);
}

// NOTE [ Pair rows ] in the backward (src/cpu/fast.cpp): a FLOAT backward of 2 to 7 channels
// with contiguous planes on a random grid, run as an item, reads gridGrad's input from rows of C
// channels, with the planes' taps times C, and so does gridGrad over points beside the slabs;
// strided planes and coherent grids keep the planes. Bilinear and bicubic, 2D and 3D, 1 and 8
// threads: inputGrad bit-identical to cpu:ref, gridGrad within NOTE [ gridGrad tolerance ].
TEST(FastPairRows, BackwardMatchesReference) {
  const int saved = set_threads(1);
  uint64_t seed = 800;
  for (int nd : {2, 3})
    for (int64_t interp : {0, 2})
      for (int64_t C : {2, 3, 5})
        for (const char* kind : {"rows", "strided", "coherent"}) {
          Case c;
          c.nd = nd;
          c.C = C;
          c.in = nd == 3 ? std::vector<int64_t>{6, 9, 11} : std::vector<int64_t>{21, 23};
          // (Large enough for 8 threads: a one-item backward wakes one per 2^15 tap reads.)
          c.out = nd == 3 ? std::vector<int64_t>{16, 32, 32} : std::vector<int64_t>{160, 210};
          c.m = {interp, int64_t(seed % 3), seed % 2 == 0};
          const std::string what(kind);
          c.strided = what == "strided";
          c.coherent = what == "coherent";
          c.seed = ++seed;
          SCOPED_TRACE(c.name() + " " + what);
          const Inputs in = make_inputs(c);
          const Outputs ref = run(c, in, "cpu:ref");
          for (int threads : {1, 8}) {  // one item; slabs beside gridGrad over points
            set_threads(threads);
            std::string log;
            const Outputs fast = logged_run(c, in, &log);
            // (Direct slabs, which a small input's random grid may take, sum gridGrad in them.)
            const bool direct = log.find("direct slabs") != std::string::npos;
            EXPECT_EQ(log.find("gridGrad from channel rows") != std::string::npos,
                      what == "rows" && !direct)
                << log;
            EXPECT_NE(log.find(threads == 1 ? "item backward" : "slabs"), std::string::npos) << log;
            expect_same_as_ref(c, in, fast, ref);
          }
        }
  set_threads(saved);
}

// NOTE [ Window updates ] (src/cpu/fast_kernels.cpp): the backward's updates of channel planes
// as vectors over segments of points that step forward through memory. Rows of 100 and 40 input
// elements (windows of 2N fit, or not), outputs as wide (steps of 1), narrower (steps of 1 to
// 2) and wider (repeated taps: short segments), displacements that keep a vector's rows or cross
// them, every mode, FLOAT and DOUBLE (and BF16's FLOAT accumulator), one and three channels;
// 1 thread (one item) and 3 (slabs, whose edges cut rows): inputGrad bit-identical to cpu:ref.
TEST(FastWindow, UpdatesMatchReference) {
  const int saved = set_threads(1);
  uint64_t seed = 900;
  for (int nd : {2, 3})
    for (int64_t interp : {0, 1, 2})
      for (int64_t padding : {0, 1, 2})
        for (int64_t w_out : {100, 64, 150}) {
          Case c;
          c.nd = nd;
          c.seed = seed++;
          c.C = c.seed % 3 == 0 ? 3 : 1;
          c.dt = c.seed % 4 == 0 ? ACL_DOUBLE : c.seed % 4 == 1 ? ACL_BF16 : ACL_FLOAT;
          c.in = nd == 3 ? std::vector<int64_t>{6, 9, 100} : std::vector<int64_t>{30, 100};
          c.out = nd == 3 ? std::vector<int64_t>{5, 8, w_out} : std::vector<int64_t>{24, w_out};
          if (c.seed % 5 == 0) c.in.back() = 40;
          c.m = {interp, padding, c.seed % 2 == 0};
          c.coherent = true;
          c.amp = c.seed % 3 == 1 ? 0.7 : 0.05;
          SCOPED_TRACE(c.name());
          const Inputs in = make_inputs(c);
          const Outputs ref = run(c, in, "cpu:ref");
          for (int threads : {1, 3}) {
            SCOPED_TRACE("threads " + std::to_string(threads));
            set_threads(threads);
            expect_same_as_ref(c, in, run(c, in, "cpu:fast"), ref);
          }
          set_threads(1);
        }
  set_threads(saved);
}

// NOTE [ Nearest rows ] (src/cpu/fast.cpp): a nearest backward of 16 channels with 4 updates per
// input point accumulates in rows in the workspace where the rows fit in L2; with 8 channels, or
// rows past L2, in the planes (the workspace then holds no accumulator). Bit-identical to cpu:ref
// either way, on 1 and 2 threads.
TEST(FastNearestRows, SparseUpdatesTakeRowsInL2) {
  const int saved = set_threads(1);
  struct K {
    int64_t C;
    std::vector<int64_t> in, out;
    bool rows;
  };
  const K ks[] = {{16, {32, 64}, {16, 32}, true},
                  {8, {32, 64}, {32, 32}, false},
                  {16, {64, 300}, {32, 150}, false}};
  uint64_t seed = 1100;
  for (const K& k : ks)
    for (aclDataType dt : {ACL_FLOAT, ACL_DOUBLE}) {
      Case c;
      c.nd = 2;
      c.N = 2;
      c.C = k.C;
      c.dt = dt;
      c.in = k.in;
      c.out = k.out;
      c.m = {1, int64_t(seed % 3), seed % 2 == 0};
      c.coherent = seed % 2 == 0;
      c.seed = seed++;
      SCOPED_TRACE(c.name());
      const Inputs in = make_inputs(c);
      const Outputs ref = run(c, in, "cpu:ref");
      const int64_t acc_bytes =
          c.N * c.C * k.in[0] * k.in[1] * (dt == ACL_DOUBLE ? 8 : 4);  // rows of every item
      // (DOUBLE rows of 16 channels of 32 x 64 take 256 KiB an item, within L2.)
      for (int threads : {1, 2}) {
        set_threads(threads);
        std::string log;
        const Outputs fast = logged_run(c, in, &log);
        const size_t at = log.find("workspace ", log.find("gridsample: bwd"));
        ASSERT_NE(at, std::string::npos) << log;
        const long long ws = std::atoll(log.c_str() + at + 10);
        EXPECT_EQ(ws >= acc_bytes, k.rows) << log;
        expect_same_as_ref(c, in, fast, ref);
      }
    }
  set_threads(saved);
}

// The item backward with its accumulator in the workspace (NOTE [ Item backward ] in
// src/cpu/fast.cpp): FLOAT16 and BF16 (a FLOAT32 accumulator per item laid out as the input rows
// or, when nothing reads the input, as inputGrad, rounded into inputGrad at the end) and FLOAT
// and DOUBLE channel rows (copied at the end), beside the accumulator in the view (FLOAT and
// DOUBLE planes or channel-last rows). Every channel count that changes a loop (1, 2,
// 3: per channel; 4, 5, 6, 7, 8: rows shorter than a vector, and in a channel-last view rows of 2
// to 4 channels updated at once; 16, 17, 32: whole vectors and a tail),
// both layouts, views with gaps, every mode, with and without gridGrad: out and inputGrad
// bit-identical to cpu:ref, as the slab path's are (8 threads, 1 item, more points), gridGrad
// within tolerance.
// Nearest upsampling backwards: consecutive points add to one element, in runs of 1 to 5 (NOTE
// [ Window updates ] takes none of those vectors), both layouts, FLOAT and DOUBLE, 1 thread (the
// item path).
TEST(FastWindow, RunsMatchReference) {
  const int saved = set_threads(1);
  uint64_t seed = 950;
  for (int nd : {2, 3})
    for (int64_t factor : {2, 3, 4, 5})
      for (int64_t padding : {0, 1, 2}) {
        Case c;
        c.nd = nd;
        c.seed = seed++;
        c.C = c.seed % 2 == 0 ? 1 : 2;
        c.dt = c.seed % 3 == 0 ? ACL_DOUBLE : ACL_FLOAT;
        c.channel_last = c.seed % 4 >= 2;
        c.in = nd == 3 ? std::vector<int64_t>{4, 5, 23} : std::vector<int64_t>{9, 23};
        c.out = nd == 3 ? std::vector<int64_t>{3, 4, 23 * factor}
                        : std::vector<int64_t>{7, 23 * factor};
        c.m = {1, padding, c.seed % 2 == 0};
        c.coherent = true;
        c.amp = 0.02;
        SCOPED_TRACE(c.name());
        const Inputs in = make_inputs(c);
        expect_same_as_ref(c, in, run(c, in, "cpu:fast"), run(c, in, "cpu:ref"));
      }
  set_threads(saved);
}

TEST(FastItem, ItemsMatchReference) {
  const int saved = set_threads(1);
  auto logged = [](const std::function<void()>& f) {
    setenv("GRIDSAMPLE_VERBOSE", "1", 1);
    ::testing::internal::CaptureStderr();
    f();
    unsetenv("GRIDSAMPLE_VERBOSE");
    return ::testing::internal::GetCapturedStderr();
  };
  uint64_t seed = 500;
  for (aclDataType dt : {ACL_FLOAT16, ACL_BF16, ACL_FLOAT, ACL_DOUBLE})
    for (int64_t C : {1, 2, 3, 4, 5, 6, 7, 8, 16, 17, 32})
      for (bool cl : {false, true}) {
        Case c;
        c.nd = C % 2 == 0 ? 2 : 3;
        c.N = 2;
        c.C = C;
        c.in = c.nd == 2 ? std::vector<int64_t>{9, 23} : std::vector<int64_t>{5, 7, 9};
        c.out = c.nd == 2 ? std::vector<int64_t>{12, 20} : std::vector<int64_t>{4, 6, 11};
        c.m = {int64_t(seed % 3), int64_t((seed / 3) % 3), seed % 2 == 0};
        c.dt = dt;
        c.channel_last = cl;
        c.strided = seed % 4 < 2;
        c.coherent = seed % 5 != 0;
        c.seed = seed++;
        SCOPED_TRACE(c.name());
        const Inputs in = make_inputs(c);
        const Outputs ref = run(c, in, "cpu:ref");
        Outputs fast;
        std::string log = logged([&] { fast = run(c, in, "cpu:fast"); });
        EXPECT_NE(log.find("item backward"), std::string::npos) << log;
        expect_same_as_ref(c, in, fast, ref);
        // inputGrad alone: nothing reads the input.
        HostTensor ig = make(c, c.feature(c.in), c.format(), 4);
        ig.fill(1234.5);
        log = logged([&] {
          ForceImpl force("cpu:fast");
          EXPECT_EQ(backward(in.go, in.x, in.g, &ig, nullptr, c.m, true, false), ACLNN_SUCCESS);
        });
        EXPECT_NE(log.find("item backward"), std::string::npos) << log;
        EXPECT_TRUE(same_bits(ig.values(), ref.ig)) << "inputGrad only";
        // The slab path, for the same bits: with enough output points to wake 8 threads, about
        // 2^15 tap reads each (useful_threads in src/cpu/fast.cpp; a small problem runs on one
        // thread, and then as items), one item and 3 slabs, so that the slabs cost less than an
        // item of planes on one thread (items_pay).
        Case slabs = c;
        slabs.N = 1;
        slabs.in[0] = 3;
        const int64_t taps = c.m.interp == 1 ? 1 : (c.m.interp == 2 ? 4 : 2);
        const int64_t rows = 8 * 32768 / (C * (c.nd == 2 ? taps * taps : taps * taps * taps));
        slabs.out = c.nd == 2 ? std::vector<int64_t>{rows / 20 + 1, 20}
                              : std::vector<int64_t>{4, 6, rows / 24 + 1};
        const Inputs in3 = make_inputs(slabs);
        set_threads(8);
        log = logged([&] { fast = run(slabs, in3, "cpu:fast"); });
        set_threads(1);
        EXPECT_EQ(log.find("item backward"), std::string::npos) << log;
        expect_same_as_ref(slabs, in3, fast, run(slabs, in3, "cpu:ref"));
      }
  set_threads(saved);
}

// Planes with an accumulator over 6 MiB (kItemCacheBytes in src/cpu/fast.cpp) take the item
// backward on one thread only where the grid is coherent (NOTE [ Item backward ]): channel-last
// FLOAT and DOUBLE in the inputGrad view (gridsample-register's displacement fields) and
// FLOAT16/BF16 in the workspace beside the input rows; random grids keep the slabs. Bit-identical
// to cpu:ref either way.
TEST(FastItem, CoherentPlanesTakeItems) {
  const int saved = set_threads(1);
  struct K {
    int nd;
    int64_t C;
    aclDataType dt;
    bool cl;
    std::vector<int64_t> in, out;
  };
  const K ks[] = {
      {3, 3, ACL_FLOAT, true, {64, 96, 96}, {43, 64, 64}},
      {2, 1, ACL_DOUBLE, true, {768, 1100}, {512, 733}},
      {3, 2, ACL_BF16, false, {80, 100, 100}, {54, 67, 67}},
  };
  uint64_t seed = 700;
  for (const K& k : ks)
    for (bool coherent : {true, false}) {
      Case c;
      c.nd = k.nd;
      c.C = k.C;
      c.in = k.in;
      c.out = k.out;
      c.m = {0, int64_t(seed % 3), seed % 2 == 0};
      c.dt = k.dt;
      c.channel_last = k.cl;
      c.coherent = coherent;
      c.seed = seed++;
      SCOPED_TRACE(c.name());
      const Inputs in = make_inputs(c);
      std::string log;
      const Outputs fast = logged_run(c, in, &log);
      EXPECT_EQ(log.find("item backward") != std::string::npos, coherent) << log;
      expect_same_as_ref(c, in, fast, run(c, in, "cpu:ref"));
    }
  set_threads(saved);
}

// NOTE [ gridGrad beside the items ] (src/cpu/fast.cpp): where the items do not fill the threads
// (one item on 2 threads), gridGrad runs as calls over points beside them and the items compute
// inputGrad alone; one thread's item computes both. The same bits either way, and out and
// inputGrad those of cpu:ref.
TEST(FastItem, GridGradBesideTheItems) {
  const int saved = set_threads(1);
  uint64_t seed = 800;
  for (aclDataType dt : {ACL_FLOAT16, ACL_BF16, ACL_FLOAT, ACL_DOUBLE})
    for (int nd : {2, 3}) {
      Case c;
      c.nd = nd;
      c.C = nd == 2 ? 1 : 2;
      c.in = nd == 2 ? std::vector<int64_t>{128, 64} : std::vector<int64_t>{16, 16, 16};
      c.out = nd == 2 ? std::vector<int64_t>{256, 128} : std::vector<int64_t>{32, 32, 32};
      c.m = {nd == 2 && seed % 2 == 1 ? 2 : 0, int64_t(seed % 3), seed % 2 == 0};
      c.dt = dt;
      c.channel_last = seed % 4 < 2;
      c.seed = seed++;
      SCOPED_TRACE(c.name());
      const Inputs in = make_inputs(c);
      std::string log;
      set_threads(1);
      const Outputs one = logged_run(c, in, &log);
      EXPECT_NE(log.find("item backward"), std::string::npos) << log;
      EXPECT_EQ(log.find("gridGrad beside"), std::string::npos) << log;
      set_threads(2);
      const Outputs two = logged_run(c, in, &log);
      EXPECT_NE(log.find("item backward, gridGrad beside"), std::string::npos) << log;
      EXPECT_TRUE(same_bits(two.out, one.out)) << "out";
      EXPECT_TRUE(same_bits(two.ig, one.ig)) << "inputGrad";
      EXPECT_TRUE(same_bits(two.gg, one.gg)) << "gridGrad";
      expect_same_as_ref(c, in, two, run(c, in, "cpu:ref"));
    }
  set_threads(saved);
}

// cpu:fast's gridGrad from a backward that wants gridGrad alone: the gridGrad calls, no slabs.
std::vector<double> grid_grad_alone(const Case& c, const Inputs& in) {
  ForceImpl force("cpu:fast");
  HostTensor gg = make(c, c.grid(), ACL_FORMAT_ND, 5);
  gg.fill(1234.5);
  EXPECT_EQ(backward(in.go, in.x, in.g, nullptr, &gg, c.m, false, true), ACLNN_SUCCESS)
      << aclGetRecentErrMsg();
  return gg.values();
}

// NOTE [ gridGrad in the slabs ] in src/cpu/fast.cpp: random grids (a few points outside the
// input, which no slab lists, and NaN, Inf and huge values) with rows of 24 or more channels and
// gradOutput in planes take the listed slabs with gridGrad in them on 1 and 2 threads; their
// gridGrad is bit-identical to that of a gridGrad-only run (the gridGrad calls, no slabs), and out
// and inputGrad to cpu:ref's. Channel-last and 16 channels keep the gridGrad calls.
TEST(FastSlabs, GridGradInTheSlabs) {
  const int saved = set_threads(1);
  uint64_t seed = 900;
  for (aclDataType dt : {ACL_FLOAT, ACL_DOUBLE})
    for (int nd : {2, 3})
      for (int64_t C : {16, 24, 40})
        for (bool channel_last : {false, true}) {
          Case c;
          c.nd = nd;
          c.N = 1 + int64_t(seed % 2);
          c.C = C;
          c.in = nd == 2 ? std::vector<int64_t>{128, 96} : std::vector<int64_t>{24, 20, 28};
          c.out = nd == 2 ? std::vector<int64_t>{40, 56} : std::vector<int64_t>{12, 14, 10};
          c.m = {nd == 2 && seed % 3 == 2 ? 2 : 0, int64_t(seed % 3), seed % 2 == 0};
          c.dt = dt;
          c.channel_last = channel_last;
          c.strided = seed % 4 == 1;
          c.seed = seed++;
          SCOPED_TRACE(c.name());
          const Inputs in = make_inputs(c);
          const bool in_slabs = C >= 24 && !channel_last;
          for (int threads : {1, 2}) {
            set_threads(threads);
            std::string log;
            const Outputs fast = logged_run(c, in, &log);
            EXPECT_EQ(log.find("gridGrad in the slabs") != std::string::npos, in_slabs) << log;
            EXPECT_TRUE(same_bits(fast.gg, grid_grad_alone(c, in)))
                << "gridGrad, threads " << threads;
            expect_same_as_ref(c, in, fast, run(c, in, "cpu:ref"));
          }
        }
  set_threads(saved);
}

// NOTE [ gridGrad beside the direct slabs ] in src/cpu/fast.cpp: coherent 3D grids with rows of
// up to 128 bytes take the direct slabs with gridGrad from calls beside them, 2D and wider rows
// the direct slabs' own gridGrad (2 threads, N = 1); either way gridGrad is bit-identical to a
// gridGrad-only run's, and out and inputGrad to cpu:ref's.
TEST(FastDirect, GridGradBesideTheDirectSlabs) {
  const int saved = set_threads(2);
  uint64_t seed = 950;
  struct K {
    int nd;
    int64_t C;
    aclDataType dt;
    bool channel_last, apart;
  };
  for (const K& k : {K{3, 16, ACL_FLOAT, false, true}, K{3, 16, ACL_FLOAT, true, true},
                     K{3, 24, ACL_FLOAT, false, true}, K{3, 16, ACL_DOUBLE, false, true},
                     K{3, 32, ACL_DOUBLE, false, false}, K{2, 16, ACL_FLOAT, false, false}}) {
    Case c;
    c.nd = k.nd;
    c.C = k.C;
    c.in = k.nd == 2 ? std::vector<int64_t>{160, 128} : std::vector<int64_t>{32, 24, 28};
    c.out = k.nd == 2 ? std::vector<int64_t>{150, 120} : std::vector<int64_t>{30, 22, 26};
    c.m = {0, int64_t(seed % 3), seed % 2 == 0};
    c.dt = k.dt;
    c.channel_last = k.channel_last;
    c.coherent = true;
    c.seed = seed++;
    SCOPED_TRACE(c.name());
    const Inputs in = make_inputs(c);
    std::string log;
    const Outputs fast = logged_run(c, in, &log);
    EXPECT_NE(log.find(k.apart ? "direct slabs, gridGrad beside" : "direct slabs ("),
              std::string::npos)
        << log;
    EXPECT_TRUE(same_bits(fast.gg, grid_grad_alone(c, in))) << "gridGrad";
    expect_same_as_ref(c, in, fast, run(c, in, "cpu:ref"));
  }
  set_threads(saved);
}

// Channel-last views whose rows (W x C) are contiguous but whose outer dims are padded: inputGrad
// is zeroed row by row there (ZeroRegion in src/cpu/fast_kernels.cpp), on the item path (1
// thread) and on the slab paths (3 threads), random and coherent grids.
TEST(FastZero, PaddedChannelLastRows) {
  uint64_t seed = 700;
  for (int nd : {2, 3})
    for (int64_t C : {1, 2, 3, 8})
      for (aclDataType dt : {ACL_FLOAT, ACL_DOUBLE, ACL_FLOAT16})
        for (bool coherent : {false, true}) {
          Case c;
          c.nd = nd;
          c.N = 2;
          c.C = C;
          c.in = nd == 2 ? std::vector<int64_t>{21, 30} : std::vector<int64_t>{9, 7, 12};
          c.out = nd == 2 ? std::vector<int64_t>{17, 26} : std::vector<int64_t>{8, 6, 13};
          c.m = {int64_t(seed % 3), int64_t((seed / 3) % 3), seed % 2 == 0};
          c.dt = dt;
          c.channel_last = true;
          c.strided = true;
          c.rows_padded = true;
          c.coherent = coherent;
          c.seed = seed++;
          for_each_target([&](const std::string& target) { check_case(c, target); });
        }
}

// Inputs whose channel and x strides are both 1 (overlapping windows, which an input may be):
// channel pairs of channel-last rows and pairs of x neighbours then read the same elements. Found
// by fuzz_descriptor: a 2D bilinear channel-last FLOAT forward shifted its channel pairs for NOTE
// [ Edge pairs ] without taking the shifted lanes back.
TEST(FastOverlap, OverlappingInputViews) {
  uint64_t seed = 800;
  for (int nd : {2, 3})
    for (int64_t C : {1, 2, 3, 5})
      for (bool cl : {false, true})
        for (aclDataType dt : {ACL_FLOAT, ACL_DOUBLE, ACL_FLOAT16})
          for (int64_t interp : {0, 1, 2}) {
            Case c;
            c.nd = nd;
            c.N = 2;
            c.C = C;
            c.in = nd == 2 ? std::vector<int64_t>{5, 7} : std::vector<int64_t>{4, 3, 6};
            c.out = nd == 2 ? std::vector<int64_t>{6, 9} : std::vector<int64_t>{3, 5, 7};
            c.m = {interp, int64_t(seed % 3), (seed / 3) % 2 == 0};
            c.dt = dt;
            c.channel_last = cl;
            c.overlap = true;
            c.coherent = seed % 4 < 2;
            c.seed = seed++;
            for_each_target([&](const std::string& target) { check_case(c, target); });
          }
}

// An empty output grid with an input large enough for several threads: inputGrad is all zeros
// (SPEC §2) with 1 to 3 threads, one item or several.
TEST(FastEmpty, EmptyGridZeroesInputGrad) {
  const int saved = set_threads(1);
  for (int64_t N : {1, 2})
    for (int nd : {2, 3}) {
      Case c;
      c.nd = nd;
      c.N = N;
      c.C = 6;
      c.in = nd == 3 ? std::vector<int64_t>{40, 40, 40} : std::vector<int64_t>{300, 300};
      c.out = nd == 3 ? std::vector<int64_t>{4, 0, 3} : std::vector<int64_t>{0, 7};
      const Inputs in = make_inputs(c);
      for (int threads : {1, 2, 3}) {
        SCOPED_TRACE(c.name() + " threads " + std::to_string(threads));
        set_threads(threads);
        const Outputs fast = run(c, in, "cpu:fast");
        ASSERT_EQ(fast.ig.size(), size_t(in.x.numel()));
        EXPECT_TRUE(std::all_of(fast.ig.begin(), fast.ig.end(), [](double v) { return v == 0; }));
      }
    }
  set_threads(saved);
}

// The declared fallback: an input axis beyond the exact range of the vector index math is
// declined by cpu:fast (with the reason in the error when it is forced) and served by cpu:ref.
TEST(FastFallback, HugeAxisGoesToReference) {
  const int64_t W = (int64_t(1) << 22) + 1;
  HostTensor x({1, 1, 1, W}, ACL_FLOAT), g({1, 1, 2, 2}, ACL_FLOAT), out({1, 1, 1, 2}, ACL_FLOAT);
  x.fill(2);
  g.set_values({1, 0, -1, 0});
  ASSERT_EQ(forward(x, g, out, {0, 1, true}), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_EQ(out.values(), (std::vector<double>{2, 2}));
  ForceImpl force("cpu:fast");
  EXPECT_NE(forward(x, g, out, {0, 1, true}), ACLNN_SUCCESS);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("cpu:fast declined"), std::string::npos)
      << aclGetRecentErrMsg();
}

}  // namespace
