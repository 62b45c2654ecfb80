// SPEC §2 "Executors" and "Streams and devices": the executor life cycle, workspace checks at
// run time, the aclrt* runtime calls and the tensor getters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "support.h"

using namespace gstest;

namespace {

using RunFn = aclnnStatus (*)(void*, uint64_t, aclOpExecutor*, aclrtStream);

enum class OpKind { F2, F3, B2, B3 };
const OpKind kAllOps[] = {OpKind::F2, OpKind::F3, OpKind::B2, OpKind::B3};

RunFn run_fn(OpKind k) {
  switch (k) {
    case OpKind::F2:
      return aclnnGridSampler2D;
    case OpKind::F3:
      return aclnnGridSampler3D;
    case OpKind::B2:
      return aclnnGridSampler2DBackward;
    default:
      return aclnnGridSampler3DBackward;
  }
}

const char* op_name(OpKind k) {
  static const char* const n[] = {"aclnnGridSampler2D", "aclnnGridSampler3D",
                                  "aclnnGridSampler2DBackward", "aclnnGridSampler3DBackward"};
  return n[int(k)];
}

bool is_bwd(OpKind k) { return k == OpKind::B2 || k == OpKind::B3; }

// Tensors for one operator call, with random inputs and canary-filled outputs.
struct Problem {
  OpKind kind;
  HostTensor input, grid, out, ig, gg;  // out is gradOutput for the backward operators

  Problem(OpKind k, aclDataType dt, uint64_t seed = 1) : kind(k) {
    const bool d3 = k == OpKind::F3 || k == OpKind::B3;
    input = d3 ? HostTensor({1, 2, 3, 4, 5}, dt) : HostTensor({1, 2, 4, 5}, dt);
    grid = d3 ? HostTensor({1, 2, 3, 2, 3}, dt) : HostTensor({1, 3, 2, 2}, dt);
    out = d3 ? HostTensor({1, 2, 2, 3, 2}, dt) : HostTensor({1, 2, 3, 2}, dt);
    ig = HostTensor(input.dims, dt);
    gg = HostTensor(grid.dims, dt);
    randomize(seed);
    canaries();
  }
  void randomize(uint64_t seed) {
    std::mt19937_64 rng(seed);
    input.set_values(uniform(rng, input.numel(), -2, 2));
    grid.set_values(uniform(rng, grid.numel(), -1.1, 1.1));
    if (is_bwd(kind)) out.set_values(uniform(rng, out.numel(), -1, 1));
  }
  void canaries() {
    if (is_bwd(kind)) {
      ig.fill_bytes(0xC3);
      gg.fill_bytes(0xC3);
    } else {
      out.fill_bytes(0xC3);
    }
  }
  std::vector<std::vector<unsigned char>> output_bytes() const {
    if (is_bwd(kind)) return {ig.bytes(), gg.bytes()};
    return {out.bytes()};
  }
  std::vector<std::vector<double>> output_values() const {
    if (is_bwd(kind)) return {ig.values(), gg.values()};
    return {out.values()};
  }
  // The expected outputs, computed by a fresh one-shot call on copies of the current inputs.
  std::vector<std::vector<double>> expected() const {
    Problem q(kind, input.dtype);
    q.input.set_values(input.values());
    q.grid.set_values(grid.values());
    if (is_bwd(kind)) q.out.set_values(out.values());
    const aclnnStatus st = is_bwd(kind) ? backward(q.out, q.input, q.grid, &q.ig, &q.gg, {})
                                        : forward(q.input, q.grid, q.out, {});
    EXPECT_EQ(st, ACLNN_SUCCESS) << aclGetRecentErrMsg();
    return q.output_values();
  }
};

// Phase 1 of `p`'s operator; the tensor handles live in the returned object until it dies.
struct Planned {
  TensorHandle input, grid, out, ig, gg;
  aclOpExecutor* ex = nullptr;
  uint64_t ws = 0;
  aclnnStatus status;
  std::vector<unsigned char> buf;
  // A workspace of the size asked for (the implementation chosen may need one).
  void* wsp() {
    buf.assign(size_t(ws) + 1, 0xA5);
    return buf.data();
  }

