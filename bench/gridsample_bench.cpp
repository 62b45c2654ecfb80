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
// Environment: GRIDSAMPLE_IMPL=cpu:ref (NOTE [ Forcing an implementation ]) times the reference
// instead; for analysis only, GRIDSAMPLE_BENCH_GRID=smooth replaces the random grids by a slightly
// perturbed identity (every sample near its neighbours': the cache-friendly extreme), and
// GRIDSAMPLE_BENCH_MASK=10 or 01 times the backward with one gradient.
#include <benchmark/benchmark.h>

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

struct Case {
  std::string name;
  int nd;
  int64_t N, C, in, out;  // cubic input and output grids: in^nd, out^nd
  int64_t interp, padding;
  bool align;
  aclDataType dtype;
  bool channel_last;
};

// Issue 3's table.
const std::vector<Case>& suite() {
  static const std::vector<Case> cases = {
      {"3d_bilinear_c16_64", 3, 1, 16, 64, 64, 0, 0, false, ACL_FLOAT, false},
      {"3d_bilinear_c1_128", 3, 1, 1, 128, 128, 0, 1, true, ACL_FLOAT, false},
      {"3d_bilinear_c32_32_cl", 3, 2, 32, 32, 32, 0, 2, false, ACL_FLOAT, true},
      {"3d_nearest_c16_64", 3, 1, 16, 64, 64, 1, 0, false, ACL_FLOAT, false},
      {"3d_bilinear_c16_64_f64", 3, 1, 16, 64, 64, 0, 0, false, ACL_DOUBLE, false},
      {"3d_bilinear_c16_64_bf16", 3, 1, 16, 64, 64, 0, 0, false, ACL_BF16, false},
      {"2d_bilinear_c64_128", 2, 8, 64, 128, 128, 0, 0, false, ACL_FLOAT, false},
      {"2d_bicubic_c16_256", 2, 2, 16, 256, 256, 2, 1, true, ACL_FLOAT, false},
      {"2d_bilinear_c3_512_f16", 2, 4, 3, 512, 512, 0, 0, false, ACL_FLOAT16, false},
  };
  return cases;
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
    const std::vector<int64_t> sp_in(size_t(k.nd), k.in), sp_out(size_t(k.nd), k.out);
    auto feature = [&](const std::vector<int64_t>& sp) {
      std::vector<int64_t> d = {k.N};
      if (!k.channel_last) d.push_back(k.C);
      d.insert(d.end(), sp.begin(), sp.end());
      if (k.channel_last) d.push_back(k.C);
      return d;
    };
    feat_in = feature(sp_in);
    feat_out = feature(sp_out);
    grid_dims = {k.N};
    grid_dims.insert(grid_dims.end(), sp_out.begin(), sp_out.end());
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
    if (const char* g = std::getenv("GRIDSAMPLE_BENCH_GRID"); g && std::string(g) == "smooth") {
      // An identity grid slightly perturbed: every sample near its neighbours' (cache-friendly).
      std::uniform_real_distribution<double> jitter(-0.01, 0.01);
      for (size_t i = 0; i < v.size(); ++i) {
        const size_t comp = i % size_t(k.nd), pt = i / size_t(k.nd);
        int64_t idx = int64_t(pt), coord = 0;
        for (int d = 0; d <= int(comp); ++d) {
          coord = idx % k.out;
          idx /= k.out;
        }
        v[i] = -1 + 2 * (double(coord) + 0.5) / double(k.out) + jitter(rng);
      }
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
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < 64; ++i) {
      const size_t chunk = n / 64;
      std::memcpy(dst.data() + size_t(i) * chunk, src.data() + size_t(i) * chunk, chunk);
    }
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
