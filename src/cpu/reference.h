// cpu:ref -- the scalar reference implementation: obviously correct, the test oracle and the
// last fallback. It stays in the tree for good.
#pragma once

#include "core/plan.h"

namespace gridsample::cpu {

const Impl& reference_impl();

}  // namespace gridsample::cpu
