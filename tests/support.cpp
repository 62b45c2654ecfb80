#include "support.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gstest {

int dtype_bytes(aclDataType t) {
  switch (t) {
    case ACL_FLOAT16:
    case ACL_BF16:
      return 2;
    case ACL_FLOAT:
      return 4;
    case ACL_DOUBLE:
      return 8;
    default:
      return 4;
  }
}

double round_to(aclDataType t, double v) {
  unsigned char buf[8];
  from_double(t, v, buf);
  return to_double(t, buf);
}

HostTensor::HostTensor(std::vector<int64_t> d, aclDataType t, aclFormat f) {
  std::vector<int64_t> s(d.size(), 1);
  for (size_t i = d.size(); i-- > 1;) s[i - 1] = s[i] * std::max<int64_t>(d[i], 1);
  *this = strided(std::move(d), std::move(s), 0, t, f);
}

HostTensor HostTensor::strided(std::vector<int64_t> d, std::vector<int64_t> s, int64_t offset,
                               aclDataType t, aclFormat f) {
  HostTensor h;
  h.dtype = t;
  h.format = f;
  h.dims = std::move(d);
  h.strides = std::move(s);
  h.offset = offset;
  int64_t hi = offset, lo = offset;
  bool empty = false;
  for (size_t i = 0; i < h.dims.size(); ++i) {
    if (h.dims[i] == 0) empty = true;
    const int64_t span = (std::max<int64_t>(h.dims[i], 1) - 1) * h.strides[i];
    (span < 0 ? lo : hi) += span;
  }
  if (!empty && lo < 0) throw std::invalid_argument("a negative stride reaches below the storage");
  h.storage_elems = empty ? offset : hi + 1;
  h.storage = std::make_shared<std::vector<unsigned char>>(
      size_t(std::max<int64_t>(h.storage_elems, 1) * dtype_bytes(t)) + 64);
  return h;
}

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

unsigned char* HostTensor::base() const {
  // 64-byte aligned start inside the buffer.
  auto p = reinterpret_cast<uintptr_t>(storage->data());
  return storage->data() + ((64 - p % 64) % 64);
}

int64_t HostTensor::elem_offset(int64_t flat) const {
  int64_t off = offset;
  for (size_t i = dims.size(); i-- > 0;) {
    off += (flat % dims[i]) * strides[i];
    flat /= dims[i];
  }
  return off;
}

double HostTensor::get(int64_t flat) const {
  return to_double(dtype, base() + elem_offset(flat) * dtype_bytes(dtype));
}

void HostTensor::set(int64_t flat, double v) {
  from_double(dtype, v, base() + elem_offset(flat) * dtype_bytes(dtype));
}

std::vector<double> HostTensor::values() const {
  std::vector<double> v(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) v[size_t(i)] = get(i);
  return v;
}

void HostTensor::set_values(const std::vector<double>& v) {
  if (int64_t(v.size()) != numel()) throw std::invalid_argument("set_values: size mismatch");
  for (int64_t i = 0; i < numel(); ++i) set(i, v[size_t(i)]);
}

void HostTensor::fill(double v) {
  for (int64_t i = 0; i < numel(); ++i) set(i, v);
}

void HostTensor::fill_bytes(unsigned char b) { std::fill(storage->begin(), storage->end(), b); }

aclTensor* HostTensor::make() const {
  const int64_t storage_dims[1] = {storage_elems};
  return aclCreateTensor(dims.data(), dims.size(), dtype, strides.data(), offset, format,
                         storage_dims, 1, base());
}

namespace {
aclnnStatus run_phase2(aclnnStatus st, uint64_t ws_size, aclOpExecutor* ex,
                       aclnnStatus (*run)(void*, uint64_t, aclOpExecutor*, aclrtStream)) {
  if (st != ACLNN_SUCCESS) return st;
  // Junk that no kernel may read before writing it: huge values (NaN in FLOAT16), which show.
  std::vector<unsigned char> ws(size_t(ws_size) + 1, 0x7F);
  return run(ws_size ? ws.data() : nullptr, ws_size, ex, nullptr);
}
}  // namespace

aclnnStatus forward(const HostTensor& input, const HostTensor& grid, const HostTensor& out,
                    Modes m) {
  TensorHandle i(&input), g(&grid), o(&out);
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  const bool is3d = grid.dims.size() == 5;
  auto gws = is3d ? aclnnGridSampler3DGetWorkspaceSize : aclnnGridSampler2DGetWorkspaceSize;
  const aclnnStatus st = gws(i.t, g.t, m.interp, m.padding, m.align, o.t, &ws, &ex);
  return run_phase2(st, ws, ex, is3d ? aclnnGridSampler3D : aclnnGridSampler2D);
}

