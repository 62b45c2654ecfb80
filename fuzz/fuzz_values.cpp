// Value fuzzer: valid small problems in every operator, mode, dtype and layout, whose grids hold
// the values that break coordinate math: NaN, +-Inf, +-1e38, denormals, -0.0, values near the
// 2^62 bound of NOTE [ Non-finite and huge coordinates ], and values exactly on voxel centres,
// on the borders, on the reflection lines and on nearest's rounding ties (and one ulp off).
// Inputs and gradOutput are finite and non-zero. It asserts, besides sanitizer silence:
//  - every output is finite (FLOAT16 may overflow to +-Inf; NaN never);
//  - points that sample nothing by SPEC §4.6 (a coordinate that is NaN, or +-Inf or too large
//    under zeros padding and bicubic, or +-Inf under reflection) have forward 0 in every channel,
//    gridGrad 0, and contribute nothing to inputGrad (a backward whose gradOutput is non-zero
//    only on those points gives inputGrad == 0 exactly);
//  - forward and backward are adjoint: <forward(x), g> = <x, inputGrad(g)>, so they agree on
//    which points sample what;
//  - nearest has gridGrad == 0 exactly.
#include <algorithm>
#include <cfloat>
#include <string>
#include <vector>

#include "fuzz_common.h"

namespace {

using namespace gsfuzz;

struct Problem {
  int nd = 2;
  int32_t dtype = ACL_FLOAT;
  int64_t interp = 0, padding = 0;
  bool align = false, last = false;
  int64_t n = 1, c = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};  // outermost first (D, H, W)
  int64_t in_points() const { return in[0] * in[1] * (nd == 3 ? in[2] : 1); }
  int64_t out_points() const { return out[0] * out[1] * (nd == 3 ? out[2] : 1); }
  // Size of the input along grid component a (a = 0 is x, which indexes W).
  int64_t axis_size(int a) const { return in[nd - 1 - a]; }
};

// A contiguous tensor in its view order, values kept as stored.
struct Buf {
  std::vector<int64_t> dims;
  int32_t dtype = ACL_FLOAT, format = ACL_FORMAT_ND;
  std::vector<uint8_t> mem;
  int64_t numel() const {
    int64_t k = 1;
    for (int64_t d : dims) k *= d;
    return k;
  }
  void alloc() { mem.assign(size_t(numel() * dtype_size(dtype)), 0xFF); }
  double get(int64_t i) const { return load(dtype, &mem[size_t(i * dtype_size(dtype))]); }
  void set(int64_t i, double v) { store(dtype, v, &mem[size_t(i * dtype_size(dtype))]); }
  aclTensor* make() {
    return aclCreateTensor(dims.data(), dims.size(), aclDataType(dtype), nullptr, 0,
                           aclFormat(format), nullptr, 0, mem.data());
  }
};

Buf feature(const Problem& p, const int64_t* sp) {
  Buf b;
  b.dtype = p.dtype;
  b.dims = {p.n};
  if (!p.last) b.dims.push_back(p.c);
  for (int i = 0; i < p.nd; ++i) b.dims.push_back(sp[i]);
  if (p.last) b.dims.push_back(p.c);
  b.format = p.last ? (p.nd == 2 ? ACL_FORMAT_NHWC : ACL_FORMAT_NDHWC)
                    : (p.nd == 2 ? ACL_FORMAT_NCHW : ACL_FORMAT_NCDHW);
  b.alloc();
  return b;
}

Buf grid_buf(const Problem& p) {
  Buf b;
  b.dtype = p.dtype;
  b.dims = {p.n};
  for (int i = 0; i < p.nd; ++i) b.dims.push_back(p.out[i]);
  b.dims.push_back(p.nd);
  b.alloc();
  return b;
}

// Flat index of (n, c, point) in a feature tensor of `points` spatial points.
int64_t fidx(const Problem& p, int64_t n, int64_t c, int64_t point, int64_t points) {
  return p.last ? (n * points + point) * p.c + c : (n * p.c + c) * points + point;
}

