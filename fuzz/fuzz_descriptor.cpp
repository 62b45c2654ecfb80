// Descriptor fuzzer: the bytes decode into one call of one of the four GetWorkspaceSize
// functions, with every argument open to damage: ranks, dims (0, negative, huge), strides (0,
// negative, permuted, padded, overflowing), offsets, dtypes, formats, storage shapes, data
// pointers (null, misaligned, aliasing another tensor, unaddressable), modes, alignCorners, the
// output mask and the workspaceSize / executor pointers.
//
// The harness keeps its own model of the validation rules of SPEC §2 and of the documented
// memory rules (NOTE [ Memory checks ] in docs/design.md), and asserts:
//  - only documented statuses (0, 161001, 161002) come back, 161001 whenever a required pointer is
//    null, and acceptance exactly when the model says the call is valid;
//  - a refused call writes nothing: not *workspaceSize, not *executor, not one byte of any buffer;
//  - the workspace size is bounded by the problem (no overflow);
//  - an accepted call runs on buffers allocated to exactly the addressed span (ASan reports any
//    access outside), with a workspace of exactly the size asked for (so it is enough); afterwards
//    every byte outside the requested outputs' elements is unchanged, every requested element was
//    written (the canaries are NaN) and is finite, and the results equal those of the same values
//    laid out contiguously;
//  - at run time, a workspace one byte short and another operator's run call are refused and
//    write nothing; a repeatable executor gives bit-identical results twice.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_common.h"

namespace {

using namespace gsfuzz;

constexpr int64_t kI64Max = INT64_MAX;
constexpr int64_t kI64Min = INT64_MIN;
// clang-format off
constexpr int64_t kSpecial[] = {
    0, 1, -1, 2, 3, 4, 5, 7, 64, -2, 2147483647, 2147483648, -2147483648, 4294967296,
    int64_t(1) << 40, int64_t(1) << 61, int64_t(1) << 62, (int64_t(1) << 62) + 1,
    kI64Max / 2 + 1, kI64Max - 1, kI64Max, kI64Min, kI64Min + 1};
// clang-format on

int64_t special(Bytes& b) {
  const uint8_t k = b.u8();
  constexpr size_t n = sizeof kSpecial / sizeof kSpecial[0];
  if (k < n) return kSpecial[k];
  if (k < 224) return int64_t(k % 12) - 4;  // small, negatives included
  return int64_t(b.u64());
}

// Overflow-free helpers: on overflow they return false and the model calls the view invalid.
bool mul(int64_t a, int64_t b, int64_t* r) { return !__builtin_mul_overflow(a, b, r); }
bool add(int64_t a, int64_t b, int64_t* r) { return !__builtin_add_overflow(a, b, r); }
int64_t wrap_mul(int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); }
int64_t wrap_add(int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }

constexpr int64_t kMaxBlockBytes = 1 << 20;  // larger views are described but never run
constexpr int64_t kMaxElems = 1 << 16;       // views enumerated element by element
constexpr int64_t kMaxRunElems = 1 << 13;    // per tensor, for an accepted call to be run

// One heap block of exactly the bytes a view addresses.
struct Block {
  std::unique_ptr<uint8_t[]> p;
  int64_t n = 0;
  uintptr_t begin() const { return reinterpret_cast<uintptr_t>(p.get()); }
  uintptr_t end() const { return begin() + uintptr_t(n); }
};

// A data pointer never dereferenced: views too large to allocate point here, and are never run.
alignas(64) uint8_t g_fake[64];

struct Tensor {
  bool used = false;   // passed to the operator
  bool handle = true;  // false: a null aclTensor*
  std::vector<int64_t> dims, strides;
  bool null_strides = false;  // aclCreateTensor's contiguous convenience
  int64_t offset = 0;
  int32_t dtype = ACL_FLOAT, format = ACL_FORMAT_ND;
  std::vector<int64_t> storage;
  uintptr_t data = 0;
  int block = -1;  // the block data points into, if any
  aclTensor* t = nullptr;

  // The harness's own account of the view.
  bool neg_dim = false, empty = false;
  bool span_ok = false;  // lo/hi computed without overflow
  int64_t lo = 0, hi = 0, numel = 0;

  bool channel_last() const { return format == ACL_FORMAT_NHWC || format == ACL_FORMAT_NDHWC; }
  int rank() const { return int(dims.size()); }
};

// Element offsets of a view in row-major order of its dims; numel must be small.
template <typename F>
void for_each_elem(const Tensor& x, F&& f) {
  const int r = x.rank();
  std::vector<int64_t> idx(size_t(r), 0);
  for (int64_t flat = 0; flat < x.numel; ++flat) {
    int64_t off = x.offset;
    for (int i = 0; i < r; ++i) off += idx[size_t(i)] * x.strides[size_t(i)];
    f(flat, off);
    for (int i = r - 1; i >= 0; --i) {
      if (++idx[size_t(i)] < x.dims[size_t(i)]) break;
      idx[size_t(i)] = 0;
    }
  }
}

