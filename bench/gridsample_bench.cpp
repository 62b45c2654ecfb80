// Google Benchmark suite for the four operators (issue 3's table), through the public aclnn C API.
//
// Each case registers suite/<name>/fwd and suite/<name>/bwd (bwd = both gradients). A case is
// planned once with a repeatable executor; only the run call is timed. The bytes/s counter uses
// the bytes an operator must move: forward reads input and grid and writes out; backward reads
// gradOutput, input and grid and writes inputGrad and gridGrad, each once.
//
// Also registered:
// - extra/<name>_f32/{fwd,bwd}: the FLOAT twin of a 16-bit case whose FLOAT shape is not in the
//   suite, so that the 16-bit cost can be compared with FLOAT in one run;
// - memory/copy: a parallel memcpy of 256 MiB (as many threads as OpenMP gives), whose bytes/s
//   (bytes read + bytes written) is the machine's copy bandwidth, the yardstick for the memory
//   floor in tools/bench_vs_torch.py.
//
// Counters: bytes (what the operator must move), bytes_per_second, and x_floor: the time as a
// multiple of those bytes at the machine's copy bandwidth (measured once per process as
// memory/copy does, the best of three).
//
// Environment: GRIDSAMPLE_IMPL=cpu:ref (NOTE [ Forcing an implementation ]) times the reference
// instead; for analysis only, GRIDSAMPLE_BENCH_MASK=10 or 01 times the backward with one
// gradient.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_grid_sampler2d.h"
#include "aclnnop/aclnn_grid_sampler2d_backward.h"
#include "aclnnop/aclnn_grid_sampler3d.h"
#include "aclnnop/aclnn_grid_sampler3d_backward.h"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace {

// The grids users have (NOTE [ Bench grids ]).
enum class GridKind { Random, Warp, Affine };

struct Case {
  std::string name;
  int nd;
  int64_t N, C;
  std::vector<int64_t> in, out;  // input and output spatial sizes, outermost (D or H) first
  int64_t interp, padding;
  bool align;
  aclDataType dtype;
  bool channel_last;
  GridKind grid = GridKind::Random;
};

std::vector<int64_t> cube(int nd, int64_t s) { return std::vector<int64_t>(size_t(nd), s); }