// A grid value from the list in the file comment, for an axis of size s.
double grid_value(Bytes& b, const Problem& p, int64_t s) {
  const uint8_t kind = b.u8(), k = b.u8();
  const double sd = double(s), sign = (k & 0x80) ? -1.0 : 1.0;
  const int64_t j = k & 0x7f;
  // Grid value of unnormalized coordinate u (SPEC §4.1 inverted).
  auto g_of = [&](double u) {
    return p.align ? (s > 1 ? 2 * u / (sd - 1) - 1 : 0.0) : (2 * u + 1) / sd - 1;
  };
  double v;
  switch (kind % 20) {
    case 0:  // voxel centres, including just outside the input
      v = g_of(double(j % (s + 4)) - 2);
      break;
    case 1:  // the borders 0 and s - 1 of the clamp, and the outer edges -0.5, s - 0.5
      v = g_of((j & 1 ? sd - 1 : 0.0) + ((j & 2) ? sign * 0.5 : 0.0));
      break;
    case 2:  // reflection lines: -1 + 2k in both alignments
      v = -1 + 2 * double(int64_t(j % 16) - 8);
      break;
    case 3:  // nearest's ties
      v = g_of(double(j % (s + 2)) - 1.5);
      break;
    case 4:
      v = NAN;
      break;
    case 5:
      v = sign * INFINITY;
      break;
    case 6:
      v = sign * 1e38;
      break;
    case 7:  // denormals of every type
      v = sign * (j & 1 ? 5e-324 : (j & 2) ? double(FLT_TRUE_MIN) : 6e-8);
      break;
    case 8:
      v = sign * 0.0;
      break;
    case 9:  // coordinates near the 2^62 bound, and near where int64 ends
      v = g_of(sign * std::ldexp(1.0 + (j % 8) / 8.0, 58 + int(j % 8)));
      break;
    case 10:
      v = sign * DBL_MAX;
      break;
    case 11:
      v = sign * double(FLT_MAX);
      break;
    case 12:  // +-1 and one ulp either side, in the stored type's precision below
      v = sign;
      break;
    case 13: {  // the raw bits of a float: anything at all
      const uint32_t u =
          uint32_t(k) | uint32_t(b.u8()) << 8 | uint32_t(b.u8()) << 16 | uint32_t(b.u8()) << 24;
      float f;
      std::memcpy(&f, &u, 4);
      v = f;
      break;
    }
    default:  // ordinary values in and around [-1, 1]
      v = sign * 1.5 * b.unit();
  }
  // One ulp up or down, now and then, so that "exactly on" and "just beside" both occur.
  if ((kind & 0x60) == 0x20 && std::isfinite(v)) v = std::nextafter(v, INFINITY);
  if ((kind & 0x60) == 0x40 && std::isfinite(v)) v = std::nextafter(v, -INFINITY);
  return v;
}

// SPEC §4.6 for one axis: 1 if the coordinate certainly samples nothing, 0 if it certainly
// samples, -1 if the SPEC leaves it to rounding (within a factor 2 of the 2^62 bound, or an
// unnormalized value that overflows only by rounding). `g` is the stored grid value.
int nothing_axis(const Problem& p, double g, int64_t s) {
  // Reflection over a domain of one point (span 0) gives 0 whatever the coordinate.
  if (p.interp != 2 && p.padding == 2 && p.align && s == 1) return 0;
  if (std::isnan(g)) return 1;
  const double big = p.dtype == ACL_DOUBLE ? DBL_MAX : double(FLT_MAX);
  if (std::isinf(g)) {
    if (p.align && s == 1) return 1;                // (inf + 1) / 2 * 0 is NaN
    if (p.interp == 2 || p.padding == 0) return 1;  // not padded: +-Inf
    return p.padding == 2 ? 1 : 0;                  // reflection: fmod(inf) is NaN; border clamps
  }
  // Unnormalized exactly (long double holds every double product here well enough).
  const long double sd = (long double)s;
  const long double u = p.align ? ((g + 1.0L) / 2) * (sd - 1) : ((g + 1.0L) * sd - 1) / 2;
  const long double au = u < 0 ? -u : u;
  if (p.interp != 2 && p.padding != 0) {
    // Border and reflection bring every finite coordinate into range, and +-Inf from an
    // overflowing finite value is clamped by border but NaN under reflection.
    if (au > (long double)big / 4) return p.padding == 1 ? 0 : -1;
    return 0;
  }
  if (au >= 0x1.0p63L) return 1;
  if (au < 0x1.0p61L) return 0;
  return -1;
}