std::vector<int64_t> contiguous(const std::vector<int64_t>& d) {
  std::vector<int64_t> s(d.size(), 1);
  for (size_t i = d.size(); i-- > 1;) s[i - 1] = wrap_mul(s[i], std::max<int64_t>(d[i], 1));
  return s;
}

void make_strides(Bytes& b, Tensor* x) {
  const std::vector<int64_t>& d = x->dims;
  const size_t r = d.size();
  x->strides = contiguous(d);
  if (r == 0) return;
  switch (b.u8() % 9) {
    case 0:
      break;
    case 1: {  // padded rows / planes
      x->strides[r - 1] = 1 + b.u8() % 3;
      for (size_t i = r - 1; i-- > 0;)
        x->strides[i] =
            wrap_add(wrap_mul(x->strides[i + 1], std::max<int64_t>(d[i + 1], 1)), b.u8() % 3);
      break;
    }
    case 2: {  // a permuted memory order, dense in that order
      std::vector<size_t> order(r);
      for (size_t i = 0; i < r; ++i) order[i] = i;
      for (size_t i = r; i-- > 1;) std::swap(order[i], order[b.u8() % (i + 1)]);
      int64_t s = 1;
      for (size_t i = r; i-- > 0;) {
        x->strides[order[i]] = s;
        s = wrap_mul(s, std::max<int64_t>(d[order[i]], 1));
      }
      break;
    }
    case 3: {  // one dim walked backwards
      const size_t i = b.u8() % r;
      x->strides[i] = wrap_mul(x->strides[i], -1);
      break;
    }
    case 4:  // broadcast along one dim
      x->strides[b.u8() % r] = 0;
      break;
    case 5:
      x->strides[b.u8() % r] = special(b);
      break;
    case 6:
      for (int64_t& s : x->strides) s = int64_t(b.u8() % 9) - 4;
      break;
    case 7:
      x->null_strides = true;
      break;
    default:
      for (int64_t& s : x->strides) s = special(b);
  }
  // Negative strides start from the far end, so that the view stays inside its memory unless
  // an offset mutation below says otherwise.
  int64_t base = 0;
  bool ok = true;
  for (size_t i = 0; i < r; ++i) {
    int64_t e;
    if (d[i] > 0 && x->strides[i] < 0)
      ok = ok && mul(d[i] - 1, x->strides[i], &e) && e != kI64Min && add(base, -e, &base);
  }
  if (ok) x->offset = base;
}

// The harness's span of the view, in elements.
void account(Tensor* x) {
  const size_t r = x->dims.size();
  x->neg_dim = false;
  x->empty = false;
  x->numel = 1;
  bool numel_ok = true;
  for (int64_t d : x->dims) {
    x->neg_dim = x->neg_dim || d < 0;
    x->empty = x->empty || d == 0;
  }
  for (int64_t d : x->dims)
    numel_ok = numel_ok && mul(x->numel, std::max<int64_t>(d, 0), &x->numel);
  if (!numel_ok) x->numel = kI64Max;
  x->span_ok = false;
  if (x->neg_dim || x->empty) return;
  int64_t lo = x->offset, hi = x->offset;
  for (size_t i = 0; i < r; ++i) {
    int64_t e;
    if (!mul(x->dims[i] - 1, x->strides[i], &e)) return;
    if (!add(e < 0 ? lo : hi, e, e < 0 ? &lo : &hi)) return;
  }
  x->lo = lo;
  x->hi = hi;
  x->span_ok = true;
}

int elem_size(const Tensor& x) { return std::max(dtype_size(x.dtype), 1); }

// The model: what SPEC §2 says of the call. kUnknown where the documented rules leave a choice
// (an output whose elements never collide but that the documented sufficient test refuses).
enum class Verdict { kValid, kInvalid, kUnknown };

struct Case {
  int op = kF2, nd = 2;
  bool bwd = false;
  Tensor x[kSlots];
  int64_t interp = 0, padding = 0;
  bool align = false;
  bool mask_null = false;
  std::vector<char> mask = {1, 1};
  bool ws_null = false, ex_null = false;
  uint8_t phase2 = 0;
  uint64_t seed = 0;
  std::vector<Block> blocks;

  bool want(int s) const {
    if (s == kOut) return !bwd;
    if (s == kIG || s == kGG)
      return bwd && !mask_null && mask.size() == 2 && mask[size_t(s - kIG)] != 0;
    return false;
  }
  bool is_input(int s) const { return s == kInput || s == kGrid || (bwd && s == kOut); }
  // The tensors the operator reads or writes.
  bool active(int s) const { return is_input(s) || want(s); }
};

