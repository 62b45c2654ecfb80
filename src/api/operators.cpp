// The four aclnn operators and their executors: phase 1 checks and plans, phase 2 runs.
// No exception crosses this boundary; every failure is a status plus a message.
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>

#include "aclnnop/aclnn_grid_sampler2d.h"
#include "aclnnop/aclnn_grid_sampler2d_backward.h"
#include "aclnnop/aclnn_grid_sampler3d.h"
#include "aclnnop/aclnn_grid_sampler3d_backward.h"
#include "core/check.h"
#include "core/plan.h"
#include "cpu/fast.h"
#include "cpu/reference.h"

using namespace gridsample;

struct aclOpExecutor {
  const char* api;  // the operator that made it; only its own run call may run it
  Plan plan;
};

namespace {

// NOTE [ Executor registry ]
// Live executors are kept in a registry so that running or destroying a pointer that is not
// (or no longer) a live executor is refused with a status instead of touching freed memory.
// An entry also counts the runs in flight: concurrent runs of one repeatable executor are
// refused, since they would write the same outputs, and so is destroying a running one.
struct Entry {
  bool repeatable = false;
  bool running = false;
};
std::mutex g_mutex;
std::unordered_map<const aclOpExecutor*, Entry> g_live;

// Implementations in order of preference; cpu:ref, last, accepts everything.
// NOTE [ Forcing an implementation ]
// GRIDSAMPLE_IMPL=<name> (e.g. cpu:ref, cpu:fast) restricts the choice to that implementation,
// so that tests can compare implementations and benchmarks can time one; a problem it declines
// then fails to plan. Read at every plan, so a test can switch it with setenv between calls.
std::vector<const Impl*> implementations() {
  static const std::vector<const Impl*> impls = {&cpu::fast_impl(), &cpu::reference_impl()};
  const char* want = std::getenv("GRIDSAMPLE_IMPL");
  if (want == nullptr || want[0] == '\0') return impls;
  std::vector<const Impl*> one;
  for (const Impl* impl : impls)
    if (std::string(impl->name) == want) one.push_back(impl);
  return one;
}

aclnnStatus fail(int32_t status, const std::string& msg) {
  return record_error(Error{status, msg});
}

aclnnStatus plan_call(const CallArgs& args, uint64_t* workspace_size, aclOpExecutor** executor) {
  try {
    Problem p;
    Error e;
    if (!check_call(args, &p, &e)) return record_error(e);
    auto* ex = new aclOpExecutor{args.api, {}};
    if (!make_plan(p, implementations(), &ex->plan, &e)) {
      delete ex;
      e.message = std::string(args.api) + ": " + e.message;
      return record_error(e);
    }
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      g_live.emplace(ex, Entry{});
    }
    *workspace_size = ex->plan.workspace_bytes;
    *executor = ex;
    return ACLNN_SUCCESS;
  } catch (const std::bad_alloc&) {
    return fail(ACLNN_ERR_INNER_CREATE_EXECUTOR, std::string(args.api) + ": out of memory");
  }
}

aclnnStatus run_call(const char* api, void* workspace, uint64_t workspace_size,
                     aclOpExecutor* executor) {
  if (executor == nullptr)
    return fail(ACLNN_ERR_PARAM_NULLPTR, std::string(api) + ": executor is null");
  bool repeatable;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_live.find(executor);
    if (it == g_live.end())
      return fail(ACLNN_ERR_PARAM_INVALID,
                  std::string(api) +
                      ": executor is not a live executor (already run once, destroyed, or never "
                      "created)");
    if (std::string(executor->api) != api)
      return fail(ACLNN_ERR_PARAM_INVALID, std::string(api) + ": executor was made by " +
                                               executor->api + "GetWorkspaceSize");
    const uint64_t need = executor->plan.workspace_bytes;
    if (need > 0 && workspace == nullptr)
      return fail(ACLNN_ERR_PARAM_NULLPTR, std::string(api) + ": workspace is null but " +
                                               std::to_string(need) + " bytes are needed");
    if (workspace_size < need)
      return fail(ACLNN_ERR_PARAM_INVALID,
                  std::string(api) + ": workspaceSize " + std::to_string(workspace_size) +
                      " is smaller than the " + std::to_string(need) + " bytes asked for");
    if (it->second.running)
      return fail(ACLNN_ERR_PARAM_INVALID,
                  std::string(api) + ": executor is already running on another thread");
    repeatable = it->second.repeatable;
    if (repeatable)
      it->second.running = true;
    else
      g_live.erase(it);  // a one-shot executor is claimed by this run
  }
  executor->plan.impl->run(executor->plan.problem, workspace);
  if (repeatable) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_live[executor].running = false;
  } else {
    delete executor;
  }
  return ACLNN_SUCCESS;
}

