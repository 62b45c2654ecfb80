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
// - face/<name>/{fwd,bwd} for each --gs_case when --gs_face is given: the same problem through
//   the C++ face (gridsample.hpp), whose call plans, allocates a workspace, runs and frees: what
//   one call costs a C++ user, planning and workspace included;
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
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_grid_sampler2d.h"
#include "aclnnop/aclnn_grid_sampler2d_backward.h"
#include "aclnnop/aclnn_grid_sampler3d.h"
#include "aclnnop/aclnn_grid_sampler3d_backward.h"
#include "gridsample/gridsample.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace {

// The grids users have (NOTE [ Bench grids ]).
enum class GridKind { Random, Warp, Affine, Identity };

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

// A case from its problem string (NOTE [ Bench problem strings ]); false if it does not parse.
bool parse_case(const std::string& spec, Case* c) {
  c->name = spec;
  std::vector<std::string> f;
  for (size_t i = 0, j; i <= spec.size(); i = j + 1) {
    j = spec.find('_', i);
    if (j == std::string::npos) j = spec.size();
    f.push_back(spec.substr(i, j - i));
  }
  if (f.size() != 10) return false;
  auto dims = [](const std::string& t, char lead, std::vector<int64_t>* d) {
    if (t.empty() || t[0] != lead) return false;
    d->clear();
    for (size_t i = 1, j; i <= t.size(); i = j + 1) {
      j = t.find('x', i);
      if (j == std::string::npos) j = t.size();
      d->push_back(std::atoll(t.substr(i, j - i).c_str()));
    }
    return true;
  };
  auto index = [](const std::string& t, std::initializer_list<const char*> names) -> int64_t {
    int64_t i = 0;
    for (const char* n : names) {
      if (t == n) return i;
      ++i;
    }
    return -1;
  };
  const int64_t grid = index(f[0], {"random", "warp", "affine", "identity"});
  c->nd = f[1] == "2d" ? 2 : f[1] == "3d" ? 3 : 0;
  if (grid < 0 || c->nd == 0) return false;
  c->grid = GridKind(grid);
  if (std::sscanf(f[2].c_str(), "n%" SCNd64 "c%" SCNd64, &c->N, &c->C) != 2) return false;
  if (!dims(f[3], 'i', &c->in) || !dims(f[4], 'o', &c->out)) return false;
  if (c->in.size() != size_t(c->nd) || c->out.size() != size_t(c->nd)) return false;
  c->interp = index(f[5], {"bilinear", "nearest", "bicubic"});
  c->padding = index(f[6], {"zeros", "border", "reflection"});
  const int64_t align = index(f[7], {"ac0", "ac1"});
  const int64_t dt = index(f[8], {"f32", "f64", "f16", "bf16"});
  const int64_t layout = index(f[9], {"cf", "cl"});
  if (c->interp < 0 || c->padding < 0 || align < 0 || dt < 0 || layout < 0) return false;
  c->align = align == 1;
  c->dtype = std::vector<aclDataType>{ACL_FLOAT, ACL_DOUBLE, ACL_FLOAT16, ACL_BF16}[size_t(dt)];
  c->channel_last = layout == 1;
  return true;
}

