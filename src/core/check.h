// The one argument checker (SPEC §2 "Validation"). Pure: it reads descriptors, never data.
#pragma once

#include <cstdint>

#include "core/error.h"
#include "core/problem.h"
#include "core/tensor.h"

namespace gridsample {

// The arguments of one GetWorkspaceSize call. For the forward operators `grad_output` is the
// `out` tensor and the mask and gradient tensors are unused.
struct CallArgs {
  const char* api = "";  // "aclnnGridSampler3DBackward", ... (prefix of every message)
  Op op = Op::Forward;
  int nd = 2;
  const aclTensor* input = nullptr;
  const aclTensor* grid = nullptr;
  const aclTensor* out = nullptr;  // forward: out; backward: gradOutput
  int64_t interpolation_mode = 0;
  int64_t padding_mode = 0;
  bool align_corners = false;
  const aclBoolArray* output_mask = nullptr;
  const aclTensor* input_grad = nullptr;
  const aclTensor* grid_grad = nullptr;
  const uint64_t* workspace_size = nullptr;
  aclOpExecutor* const* executor = nullptr;
};

// Returns true and fills `problem`, or returns false and fills `error`.
bool check_call(const CallArgs& args, Problem* problem, Error* error);

}  // namespace gridsample