// Canonical dims: feature tensors [n, c, spatial...] whatever their format, grids as they are.
std::vector<int64_t> canonical(const Tensor& x, bool feature) {
  std::vector<int64_t> d = x.dims;
  if (feature && x.channel_last() && d.size() >= 2) {
    d.insert(d.begin() + 1, d.back());
    d.pop_back();
  }
  return d;
}

bool known_format(int32_t f) {
  return f == ACL_FORMAT_ND || f == ACL_FORMAT_NCHW || f == ACL_FORMAT_NHWC ||
         f == ACL_FORMAT_NCDHW || f == ACL_FORMAT_NDHWC;
}

// The byte interval [lo, hi) a non-empty, accepted view covers.
void byte_range(const Tensor& x, uintptr_t* lo, uintptr_t* hi) {
  const uintptr_t es = uintptr_t(elem_size(x));
  *lo = x.data + uintptr_t(x.lo) * es;
  *hi = x.data + (uintptr_t(x.hi) + 1) * es;
}

// The documented test for "maps two elements to one address": sorted by |stride|, each stride
// exceeds the extent of the smaller ones. When it fails, brute force tells a real collision
// (invalid) from an interleaving that never collides (unknown).
Verdict output_injective(const Tensor& x) {
  std::vector<std::pair<int64_t, int64_t>> sd;
  for (size_t i = 0; i < x.dims.size(); ++i)
    if (x.dims[i] > 1) sd.emplace_back(x.strides[i] < 0 ? -x.strides[i] : x.strides[i], x.dims[i]);
  std::sort(sd.begin(), sd.end());
  int64_t extent = 0;
  bool sufficient = true;
  for (auto [st, n] : sd) {
    if (st <= extent) {
      sufficient = false;
      break;
    }
    extent += st * (n - 1);
  }
  if (sufficient) return Verdict::kValid;
  if (x.numel > kMaxElems) return Verdict::kUnknown;
  std::vector<int64_t> offs;
  for_each_elem(x, [&](int64_t, int64_t off) { offs.push_back(off); });
  std::sort(offs.begin(), offs.end());
  return std::adjacent_find(offs.begin(), offs.end()) != offs.end() ? Verdict::kInvalid
                                                                    : Verdict::kUnknown;
}

Verdict model(const Case& c) {
  const Tensor* x = c.x;
  if (c.ws_null || c.ex_null) return Verdict::kInvalid;
  if (!x[kInput].handle || !x[kGrid].handle || !x[kOut].handle) return Verdict::kInvalid;
  if (c.bwd && (c.mask_null || c.mask.size() != 2)) return Verdict::kInvalid;
  for (int s : {kIG, kGG})
    if (c.want(s) && !x[s].handle) return Verdict::kInvalid;
  if (c.interp < 0 || c.interp > 2 || c.padding < 0 || c.padding > 2) return Verdict::kInvalid;
  const int32_t dt = x[kInput].dtype;
  if (dtype_size(dt) == 0) return Verdict::kInvalid;
  const int rank = c.nd + 2;
  std::vector<int64_t> cd[kSlots];
  for (int s = 0; s < kSlots; ++s) {
    if (!c.active(s)) continue;
    const Tensor& t = x[s];
    if (t.rank() != rank || t.neg_dim || t.dtype != dt || !known_format(t.format))
      return Verdict::kInvalid;
    int64_t count = 1;  // zero dims read as 1, as the SPEC's overflow rule is stated per dim
    for (int64_t d : t.dims)
      if (!mul(count, std::max<int64_t>(d, 1), &count)) return Verdict::kInvalid;
    cd[s] = canonical(t, s != kGrid && s != kGG);
  }
  const std::vector<int64_t>&in = cd[kInput], &g = cd[kGrid], &o = cd[kOut];
  if (g[size_t(rank - 1)] != c.nd || g[0] != in[0] || o[0] != in[0] || o[1] != in[1])
    return Verdict::kInvalid;
  for (int i = 0; i < c.nd; ++i)
    if (o[size_t(2 + i)] != g[size_t(1 + i)] || in[size_t(2 + i)] == 0) return Verdict::kInvalid;
  if (c.want(kIG) && cd[kIG] != in) return Verdict::kInvalid;
  if (c.want(kGG) && cd[kGG] != g) return Verdict::kInvalid;

  for (int s = 0; s < kSlots; ++s) {
    if (!c.active(s) || x[s].empty) continue;
    const Tensor& t = x[s];
    const int64_t es = dtype_size(t.dtype);
    if (t.data == 0 || !t.span_ok || t.lo < 0) return Verdict::kInvalid;
    if (!t.storage.empty()) {
      int64_t n = 1;
      for (int64_t d : t.storage)
        if (d < 0 || !mul(n, d, &n)) return Verdict::kInvalid;
      if (t.hi >= n) return Verdict::kInvalid;
    }
    int64_t bytes;
    uintptr_t end;
    if (t.hi == kI64Max || !mul(t.hi + 1, es, &bytes) ||
        __builtin_add_overflow(t.data, uintptr_t(bytes), &end))
      return Verdict::kInvalid;
    if (t.data % uintptr_t(es) != 0) return Verdict::kInvalid;
  }
  Verdict v = Verdict::kValid;
  for (int s = 0; s < kSlots; ++s) {
    if (!c.want(s) || x[s].empty) continue;
    const Verdict inj = output_injective(x[s]);
    if (inj == Verdict::kInvalid) return inj;
    if (inj == Verdict::kUnknown) v = inj;
    uintptr_t lo, hi;
    byte_range(x[s], &lo, &hi);
    for (int u = 0; u < kSlots; ++u) {
      if (u == s || !c.active(u) || x[u].empty) continue;
      if (c.want(u) && u > s) continue;  // each pair of outputs once
      uintptr_t ulo, uhi;
      byte_range(x[u], &ulo, &uhi);
      if (lo < uhi && ulo < hi) return Verdict::kInvalid;
    }
  }
  return v;
}