// Issue 3's table (uniform random grids), then issue 12's coherent grids: registration fields
// and optical flow (near-identity warps of a few voxels), spatial-transformer and augmentation
// grids (affine). tools/bench_vs_torch.py lists the same cases.
const std::vector<Case>& suite() {
  using G = GridKind;
  static const std::vector<Case> cases = {
      {"3d_bilinear_c16_64", 3, 1, 16, cube(3, 64), cube(3, 64), 0, 0, false, ACL_FLOAT, false},
      {"3d_bilinear_c1_128", 3, 1, 1, cube(3, 128), cube(3, 128), 0, 1, true, ACL_FLOAT, false},
      {"3d_bilinear_c32_32_cl", 3, 2, 32, cube(3, 32), cube(3, 32), 0, 2, false, ACL_FLOAT, true},
      {"3d_nearest_c16_64", 3, 1, 16, cube(3, 64), cube(3, 64), 1, 0, false, ACL_FLOAT, false},
      {"3d_bilinear_c16_64_f64", 3, 1, 16, cube(3, 64), cube(3, 64), 0, 0, false, ACL_DOUBLE,
       false},
      {"3d_bilinear_c16_64_bf16", 3, 1, 16, cube(3, 64), cube(3, 64), 0, 0, false, ACL_BF16, false},
      {"2d_bilinear_c64_128", 2, 8, 64, cube(2, 128), cube(2, 128), 0, 0, false, ACL_FLOAT, false},
      {"2d_bicubic_c16_256", 2, 2, 16, cube(2, 256), cube(2, 256), 2, 1, true, ACL_FLOAT, false},
      {"2d_bilinear_c3_512_f16", 2, 4, 3, cube(2, 512), cube(2, 512), 0, 0, false, ACL_FLOAT16,
       false},
      {"warp_3d_reg_c1_80x96x80",
       3,
       1,
       1,
       {80, 96, 80},
       {80, 96, 80},
       0,
       1,
       true,
       ACL_FLOAT,
       false,
       G::Warp},
      {"warp_3d_reg_c2_80x96x80",
       3,
       1,
       2,
       {80, 96, 80},
       {80, 96, 80},
       0,
       1,
       true,
       ACL_FLOAT,
       false,
       G::Warp},
      {"warp_3d_c16_64", 3, 1, 16, cube(3, 64), cube(3, 64), 0, 0, false, ACL_FLOAT, false,
       G::Warp},
      {"warp_3d_c64_32_cl", 3, 1, 64, cube(3, 32), cube(3, 32), 0, 1, true, ACL_FLOAT, true,
       G::Warp},
      {"warp_3d_nearest_c8_48_40", 3, 2, 8, cube(3, 48), cube(3, 40), 1, 2, false, ACL_FLOAT, false,
       G::Warp},
      {"warp_2d_flow_c3_512", 2, 2, 3, cube(2, 512), cube(2, 512), 0, 1, true, ACL_FLOAT, false,
       G::Warp},
      {"warp_2d_flow_c1_512_n1", 2, 1, 1, cube(2, 512), cube(2, 512), 0, 1, true, ACL_FLOAT, false,
       G::Warp},
      {"warp_2d_c32_128_cl", 2, 2, 32, cube(2, 128), cube(2, 128), 0, 0, false, ACL_FLOAT, true,
       G::Warp},
      {"affine_2d_stn_c32_64", 2, 16, 32, cube(2, 64), cube(2, 64), 0, 0, false, ACL_FLOAT, false,
       G::Affine},
      {"affine_2d_c3_224", 2, 8, 3, cube(2, 224), cube(2, 224), 0, 0, false, ACL_FLOAT, false,
       G::Affine},
      {"affine_3d_c1_96", 3, 1, 1, cube(3, 96), cube(3, 96), 0, 0, true, ACL_FLOAT, false,
       G::Affine},
      {"affine_3d_c16_48_cl", 3, 2, 16, cube(3, 48), cube(3, 48), 0, 2, false, ACL_FLOAT, true,
       G::Affine},
  };
  return cases;
}

// NOTE [ Bench grids ]
// Random: uniform in [-1.1, 1.1] (every tap a cache miss: the worst case). Warp: the identity
// plus a smooth displacement of up to 3 input voxels per axis, a sine wave across the volume --
// the fields of registration and optical flow. Affine: per batch item a rotation (0.15 + 0.05 n
// rad in the x-y plane, half that in y-z), a scaling by 1.1 and a shift of 0.05 -- spatial
// transformers and augmentation. Warp and affine grids are closed formulas of the point index,
// so tools/bench_vs_torch.py builds the same grids for PyTorch.
double identity_voxel(int64_t i, int64_t s_in, int64_t s_out, bool align) {
  if (align) return s_out > 1 ? double(i) * double(s_in - 1) / double(s_out - 1) : 0.0;
  return (double(i) + 0.5) * double(s_in) / double(s_out) - 0.5;
}
double normalize(double u, int64_t s, bool align) {
  if (align) return s > 1 ? 2.0 * u / double(s - 1) - 1.0 : 0.0;
  return (2.0 * u + 1.0) / double(s) - 1.0;
}