aclnnStatus forward(const Problem& p, Buf& in, Buf& grid, Buf* out) {
  aclTensor *ti = in.make(), *tg = grid.make(), *to = out->make();
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  auto gws = p.nd == 2 ? aclnnGridSampler2DGetWorkspaceSize : aclnnGridSampler3DGetWorkspaceSize;
  aclnnStatus st = gws(ti, tg, p.interp, p.padding, p.align, to, &ws, &ex);
  if (st == ACLNN_SUCCESS) {
    std::vector<uint8_t> w(size_t(ws), 0xA5);
    st = run_op(p.nd == 2 ? kF2 : kF3, ws ? w.data() : nullptr, ws, ex);
  }
  aclDestroyTensor(ti);
  aclDestroyTensor(tg);
  aclDestroyTensor(to);
  return st;
}

aclnnStatus backward(const Problem& p, Buf& go, Buf& in, Buf& grid, Buf* ig, Buf* gg) {
  aclTensor *tgo = go.make(), *ti = in.make(), *tg = grid.make(), *tig = ig->make(),
            *tgg = gg->make();
  const bool m[2] = {true, true};
  aclBoolArray* mask = aclCreateBoolArray(m, 2);
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  auto gws = p.nd == 2 ? aclnnGridSampler2DBackwardGetWorkspaceSize
                       : aclnnGridSampler3DBackwardGetWorkspaceSize;
  aclnnStatus st = gws(tgo, ti, tg, p.interp, p.padding, p.align, mask, tig, tgg, &ws, &ex);
  if (st == ACLNN_SUCCESS) {
    std::vector<uint8_t> w(size_t(ws), 0xA5);
    st = run_op(p.nd == 2 ? kB2 : kB3, ws ? w.data() : nullptr, ws, ex);
  }
  aclDestroyBoolArray(mask);
  for (aclTensor* t : {tgo, ti, tg, tig, tgg}) aclDestroyTensor(t);
  return st;
}

void expect_finite(const Buf& b, const char* what) {
  for (int64_t i = 0; i < b.numel(); ++i) {
    const double v = b.get(i);
    FUZZ_CHECK(!std::isnan(v) && (std::isfinite(v) || b.dtype == ACL_FLOAT16),
               "%s[%lld] = %g with finite inputs", what, (long long)i, v);
  }
}

