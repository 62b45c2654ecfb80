// The one error type of the core and the per-thread "recent error message" behind
// aclGetRecentErrMsg.
#pragma once

#include <cstdint>
#include <string>

namespace gridsample {

struct Error {
  int32_t status = 0;  // an ACLNN_ERR_* or ACL_ERROR_* code
  std::string message;
};

// Records the message for this thread and returns the status, for `return fail(...)`.
int32_t record_error(const Error& e);

const char* recent_error_message();

}  // namespace gridsample