std::vector<double> coherent_grid(const Case& k) {
  const int nd = k.nd;
  int64_t pts = 1;
  for (int64_t s : k.out) pts *= s;
  std::vector<double> v(size_t(k.N * pts * nd));
  const double kPi = 3.14159265358979323846;
  for (int64_t n = 0; n < k.N; ++n) {
    for (int64_t p = 0; p < pts; ++p) {
      int64_t idx[3] = {0, 0, 0}, rest = p;  // axis order: x, y, z
      for (int a = 0; a < nd; ++a) {
        idx[a] = rest % k.out[size_t(nd - 1 - a)];
        rest /= k.out[size_t(nd - 1 - a)];
      }
      double g[3] = {0, 0, 0};
      const double th = 2 * kPi *
                        (double(idx[0]) / double(k.out[size_t(nd - 1)]) +
                         0.5 * double(idx[1]) / double(k.out[size_t(nd - 2)]) +
                         (nd == 3 ? 0.25 * double(idx[2]) / double(k.out[0]) : 0.0));
      for (int a = 0; a < nd; ++a) {
        const int64_t si = k.in[size_t(nd - 1 - a)], so = k.out[size_t(nd - 1 - a)];
        double u = identity_voxel(idx[a], si, so, k.align);
        if (k.grid == GridKind::Warp) u += 3.0 * std::sin(th * (1.0 + 0.5 * a) + 1.3 * a);
        g[a] = normalize(u, si, k.align);
      }
      if (k.grid == GridKind::Affine) {
        const double t = 0.15 + 0.05 * double(n), c = std::cos(t), s = std::sin(t);
        const double x = c * g[0] - s * g[1], y = s * g[0] + c * g[1];
        g[0] = x;
        g[1] = y;
        if (nd == 3) {
          const double c2 = std::cos(t / 2), s2 = std::sin(t / 2);
          const double y2 = c2 * g[1] - s2 * g[2], z2 = s2 * g[1] + c2 * g[2];
          g[1] = y2;
          g[2] = z2;
        }
        for (int a = 0; a < nd; ++a) g[a] = 1.1 * g[a] + 0.05;
      }
      for (int a = 0; a < nd; ++a) v[size_t((n * pts + p) * nd + a)] = g[a];
    }
  }
  return v;
}

int elem_bytes(aclDataType t) {
  return t == ACL_DOUBLE ? 8 : (t == ACL_FLOAT16 || t == ACL_BF16) ? 2 : 4;
}

uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
uint16_t to_f16(float f) {  // round to nearest even; the data here is finite
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x477ff000u) return sign | 0x7c00u;
  if (ax < 0x38800000u) {  // subnormal: a multiple of 2^-24
    float a;
    std::memcpy(&a, &ax, 4);
    return uint16_t(sign | uint16_t(std::nearbyint(a * 16777216.0f)));
  }
  uint32_t h = (ax >> 13) - (112u << 10);
  const uint32_t rem = ax & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return uint16_t(sign | h);
}

// A contiguous buffer of n elements of type t holding the given values.
struct Buffer {
  std::vector<unsigned char> bytes;
  Buffer(aclDataType t, const std::vector<double>& v) : bytes(v.size() * size_t(elem_bytes(t))) {
    for (size_t i = 0; i < v.size(); ++i) {
      unsigned char* p = bytes.data() + i * size_t(elem_bytes(t));
      if (t == ACL_DOUBLE) {
        std::memcpy(p, &v[i], 8);
      } else if (t == ACL_FLOAT) {
        const float f = float(v[i]);
        std::memcpy(p, &f, 4);
      } else {
        const uint16_t h = t == ACL_BF16 ? to_bf16(float(v[i])) : to_f16(float(v[i]));
        std::memcpy(p, &h, 2);
      }
    }
  }
  Buffer(aclDataType t, size_t n) : bytes(n * size_t(elem_bytes(t))) {}
};

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size());
  int64_t acc = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    s[i] = acc;
    acc *= dims[i];
  }
  return s;
}

aclTensor* tensor(const std::vector<int64_t>& dims, aclDataType t, aclFormat f, Buffer& b) {
  const auto st = contiguous_strides(dims);
  return aclCreateTensor(dims.data(), dims.size(), t, st.data(), 0, f, dims.data(), dims.size(),
                         b.bytes.data());
}

// Everything one case needs, built once per benchmark run.
struct Fixture {
  const Case& c;
  std::vector<int64_t> feat_in, feat_out, grid_dims;
  aclFormat fmt;
  std::unique_ptr<Buffer> x, g, go, out, ig, gg;

