// SPEC §2 "Validation": every rule of the argument checker, through every operator it applies to.
// A refused call must return the documented status, say which parameter is wrong in
// aclGetRecentErrMsg(), leave *workspaceSize and *executor alone and write no tensor memory.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "support.h"

using namespace gstest;

namespace {

enum class OpKind { F2, F3, B2, B3 };

struct OpInfo {
  const char* api;
  int nd;
  bool bwd;
};

OpInfo info(OpKind k) {
  switch (k) {
    case OpKind::F2:
      return {"aclnnGridSampler2D", 2, false};
    case OpKind::F3:
      return {"aclnnGridSampler3D", 3, false};
    case OpKind::B2:
      return {"aclnnGridSampler2DBackward", 2, true};
    default:
      return {"aclnnGridSampler3DBackward", 3, true};
  }
}

// The tensor parameters. kOut is `out` for the forward operators and `gradOutput` for backward.
enum Slot { kInput, kGrid, kOut, kIG, kGG, kSlots };

// Everything aclCreateTensor is given, so that a test can describe memory that HostTensor
// would refuse to allocate (huge dims, foreign data pointers, ...).
struct TensorArg {
  bool null = false;
  std::vector<int64_t> dims, strides;
  int64_t offset = 0;
  aclDataType dtype = ACL_FLOAT;
  aclFormat format = ACL_FORMAT_ND;
  std::vector<int64_t> storage;
  void* data = nullptr;

  aclTensor* make() const {
    if (null) return nullptr;
    return aclCreateTensor(dims.data(), dims.size(), dtype, strides.data(), offset, format,
                           storage.data(), storage.size(), data);
  }
};

TensorArg arg_of(const HostTensor& h) {
  TensorArg a;
  a.dims = h.dims;
  a.strides = h.strides;
  a.offset = h.offset;
  a.dtype = h.dtype;
  a.format = h.format;
  a.storage = {h.storage_elems};
  a.data = h.base();
  return a;
}

std::string str(int64_t v) { return std::to_string(v); }

// Address arithmetic on integers: some tests describe memory outside any object.
void* shifted(void* p, int64_t bytes) {
  return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) + uintptr_t(bytes));
}

const char* slot_name(OpKind k, int s) {
  static const char* const names[] = {"input", "grid", "out", "inputGrad", "gridGrad"};
  return s == kOut && info(k).bwd ? "gradOutput" : names[s];
}

// One operator call, valid as constructed; tests break one thing and expect a refusal.
struct Call {
  OpKind kind;
  OpInfo op;
  HostTensor host[kSlots];
  TensorArg arg[kSlots];
  std::vector<char> mask = {1, 1};
  bool null_mask = false;
  int64_t interp = 0, padding = 0;
  bool align = false;
  bool null_ws = false, null_ex = false;

  explicit Call(OpKind k, aclDataType dt = ACL_FLOAT) : kind(k), op(info(k)) {
    // N = 2 and C = 3 differ from every spatial size, so a message's numbers are unambiguous.
    if (op.nd == 2) {
      host[kInput] = HostTensor({2, 3, 4, 5}, dt);
      host[kGrid] = HostTensor({2, 3, 2, 2}, dt);
      host[kOut] = HostTensor({2, 3, 3, 2}, dt);
    } else {
      host[kInput] = HostTensor({2, 3, 2, 4, 5}, dt);
      host[kGrid] = HostTensor({2, 2, 3, 2, 3}, dt);
      host[kOut] = HostTensor({2, 3, 2, 3, 2}, dt);
    }
    host[kIG] = HostTensor(host[kInput].dims, dt);
    host[kGG] = HostTensor(host[kGrid].dims, dt);
    std::mt19937_64 rng(7);
    host[kInput].set_values(uniform(rng, host[kInput].numel(), -1, 1));
    host[kGrid].set_values(uniform(rng, host[kGrid].numel(), -1.2, 1.2));
    if (op.bwd) {
      host[kOut].set_values(uniform(rng, host[kOut].numel(), -1, 1));
      host[kIG].fill_bytes(0xC3);
      host[kGG].fill_bytes(0xC3);
    } else {
      host[kOut].fill_bytes(0xC3);
    }
    for (int s = 0; s < kSlots; ++s) arg[s] = arg_of(host[s]);
    if (!op.bwd) arg[kIG].null = arg[kGG].null = true;
  }

