#include "core/check.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <string>
#include <vector>

namespace gridsample {
namespace {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

std::string dims_str(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

const char* dtype_name(int32_t t) {
  switch (t) {
    case ACL_DT_UNDEFINED:
      return "UNDEFINED";
    case ACL_FLOAT:
      return "FLOAT";
    case ACL_FLOAT16:
      return "FLOAT16";
    case ACL_INT8:
      return "INT8";
    case ACL_INT32:
      return "INT32";
    case ACL_UINT8:
      return "UINT8";
    case ACL_INT16:
      return "INT16";
    case ACL_UINT16:
      return "UINT16";
    case ACL_UINT32:
      return "UINT32";
    case ACL_INT64:
      return "INT64";
    case ACL_UINT64:
      return "UINT64";
    case ACL_DOUBLE:
      return "DOUBLE";
    case ACL_BOOL:
      return "BOOL";
    case ACL_STRING:
      return "STRING";
    case ACL_COMPLEX64:
      return "COMPLEX64";
    case ACL_COMPLEX128:
      return "COMPLEX128";
    case ACL_BF16:
      return "BF16";
  }
  return "UNKNOWN";
}

enum class Kind { Feature, Grid };

// One tensor argument after its own checks: canonical dims and strides, and its memory span.
struct Desc {
  const char* name = "";
  const aclTensor* t = nullptr;
  Kind kind = Kind::Feature;
  bool channel_last = false;
  int64_t dims[kMaxSpatial + 2] = {};  // canonical order
  View view;
  bool empty = false;
  uintptr_t lo = 0, hi = 0;  // byte span [lo, hi) of the addressed elements, when not empty
};

class Checker {
 public:
  Checker(const CallArgs& a, Error* e) : a_(a), e_(e) {}

  bool fail(int32_t status, const std::string& msg) {
    e_->status = status;
    e_->message = std::string(a_.api) + ": " + msg;
    return false;
  }

  bool run(Problem* p);

 private:
  bool describe(const aclTensor* t, const char* name, Kind kind, Desc* d);
  bool memory(Desc* d);
  bool same(const Desc& x, int xi, const Desc& y, int yi, const char* what);
  bool no_self_overlap(const Desc& d);
  bool disjoint(const Desc& out, const Desc& in);

  const CallArgs& a_;
  Error* e_;
  int rank_ = 0;
  DType dtype_ = DType::Float32;
  int32_t acl_dtype_ = ACL_DT_UNDEFINED;
};

bool Checker::describe(const aclTensor* t, const char* name, Kind kind, Desc* d) {
  d->name = name;
  d->t = t;
  d->kind = kind;
  const int64_t rank = int64_t(t->view_dims.size());
  if (rank != rank_)
    return fail(ACLNN_ERR_PARAM_INVALID,
                format("%s must have rank %d for %dD sampling, got rank %lld with shape %s", name,
                       rank_, a_.nd, (long long)rank, dims_str(t->view_dims).c_str()));
  for (int64_t i = 0; i < rank; ++i)
    if (t->view_dims[i] < 0)
      return fail(ACLNN_ERR_PARAM_INVALID,
                  format("%s has a negative dim %lld at index %lld: %s", name,
                         (long long)t->view_dims[i], (long long)i, dims_str(t->view_dims).c_str()));
  int64_t count = 1;  // with zero dims read as 1: kernels form partial products of the dims
  for (int64_t i = 0; i < rank; ++i)
    if (__builtin_mul_overflow(count, std::max<int64_t>(t->view_dims[i], 1), &count))
      return fail(ACLNN_ERR_PARAM_INVALID, format("%s: the product of its dims %s overflows int64",
                                                  name, dims_str(t->view_dims).c_str()));
  if (t->dtype != acl_dtype_)
    return fail(ACLNN_ERR_PARAM_INVALID,
                format("%s has dtype %s (%d) but input has %s (%d); all dtypes must be equal", name,
                       dtype_name(t->dtype), t->dtype, dtype_name(acl_dtype_), acl_dtype_));
  switch (t->format) {
    case ACL_FORMAT_ND:
    case ACL_FORMAT_NCHW:
    case ACL_FORMAT_NCDHW:
      d->channel_last = false;
      break;
    case ACL_FORMAT_NHWC:
    case ACL_FORMAT_NDHWC:
      d->channel_last = kind == Kind::Feature;
      break;
    default:
      return fail(ACLNN_ERR_PARAM_INVALID,
                  format("%s has format %d; supported are ND (2), NCHW (0), NHWC (1), NCDHW (30) "
                         "and NDHWC (27)",
                         name, t->format));
  }
  // Canonical order: feature [n, c, spatial...], grid [n, spatial..., k] (already canonical).
  // NOTE [ Canonical strides ]
  // A stride that is never multiplied by a non-zero index is 0 in the canonical problem: that
  // of a dim of size 1, and every stride of an empty tensor, which is never addressed. The
  // memory checks bound only the strides that matter, so these may be anything (INT64_MIN
  // included), and kernels form offsets and pointers from strides before they know whether
  // an element will be touched (found by fuzz/fuzz_descriptor.cpp).
  for (int i = 0; i < rank_; ++i) {
    int src = i;
    if (d->channel_last) src = i == 0 ? 0 : (i == 1 ? rank_ - 1 : i - 1);
    d->dims[i] = t->view_dims[src];
    d->view.stride[i] = d->dims[i] == 1 ? 0 : t->strides[src];
  }
  for (int i = 0; i < rank_; ++i) d->empty = d->empty || d->dims[i] == 0;
  if (d->empty)
    for (int i = 0; i < rank_; ++i) d->view.stride[i] = 0;
  return true;
}

// Span and placement checks (NOTE [ Memory checks ] in docs/design.md).
bool Checker::memory(Desc* d) {
  const aclTensor* t = d->t;
  const int64_t es = dtype_size(dtype_);
  if (d->empty) {
    d->view.data = static_cast<char*>(t->data);
    return true;
  }
  if (t->data == nullptr)
    return fail(ACLNN_ERR_PARAM_NULLPTR,
                format("%s has a null data pointer but shape %s is not empty", d->name,
                       dims_str(t->view_dims).c_str()));
  int64_t lo = t->offset, hi = t->offset;
  for (int i = 0; i < rank_; ++i) {
    int64_t ext;
    if (__builtin_mul_overflow(d->dims[i] - 1, d->view.stride[i], &ext) ||
        __builtin_add_overflow(ext < 0 ? lo : hi, ext, ext < 0 ? &lo : &hi))
      return fail(ACLNN_ERR_PARAM_INVALID,
                  format("%s: the extent of shape %s with strides %s overflows int64", d->name,
                         dims_str(t->view_dims).c_str(), dims_str(t->strides).c_str()));
  }
  if (lo < 0)
    return fail(ACLNN_ERR_PARAM_INVALID,
                format("%s: offset %lld with strides %s addresses element %lld, before tensorData",
                       d->name, (long long)t->offset, dims_str(t->strides).c_str(), (long long)lo));
  if (!t->storage_dims.empty()) {
    int64_t n = 1;
    for (int64_t s : t->storage_dims)
      if (s < 0 || __builtin_mul_overflow(n, s, &n))
        return fail(ACLNN_ERR_PARAM_INVALID, format("%s: storage shape %s is invalid", d->name,
                                                    dims_str(t->storage_dims).c_str()));
    if (hi >= n)
      return fail(ACLNN_ERR_PARAM_INVALID,
                  format("%s: the view (shape %s, strides %s, offset %lld) reaches element %lld, "
                         "beyond its storage shape %s (%lld elements)",
                         d->name, dims_str(t->view_dims).c_str(), dims_str(t->strides).c_str(),
                         (long long)t->offset, (long long)hi, dims_str(t->storage_dims).c_str(),
                         (long long)n));
  }
  int64_t count, hi_bytes;  // elements from tensorData to the end of the view, and their bytes
  uintptr_t end;
  const uintptr_t base = reinterpret_cast<uintptr_t>(t->data);
  if (__builtin_add_overflow(hi, 1, &count) || __builtin_mul_overflow(count, es, &hi_bytes) ||
      __builtin_add_overflow(base, uintptr_t(hi_bytes), &end))
    return fail(ACLNN_ERR_PARAM_INVALID,
                format("%s: the byte span of the view (up to element %lld) cannot be addressed",
                       d->name, (long long)hi));
  if (base % uintptr_t(es) != 0)
    return fail(ACLNN_ERR_PARAM_INVALID,
                format("%s: data pointer %p is not aligned to its element size %lld", d->name,
                       t->data, (long long)es));
  d->view.data = static_cast<char*>(t->data) + t->offset * es;
  d->lo = base + uintptr_t(lo * es);
  d->hi = end;
  return true;
}

bool Checker::same(const Desc& x, int xi, const Desc& y, int yi, const char* what) {
  if (x.dims[xi] == y.dims[yi]) return true;
  return fail(ACLNN_ERR_PARAM_INVALID,
              format("%s of %s is %lld but %s has %lld (%s shape %s, %s shape %s)", what, x.name,
                     (long long)x.dims[xi], y.name, (long long)y.dims[yi], x.name,
                     dims_str(x.t->view_dims).c_str(), y.name, dims_str(y.t->view_dims).c_str()));
}

// An output view must not map two elements to one address. Sufficient test: sorted by stride,
// each stride exceeds the extent of all smaller dims (NOTE [ Memory checks ]).
bool Checker::no_self_overlap(const Desc& d) {
  if (d.empty) return true;
  std::vector<std::pair<int64_t, int64_t>> sd;  // |stride|, size
  for (int i = 0; i < rank_; ++i)
    if (d.dims[i] > 1)
      sd.emplace_back(d.view.stride[i] < 0 ? -d.view.stride[i] : d.view.stride[i], d.dims[i]);
  std::sort(sd.begin(), sd.end());
  int64_t extent = 0;  // largest offset reachable with the dims so far
  for (auto [st, n] : sd) {
    if (st <= extent)
      return fail(ACLNN_ERR_PARAM_INVALID,
                  format("%s (shape %s, strides %s) maps two elements to one address; an output "
                         "must not overlap itself",
                         d.name, dims_str(d.t->view_dims).c_str(), dims_str(d.t->strides).c_str()));
    extent += st * (n - 1);  // cannot overflow: memory() bounded the whole extent
  }
  return true;
}

bool Checker::disjoint(const Desc& out, const Desc& in) {
  if (out.empty || in.empty || out.hi <= in.lo || in.hi <= out.lo) return true;
  return fail(
      ACLNN_ERR_PARAM_INVALID,
      format("%s overlaps %s in memory ([%p, %p) and [%p, %p)); outputs must not alias "
             "inputs or each other",
             out.name, in.name, reinterpret_cast<void*>(out.lo), reinterpret_cast<void*>(out.hi),
             reinterpret_cast<void*>(in.lo), reinterpret_cast<void*>(in.hi)));
}

bool Checker::run(Problem* p) {
  const bool bwd = a_.op == Op::Backward;
  const char* out_name = bwd ? "gradOutput" : "out";
  if (a_.workspace_size == nullptr) return fail(ACLNN_ERR_PARAM_NULLPTR, "workspaceSize is null");
  if (a_.executor == nullptr) return fail(ACLNN_ERR_PARAM_NULLPTR, "executor is null");
  if (a_.input == nullptr) return fail(ACLNN_ERR_PARAM_NULLPTR, "input is null");
  if (a_.grid == nullptr) return fail(ACLNN_ERR_PARAM_NULLPTR, "grid is null");
  if (a_.out == nullptr) return fail(ACLNN_ERR_PARAM_NULLPTR, std::string(out_name) + " is null");
  bool want_ig = false, want_gg = false;
  if (bwd) {
    if (a_.output_mask == nullptr)
      return fail(ACLNN_ERR_PARAM_NULLPTR,
                  "outputMask is null; pass {true, true} for both gradients (CANN would silently "
                  "compute nothing)");
    if (a_.output_mask->values.size() != 2)
      return fail(ACLNN_ERR_PARAM_INVALID,
                  format("outputMask must have 2 elements (inputGrad, gridGrad), got %zu",
                         a_.output_mask->values.size()));
    want_ig = a_.output_mask->values[0];
    want_gg = a_.output_mask->values[1];
    if (want_ig && a_.input_grad == nullptr)
      return fail(ACLNN_ERR_PARAM_NULLPTR, "inputGrad is null but outputMask[0] is true");
    if (want_gg && a_.grid_grad == nullptr)
      return fail(ACLNN_ERR_PARAM_NULLPTR, "gridGrad is null but outputMask[1] is true");
  }
  if (a_.interpolation_mode < 0 || a_.interpolation_mode > 2)
    return fail(
        ACLNN_ERR_PARAM_INVALID,
        format("interpolationMode must be 0 (bilinear), 1 (nearest) or 2 (bicubic), got %lld",
               (long long)a_.interpolation_mode));
  if (a_.padding_mode < 0 || a_.padding_mode > 2)
    return fail(ACLNN_ERR_PARAM_INVALID,
                format("paddingMode must be 0 (zeros), 1 (border) or 2 (reflection), got %lld",
                       (long long)a_.padding_mode));

  acl_dtype_ = a_.input->dtype;
  switch (acl_dtype_) {
    case ACL_FLOAT:
    case ACL_FLOAT16:
    case ACL_DOUBLE:
    case ACL_BF16:
      dtype_ = DType(acl_dtype_);
      break;
    default:
      return fail(ACLNN_ERR_PARAM_INVALID,
                  format("input has dtype %s (%d); supported are FLOAT16, BF16, FLOAT and DOUBLE",
                         dtype_name(acl_dtype_), acl_dtype_));
  }
  rank_ = a_.nd + 2;
  Desc in, grid, out, ig, gg;
  if (!describe(a_.input, "input", Kind::Feature, &in) ||
      !describe(a_.grid, "grid", Kind::Grid, &grid) ||
      !describe(a_.out, out_name, Kind::Feature, &out))
    return false;
  if (want_ig && !describe(a_.input_grad, "inputGrad", Kind::Feature, &ig)) return false;
  if (want_gg && !describe(a_.grid_grad, "gridGrad", Kind::Grid, &gg)) return false;

  const int nd = a_.nd, k = rank_ - 1;
  if (grid.dims[k] != nd)
    return fail(ACLNN_ERR_PARAM_INVALID,
                format("the last dim of grid must be %d for %dD sampling, got shape %s", nd, nd,
                       dims_str(a_.grid->view_dims).c_str()));
  if (!same(grid, 0, in, 0, "N (dim 0)") || !same(out, 0, in, 0, "N (dim 0)") ||
      !same(out, 1, in, 1, "C (channel dim)"))
    return false;
  for (int i = 0; i < nd; ++i)
    if (!same(out, 2 + i, grid, 1 + i, "an output spatial dim")) return false;
  if (want_ig)
    for (int i = 0; i < rank_; ++i)
      if (!same(ig, i, in, i, "a dim")) return false;
  if (want_gg)
    for (int i = 0; i < rank_; ++i)
      if (!same(gg, i, grid, i, "a dim")) return false;
  for (int i = 0; i < nd; ++i)
    if (in.dims[2 + i] == 0)
      return fail(ACLNN_ERR_PARAM_INVALID,
                  format("input spatial dims must be non-zero, got shape %s",
                         dims_str(a_.input->view_dims).c_str()));

  for (Desc* d : {&in, &grid, &out}) {
    if (!memory(d)) return false;
  }
  if (want_ig && !memory(&ig)) return false;
  if (want_gg && !memory(&gg)) return false;

  // Outputs: the forward `out`, or the requested gradients.
  std::vector<const Desc*> outputs, inputs = {&in, &grid};
  if (bwd) {
    inputs.push_back(&out);
    if (want_ig) outputs.push_back(&ig);
    if (want_gg) outputs.push_back(&gg);
  } else {
    outputs.push_back(&out);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!no_self_overlap(*outputs[i])) return false;
    for (const Desc* x : inputs)
      if (!disjoint(*outputs[i], *x)) return false;
    for (size_t j = 0; j < i; ++j)
      if (!disjoint(*outputs[i], *outputs[j])) return false;
  }

  Problem q;
  q.op = a_.op;
  q.nd = nd;
  q.dtype = dtype_;
  q.interp = Interp(a_.interpolation_mode);
  q.padding = Padding(a_.padding_mode);
  q.align_corners = a_.align_corners;
  q.channel_last = in.channel_last;
  q.N = in.dims[0];
  q.C = in.dims[1];
  for (int i = 0; i < nd; ++i) {
    q.in_size[i] = in.dims[2 + i];
    q.out_size[i] = grid.dims[1 + i];
  }
  q.want_input_grad = want_ig;
  q.want_grid_grad = want_gg;
  q.input = in.view;
  q.grid = grid.view;
  q.out = out.view;
  if (want_ig) q.input_grad = ig.view;
  if (want_gg) q.grid_grad = gg.view;
  *p = q;
  return true;
}

}  // namespace

bool check_call(const CallArgs& args, Problem* problem, Error* error) {
  return Checker(args, error).run(problem);
}

}  // namespace gridsample