  explicit Fixture(const Case& k) : c(k) {
    auto feature = [&](const std::vector<int64_t>& sp) {
      std::vector<int64_t> d = {k.N};
      if (!k.channel_last) d.push_back(k.C);
      d.insert(d.end(), sp.begin(), sp.end());
      if (k.channel_last) d.push_back(k.C);
      return d;
    };
    feat_in = feature(k.in);
    feat_out = feature(k.out);
    grid_dims = {k.N};
    grid_dims.insert(grid_dims.end(), k.out.begin(), k.out.end());
    grid_dims.push_back(k.nd);
    fmt = k.nd == 3 ? (k.channel_last ? ACL_FORMAT_NDHWC : ACL_FORMAT_NCDHW)
                    : (k.channel_last ? ACL_FORMAT_NHWC : ACL_FORMAT_NCHW);
    std::mt19937_64 rng(20240601);
    std::normal_distribution<double> normal;
    std::uniform_real_distribution<double> uni(-1.1, 1.1);
    auto numel = [](const std::vector<int64_t>& d) {
      int64_t n = 1;
      for (int64_t e : d) n *= e;
      return size_t(n);
    };
    std::vector<double> v(numel(feat_in));
    for (double& e : v) e = normal(rng);
    x = std::make_unique<Buffer>(k.dtype, v);
    v.assign(numel(grid_dims), 0);
    if (k.grid != GridKind::Random) {
      v = coherent_grid(k);
    } else {
      for (double& e : v) e = uni(rng);
    }
    g = std::make_unique<Buffer>(k.dtype, v);
    v.assign(numel(feat_out), 0);
    for (double& e : v) e = normal(rng);
    go = std::make_unique<Buffer>(k.dtype, v);
    out = std::make_unique<Buffer>(k.dtype, numel(feat_out));
    ig = std::make_unique<Buffer>(k.dtype, numel(feat_in));
    gg = std::make_unique<Buffer>(k.dtype, numel(grid_dims));
  }

  int64_t bytes(bool backward) const {
    const int64_t r = int64_t(x->bytes.size() + g->bytes.size());
    return backward ? r + int64_t(go->bytes.size() + ig->bytes.size() + gg->bytes.size())
                    : r + int64_t(out->bytes.size());
  }
};

// One parallel memcpy of n bytes in 64 pieces (as many threads as OpenMP gives).
void parallel_copy(unsigned char* dst, const unsigned char* src, size_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < 64; ++i) {
    const size_t chunk = n / 64;
    std::memcpy(dst + size_t(i) * chunk, src + size_t(i) * chunk, chunk);
  }
}

// The copy bandwidth (bytes read + written per second), best of three copies of 128 MiB.
double copy_bandwidth_once() {
  static const double bw = [] {
    const size_t n = size_t(128) << 20;
    std::vector<unsigned char> src(n, 1), dst(n, 0);
    double best = 0;
    for (int r = 0; r < 4; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      parallel_copy(dst.data(), src.data(), n);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (r > 0) best = std::max(best, double(2 * n) / s);  // the first copy touches the pages
    }
    return best;
  }();
  return bw;
}

using RunFn = aclnnStatus (*)(void*, uint64_t, aclOpExecutor*, aclrtStream);

