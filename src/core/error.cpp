#include "core/error.h"

namespace gridsample {
namespace {
thread_local std::string g_recent;
}

int32_t record_error(const Error& e) {
  g_recent = e.message;
  return e.status;
}

const char* recent_error_message() { return g_recent.c_str(); }

}  // namespace gridsample