void decode_slot(Bytes& b, Case* c, int s) {
  Tensor& x = c->x[s];
  const uint8_t f = b.u8();
  if (f >= 0xF0) {
    x.handle = false;
    return;
  }
  if (f & 128) {  // the other layout: channel last <-> first, dims permuted to match
    const bool feature = s != kGrid && s != kGG;
    if (feature && x.dims.size() >= 2) {
      if (x.channel_last()) {
        x.dims.insert(x.dims.begin() + 1, x.dims.back());
        x.dims.pop_back();
        x.format = c->nd == 2 ? ACL_FORMAT_NCHW : ACL_FORMAT_NCDHW;
      } else {
        x.dims.push_back(x.dims[1]);
        x.dims.erase(x.dims.begin() + 1);
        x.format = c->nd == 2 ? ACL_FORMAT_NHWC : ACL_FORMAT_NDHWC;
      }
    } else {
      x.format = c->nd == 2 ? ACL_FORMAT_NHWC : ACL_FORMAT_NCDHW;  // a grid ignores its tag
    }
  }
  if (f & 2) x.dims.resize(b.u8() % 8, 1);
  if ((f & 1) && !x.dims.empty()) x.dims[b.u8() % x.dims.size()] = special(b);
  if (f & 16) x.dtype = int32_t(b.u8() % 64) - 32;    // the whole range of aclDataType
  if (f & 32) x.format = int32_t(b.u8() % 128) - 64;  // and of aclFormat
  if (f & 4)
    make_strides(b, &x);
  else
    x.strides = contiguous(x.dims);
  if (f & 8) x.offset = (b.u8() & 1) ? special(b) : wrap_add(x.offset, b.u8() % 8);
  if (x.null_strides) x.strides = contiguous(x.dims);
  account(&x);
  // Memory: a block of exactly the addressed span where that is small, else a pointer that is
  // never dereferenced. Empty views get a zero-byte block, so that any access is reported.
  const int64_t es = elem_size(x);
  int64_t bytes = 0;
  if (x.empty) {
    c->blocks.push_back({std::unique_ptr<uint8_t[]>(new uint8_t[0]), 0});
    x.block = int(c->blocks.size()) - 1;
    x.data = c->blocks.back().begin();
  } else if (int64_t n = 0; x.span_ok && x.lo >= 0 && add(x.hi - x.lo, 1, &n) &&
                            mul(n, es, &bytes) && bytes <= kMaxBlockBytes) {
    c->blocks.push_back({std::unique_ptr<uint8_t[]>(new uint8_t[size_t(bytes)]), bytes});
    x.block = int(c->blocks.size()) - 1;
    x.data = c->blocks.back().begin() - uintptr_t(x.lo) * uintptr_t(es);
  } else {
    x.data = reinterpret_cast<uintptr_t>(g_fake);
  }
  if (x.span_ok && !x.empty && x.hi < kI64Max) x.storage = {x.hi + 1};
  if (!(f & 64)) return;
  switch (b.u8() % 8) {
    case 0:
      x.data = 0;
      x.block = -1;
      break;
    case 1:
      x.data += 1 + b.u8() % 7;
      break;
    case 2: {  // into another tensor's block (decoded earlier), a few elements in
      const int u = b.u8() % kSlots;
      if (u < s && c->x[u].block >= 0) {
        x.block = c->x[u].block;
        x.data = c->blocks[size_t(x.block)].begin() + uintptr_t(b.u8() % 16) * uintptr_t(es);
        if (x.span_ok) x.data -= uintptr_t(x.lo) * uintptr_t(es);
      }
      break;
    }
    case 3:
      x.storage.clear();
      break;
    case 4:
      x.storage = x.dims;
      break;
    case 5:
      if (x.span_ok) x.storage = {x.hi};
      break;
    case 6:
      x.storage.assign(1 + b.u8() % 3, 0);
      for (int64_t& d : x.storage) d = special(b);
      break;
    default:  // so high that the view's end wraps around the address space
      x.data = ~uintptr_t(0) - uintptr_t(b.u8()) * 64 - 63;
      x.block = -1;
  }
}

