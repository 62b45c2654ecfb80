// cpu:fast -- threaded SIMD kernels for all four operators, with results bit-identical for any
// number of threads (NOTE [ Fast determinism ] in fast.cpp); out and inputGrad bit-identical to
// cpu:ref, gridGrad within SPEC §1 of it (NOTE [ gridGrad order ] in fast_kernels.cpp). Before
// cpu:ref in the list of implementations; it declines only problems whose sizes exceed its vector
// index math.
#pragma once

#include "core/plan.h"

namespace gridsample::cpu {

const Impl& fast_impl();

}  // namespace gridsample::cpu