CallArgs forward_args(const char* api, int nd, const aclTensor* input, const aclTensor* grid,
                      int64_t interp, int64_t padding, bool align, aclTensor* out,
                      uint64_t* workspace_size, aclOpExecutor** executor) {
  CallArgs a;
  a.api = api;
  a.op = Op::Forward;
  a.nd = nd;
  a.input = input;
  a.grid = grid;
  a.out = out;
  a.interpolation_mode = interp;
  a.padding_mode = padding;
  a.align_corners = align;
  a.workspace_size = workspace_size;
  a.executor = executor;
  return a;
}

CallArgs backward_args(const char* api, int nd, const aclTensor* grad_output,
                       const aclTensor* input, const aclTensor* grid, int64_t interp,
                       int64_t padding, bool align, const aclBoolArray* mask, aclTensor* input_grad,
                       aclTensor* grid_grad, uint64_t* workspace_size, aclOpExecutor** executor) {
  CallArgs a =
      forward_args(api, nd, input, grid, interp, padding, align, nullptr, workspace_size, executor);
  a.op = Op::Backward;
  a.out = grad_output;
  a.output_mask = mask;
  a.input_grad = input_grad;
  a.grid_grad = grid_grad;
  return a;
}

constexpr const char* k2D = "aclnnGridSampler2D";
constexpr const char* k3D = "aclnnGridSampler3D";
constexpr const char* k2DBwd = "aclnnGridSampler2DBackward";
constexpr const char* k3DBwd = "aclnnGridSampler3DBackward";

}  // namespace

extern "C" {

aclnnStatus aclnnGridSampler2DGetWorkspaceSize(const aclTensor* input, const aclTensor* grid,
                                               int64_t interpolationMode, int64_t paddingMode,
                                               bool alignCorners, aclTensor* out,
                                               uint64_t* workspaceSize, aclOpExecutor** executor) {
  return plan_call(forward_args(k2D, 2, input, grid, interpolationMode, paddingMode, alignCorners,
                                out, workspaceSize, executor),
                   workspaceSize, executor);
}

aclnnStatus aclnnGridSampler3DGetWorkspaceSize(const aclTensor* input, const aclTensor* grid,
                                               int64_t interpolationMode, int64_t paddingMode,
                                               bool alignCorners, aclTensor* out,
                                               uint64_t* workspaceSize, aclOpExecutor** executor) {
  return plan_call(forward_args(k3D, 3, input, grid, interpolationMode, paddingMode, alignCorners,
                                out, workspaceSize, executor),
                   workspaceSize, executor);
}

aclnnStatus aclnnGridSampler2DBackwardGetWorkspaceSize(
    const aclTensor* gradOutput, const aclTensor* input, const aclTensor* grid,
    int64_t interpolationMode, int64_t paddingMode, bool alignCorners,
    const aclBoolArray* outputMask, aclTensor* inputGrad, aclTensor* gridGrad,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  return plan_call(
      backward_args(k2DBwd, 2, gradOutput, input, grid, interpolationMode, paddingMode,
                    alignCorners, outputMask, inputGrad, gridGrad, workspaceSize, executor),
      workspaceSize, executor);
}

aclnnStatus aclnnGridSampler3DBackwardGetWorkspaceSize(
    const aclTensor* gradOutput, const aclTensor* input, const aclTensor* grid,
    int64_t interpolationMode, int64_t paddingMode, bool alignCorners,
    const aclBoolArray* outputMask, aclTensor* inputGrad, aclTensor* gridGrad,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  return plan_call(
      backward_args(k3DBwd, 3, gradOutput, input, grid, interpolationMode, paddingMode,
                    alignCorners, outputMask, inputGrad, gridGrad, workspaceSize, executor),
      workspaceSize, executor);
}

aclnnStatus aclnnGridSampler2D(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                               aclrtStream) {
  return run_call(k2D, workspace, workspaceSize, executor);
}

aclnnStatus aclnnGridSampler3D(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                               aclrtStream) {
  return run_call(k3D, workspace, workspaceSize, executor);
}

aclnnStatus aclnnGridSampler2DBackward(void* workspace, uint64_t workspaceSize,
                                       aclOpExecutor* executor, aclrtStream) {
  return run_call(k2DBwd, workspace, workspaceSize, executor);
}

aclnnStatus aclnnGridSampler3DBackward(void* workspace, uint64_t workspaceSize,
                                       aclOpExecutor* executor, aclrtStream) {
  return run_call(k3DBwd, workspace, workspaceSize, executor);
}

aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor* executor) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_live.find(executor);
  if (it == g_live.end())
    return fail(ACLNN_ERR_PARAM_INVALID,
                "aclSetAclOpExecutorRepeatable: executor is null or not a live executor");
  it->second.repeatable = true;
  return ACLNN_SUCCESS;
}

aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor* executor) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_live.find(executor);
    if (it == g_live.end())
      return fail(ACLNN_ERR_PARAM_INVALID,
                  "aclDestroyAclOpExecutor: executor is null or not a live executor (already run "
                  "once or destroyed)");
    if (it->second.running)
      return fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyAclOpExecutor: executor is running");
    g_live.erase(it);
  }
  delete executor;
  return ACLNN_SUCCESS;
}

}  // extern "C"