  void replace(Slot s, const HostTensor& h) {
    host[s] = h;
    arg[s] = arg_of(h);
  }

  // One buffer that no other tensor uses, for tests that place views relative to each other:
  // with separate heap buffers a view running past its own buffer could meet any other tensor.
  std::shared_ptr<std::vector<unsigned char>> arena;
  static constexpr int64_t kArenaBytes = 8192;
  void* in_arena(int64_t byte_offset) {
    if (!arena) arena = std::make_shared<std::vector<unsigned char>>(kArenaBytes + 64, 0xC3);
    const auto p = reinterpret_cast<uintptr_t>(arena->data());
    return shifted(arena->data(), int64_t((64 - p % 64) % 64) + byte_offset);
  }

  const char* name(int s) const { return slot_name(kind, s); }
  std::vector<Slot> slots() const {
    if (op.bwd) return {kOut, kInput, kGrid, kIG, kGG};
    return {kInput, kGrid, kOut};
  }
  std::vector<Slot> inputs() const {
    if (op.bwd) return {kOut, kInput, kGrid};
    return {kInput, kGrid};
  }
  std::vector<Slot> outputs() const {
    if (op.bwd) return {kIG, kGG};
    return {kOut};
  }
  int rank() const { return op.nd + 2; }

  // Phase 1 only.
  aclnnStatus plan(uint64_t* ws, aclOpExecutor** ex) const {
    aclTensor* t[kSlots];
    for (int s = 0; s < kSlots; ++s) t[s] = arg[s].make();
    std::unique_ptr<bool[]> m(new bool[mask.size() + 1]);
    for (size_t i = 0; i < mask.size(); ++i) m[i] = mask[i] != 0;
    aclBoolArray* mk = null_mask ? nullptr : aclCreateBoolArray(m.get(), mask.size());
    uint64_t* w = null_ws ? nullptr : ws;
    aclOpExecutor** e = null_ex ? nullptr : ex;
    aclnnStatus st;
    switch (kind) {
      case OpKind::F2:
        st = aclnnGridSampler2DGetWorkspaceSize(t[kInput], t[kGrid], interp, padding, align,
                                                t[kOut], w, e);
        break;
      case OpKind::F3:
        st = aclnnGridSampler3DGetWorkspaceSize(t[kInput], t[kGrid], interp, padding, align,
                                                t[kOut], w, e);
        break;
      case OpKind::B2:
        st = aclnnGridSampler2DBackwardGetWorkspaceSize(t[kOut], t[kInput], t[kGrid], interp,
                                                        padding, align, mk, t[kIG], t[kGG], w, e);
        break;
      default:
        st = aclnnGridSampler3DBackwardGetWorkspaceSize(t[kOut], t[kInput], t[kGrid], interp,
                                                        padding, align, mk, t[kIG], t[kGG], w, e);
    }
    aclDestroyBoolArray(mk);
    for (aclTensor* x : t) aclDestroyTensor(x);
    return st;
  }

  // Both phases.
  aclnnStatus run() const {
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    aclnnStatus st = plan(&ws, &ex);
    if (st != ACLNN_SUCCESS) return st;
    std::vector<unsigned char> w(size_t(ws) + 1, 0xA5);
    void* wp = ws ? w.data() : nullptr;
    switch (kind) {
      case OpKind::F2:
        return aclnnGridSampler2D(wp, ws, ex, nullptr);
      case OpKind::F3:
        return aclnnGridSampler3D(wp, ws, ex, nullptr);
      case OpKind::B2:
        return aclnnGridSampler2DBackward(wp, ws, ex, nullptr);
      default:
        return aclnnGridSampler3DBackward(wp, ws, ex, nullptr);
    }
  }

  std::vector<std::vector<unsigned char>> snapshot() const {
    std::vector<std::vector<unsigned char>> v;
    for (const HostTensor& h : host) v.push_back(h.bytes());
    if (arena) v.push_back(*arena);
    return v;
  }
};

