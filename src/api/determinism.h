#pragma once

namespace gridsample {
// The value of ACL_OPT_DETERMINISTIC (default on). Every CPU implementation is deterministic;
// the flag only permits a faster non-deterministic path where one exists.
bool deterministic();
}  // namespace gridsample