Case decode(Bytes& b) {
  Case c;
  c.op = b.u8() % 4;
  c.nd = op_nd(c.op);
  c.bwd = op_bwd(c.op);
  const int64_t n = (b.u8() + 1) % 4, ch = (b.u8() + 1) % 4;
  int64_t in[3], out[3];
  for (int i = 0; i < c.nd; ++i) in[i] = 1 + b.u8() % 4;
  for (int i = 0; i < c.nd; ++i) out[i] = (b.u8() + 1) % 4;
  static const int32_t kDtypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE};
  const int32_t dt = kDtypes[b.u8() % 4];
  const uint8_t layout = b.u8();
  const bool last = layout & 1;
  const int32_t feature_format = last           ? (c.nd == 2 ? ACL_FORMAT_NHWC : ACL_FORMAT_NDHWC)
                                 : (layout & 2) ? ACL_FORMAT_ND
                                 : c.nd == 2    ? ACL_FORMAT_NCHW
                                                : ACL_FORMAT_NCDHW;
  auto mode = [&b]() -> int64_t {
    const uint8_t v = b.u8();
    return v < 240 ? v % 3 : special(b);
  };
  c.interp = mode();
  c.padding = mode();
  c.align = b.u8() & 1;
  const uint8_t mk = b.u8();
  if (mk < 192) {
    c.mask = {char(!(mk & 1)), char(!(mk & 2))};
  } else if (mk < 208) {
    c.mask_null = true;
  } else {
    const uint8_t bits = b.u8();
    c.mask.assign(mk % 4, 0);
    for (size_t i = 0; i < c.mask.size(); ++i) c.mask[i] = (bits >> i) & 1;
  }
  const uint8_t ptrs = b.u8();
  c.ws_null = ptrs == 0xFE;
  c.ex_null = ptrs == 0xFF;
  c.phase2 = b.u8();
  c.seed = b.u8() | (uint32_t(b.u8()) << 8);

  for (int s = 0; s < kSlots; ++s) {
    Tensor& x = c.x[s];
    x.used = c.bwd || s <= kOut;
    x.dtype = dt;
    const bool grid = s == kGrid || s == kGG;
    const int64_t* sp = (s == kInput || s == kIG) ? in : out;
    x.dims.assign(sp, sp + c.nd);      // [N, spatial..., K] for a grid, [N, C, spatial...] or
    x.dims.insert(x.dims.begin(), n);  // [N, spatial..., C] for a feature tensor
    if (grid || last)
      x.dims.push_back(grid ? c.nd : ch);
    else
      x.dims.insert(x.dims.begin() + 1, ch);
    x.format = grid ? ACL_FORMAT_ND : feature_format;
  }
  for (int s = 0; s < kSlots; ++s)
    if (c.x[s].used) decode_slot(b, &c, s);
  return c;
}

bool contains(const Block& blk, const Tensor& x) {
  if (x.empty) return true;
  if (!x.span_ok || x.lo < 0) return false;
  uintptr_t lo, hi;
  byte_range(x, &lo, &hi);
  return lo >= blk.begin() && hi <= blk.end() && lo <= hi;
}

uint8_t* elem_ptr(const Tensor& x, int64_t off) {
  return reinterpret_cast<uint8_t*>(x.data + uintptr_t(off) * uintptr_t(elem_size(x)));
}

// Values, read in view order, of a view of a buffer.
std::vector<double> values(const Tensor& x) {
  std::vector<double> v(size_t(x.numel));
  for_each_elem(x, [&](int64_t i, int64_t off) { v[size_t(i)] = load(x.dtype, elem_ptr(x, off)); });
  return v;
}