  explicit Planned(const Problem& p)
      : input(&p.input),
        grid(&p.grid),
        out(&p.out),
        ig(is_bwd(p.kind) ? &p.ig : nullptr),
        gg(is_bwd(p.kind) ? &p.gg : nullptr) {
    const bool mask[2] = {true, true};
    aclBoolArray* mk = aclCreateBoolArray(mask, 2);
    switch (p.kind) {
      case OpKind::F2:
        status = aclnnGridSampler2DGetWorkspaceSize(input.t, grid.t, 0, 0, false, out.t, &ws, &ex);
        break;
      case OpKind::F3:
        status = aclnnGridSampler3DGetWorkspaceSize(input.t, grid.t, 0, 0, false, out.t, &ws, &ex);
        break;
      case OpKind::B2:
        status = aclnnGridSampler2DBackwardGetWorkspaceSize(out.t, input.t, grid.t, 0, 0, false, mk,
                                                            ig.t, gg.t, &ws, &ex);
        break;
      default:
        status = aclnnGridSampler3DBackwardGetWorkspaceSize(out.t, input.t, grid.t, 0, 0, false, mk,
                                                            ig.t, gg.t, &ws, &ex);
    }
    aclDestroyBoolArray(mk);
  }
};

bool message_has(const std::string& needle) {
  return std::string(aclGetRecentErrMsg()).find(needle) != std::string::npos;
}

TEST(Executor, OneShotRunsOnceThenIsRefused) {
  for (OpKind k : kAllOps) {
    SCOPED_TRACE(op_name(k));
    Problem p(k, ACL_FLOAT);
    Planned pl(p);
    ASSERT_EQ(pl.status, ACLNN_SUCCESS) << aclGetRecentErrMsg();
    ASSERT_EQ(run_fn(k)(pl.wsp(), pl.ws, pl.ex, nullptr), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    EXPECT_EQ(p.output_values(), p.expected());

    // The run released the executor: a second run and a destroy are refused, and write nothing.
    p.canaries();
    const auto before = p.output_bytes();
    EXPECT_EQ(run_fn(k)(pl.wsp(), pl.ws, pl.ex, nullptr), ACLNN_ERR_PARAM_INVALID);
    EXPECT_TRUE(message_has("not a live executor")) << aclGetRecentErrMsg();
    EXPECT_EQ(aclDestroyAclOpExecutor(pl.ex), ACLNN_ERR_PARAM_INVALID);
    EXPECT_EQ(aclSetAclOpExecutorRepeatable(pl.ex), ACLNN_ERR_PARAM_INVALID);
    EXPECT_TRUE(p.output_bytes() == before);
  }
}

TEST(Executor, UnrunOneShotCanBeDestroyed) {
  for (OpKind k : kAllOps) {
    SCOPED_TRACE(op_name(k));
    Problem p(k, ACL_FLOAT);
    Planned pl(p);
    ASSERT_EQ(pl.status, ACLNN_SUCCESS) << aclGetRecentErrMsg();
    const auto before = p.output_bytes();
    EXPECT_EQ(aclDestroyAclOpExecutor(pl.ex), ACLNN_SUCCESS);
    EXPECT_EQ(run_fn(k)(pl.wsp(), pl.ws, pl.ex, nullptr), ACLNN_ERR_PARAM_INVALID);
    EXPECT_TRUE(p.output_bytes() == before);
  }
}

TEST(Executor, RepeatableRunsManyTimesAndReadsBuffersAtRunTime) {
  for (OpKind k : kAllOps) {
    SCOPED_TRACE(op_name(k));
    Problem p(k, ACL_FLOAT);
    Planned pl(p);
    ASSERT_EQ(pl.status, ACLNN_SUCCESS) << aclGetRecentErrMsg();
    ASSERT_EQ(aclSetAclOpExecutorRepeatable(pl.ex), ACLNN_SUCCESS);
    std::vector<std::vector<double>> previous;
    for (uint64_t round = 0; round < 4; ++round) {
      SCOPED_TRACE(round);
      // New contents of the same buffers; outputs back to canaries so every run must write.
      p.randomize(100 + round);
      p.canaries();
      ASSERT_EQ(run_fn(k)(pl.wsp(), pl.ws, pl.ex, nullptr), ACLNN_SUCCESS) << aclGetRecentErrMsg();
      const auto got = p.output_values();
      EXPECT_EQ(got, p.expected());
      EXPECT_NE(got, previous);
      previous = got;
    }
    EXPECT_EQ(aclDestroyAclOpExecutor(pl.ex), ACLNN_SUCCESS);
    EXPECT_EQ(aclDestroyAclOpExecutor(pl.ex), ACLNN_ERR_PARAM_INVALID);
    EXPECT_TRUE(message_has("not a live executor")) << aclGetRecentErrMsg();
    p.canaries();
    const auto before = p.output_bytes();
    EXPECT_EQ(run_fn(k)(pl.wsp(), pl.ws, pl.ex, nullptr), ACLNN_ERR_PARAM_INVALID);
    EXPECT_TRUE(p.output_bytes() == before);
  }
}

TEST(Executor, WrongOperatorsRunCallIsRefused) {
  for (OpKind made : kAllOps)
    for (OpKind used : kAllOps) {
      if (made == used) continue;
      SCOPED_TRACE(std::string(op_name(made)) + " run by " + op_name(used));
      Problem p(made, ACL_FLOAT);
      Planned pl(p);
      ASSERT_EQ(pl.status, ACLNN_SUCCESS) << aclGetRecentErrMsg();
      const auto before = p.output_bytes();
      EXPECT_EQ(run_fn(used)(pl.wsp(), pl.ws, pl.ex, nullptr), ACLNN_ERR_PARAM_INVALID);
      EXPECT_TRUE(message_has(std::string("was made by ") + op_name(made))) << aclGetRecentErrMsg();
      EXPECT_TRUE(p.output_bytes() == before);
      // The refusal did not consume it: its own operator still runs it.
      EXPECT_EQ(run_fn(made)(pl.wsp(), pl.ws, pl.ex, nullptr), ACLNN_SUCCESS)
          << aclGetRecentErrMsg();
      EXPECT_EQ(p.output_values(), p.expected());
    }
}

// NOTE [ Workspace alignment ]: a workspace at any byte offset from a 64-byte boundary gives the
// same bits, and nothing past the size asked for is touched. Problems whose workspace holds
// channel rows, an accumulator and the slab lists (random grids, 8 channels).
TEST(Executor, WorkspaceAtAnyAlignmentGivesTheSameBitsAndStaysInside) {
  for (OpKind k : kAllOps)
    for (aclDataType dt : {ACL_FLOAT, ACL_BF16}) {
      SCOPED_TRACE(std::string(op_name(k)) + " dtype " + std::to_string(dt));
      const bool d3 = k == OpKind::F3 || k == OpKind::B3;
      const std::vector<int64_t> sp =
          d3 ? std::vector<int64_t>{9, 10, 11} : std::vector<int64_t>{19, 23};
      std::vector<int64_t> in_dims = {2, 8}, out_dims = {2, 8}, grid_dims = {2};
      for (int64_t s : sp) {
        in_dims.push_back(s);
        out_dims.push_back(s + 3);
        grid_dims.push_back(s + 3);
      }
      grid_dims.push_back(int64_t(sp.size()));
      Problem p(k, dt);  // (its tensors replaced by these larger ones; no p.expected())
      p.input = HostTensor(in_dims, dt);
      p.grid = HostTensor(grid_dims, dt);
      p.out = HostTensor(out_dims, dt);
      p.ig = HostTensor(in_dims, dt);
      p.gg = HostTensor(grid_dims, dt);
      p.randomize(5);
      std::vector<std::vector<unsigned char>> first;
      for (size_t offset : {0, 1, 8, 16, 40, 63}) {
        SCOPED_TRACE(offset);
        p.canaries();
        Planned pl(p);
        ASSERT_EQ(pl.status, ACLNN_SUCCESS) << aclGetRecentErrMsg();
        ASSERT_GT(pl.ws, 0u);
        // 64-byte aligned storage; the workspace starts `offset` bytes in and is followed by 64
        // canary bytes.
        std::vector<unsigned char> buf(size_t(pl.ws) + 192, 0x5A);
        const size_t lead = (64 - reinterpret_cast<uintptr_t>(buf.data()) % 64) % 64;
        unsigned char* ws = buf.data() + lead + offset;
        ASSERT_EQ(run_fn(k)(ws, pl.ws, pl.ex, nullptr), ACLNN_SUCCESS) << aclGetRecentErrMsg();
        EXPECT_TRUE(std::all_of(ws + pl.ws, ws + pl.ws + 64, [](unsigned char b) {
          return b == 0x5A;
        })) << "written past the workspace";
        EXPECT_TRUE(std::all_of(buf.data(), ws, [](unsigned char b) { return b == 0x5A; }))
            << "written before the workspace";
        if (offset == 0)
          first = p.output_bytes();
        else
          EXPECT_TRUE(p.output_bytes() == first);
      }
      // The support's call (a workspace from a std::vector) as the reference.
      HostTensor eo(out_dims, dt), eig(in_dims, dt), egg(grid_dims, dt);
      if (is_bwd(k)) {
        ASSERT_EQ(backward(p.out, p.input, p.grid, &eig, &egg, {}), ACLNN_SUCCESS);
        EXPECT_EQ(p.ig.values(), eig.values());
        EXPECT_EQ(p.gg.values(), egg.values());
      } else {
        ASSERT_EQ(forward(p.input, p.grid, eo, {}), ACLNN_SUCCESS);
        EXPECT_EQ(p.out.values(), eo.values());
      }
    }
}

TEST(Executor, NullOrUnknownExecutorIsRefused) {
  for (OpKind k : kAllOps) {
    SCOPED_TRACE(op_name(k));
    EXPECT_EQ(run_fn(k)(nullptr, 0, nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_TRUE(message_has("executor is null")) << aclGetRecentErrMsg();
    // Never dereferenced: the registry is consulted first.
    static char not_an_executor;
    EXPECT_EQ(run_fn(k)(nullptr, 0, reinterpret_cast<aclOpExecutor*>(&not_an_executor), nullptr),
              ACLNN_ERR_PARAM_INVALID);
  }
  EXPECT_EQ(aclDestroyAclOpExecutor(nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclSetAclOpExecutorRepeatable(nullptr), ACLNN_ERR_PARAM_INVALID);
}

// FLOAT16 backward with inputGrad requested accumulates in a FLOAT32 workspace (SPEC §4.7).
TEST(Executor, WorkspaceTooSmallOrNullIsRefusedAndWritesNothing) {
  for (aclDataType dt : {ACL_FLOAT16, ACL_BF16})
    for (OpKind k : {OpKind::B2, OpKind::B3}) {
      SCOPED_TRACE(std::string(op_name(k)) + " dtype " + std::to_string(dt));
      Problem p(k, dt);
      Planned pl(p);
      ASSERT_EQ(pl.status, ACLNN_SUCCESS) << aclGetRecentErrMsg();
      ASSERT_GE(pl.ws, uint64_t(p.input.numel()) * 4);
      std::vector<unsigned char> ws(size_t(pl.ws), 0xA5);
      const auto before = p.output_bytes();

      EXPECT_EQ(run_fn(k)(ws.data(), pl.ws - 1, pl.ex, nullptr), ACLNN_ERR_PARAM_INVALID);
      EXPECT_TRUE(message_has("workspaceSize " + std::to_string(pl.ws - 1)))
          << aclGetRecentErrMsg();
      EXPECT_EQ(run_fn(k)(ws.data(), 0, pl.ex, nullptr), ACLNN_ERR_PARAM_INVALID);
      EXPECT_EQ(run_fn(k)(nullptr, pl.ws, pl.ex, nullptr), ACLNN_ERR_PARAM_NULLPTR);
      EXPECT_TRUE(message_has("workspace is null")) << aclGetRecentErrMsg();
      EXPECT_EQ(run_fn(k)(nullptr, 0, pl.ex, nullptr), ACLNN_ERR_PARAM_NULLPTR);
      EXPECT_TRUE(p.output_bytes() == before);
      EXPECT_TRUE(std::all_of(ws.begin(), ws.end(), [](unsigned char b) { return b == 0xA5; }));

      // None of the refusals consumed the executor; a proper workspace runs it.
      ASSERT_EQ(run_fn(k)(ws.data(), pl.ws, pl.ex, nullptr), ACLNN_SUCCESS) << aclGetRecentErrMsg();
      EXPECT_EQ(p.output_values(), p.expected());
    }
}

TEST(Executor, LargerWorkspaceThanAskedIsFine) {
  Problem p(OpKind::B3, ACL_FLOAT16);
  Planned pl(p);
  ASSERT_EQ(pl.status, ACLNN_SUCCESS) << aclGetRecentErrMsg();
  std::vector<unsigned char> ws(size_t(pl.ws) + 100, 0xA5);
  ASSERT_EQ(run_fn(OpKind::B3)(ws.data(), ws.size(), pl.ex, nullptr), ACLNN_SUCCESS)
      << aclGetRecentErrMsg();
  EXPECT_EQ(p.output_values(), p.expected());
}

TEST(Executor, RunsOnACreatedStream) {
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  Problem p(OpKind::F2, ACL_FLOAT);
  Planned pl(p);
  ASSERT_EQ(pl.status, ACLNN_SUCCESS) << aclGetRecentErrMsg();
  ASSERT_EQ(aclnnGridSampler2D(pl.wsp(), pl.ws, pl.ex, stream), ACLNN_SUCCESS)
      << aclGetRecentErrMsg();
  ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  EXPECT_EQ(p.output_values(), p.expected());
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

TEST(Runtime, MallocIsAlignedAndRejectsSizeZero) {
  for (size_t size : {size_t(1), size_t(3), size_t(63), size_t(64), size_t(65), size_t(1000)})
    for (int policy = 0; policy <= 5; ++policy) {
      void* p = nullptr;
      ASSERT_EQ(aclrtMalloc(&p, size, aclrtMemMallocPolicy(policy)), ACL_SUCCESS);
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << size;
      std::memset(p, 0x5A, size);  // the whole size is usable (ASan checks this)
      EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
    }
  void* p = reinterpret_cast<void*>(uintptr_t(0x40));
  EXPECT_EQ(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(p, reinterpret_cast<void*>(uintptr_t(0x40)));
  EXPECT_EQ(aclrtMalloc(nullptr, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMalloc(&p, 16, aclrtMemMallocPolicy(6)), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMalloc(&p, SIZE_MAX, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
}

TEST(Runtime, MemcpyRespectsBounds) {
  const unsigned char src[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  for (int kind = 0; kind <= 3; ++kind) {
    unsigned char dst[8] = {};
    EXPECT_EQ(aclrtMemcpy(dst, 8, src, 8, aclrtMemcpyKind(kind)), ACL_SUCCESS);
    EXPECT_EQ(std::memcmp(dst, src, 8), 0);
  }
  unsigned char dst[8] = {};
  EXPECT_EQ(aclrtMemcpy(dst, 4, src, 5, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMemcpy(nullptr, 8, src, 8, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMemcpy(dst, 8, nullptr, 8, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_INVALID_PARAM);
  for (unsigned char b : dst) EXPECT_EQ(b, 0);  // no refused copy wrote anything
  EXPECT_EQ(aclrtMemcpy(dst, 8, src, 4, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
  EXPECT_EQ(dst[3], 4);
  EXPECT_EQ(dst[4], 0);
}

TEST(Runtime, DeviceZeroOnly) {
  EXPECT_EQ(aclInit(nullptr), ACL_SUCCESS);
  EXPECT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  EXPECT_NE(aclrtSetDevice(1), ACL_SUCCESS);
  EXPECT_NE(aclrtSetDevice(-1), ACL_SUCCESS);
  EXPECT_NE(std::string(aclGetRecentErrMsg()), "");
  int32_t dev = -5;
  EXPECT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
  EXPECT_EQ(dev, 0);
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
}

TEST(Runtime, StreamLifeCycle) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  EXPECT_NE(s, nullptr);
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  EXPECT_EQ(aclrtCreateStream(nullptr), ACL_ERROR_INVALID_PARAM);
}

TEST(Runtime, DeterministicOptionDefaultsToOneAndRoundTrips) {
  int64_t v = -1;
  ASSERT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &v), ACL_SUCCESS);
  EXPECT_EQ(v, 1);  // this library's default (CANN's is 0); SPEC §2 "Determinism"
  for (int64_t want : {0, 1, 0}) {
    ASSERT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, want), ACL_SUCCESS);
    EXPECT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &v), ACL_SUCCESS);
    EXPECT_EQ(v, want);
    EXPECT_EQ(aclrtGetSysParamOpt(ACL_OPT_DETERMINISTIC, &v), ACL_SUCCESS);
    EXPECT_EQ(v, want);
  }
  ASSERT_EQ(aclrtSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1), ACL_SUCCESS);
  EXPECT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &v), ACL_SUCCESS);
  EXPECT_EQ(v, 1);
  EXPECT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 2), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &v), ACL_SUCCESS);
  EXPECT_EQ(v, 1);
  EXPECT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, nullptr), ACL_ERROR_INVALID_PARAM);
}

TEST(Tensor, GettersReturnWhatWasCreated) {
  const int64_t dims[4] = {2, 3, 4, 5}, strides[4] = {70, 1, 15, 3}, storage[2] = {10, 14};
  float data[140];
  aclTensor* t = aclCreateTensor(dims, 4, ACL_BF16, strides, 7, ACL_FORMAT_NHWC, storage, 2, data);
  ASSERT_NE(t, nullptr);

  int64_t* v = nullptr;
  uint64_t n = 0;
  ASSERT_EQ(aclGetViewShape(t, &v, &n), ACLNN_SUCCESS);
  EXPECT_EQ(std::vector<int64_t>(v, v + n), std::vector<int64_t>(dims, dims + 4));
  delete[] v;
  ASSERT_EQ(aclGetViewStrides(t, &v, &n), ACLNN_SUCCESS);
  EXPECT_EQ(std::vector<int64_t>(v, v + n), std::vector<int64_t>(strides, strides + 4));
  delete[] v;
  ASSERT_EQ(aclGetStorageShape(t, &v, &n), ACLNN_SUCCESS);
  EXPECT_EQ(std::vector<int64_t>(v, v + n), std::vector<int64_t>(storage, storage + 2));
  delete[] v;
  int64_t offset = -1;
  ASSERT_EQ(aclGetViewOffset(t, &offset), ACLNN_SUCCESS);
  EXPECT_EQ(offset, 7);
  aclFormat f = ACL_FORMAT_UNDEFINED;
  ASSERT_EQ(aclGetFormat(t, &f), ACLNN_SUCCESS);
  EXPECT_EQ(f, ACL_FORMAT_NHWC);
  aclDataType d = ACL_DT_UNDEFINED;
  ASSERT_EQ(aclGetDataType(t, &d), ACLNN_SUCCESS);
  EXPECT_EQ(d, ACL_BF16);

  EXPECT_EQ(aclGetViewShape(nullptr, &v, &n), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclGetViewShape(t, nullptr, &n), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclGetViewOffset(t, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclGetFormat(nullptr, &f), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclGetDataType(t, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
}

TEST(Tensor, NullStridesMeanContiguous) {
  const int64_t dims[3] = {2, 3, 4};
  float data[24];
  aclTensor* t = aclCreateTensor(dims, 3, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 3, data);
  ASSERT_NE(t, nullptr);
  int64_t* v = nullptr;
  uint64_t n = 0;
  ASSERT_EQ(aclGetViewStrides(t, &v, &n), ACLNN_SUCCESS);
  EXPECT_EQ(std::vector<int64_t>(v, v + n), (std::vector<int64_t>{12, 4, 1}));
  delete[] v;
  aclDestroyTensor(t);
}

}  // namespace