// Phase 1 must refuse with `status`, the message must start with the operator's name and contain
// every needle, and nothing the caller owns may change. An unexpectedly accepted call is never
// run: some tests hand the checker pointers into memory that is not theirs to write.
void expect_refused(const Call& c, aclnnStatus status, const std::vector<std::string>& needles) {
  const auto before = c.snapshot();
  const uint64_t ws_sentinel = 0x5A5A5A5A5A5A5A5Aull;
  static char ex_token;
  aclOpExecutor* const ex_sentinel = reinterpret_cast<aclOpExecutor*>(&ex_token);
  uint64_t ws = ws_sentinel;
  aclOpExecutor* ex = ex_sentinel;
  const aclnnStatus st = c.plan(&ws, &ex);
  EXPECT_EQ(st, status);
  if (st == ACLNN_SUCCESS) {
    aclDestroyAclOpExecutor(ex);
    return;
  }
  const std::string msg = aclGetRecentErrMsg();
  EXPECT_EQ(msg.rfind(std::string(c.op.api) + ": ", 0), 0u) << msg;
  for (const std::string& n : needles)
    EXPECT_NE(msg.find(n), std::string::npos) << n << " | " << msg;
  EXPECT_EQ(ws, ws_sentinel);
  EXPECT_EQ(ex, ex_sentinel);
  const auto after = c.snapshot();
  for (size_t s = 0; s < before.size(); ++s)
    EXPECT_TRUE(after[s] == before[s]) << (s < kSlots ? c.name(int(s)) : "arena") << " was written";
}