// Runs the same call on contiguous copies of the views (same dims, dtype, format and mask) and
// returns the requested outputs in view order.
std::vector<std::vector<double>> dense_rerun(const Case& c) {
  std::vector<std::vector<uint8_t>> mem(kSlots);
  aclTensor* t[kSlots] = {};
  for (int s = 0; s < kSlots; ++s) {
    const Tensor& x = c.x[s];
    if (!c.active(s)) continue;
    const int es = elem_size(x);
    mem[size_t(s)].assign(size_t(std::max<int64_t>(x.numel, 1) * es), 0xFF);
    if (c.is_input(s)) {
      const std::vector<double> v = values(x);
      for (size_t i = 0; i < v.size(); ++i) store(x.dtype, v[i], &mem[size_t(s)][i * size_t(es)]);
    }
    const std::vector<int64_t> st = contiguous(x.dims);
    t[s] = aclCreateTensor(x.dims.data(), x.dims.size(), aclDataType(x.dtype), st.data(), 0,
                           aclFormat(x.format), nullptr, 0, mem[size_t(s)].data());
    FUZZ_CHECK(t[s] != nullptr, "dense copy of slot %d", s);
  }
  bool mk[2] = {c.want(kIG), c.want(kGG)};
  aclBoolArray* mask = aclCreateBoolArray(mk, 2);
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  CallArgs a;
  a.op = c.op;
  for (int s = 0; s < kSlots; ++s) a.t[s] = t[s];
  a.interp = c.interp;
  a.padding = c.padding;
  a.align = c.align;
  a.mask = mask;
  a.ws = &ws;
  a.ex = &ex;
  aclnnStatus st = get_workspace(a);
  FUZZ_CHECK(st == ACLNN_SUCCESS, "the contiguous copy of an accepted call is refused: %d", st);
  std::vector<uint8_t> w(size_t(ws), 0xA5);
  st = run_op(c.op, ws ? w.data() : nullptr, ws, ex);
  FUZZ_CHECK(st == ACLNN_SUCCESS, "run of the contiguous copy: %d", st);
  std::vector<std::vector<double>> r;
  for (int s = 0; s < kSlots; ++s) {
    if (!c.want(s)) continue;
    const Tensor& x = c.x[s];
    std::vector<double> v(size_t(x.numel));
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = load(x.dtype, &mem[size_t(s)][i * size_t(elem_size(x))]);
    r.push_back(v);
  }
  aclDestroyBoolArray(mask);
  for (aclTensor* p : t) aclDestroyTensor(p);
  return r;
}

std::vector<std::vector<uint8_t>> snapshot(const Case& c) {
  std::vector<std::vector<uint8_t>> v;
  for (const Block& blk : c.blocks) v.emplace_back(blk.p.get(), blk.p.get() + blk.n);
  return v;
}

void expect_unchanged(const Case& c, const std::vector<std::vector<uint8_t>>& before,
                      const char* after_what) {
  FUZZ_CHECK(snapshot(c) == before, "memory changed after %s", after_what);
}

void run_accepted(Case& c, uint64_t ws, aclOpExecutor* ex) {
  // Requested outputs hold NaN canaries; inputs hold finite values; gaps keep their junk.
  const std::vector<std::vector<uint8_t>> before = snapshot(c);
  std::unique_ptr<uint8_t[]> w(ws ? new uint8_t[size_t(ws)] : nullptr);
  if (ws) std::memset(w.get(), 0xA5, size_t(ws));

  if ((c.phase2 & 1) && ws > 0) {
    const aclnnStatus st = run_op(c.op, w.get(), ws - 1, ex);
    FUZZ_CHECK(st == ACLNN_ERR_PARAM_INVALID, "a workspace one byte short gave %d", st);
    expect_unchanged(c, before, "a refused run (workspace too small)");
  }
  if (c.phase2 & 2) {
    const int other = (c.op + 1 + c.phase2 % 3) % 4;
    const aclnnStatus st = run_op(other, w.get(), ws, ex);
    FUZZ_CHECK(st == ACLNN_ERR_PARAM_INVALID, "%s ran an executor of %s: %d", op_name(other),
               op_name(c.op), st);
    expect_unchanged(c, before, "a refused run (wrong operator)");
  }
  const bool twice = c.phase2 & 4;
  if (twice) FUZZ_CHECK(aclSetAclOpExecutorRepeatable(ex) == ACLNN_SUCCESS, "repeatable");
  aclnnStatus st = run_op(c.op, w.get(), ws, ex);
  FUZZ_CHECK(st == ACLNN_SUCCESS, "run of an accepted call: %d", st);
  if (twice) {
    const std::vector<std::vector<uint8_t>> first = snapshot(c);
    st = run_op(c.op, w.get(), ws, ex);
    FUZZ_CHECK(st == ACLNN_SUCCESS, "second run of a repeatable executor: %d", st);
    FUZZ_CHECK(snapshot(c) == first, "a repeatable executor's second run differs");
    FUZZ_CHECK(aclDestroyAclOpExecutor(ex) == ACLNN_SUCCESS, "destroy");
  }

  // Which bytes the run may write: the elements of the requested outputs.
  std::vector<std::vector<char>> writable(c.blocks.size());
  for (size_t i = 0; i < c.blocks.size(); ++i) writable[i].assign(size_t(c.blocks[i].n), 0);
  for (int s = 0; s < kSlots; ++s) {
    if (!c.want(s) || c.x[s].empty) continue;
    const Tensor& x = c.x[s];
    const Block& blk = c.blocks[size_t(x.block)];
    for_each_elem(x, [&](int64_t, int64_t off) {
      const uintptr_t p = reinterpret_cast<uintptr_t>(elem_ptr(x, off));
      for (int k = 0; k < elem_size(x); ++k) writable[size_t(x.block)][p - blk.begin() + k] = 1;
      // NaN is the canary: unwritten. FLOAT16 may legitimately overflow to +-Inf (its largest
      // value is 65504); the other types cannot with these inputs.
      const double v = load(x.dtype, elem_ptr(x, off));
      FUZZ_CHECK(!std::isnan(v) && (std::isfinite(v) || x.dtype == ACL_FLOAT16),
                 "slot %d element at %lld is %g after the run (NaN: unwritten)", s, (long long)off,
                 v);
    });
  }
  for (size_t i = 0; i < c.blocks.size(); ++i)
    for (int64_t k = 0; k < c.blocks[i].n; ++k)
      FUZZ_CHECK(writable[i][size_t(k)] || c.blocks[i].p[size_t(k)] == before[i][size_t(k)],
                 "byte %lld of block %zu changed but belongs to no requested output element",
                 (long long)k, i);

  // The same values laid out contiguously give the same results.
  const std::vector<std::vector<double>> dense = dense_rerun(c);
  size_t k = 0;
  for (int s = 0; s < kSlots; ++s) {
    if (!c.want(s)) continue;
    const std::vector<double> got = values(c.x[s]), &want = dense[k++];
    double scale = 0;
    for (double v : want) scale = std::max(scale, std::fabs(v));
    const double tol = tolerance(c.x[s].dtype) * std::max(scale, 1e-30);
    for (size_t i = 0; i < got.size(); ++i)
      FUZZ_CHECK(got[i] == want[i] || std::fabs(got[i] - want[i]) <= tol,
                 "slot %d element %zu: %.17g from the views, %.17g from contiguous copies", s, i,
                 got[i], want[i]);
  }
}