aclnnStatus backward(const HostTensor& grad_out, const HostTensor& input, const HostTensor& grid,
                     const HostTensor* input_grad, const HostTensor* grid_grad, Modes m,
                     bool mask_input, bool mask_grid) {
  TensorHandle go(&grad_out), i(&input), g(&grid), ig(input_grad), gg(grid_grad);
  const bool mask[2] = {mask_input, mask_grid};
  aclBoolArray* mk = aclCreateBoolArray(mask, 2);
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  const bool is3d = grid.dims.size() == 5;
  auto gws = is3d ? aclnnGridSampler3DBackwardGetWorkspaceSize
                  : aclnnGridSampler2DBackwardGetWorkspaceSize;
  const aclnnStatus st =
      gws(go.t, i.t, g.t, m.interp, m.padding, m.align, mk, ig.t, gg.t, &ws, &ex);
  aclDestroyBoolArray(mk);
  return run_phase2(st, ws, ex, is3d ? aclnnGridSampler3DBackward : aclnnGridSampler2DBackward);
}

std::vector<double> uniform(std::mt19937_64& rng, int64_t n, double lo, double hi) {
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

double rel_max_err(const std::vector<double>& a, const std::vector<double>& b) {
  double scale = 0, err = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    scale = std::max(scale, std::fabs(b[i]));
    err = std::max(err, std::fabs(a[i] - b[i]));
  }
  return err / (scale > 0 ? scale : 1);
}

std::string grid_grad_mismatch(aclDataType t, const std::vector<double>& got,
                               const std::vector<double>& ref, double floor) {
  if (got.size() != ref.size()) return "sizes differ";
  double scale = floor;
  for (double r : ref)
    if (std::isfinite(r)) scale = std::max(scale, std::fabs(r));
  const double rel = t == ACL_DOUBLE ? 1e-12 : 1e-5;
  const int mantissa = t == ACL_BF16 ? 7 : (t == ACL_FLOAT16 ? 10 : -1);
  for (size_t i = 0; i < ref.size(); ++i) {
    const double a = got[i], b = ref[i];
    if (std::isnan(a) && std::isnan(b)) continue;
    if (std::isinf(a) || std::isinf(b) || std::isnan(a) || std::isnan(b)) {
      if (a == b) continue;
    } else {
      double ulp = 0;
      if (mantissa > 0) {
        const double m = std::max(std::fabs(a), std::fabs(b));
        const int e = m > 0 ? std::ilogb(m) : 0;
        ulp = std::ldexp(1.0, std::max(e, t == ACL_FLOAT16 ? -14 : -126) - mantissa);
      }
      if (std::fabs(a - b) <= ulp + rel * scale) continue;
    }
    return "element " + std::to_string(i) + ": " + std::to_string(a) + " vs " + std::to_string(b) +
           " (of " + std::to_string(ref.size()) + ", scale " + std::to_string(scale) + ")";
  }
  return "";
}

double grid_grad_floor(const HostTensor& input, const HostTensor& grad_out, int64_t C,
                       const std::vector<int64_t>& in_spatial, bool align_corners) {
  auto amax = [](const std::vector<double>& v) {
    double m = 0;
    for (double x : v)
      if (std::isfinite(x)) m = std::max(m, std::fabs(x));
    return m;
  };
  return grid_grad_floor(C, amax(input.values()), amax(grad_out.values()), in_spatial.data(),
                         int(in_spatial.size()), align_corners);
}

}  // namespace gstest

namespace gstest {

std::string case_string(int64_t n, int64_t c, const std::vector<int64_t>& in_spatial,
                        const std::vector<int64_t>& out_spatial, Modes m, aclDataType t,
                        bool channel_last) {
  auto join = [](const std::vector<int64_t>& v) {
    std::string r;
    for (size_t i = 0; i < v.size(); ++i) r += (i ? "x" : "") + std::to_string(v[i]);
    return r;
  };
  static const char* const interp[] = {"bilinear", "nearest", "bicubic"};
  static const char* const padding[] = {"zeros", "border", "reflection"};
  const bool ok = m.interp >= 0 && m.interp < 3 && m.padding >= 0 && m.padding < 3;
  const char* dt = t == ACL_FLOAT16  ? "f16"
                   : t == ACL_BF16   ? "bf16"
                   : t == ACL_DOUBLE ? "f64"
                                     : "f32";
  const bool is3d = in_spatial.size() == 3;
  return std::to_string(in_spatial.size()) + "d_n" + std::to_string(n) + "c" + std::to_string(c) +
         "_i" + join(in_spatial) + "_o" + join(out_spatial) + "_" + (ok ? interp[m.interp] : "?") +
         "_" + (ok ? padding[m.padding] : "?") + "_ac" + (m.align ? "1" : "0") + "_" + dt + "_" +
         (is3d ? (channel_last ? "ndhwc" : "ncdhw") : (channel_last ? "nhwc" : "nchw"));
}

uint64_t seed_of(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace gstest