// Agreement with cpu:ref, relative to the largest magnitude of that output (SPEC §1's measure),
// or to `floor` if that is larger.
void expect_close(const Buf& got, const Buf& ref, const char* what, double floor = 0) {
  double scale = floor;
  for (int64_t i = 0; i < ref.numel(); ++i)
    if (std::isfinite(ref.get(i))) scale = std::max(scale, std::fabs(ref.get(i)));
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const double a = got.get(i), r = ref.get(i);
    FUZZ_CHECK(a == r || std::fabs(a - r) <= tolerance(got.dtype) * scale,
               "%s[%lld] (view order) is %.17g but cpu:ref gives %.17g", what, (long long)i, a, r);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes b(data, size);
  Problem p;
  const uint8_t h = b.u8();
  p.nd = (h & 1) ? 3 : 2;
  static const int32_t kDtypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE};
  p.dtype = kDtypes[(h >> 1) & 3];
  p.interp = ((h >> 3) & 3) % 3;
  p.padding = ((h >> 5) & 3) % 3;
  p.align = h & 0x80;
  const uint8_t s = b.u8();
  p.last = s & 1;
  p.n = 1 + ((s >> 1) & 1);
  p.c = 1 + ((s >> 2) & 3) % 3;
  for (int i = 0; i < p.nd; ++i) {
    const uint8_t d = b.u8();
    p.in[i] = 1 + d % 5;
    p.out[i] = 1 + (d >> 4) % (p.nd == 3 ? 3 : 4);
  }
  const uint64_t seed = b.u8() | uint32_t(b.u8()) << 8;

  Buf in = feature(p, p.in), grid = grid_buf(p), go = feature(p, p.out);
  // Non-zero and finite, so that "forward is 0" means "samples nothing".
  auto nonzero = [](double u) { return (u < 0.5 ? -1 : 1) * (0.25 + 1.5 * std::fabs(2 * u - 1)); };
  for (int64_t i = 0; i < in.numel(); ++i) in.set(i, nonzero(hash_unit(seed, uint64_t(i))));
  for (int64_t i = 0; i < go.numel(); ++i) go.set(i, nonzero(hash_unit(seed + 1, uint64_t(i))));
  const int64_t P = p.out_points();
  for (int64_t i = 0; i < grid.numel(); ++i)
    grid.set(i, grid_value(b, p, p.axis_size(int(i % p.nd))));

  // Which points certainly sample nothing (1), certainly sample (0), or either (-1).
  std::vector<int> nothing(size_t(p.n * P));
  for (int64_t q = 0; q < p.n * P; ++q) {
    int r = 0;
    for (int a = 0; a < p.nd; ++a) {
      const int v = nothing_axis(p, grid.get(q * p.nd + a), p.axis_size(a));
      if (v == 1) {
        r = 1;
        break;
      }
      if (v == -1) r = -1;
    }
    nothing[size_t(q)] = r;
  }

  if (std::getenv("GSFUZZ_VERBOSE")) {
    std::fprintf(stderr, "%dD dtype %d interp %lld padding %lld align %d %s n %lld c %lld in", p.nd,
                 p.dtype, (long long)p.interp, (long long)p.padding, int(p.align),
                 p.last ? "channel-last" : "channel-first", (long long)p.n, (long long)p.c);
    for (int i = 0; i < p.nd; ++i) std::fprintf(stderr, " %lld", (long long)p.in[i]);
    std::fprintf(stderr, " out");
    for (int i = 0; i < p.nd; ++i) std::fprintf(stderr, " %lld", (long long)p.out[i]);
    std::fprintf(stderr, " seed %llu\ngrid (sample nothing: 1, something: 0, either: -1):\n",
                 (unsigned long long)seed);
    for (int64_t q = 0; q < p.n * P; ++q) {
      std::fprintf(stderr, " ");
      for (int a = 0; a < p.nd; ++a) std::fprintf(stderr, " %.17g", grid.get(q * p.nd + a));
      std::fprintf(stderr, " -> %d\n", nothing[size_t(q)]);
    }
  }

  Buf out = feature(p, p.out);
  aclnnStatus st = forward(p, in, grid, &out);
  FUZZ_CHECK(st == ACLNN_SUCCESS, "forward: %d", st);
  Buf ig = feature(p, p.in), gg = grid_buf(p);
  st = backward(p, go, in, grid, &ig, &gg);
  FUZZ_CHECK(st == ACLNN_SUCCESS, "backward: %d", st);
  expect_finite(out, "out");
  expect_finite(ig, "inputGrad");
  expect_finite(gg, "gridGrad");

  // The implementation chosen must agree with the reference implementation, cpu:ref (NOTE
  // [ Forcing an implementation ] in src/api/operators.cpp), to the dtype's tolerance.
  {
    Buf rout = feature(p, p.out), rig = feature(p, p.in), rgg = grid_buf(p);
    const char* forced = std::getenv("GRIDSAMPLE_IMPL");  // a run may force one for all calls
    const std::string saved = forced ? forced : "";
    setenv("GRIDSAMPLE_IMPL", "cpu:ref", 1);
    const aclnnStatus s1 = forward(p, in, grid, &rout);
    const aclnnStatus s2 = backward(p, go, in, grid, &rig, &rgg);
    if (forced)
      setenv("GRIDSAMPLE_IMPL", saved.c_str(), 1);
    else
      unsetenv("GRIDSAMPLE_IMPL");
    FUZZ_CHECK(s1 == ACLNN_SUCCESS && s2 == ACLNN_SUCCESS, "cpu:ref: %d %d", s1, s2);
    expect_close(out, rout, "out");
    expect_close(ig, rig, "inputGrad");
    // cpu:fast sums gridGrad in another order than cpu:ref (NOTE [ gridGrad order ] in
    // src/cpu/fast_kernels.cpp): a gridGrad whose terms cancel is rounding noise of the size of
    // its terms, so it is measured against a tenth of their size, as the torch cross-check does
    // (NOTE [ error floor ] in tools/torch_crosscheck.py).
    double amax_in = 0, amax_go = 0;
    for (int64_t i = 0; i < in.numel(); ++i) amax_in = std::max(amax_in, std::fabs(in.get(i)));
    for (int64_t i = 0; i < go.numel(); ++i) amax_go = std::max(amax_go, std::fabs(go.get(i)));
    expect_close(gg, rgg, "gridGrad",
                 gstest::grid_grad_floor(p.c, amax_in, amax_go, p.in, p.nd, p.align));
  }

  bool any_nothing = false;
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t q = 0; q < P; ++q) {
      if (nothing[size_t(n * P + q)] != 1) continue;
      any_nothing = true;
      for (int64_t c = 0; c < p.c; ++c)
        FUZZ_CHECK(out.get(fidx(p, n, c, q, P)) == 0,
                   "point %lld of batch %lld samples nothing but forward gives %g in channel %lld",
                   (long long)q, (long long)n, out.get(fidx(p, n, c, q, P)), (long long)c);
      for (int a = 0; a < p.nd; ++a)
        FUZZ_CHECK(gg.get((n * P + q) * p.nd + a) == 0,
                   "point %lld of batch %lld samples nothing but its gridGrad[%d] is %g",
                   (long long)q, (long long)n, a, gg.get((n * P + q) * p.nd + a));
    }
  if (p.interp == 1)
    for (int64_t i = 0; i < gg.numel(); ++i)
      FUZZ_CHECK(gg.get(i) == 0, "nearest gives gridGrad[%lld] = %g", (long long)i, gg.get(i));

  // Adjointness, in long double. The bound allows a rounding error in every stored output and in
  // every sum forming one: an output is at most (sum of |weights|) * max|x|, and the sum of the
  // |weights| of a point is at most 1 for bilinear and nearest, 1.375^nd for bicubic.
  const double wmax = p.interp == 2 ? std::pow(1.5, p.nd) : 1.0;
  long double lhs = 0, rhs = 0, scale = 0;
  for (int64_t i = 0; i < go.numel(); ++i) scale += std::fabs(go.get(i)) * wmax * 1.75;
  for (int64_t i = 0; i < out.numel(); ++i) {
    lhs += (long double)out.get(i) * go.get(i);
    scale += std::fabs((long double)out.get(i) * go.get(i));
  }
  for (int64_t i = 0; i < in.numel(); ++i) {
    rhs += (long double)in.get(i) * ig.get(i);
    scale += std::fabs((long double)in.get(i) * ig.get(i));
  }
  if (std::isfinite(double(scale)))
    FUZZ_CHECK(std::fabs(double(lhs - rhs)) <= tolerance(p.dtype) * double(scale) + 1e-300,
               "<forward(x), g> = %.17g but <x, inputGrad(g)> = %.17g", double(lhs), double(rhs));

  if (any_nothing) {
    // gradOutput only on the points that sample nothing: nothing may reach inputGrad.
    Buf go2 = feature(p, p.out), ig2 = feature(p, p.in), gg2 = grid_buf(p);
    for (int64_t n = 0; n < p.n; ++n)
      for (int64_t q = 0; q < P; ++q)
        for (int64_t c = 0; c < p.c; ++c) {
          const int64_t i = fidx(p, n, c, q, P);
          go2.set(i, nothing[size_t(n * P + q)] == 1 ? go.get(i) : 0.0);
        }
    st = backward(p, go2, in, grid, &ig2, &gg2);
    FUZZ_CHECK(st == ACLNN_SUCCESS, "backward: %d", st);
    for (int64_t i = 0; i < ig2.numel(); ++i)
      FUZZ_CHECK(ig2.get(i) == 0,
                 "points that sample nothing put %g into inputGrad[%lld] (flat, view order)",
                 ig2.get(i), (long long)i);
    for (int64_t i = 0; i < gg2.numel(); ++i)
      FUZZ_CHECK(gg2.get(i) == 0, "gridGrad[%lld] = %g from a zero gradOutput", (long long)i,
                 gg2.get(i));
  }
  return 0;
}