// NOTE [ Bench problem strings ]
// A case is one string, GRID_Kd_nNcC_iINPUT_oOUTPUT_INTERP_PADDING_acA_DTYPE_LAYOUT, e.g.
// warp_3d_n1c2_i80x96x80_o80x96x80_bilinear_border_ac1_f32_cf: the grid kind (NOTE [ Bench
// grids ]), 2d or 3d, batch and channels, input and output spatial sizes (outermost first),
// modes, dtype (f32, f64, f16, bf16) and layout (cf channel-first, cl channel-last). The suite
// names its cases; `--gs_list` prints each name with its string, which tools/bench_vs_torch.py
// reads to build the same problems for PyTorch, and `--gs_case=STRING` (repeatable) times any
// other problem as case/STRING/{fwd,bwd} (tools/sweep_vs_torch.py).
//
// Issue 3's table (uniform random grids), then issue 12's coherent grids: registration fields
// and optical flow (near-identity warps of a few voxels), spatial-transformer and augmentation
// grids (affine).
const std::vector<std::pair<std::string, std::string>>& suite_specs() {
  static const std::vector<std::pair<std::string, std::string>> specs = {
      {"3d_bilinear_c16_64", "random_3d_n1c16_i64x64x64_o64x64x64_bilinear_zeros_ac0_f32_cf"},
      {"3d_bilinear_c1_128", "random_3d_n1c1_i128x128x128_o128x128x128_bilinear_border_ac1_f32_cf"},
      {"3d_bilinear_c32_32_cl",
       "random_3d_n2c32_i32x32x32_o32x32x32_bilinear_reflection_ac0_f32_cl"},
      {"3d_nearest_c16_64", "random_3d_n1c16_i64x64x64_o64x64x64_nearest_zeros_ac0_f32_cf"},
      {"3d_bilinear_c16_64_f64", "random_3d_n1c16_i64x64x64_o64x64x64_bilinear_zeros_ac0_f64_cf"},
      {"3d_bilinear_c16_64_bf16", "random_3d_n1c16_i64x64x64_o64x64x64_bilinear_zeros_ac0_bf16_cf"},
      {"2d_bilinear_c64_128", "random_2d_n8c64_i128x128_o128x128_bilinear_zeros_ac0_f32_cf"},
      {"2d_bicubic_c16_256", "random_2d_n2c16_i256x256_o256x256_bicubic_border_ac1_f32_cf"},
      {"2d_bilinear_c3_512_f16", "random_2d_n4c3_i512x512_o512x512_bilinear_zeros_ac0_f16_cf"},
      {"warp_3d_reg_c1", "warp_3d_n1c1_i80x96x80_o80x96x80_bilinear_border_ac1_f32_cf"},
      {"warp_3d_reg_c2", "warp_3d_n1c2_i80x96x80_o80x96x80_bilinear_border_ac1_f32_cf"},
      {"warp_3d_c16_64", "warp_3d_n1c16_i64x64x64_o64x64x64_bilinear_zeros_ac0_f32_cf"},
      {"warp_3d_c64_32_cl", "warp_3d_n1c64_i32x32x32_o32x32x32_bilinear_border_ac1_f32_cl"},
      {"warp_3d_nearest_c8", "warp_3d_n2c8_i48x48x48_o40x40x40_nearest_reflection_ac0_f32_cf"},
      {"warp_2d_flow_c3_512", "warp_2d_n2c3_i512x512_o512x512_bilinear_border_ac1_f32_cf"},
      {"warp_2d_flow_c1_n1", "warp_2d_n1c1_i512x512_o512x512_bilinear_border_ac1_f32_cf"},
      {"warp_2d_c32_128_cl", "warp_2d_n2c32_i128x128_o128x128_bilinear_zeros_ac0_f32_cl"},
      {"affine_2d_stn_c32_64", "affine_2d_n16c32_i64x64_o64x64_bilinear_zeros_ac0_f32_cf"},
      {"affine_2d_c3_224", "affine_2d_n8c3_i224x224_o224x224_bilinear_zeros_ac0_f32_cf"},
      {"affine_3d_c1_96", "affine_3d_n1c1_i96x96x96_o96x96x96_bilinear_zeros_ac1_f32_cf"},
      {"affine_3d_c16_48_cl", "affine_3d_n2c16_i48x48x48_o48x48x48_bilinear_reflection_ac0_f32_cl"},
  };
  return specs;
}

const std::vector<Case>& suite() {
  static const std::vector<Case> cases = [] {
    std::vector<Case> v;
    for (const auto& [name, spec] : suite_specs()) {
      Case c;
      if (!parse_case(spec, &c)) std::abort();  // the table above is wrong
      c.name = name;
      v.push_back(c);
    }
    return v;
  }();
  return cases;
}

// NOTE [ Bench grids ]
// Random: uniform in [-1.1, 1.1] (every tap a cache miss: the worst case). Warp: the identity
// plus a smooth displacement of up to 3 input voxels per axis, a sine wave across the volume --
// the fields of registration and optical flow. Affine: per batch item a rotation (0.15 + 0.05 n
// rad in the x-y plane, half that in y-z), a scaling by 1.1 and a shift of 0.05 -- spatial
// transformers and augmentation. Identity: the identity at the output's size, a resize (as
// affine_grid of the identity; registration's resampling between levels). Warp, affine and
// identity grids are closed formulas of the point index,
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