std::string list(const std::vector<int64_t>& v) {
  std::string r = "[";
  for (size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + std::to_string(v[i]);
  return r + "]";
}

// With GSFUZZ_VERBOSE set, each decoded call is printed: the material of a reproducer.
void print(const Case& c) {
  std::fprintf(
      stderr, "%s interp %lld padding %lld align %d mask %s ws %s ex %s phase2 %d\n", op_name(c.op),
      (long long)c.interp, (long long)c.padding, int(c.align),
      c.mask_null ? "null" : list(std::vector<int64_t>(c.mask.begin(), c.mask.end())).c_str(),
      c.ws_null ? "null" : "ok", c.ex_null ? "null" : "ok", int(c.phase2));
  static const char* const names[] = {"input", "grid", "out/gradOutput", "inputGrad", "gridGrad"};
  for (int s = 0; s < kSlots; ++s) {
    const Tensor& x = c.x[s];
    if (!x.used) continue;
    if (!x.handle) {
      std::fprintf(stderr, "  %s: null\n", names[s]);
      continue;
    }
    std::string where = x.data == 0 ? "null" : x.block < 0 ? "not allocated" : "block";
    if (x.block >= 0)
      where += " " + std::to_string(x.block) + " + " +
               std::to_string(int64_t(x.data - c.blocks[size_t(x.block)].begin()));
    std::fprintf(
        stderr, "  %s: dims %s strides %s%s offset %lld dtype %d format %d storage %s data %s\n",
        names[s], list(x.dims).c_str(), list(x.strides).c_str(), x.null_strides ? " (null)" : "",
        (long long)x.offset, x.dtype, x.format, list(x.storage).c_str(), where.c_str());
  }
}

// With GSFUZZ_STATS set, how the inputs fared is printed at exit: a fuzzer whose inputs are all
// refused early tests little.
struct Stats {
  long refused = 0, accepted = 0, ran = 0;
  ~Stats() {
    if (std::getenv("GSFUZZ_STATS"))
      std::fprintf(stderr, "fuzz_descriptor: %ld refused, %ld accepted, %ld of them run\n", refused,
                   accepted, ran);
  }
} g_stats;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes b(data, size);
  Case c = decode(b);

  // Contents: finite values in the inputs, NaN canaries in the requested outputs.
  for (const Block& blk : c.blocks) std::memset(blk.p.get(), 0xFF, size_t(blk.n));
  for (int s = 0; s < kSlots; ++s) {
    const Tensor& x = c.x[s];
    if (!c.is_input(s) || x.block < 0 || x.numel > kMaxElems || dtype_size(x.dtype) == 0 ||
        !contains(c.blocks[size_t(x.block)], x))
      continue;
    const double range = s == kGrid ? 1.3 : 1.0;
    for_each_elem(x, [&](int64_t i, int64_t off) {
      store(x.dtype, range * (2 * hash_unit(c.seed + uint64_t(s), uint64_t(i)) - 1),
            elem_ptr(x, off));
    });
  }

  for (int s = 0; s < kSlots; ++s) {
    Tensor& x = c.x[s];
    if (!x.used || !x.handle) continue;
    x.t =
        aclCreateTensor(x.dims.data(), x.dims.size(), aclDataType(x.dtype),
                        x.null_strides ? nullptr : x.strides.data(), x.offset, aclFormat(x.format),
                        x.storage.data(), x.storage.size(), reinterpret_cast<void*>(x.data));
    // aclCreateTensor refuses only a negative offset (and a rank over 64, or contiguous strides
    // that overflow); those become null tensors for the operator.
    if (x.t == nullptr) {
      bool overflow = false;
      int64_t p = 1;
      for (size_t i = 1; i < x.dims.size(); ++i)
        overflow = overflow || !mul(p, std::max<int64_t>(x.dims[i], 1), &p);
      FUZZ_CHECK(x.offset < 0 || (x.null_strides && overflow), "aclCreateTensor refused slot %d",
                 s);
      x.handle = false;
    }
  }
  bool mvals[4] = {};
  for (size_t i = 0; i < c.mask.size(); ++i) mvals[i] = c.mask[i] != 0;
  aclBoolArray* mask = c.mask_null ? nullptr : aclCreateBoolArray(mvals, c.mask.size());

  if (std::getenv("GSFUZZ_VERBOSE")) print(c);
  const Verdict verdict = model(c);
  const std::vector<std::vector<uint8_t>> before = snapshot(c);
  const uint64_t ws_sentinel = 0x5A5A5A5A5A5A5A5Aull;
  aclOpExecutor* const ex_sentinel = reinterpret_cast<aclOpExecutor*>(g_fake);
  uint64_t ws = ws_sentinel;
  aclOpExecutor* ex = ex_sentinel;
  CallArgs a;
  a.op = c.op;
  for (int s = 0; s < kSlots; ++s) a.t[s] = c.x[s].used ? c.x[s].t : nullptr;
  a.interp = c.interp;
  a.padding = c.padding;
  a.align = c.align;
  a.mask = mask;
  a.ws = c.ws_null ? nullptr : &ws;
  a.ex = c.ex_null ? nullptr : &ex;
  const aclnnStatus st = get_workspace(a);

  FUZZ_CHECK(st == ACLNN_SUCCESS || documented_refusal(st), "undocumented status %d", st);
  if (c.ws_null || c.ex_null || !c.x[kInput].handle || !c.x[kGrid].handle || !c.x[kOut].handle)
    FUZZ_CHECK(st == ACLNN_ERR_PARAM_NULLPTR, "a required pointer is null but the status is %d",
               st);
  if (verdict == Verdict::kValid)
    FUZZ_CHECK(st == ACLNN_SUCCESS, "a valid call (by the SPEC's rules) was refused: %d", st);
  if (verdict == Verdict::kInvalid)
    FUZZ_CHECK(st != ACLNN_SUCCESS, "an invalid call (by the SPEC's rules) was accepted");

  ++(st == ACLNN_SUCCESS ? g_stats.accepted : g_stats.refused);
  if (st != ACLNN_SUCCESS) {
    FUZZ_CHECK(ws == ws_sentinel && ex == ex_sentinel, "a refused call wrote its out-parameters");
    expect_unchanged(c, before, "a refused GetWorkspaceSize");
  } else {
    // A workspace is at most a few bytes per element of the tensors (FLOAT32 copies of a 16-bit
    // inputGrad, per-thread scratch): anything larger is an overflow. In double, which cannot
    // overflow here and is exact enough for a bound this loose.
    double bound = double(uint64_t(1) << 26);
    for (int s = 0; s < kSlots; ++s)
      if (c.active(s)) bound += 16.0 * double(c.x[s].numel);
    FUZZ_CHECK(double(ws) <= bound, "workspace of %llu bytes for this problem",
               (unsigned long long)ws);
    // Run what is small enough to be quick (the work is at most 64 taps per element of out or
    // gradOutput) and lies in blocks the harness allocated.
    bool runnable = ws <= (uint64_t(1) << 26);
    for (int s = 0; s < kSlots; ++s) {
      const Tensor& x = c.x[s];
      if (!c.active(s)) continue;
      runnable = runnable && x.numel <= kMaxRunElems &&
                 (x.empty || (x.block >= 0 && contains(c.blocks[size_t(x.block)], x)));
    }
    g_stats.ran += runnable;
    if (runnable)
      run_accepted(c, ws, ex);
    else
      FUZZ_CHECK(aclDestroyAclOpExecutor(ex) == ACLNN_SUCCESS, "destroy an unrun executor");
  }

  aclDestroyBoolArray(mask);
  for (Tensor& x : c.x) aclDestroyTensor(x.t);
  return 0;
}