void run_case(benchmark::State& state, const Case& c, bool backward) {
  Fixture f(c);
  aclTensor* x = tensor(f.feat_in, c.dtype, f.fmt, *f.x);
  aclTensor* g = tensor(f.grid_dims, c.dtype, ACL_FORMAT_ND, *f.g);
  aclTensor* go = tensor(f.feat_out, c.dtype, f.fmt, *f.go);
  aclTensor* out = tensor(f.feat_out, c.dtype, f.fmt, *f.out);
  aclTensor* ig = tensor(f.feat_in, c.dtype, f.fmt, *f.ig);
  aclTensor* gg = tensor(f.grid_dims, c.dtype, ACL_FORMAT_ND, *f.gg);
  // GRIDSAMPLE_BENCH_MASK=10 or 01 times one gradient only (for analysis; the suite uses 11).
  const char* mask_env = std::getenv("GRIDSAMPLE_BENCH_MASK");
  const bool mask_values[2] = {mask_env == nullptr || mask_env[0] != '0',
                               mask_env == nullptr || mask_env[1] != '0'};
  aclBoolArray* mask = aclCreateBoolArray(mask_values, 2);
  uint64_t ws_size = 0;
  aclOpExecutor* ex = nullptr;
  aclnnStatus st;
  RunFn fn;
  if (backward) {
    auto plan = c.nd == 3 ? aclnnGridSampler3DBackwardGetWorkspaceSize
                          : aclnnGridSampler2DBackwardGetWorkspaceSize;
    st = plan(go, x, g, c.interp, c.padding, c.align, mask, ig, gg, &ws_size, &ex);
    fn = c.nd == 3 ? aclnnGridSampler3DBackward : aclnnGridSampler2DBackward;
  } else {
    auto plan = c.nd == 3 ? aclnnGridSampler3DGetWorkspaceSize : aclnnGridSampler2DGetWorkspaceSize;
    st = plan(x, g, c.interp, c.padding, c.align, out, &ws_size, &ex);
    fn = c.nd == 3 ? aclnnGridSampler3D : aclnnGridSampler2D;
  }
  void* ws = nullptr;
  if (st == ACLNN_SUCCESS) st = aclSetAclOpExecutorRepeatable(ex);
  if (st == ACLNN_SUCCESS && ws_size > 0) st = aclrtMalloc(&ws, ws_size, ACL_MEM_MALLOC_HUGE_FIRST);
  if (st != ACLNN_SUCCESS) {
    state.SkipWithError(aclGetRecentErrMsg());
  } else {
    for (auto _ : state) {
      if (fn(ws, ws_size, ex, nullptr) != ACLNN_SUCCESS) {
        state.SkipWithError(aclGetRecentErrMsg());
        break;
      }
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * f.bytes(backward));
    state.counters["bytes"] = double(f.bytes(backward));
    state.counters["x_floor"] = benchmark::Counter(
        double(f.bytes(backward)) / copy_bandwidth_once(),
        benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  }
  if (ex != nullptr) aclDestroyAclOpExecutor(ex);
  if (ws != nullptr) aclrtFree(ws);
  aclDestroyBoolArray(mask);
  for (aclTensor* t : {x, g, go, out, ig, gg}) aclDestroyTensor(t);
}

// The machine's copy bandwidth with the benchmark's threads: bytes read plus bytes written.
void copy_bandwidth(benchmark::State& state) {
  const size_t n = size_t(256) << 20;
  std::vector<unsigned char> src(n, 1), dst(n, 0);
  for (auto _ : state) {
    parallel_copy(dst.data(), src.data(), n);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(2 * n));
}

void register_all() {
  static std::vector<Case> extras;
  for (const Case& c : suite())
    for (bool bwd : {false, true})
      benchmark::RegisterBenchmark(("suite/" + c.name + (bwd ? "/bwd" : "/fwd")).c_str(),
                                   [&c, bwd](benchmark::State& s) { run_case(s, c, bwd); })
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
  // FLOAT twins of 16-bit cases whose FLOAT shape the suite lacks.
  for (const Case& c : suite()) {
    if (elem_bytes(c.dtype) != 2) continue;
    bool has_twin = false;
    for (const Case& d : suite())
      has_twin = has_twin ||
                 (d.dtype == ACL_FLOAT && d.nd == c.nd && d.N == c.N && d.C == c.C &&
                  d.in == c.in && d.out == c.out && d.interp == c.interp &&
                  d.padding == c.padding && d.align == c.align && d.channel_last == c.channel_last);
    if (has_twin) continue;
    Case t = c;
    t.name = c.name.substr(0, c.name.rfind('_')) + "_f32";
    t.dtype = ACL_FLOAT;
    extras.push_back(t);
  }
  for (const Case& c : extras)
    for (bool bwd : {false, true})
      benchmark::RegisterBenchmark(("extra/" + c.name + (bwd ? "/bwd" : "/fwd")).c_str(),
                                   [&c, bwd](benchmark::State& s) { run_case(s, c, bwd); })
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("memory/copy", copy_bandwidth)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
#if defined(_OPENMP)
  benchmark::AddCustomContext("omp_threads", std::to_string(omp_get_max_threads()));
#endif
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