// The case through the C++ face: every call plans, allocates its workspace, runs and frees.
void run_face(benchmark::State& state, const Case& c, bool backward) {
  Fixture f(c);
  using gridsample::TensorView;
  const auto dt = gridsample::DType(c.dtype);
  const auto layout =
      c.channel_last ? gridsample::Layout::ChannelLast : gridsample::Layout::ChannelFirst;
  const TensorView x(f.x->bytes.data(), dt, f.feat_in, {}, layout),
      g(f.g->bytes.data(), dt, f.grid_dims), go(f.go->bytes.data(), dt, f.feat_out, {}, layout),
      out(f.out->bytes.data(), dt, f.feat_out, {}, layout),
      ig(f.ig->bytes.data(), dt, f.feat_in, {}, layout), gg(f.gg->bytes.data(), dt, f.grid_dims);
  gridsample::Options o;
  o.interpolation = gridsample::Interpolation(c.interp);
  o.padding = gridsample::Padding(c.padding);
  o.align_corners = c.align;
  try {
    for (auto _ : state) {
      if (backward)
        gridsample::grid_sample_backward(go, x, g, ig, gg, o);
      else
        gridsample::grid_sample(x, g, out, o);
    }
  } catch (const gridsample::Error& e) {
    state.SkipWithError(e.what());
  }
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

void register_case(const std::string& prefix, const Case& c, bool face = false) {
  for (bool bwd : {false, true})
    benchmark::RegisterBenchmark(
        (prefix + c.name + (bwd ? "/bwd" : "/fwd")).c_str(),
        [c, bwd, face](benchmark::State& s) { face ? run_face(s, c, bwd) : run_case(s, c, bwd); })
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
}

// The benchmark name of the FLOAT twin of a 16-bit suite case (a suite case of the same shape,
// or extra/NAME_f32, registered for it), or "-"; *extra receives the twin if it is not in the
// suite.
std::string float_twin(const Case& c, Case* extra) {
  if (elem_bytes(c.dtype) != 2) return "-";
  for (const Case& d : suite())
    if (d.dtype == ACL_FLOAT && d.nd == c.nd && d.N == c.N && d.C == c.C && d.in == c.in &&
        d.out == c.out && d.interp == c.interp && d.padding == c.padding && d.align == c.align &&
        d.channel_last == c.channel_last && d.grid == c.grid)
      return "suite/" + d.name;
  *extra = c;
  extra->name = c.name.substr(0, c.name.rfind('_')) + "_f32";
  extra->dtype = ACL_FLOAT;
  return "extra/" + extra->name;
}

// Registers the suite, the FLOAT twins of its 16-bit cases, memory/copy and the cases given as
// --gs_case=STRING (NOTE [ Bench problem strings ]), each also through the C++ face with
// --gs_face; with --gs_list prints the suite instead. Returns false if an argument does not parse.
bool register_all(int* argc, char** argv, bool* list_only) {
  std::vector<Case> custom;
  bool face = false;
  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--gs_list") {
      *list_only = true;
    } else if (arg == "--gs_face") {
      face = true;
    } else if (arg.rfind("--gs_case=", 0) == 0) {
      Case c;
      if (!parse_case(arg.substr(10), &c)) {
        std::fprintf(stderr, "gridsample_bench: not a problem string: %s\n", arg.c_str() + 10);
        return false;
      }
      custom.push_back(c);
    } else {
      argv[kept++] = argv[i];
    }
  }
  *argc = kept;
  const auto& specs = suite_specs();
  for (size_t i = 0; i < suite().size(); ++i) {
    const Case& c = suite()[i];
    Case extra;
    const std::string twin = float_twin(c, &extra);
    if (*list_only)
      std::printf("%s %s %s\n", c.name.c_str(), specs[i].second.c_str(), twin.c_str());
    register_case("suite/", c);
    if (twin.rfind("extra/", 0) == 0) register_case("extra/", extra);
  }
  for (const Case& c : custom) {
    register_case("case/", c);
    if (face) register_case("face/", c, true);
  }
  benchmark::RegisterBenchmark("memory/copy", copy_bandwidth)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  bool list_only = false;
  if (!register_all(&argc, argv, &list_only)) return 1;
  if (list_only) return 0;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
#if defined(_OPENMP)
  benchmark::AddCustomContext("omp_threads", std::to_string(omp_get_max_threads()));
#endif
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