void expect_accepted(const Call& c) {
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(c.plan(&ws, &ex), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
}

class AllOps : public ::testing::TestWithParam<OpKind> {};
class BackwardOps : public AllOps {};

std::string op_name(const ::testing::TestParamInfo<OpKind>& p) {
  static const char* const n[] = {"Forward2D", "Forward3D", "Backward2D", "Backward3D"};
  return n[int(p.param)];
}

INSTANTIATE_TEST_SUITE_P(Ops, AllOps,
                         ::testing::Values(OpKind::F2, OpKind::F3, OpKind::B2, OpKind::B3),
                         op_name);
INSTANTIATE_TEST_SUITE_P(Ops, BackwardOps, ::testing::Values(OpKind::B2, OpKind::B3), op_name);

// Without this, every refusal below could be caused by a broken base case.
TEST_P(AllOps, BaseCallIsAcceptedAndRuns) {
  Call c(GetParam());
  EXPECT_EQ(c.run(), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  for (Slot s : c.outputs())
    EXPECT_FALSE(c.host[s].bytes() == Call(GetParam()).host[s].bytes())
        << c.name(s) << " unwritten";
}

TEST_P(AllOps, NullWorkspaceSize) {
  Call c(GetParam());
  c.null_ws = true;
  expect_refused(c, ACLNN_ERR_PARAM_NULLPTR, {"workspaceSize"});
}

TEST_P(AllOps, NullExecutor) {
  Call c(GetParam());
  c.null_ex = true;
  expect_refused(c, ACLNN_ERR_PARAM_NULLPTR, {"executor"});
}

TEST_P(AllOps, NullRequiredTensor) {
  for (Slot s : Call(GetParam()).inputs()) {
    Call c(GetParam());
    SCOPED_TRACE(c.name(s));
    c.arg[s].null = true;
    expect_refused(c, ACLNN_ERR_PARAM_NULLPTR, {std::string(c.name(s)) + " is null"});
  }
  Call c(GetParam());
  if (!c.op.bwd) {  // the forward output is required too
    c.arg[kOut].null = true;
    expect_refused(c, ACLNN_ERR_PARAM_NULLPTR, {"out is null"});
  }
}

// A documented deviation: CANN silently does nothing for a null outputMask.
TEST_P(BackwardOps, NullOutputMask) {
  Call c(GetParam());
  c.null_mask = true;
  expect_refused(c, ACLNN_ERR_PARAM_NULLPTR, {"outputMask"});
}

TEST_P(BackwardOps, NullGradientWhoseMaskBitIsTrue) {
  Call c(GetParam());
  c.arg[kIG].null = true;
  expect_refused(c, ACLNN_ERR_PARAM_NULLPTR, {"inputGrad", "outputMask[0]"});
  Call d(GetParam());
  d.arg[kGG].null = true;
  expect_refused(d, ACLNN_ERR_PARAM_NULLPTR, {"gridGrad", "outputMask[1]"});
}

TEST_P(BackwardOps, NullGradientWhoseMaskBitIsFalseIsAccepted) {
  Call full(GetParam());
  ASSERT_EQ(full.run(), ACLNN_SUCCESS) << aclGetRecentErrMsg();

  // Only gridGrad: inputGrad may be null, and is not needed to compute gridGrad.
  Call g(GetParam());
  g.mask = {0, 1};
  g.arg[kIG].null = true;
  ASSERT_EQ(g.run(), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_EQ(g.host[kGG].values(), full.host[kGG].values());

  Call i(GetParam());
  i.mask = {1, 0};
  i.arg[kGG].null = true;
  ASSERT_EQ(i.run(), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_EQ(i.host[kIG].values(), full.host[kIG].values());

  // An unrequested output that is passed anyway is not written.
  Call u(GetParam());
  u.mask = {0, 1};
  const auto ig_before = u.host[kIG].bytes();
  ASSERT_EQ(u.run(), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_TRUE(u.host[kIG].bytes() == ig_before);

  Call none(GetParam());
  none.mask = {0, 0};
  none.arg[kIG].null = none.arg[kGG].null = true;
  const auto before = none.snapshot();
  EXPECT_EQ(none.run(), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_TRUE(none.snapshot() == before);
}

TEST_P(BackwardOps, OutputMaskSizeNotTwo) {
  for (std::vector<char> m : {std::vector<char>{}, {1}, {1, 1, 1}, {0, 0, 0, 0}}) {
    Call c(GetParam());
    SCOPED_TRACE(m.size());
    c.mask = m;
    expect_refused(c, ACLNN_ERR_PARAM_INVALID, {"outputMask", "got " + str(int64_t(m.size()))});
  }
}

const int64_t kBadModes[] = {-1, 3, 7, std::numeric_limits<int64_t>::max(),
                             std::numeric_limits<int64_t>::min()};

TEST_P(AllOps, InterpolationModeOutOfRange) {
  for (int64_t v : kBadModes) {
    Call c(GetParam());
    c.interp = v;
    expect_refused(c, ACLNN_ERR_PARAM_INVALID, {"interpolationMode", "got " + str(v)});
  }
}

TEST_P(AllOps, PaddingModeOutOfRange) {
  for (int64_t v : kBadModes) {
    Call c(GetParam());
    c.padding = v;
    expect_refused(c, ACLNN_ERR_PARAM_INVALID, {"paddingMode", "got " + str(v)});
  }
}

TEST_P(AllOps, WrongRank) {
  for (Slot s : Call(GetParam()).slots())
    for (int delta : {-1, 1, -2}) {
      Call c(GetParam());
      SCOPED_TRACE(std::string(c.name(s)) + " rank delta " + str(delta));
      TensorArg& a = c.arg[s];
      if (delta > 0) {
        a.dims.push_back(1);
        a.strides.push_back(1);
      } else {
        a.dims.resize(a.dims.size() - size_t(-delta));
        a.strides.resize(a.dims.size());
      }
      expect_refused(
          c, ACLNN_ERR_PARAM_INVALID,
          {c.name(s), "must have rank " + str(c.rank()), "got rank " + str(c.rank() + delta)});
    }
}

TEST_P(AllOps, BatchMismatch) {
  for (Slot s : Call(GetParam()).slots()) {
    if (s == kInput) continue;
    Call c(GetParam());
    SCOPED_TRACE(c.name(s));
    c.arg[s].dims[0] = 7;
    expect_refused(c, ACLNN_ERR_PARAM_INVALID,
                   {std::string(" of ") + c.name(s) + " is 7", "has 2"});
  }
  // A wrong input N is reported against the first tensor compared with it.
  Call c(GetParam());
  c.arg[kInput].dims[0] = 7;
  expect_refused(c, ACLNN_ERR_PARAM_INVALID, {"N (dim 0) of grid is 2", "input has 7"});
}

TEST_P(AllOps, ChannelMismatch) {
  Call c(GetParam());
  c.arg[kOut].dims[1] = 7;
  expect_refused(c, ACLNN_ERR_PARAM_INVALID,
                 {std::string("C (channel dim) of ") + c.name(kOut) + " is 7", "input has 3"});
  Call d(GetParam());
  d.arg[kInput].dims[1] = 7;
  expect_refused(d, ACLNN_ERR_PARAM_INVALID,
                 {std::string("C (channel dim) of ") + d.name(kOut) + " is 3", "input has 7"});
  if (c.op.bwd) {
    Call e(GetParam());
    e.arg[kIG].dims[1] = 7;
    expect_refused(e, ACLNN_ERR_PARAM_INVALID, {"of inputGrad is 7", "input has 3"});
  }
}

TEST_P(AllOps, OutputSpatialDimsDifferFromGrid) {
  const int nd = info(GetParam()).nd;
  for (int i = 0; i < nd; ++i) {
    Call c(GetParam());
    SCOPED_TRACE(i);
    c.arg[kOut].dims[size_t(2 + i)] = 9;
    expect_refused(c, ACLNN_ERR_PARAM_INVALID,
                   {std::string("spatial dim of ") + c.name(kOut) + " is 9", "grid has"});
    Call d(GetParam());
    d.arg[kGrid].dims[size_t(1 + i)] = 9;
    expect_refused(d, ACLNN_ERR_PARAM_INVALID,
                   {std::string("spatial dim of ") + d.name(kOut), "grid has 9"});
  }
}

TEST_P(AllOps, GridLastDimWrong) {
  const int nd = info(GetParam()).nd;
  for (int64_t k : {int64_t(5 - nd), int64_t(1), int64_t(4)}) {
    Call c(GetParam());
    SCOPED_TRACE(k);
    c.arg[kGrid].dims.back() = k;
    expect_refused(c, ACLNN_ERR_PARAM_INVALID,
                   {"last dim of grid must be " + str(nd), ", " + str(k) + "]"});
  }
}

TEST_P(BackwardOps, InputGradShapeDiffersFromInput) {
  Call base(GetParam());
  for (size_t i = 0; i < base.arg[kIG].dims.size(); ++i) {
    Call c(GetParam());
    SCOPED_TRACE(i);
    const int64_t want = c.arg[kIG].dims[i], got = want + 4;
    c.arg[kIG].dims[i] = got;
    expect_refused(c, ACLNN_ERR_PARAM_INVALID,
                   {"of inputGrad is " + str(got), "input has " + str(want)});
  }
}

TEST_P(BackwardOps, GridGradShapeDiffersFromGrid) {
  Call base(GetParam());
  for (size_t i = 0; i < base.arg[kGG].dims.size(); ++i) {
    Call c(GetParam());
    SCOPED_TRACE(i);
    const int64_t want = c.arg[kGG].dims[i], got = i + 1 == c.arg[kGG].dims.size() ? 5 - want : 8;
    c.arg[kGG].dims[i] = got;
    expect_refused(c, ACLNN_ERR_PARAM_INVALID,
                   {"of gridGrad is " + str(got), "grid has " + str(want)});
  }
}

TEST_P(AllOps, UnsupportedDtype) {
  for (aclDataType t : {ACL_INT32, ACL_INT8, ACL_INT64, ACL_BOOL, ACL_UINT8, ACL_INT16,
                        ACL_COMPLEX64, ACL_STRING, ACL_DT_UNDEFINED}) {
    Call c(GetParam());
    SCOPED_TRACE(int(t));
    for (TensorArg& a : c.arg) a.dtype = t;
    expect_refused(c, ACLNN_ERR_PARAM_INVALID, {"input has dtype", "(" + str(t) + ")"});
  }
}

TEST_P(AllOps, DtypesDiffer) {
  for (Slot s : Call(GetParam()).slots()) {
    if (s == kInput) continue;
    for (aclDataType t : {ACL_DOUBLE, ACL_FLOAT16, ACL_BF16, ACL_INT32}) {
      Call c(GetParam());
      SCOPED_TRACE(std::string(c.name(s)) + " " + str(t));
      c.arg[s].dtype = t;
      expect_refused(c, ACLNN_ERR_PARAM_INVALID,
                     {std::string(c.name(s)) + " has dtype", "(" + str(t) + ")", "FLOAT (0)"});
    }
  }
  Call c(GetParam());
  c.arg[kInput].dtype = ACL_DOUBLE;
  expect_refused(c, ACLNN_ERR_PARAM_INVALID, {"grid has dtype FLOAT (0)", "input has DOUBLE (11)"});
}

TEST_P(AllOps, UnknownFormat) {
  for (Slot s : Call(GetParam()).slots())
    // Declared but unsupported formats, and unnamed values inside the enum's range (a value
    // outside it cannot be formed in C++ without undefined behaviour).
    for (int f : {-1, 3, 4, 16, 29, 32, 63}) {
      Call c(GetParam());
      SCOPED_TRACE(std::string(c.name(s)) + " format " + str(f));
      c.arg[s].format = aclFormat(f);
      expect_refused(c, ACLNN_ERR_PARAM_INVALID,
                     {std::string(c.name(s)) + " has format " + str(f)});
    }
}

TEST_P(AllOps, ZeroInputSpatialDim) {
  const int nd = info(GetParam()).nd;
  for (int i = 0; i < nd; ++i) {
    Call c(GetParam());
    SCOPED_TRACE(i);
    c.arg[kInput].dims[size_t(2 + i)] = 0;
    c.arg[kIG].dims[size_t(2 + i)] = 0;
    expect_refused(c, ACLNN_ERR_PARAM_INVALID, {"input spatial dims must be non-zero"});
  }
}

TEST_P(AllOps, NegativeDim) {
  for (Slot s : Call(GetParam()).slots())
    for (size_t i : {size_t(0), size_t(1), size_t(info(GetParam()).nd + 1)}) {
      Call c(GetParam());
      SCOPED_TRACE(std::string(c.name(s)) + " dim " + str(int64_t(i)));
      c.arg[s].dims[i] = -3;
      expect_refused(
          c, ACLNN_ERR_PARAM_INVALID,
          {std::string(c.name(s)) + " has a negative dim -3 at index " + str(int64_t(i))});
    }
}

TEST_P(AllOps, DimProductOverflows) {
  for (Slot s : Call(GetParam()).slots()) {
    Call c(GetParam());
    SCOPED_TRACE(c.name(s));
    c.arg[s].dims.front() = int64_t(1) << 32;
    c.arg[s].dims.back() = int64_t(1) << 32;
    expect_refused(c, ACLNN_ERR_PARAM_INVALID,
                   {std::string(c.name(s)) + ": the product of its dims", "overflows int64"});
  }
}

TEST_P(AllOps, ViewBeyondStorage) {
  for (Slot s : Call(GetParam()).slots()) {
    Call c(GetParam());
    SCOPED_TRACE(c.name(s));
    c.arg[s].storage[0] -= 1;
    expect_refused(c, ACLNN_ERR_PARAM_INVALID, {std::string(c.name(s)) + ": the view", "beyond"});
    Call d(GetParam());
    d.arg[s].offset += 1;
    expect_refused(d, ACLNN_ERR_PARAM_INVALID, {std::string(d.name(s)) + ": the view", "beyond"});
  }
}

TEST_P(AllOps, InvalidStorageShape) {
  for (Slot s : Call(GetParam()).slots()) {
    Call c(GetParam());
    SCOPED_TRACE(c.name(s));
    c.arg[s].storage = {4, -1};
    expect_refused(c, ACLNN_ERR_PARAM_INVALID, {std::string(c.name(s)) + ": storage shape"});
  }
}

TEST_P(AllOps, NegativeStrideReachesBeforeData) {
  for (Slot s : Call(GetParam()).slots()) {
    Call c(GetParam());
    SCOPED_TRACE(c.name(s));
    c.arg[s].strides.back() = -1;
    expect_refused(c, ACLNN_ERR_PARAM_INVALID, {std::string(c.name(s)) + ": offset", "before"});
  }
}

TEST_P(AllOps, NullDataOnNonEmptyTensor) {
  for (Slot s : Call(GetParam()).slots()) {
    Call c(GetParam());
    SCOPED_TRACE(c.name(s));
    c.arg[s].data = nullptr;
    expect_refused(c, ACLNN_ERR_PARAM_NULLPTR,
                   {std::string(c.name(s)) + " has a null data pointer"});
  }
}

TEST_P(AllOps, MisalignedData) {
  for (aclDataType t : {ACL_FLOAT, ACL_DOUBLE, ACL_FLOAT16})
    for (Slot s : Call(GetParam()).slots())
      for (int shift : {1, 2, 4}) {
        if (shift >= dtype_bytes(t)) continue;
        Call c(GetParam(), t);
        SCOPED_TRACE(std::string(c.name(s)) + " dtype " + str(t) + " shift " + str(shift));
        c.arg[s].data = shifted(c.arg[s].data, shift);
        expect_refused(c, ACLNN_ERR_PARAM_INVALID,
                       {std::string(c.name(s)) + ": data pointer", "not aligned",
                        "element size " + str(dtype_bytes(t))});
      }
}

int64_t span_bytes(const TensorArg& a) {
  int64_t hi = a.offset;
  for (size_t i = 0; i < a.dims.size(); ++i) hi += (a.dims[i] - 1) * a.strides[i];
  return (hi + 1) * dtype_bytes(a.dtype);
}

TEST_P(AllOps, OutputOverlapsInput) {
  const OpKind k = GetParam();
  const int64_t es = dtype_bytes(ACL_FLOAT), at = 2048;
  for (Slot o : Call(k).outputs())
    for (Slot i : Call(k).inputs()) {
      SCOPED_TRACE(std::string(slot_name(k, o)) + " on " + slot_name(k, i));
      const std::string what =
          std::string(slot_name(k, o)) + " overlaps " + slot_name(k, i) + " in memory";
      const int64_t span_i = span_bytes(Call(k).arg[i]), span_o = span_bytes(Call(k).arg[o]);
      // Output offsets relative to the input: same start; starting on the input's last element;
      // ending on its first element. One element in common is an overlap.
      for (int64_t rel : {int64_t(0), span_i - es, es - span_o}) {
        Call c(k);
        c.arg[i].data = c.in_arena(at);
        c.arg[o].data = c.in_arena(at + rel);
        expect_refused(c, ACLNN_ERR_PARAM_INVALID, {what});
      }
      // Touching is not overlapping (phase 1 only: the arena holds no real data).
      for (int64_t rel : {span_i, -span_o}) {
        Call c(k);
        c.arg[i].data = c.in_arena(at);
        c.arg[o].data = c.in_arena(at + rel);
        expect_accepted(c);
      }
    }
}

TEST_P(BackwardOps, OutputsOverlapEachOther) {
  const int64_t ig_span = span_bytes(Call(GetParam()).arg[kIG]);
  for (int64_t rel : {int64_t(0), ig_span - 4}) {
    Call c(GetParam());
    c.arg[kIG].data = c.in_arena(0);
    c.arg[kGG].data = c.in_arena(rel);
    expect_refused(c, ACLNN_ERR_PARAM_INVALID, {"gridGrad overlaps inputGrad in memory"});
  }
  // Only one of them requested: the other is not an output, so there is no overlap.
  Call e(GetParam());
  e.arg[kGG].data = e.arg[kIG].data;
  e.mask = {1, 0};
  expect_accepted(e);
}

TEST_P(AllOps, OutputMapsTwoElementsToOneAddress) {
  for (Slot o : Call(GetParam()).outputs()) {
    Call base(GetParam());
    for (size_t i = 0; i < base.arg[o].dims.size(); ++i) {
      if (base.arg[o].dims[i] < 2) continue;
      Call c(GetParam());
      SCOPED_TRACE(std::string(c.name(o)) + " stride 0 on dim " + str(int64_t(i)));
      c.arg[o].strides[i] = 0;
      expect_refused(c, ACLNN_ERR_PARAM_INVALID,
                     {std::string(c.name(o)) + " (shape", "maps two elements to one address"});
    }
    // Rows that overlap without any zero stride: the second-to-last stride is one too small.
    Call c(GetParam());
    SCOPED_TRACE(std::string(c.name(o)) + " overlapping rows");
    const size_t k = c.arg[o].dims.size() - 2;
    c.arg[o].strides[k] = c.arg[o].dims.back() - 1;
    for (size_t i = k; i-- > 0;)
      c.arg[o].strides[i] = c.arg[o].strides[i + 1] * c.arg[o].dims[i + 1];
    expect_refused(c, ACLNN_ERR_PARAM_INVALID, {"maps two elements to one address"});
  }
}

TEST_P(AllOps, ByteSpanCannotBeAddressed) {
  for (Slot s : Call(GetParam()).slots()) {
    SCOPED_TRACE(slot_name(GetParam(), s));
    // A data pointer so high that the view's end wraps around the address space.
    Call top(GetParam());
    top.arg[s].storage.clear();
    top.arg[s].data =
        reinterpret_cast<void*>(std::numeric_limits<uintptr_t>::max() & ~uintptr_t(63));
    expect_refused(top, ACLNN_ERR_PARAM_INVALID,
                   {std::string(top.name(s)) + ": the byte span", "cannot be addressed"});
    // An element index that fits int64 but whose byte offset does not.
    Call off(GetParam());
    off.arg[s].storage.clear();
    off.arg[s].offset = std::numeric_limits<int64_t>::max() / 2;
    expect_refused(off, ACLNN_ERR_PARAM_INVALID,
                   {std::string(off.name(s)) + ": the byte span", "cannot be addressed"});
    // The element extent itself overflows.
    Call ext(GetParam());
    ext.arg[s].storage.clear();
    ext.arg[s].strides[0] = ext.arg[s].strides[1] = std::numeric_limits<int64_t>::max();
    expect_refused(ext, ACLNN_ERR_PARAM_INVALID,
                   {std::string(ext.name(s)) + ": the extent", "overflows int64"});
  }
}

// Broadcast (stride 0) input views are legal; they must give the same result as the same
// values laid out contiguously.
TEST_P(AllOps, BroadcastInputViewsAreAccepted) {
  for (Slot s : Call(GetParam()).inputs()) {
    Call base(GetParam());
    for (size_t i = 0; i < base.host[s].dims.size(); ++i) {
      SCOPED_TRACE(std::string(base.name(s)) + " stride 0 on dim " + str(int64_t(i)));
      std::vector<int64_t> st = base.host[s].strides;
      st[i] = 0;
      HostTensor view = HostTensor::strided(base.host[s].dims, st, 3, ACL_FLOAT);
      std::mt19937_64 rng(11 + i);
      view.set_values(uniform(rng, view.numel(), -1.1, 1.1));
      HostTensor dense(view.dims, ACL_FLOAT);
      dense.set_values(view.values());

      Call b(GetParam()), d(GetParam());
      b.replace(s, view);
      d.replace(s, dense);
      ASSERT_EQ(b.run(), ACLNN_SUCCESS) << aclGetRecentErrMsg();
      ASSERT_EQ(d.run(), ACLNN_SUCCESS) << aclGetRecentErrMsg();
      for (Slot o : b.outputs()) EXPECT_EQ(b.host[o].values(), d.host[o].values()) << b.name(o);
    }
  }
}

// The data pointer is only required where there is data.
TEST_P(AllOps, NullDataOnEmptyTensorIsAccepted) {
  Call c(GetParam());
  for (Slot s : c.slots()) {
    c.arg[s].dims[0] = 0;
    c.arg[s].data = nullptr;
  }
  EXPECT_EQ(c.run(), ACLNN_SUCCESS) << aclGetRecentErrMsg();
}

}  // namespace
