// The ACL runtime calls of CANN example programs, for a CPU "device" (SPEC §2 "Streams and
// devices"): memory is 64-byte aligned host memory, streams run work synchronously.
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "api/determinism.h"
#include "core/error.h"
#include "core/threads.h"
#include "gridsample/gridsample.h"

using gridsample::Error;
using gridsample::record_error;

namespace {

// Streams and contexts carry no state on the CPU; their handles point at these.
char g_stream_token, g_context_token;
std::atomic<int64_t> g_deterministic{1};  // NOTE [ Determinism ] in docs/design.md
std::atomic<int64_t> g_debug_kernel{0};
thread_local aclrtContext g_current_context = &g_context_token;

aclError invalid(const char* msg) { return record_error(Error{ACL_ERROR_INVALID_PARAM, msg}); }

aclError set_opt(aclSysParamOpt opt, int64_t value) {
  if (value != 0 && value != 1) return invalid("aclrtSetSysParamOpt: value must be 0 or 1");
  if (opt == ACL_OPT_DETERMINISTIC) {
    g_deterministic = value;
  } else if (opt == ACL_OPT_ENABLE_DEBUG_KERNEL) {
    g_debug_kernel = value;
  } else {
    return invalid("aclrtSetSysParamOpt: unknown option");
  }
  return ACL_SUCCESS;
}

aclError get_opt(aclSysParamOpt opt, int64_t* value) {
  if (value == nullptr) return invalid("aclrtGetSysParamOpt: value is null");
  if (opt == ACL_OPT_DETERMINISTIC) {
    *value = g_deterministic;
  } else if (opt == ACL_OPT_ENABLE_DEBUG_KERNEL) {
    *value = g_debug_kernel;
  } else {
    return invalid("aclrtGetSysParamOpt: unknown option");
  }
  return ACL_SUCCESS;
}

aclError host_alloc(void** ptr, size_t size, const char* api) {
  if (ptr == nullptr) return invalid(api);
  if (size == 0 || size > (SIZE_MAX >> 1)) return invalid(api);
  void* p = std::aligned_alloc(64, (size + 63) & ~size_t(63));
  if (p == nullptr) return record_error(Error{ACL_ERROR_BAD_ALLOC, "out of host memory"});
  *ptr = p;
  return ACL_SUCCESS;
}

}  // namespace

namespace gridsample {
bool deterministic() { return g_deterministic.load() != 0; }
}  // namespace gridsample

extern "C" {

const char* aclGetRecentErrMsg(void) { return gridsample::recent_error_message(); }

aclError gridsampleSetNumThreads(int32_t n) {
  if (n < 0) return invalid("gridsampleSetNumThreads: n must be 0 (the default) or positive");
  gridsample::set_run_threads(n);
  return ACL_SUCCESS;
}
int32_t gridsampleGetNumThreads(void) { return gridsample::run_threads(); }

aclError aclInit(const char*) { return ACL_SUCCESS; }
aclError aclFinalize(void) { return ACL_SUCCESS; }
aclnnStatus aclnnInit(const char*) { return ACLNN_SUCCESS; }
aclnnStatus aclnnFinalize(void) { return ACLNN_SUCCESS; }

aclError aclrtSetDevice(int32_t deviceId) {
  return deviceId == 0 ? ACL_SUCCESS
                       : record_error(Error{ACL_ERROR_INVALID_DEVICE,
                                            "aclrtSetDevice: the CPU backend has device 0 only"});
}
aclError aclrtResetDevice(int32_t deviceId) { return aclrtSetDevice(deviceId); }
aclError aclrtGetDevice(int32_t* deviceId) {
  if (deviceId == nullptr) return invalid("aclrtGetDevice: deviceId is null");
  *deviceId = 0;
  return ACL_SUCCESS;
}
aclError aclrtGetDeviceCount(uint32_t* count) {
  if (count == nullptr) return invalid("aclrtGetDeviceCount: count is null");
  *count = 1;
  return ACL_SUCCESS;
}
aclError aclrtGetRunMode(aclrtRunMode* runMode) {
  if (runMode == nullptr) return invalid("aclrtGetRunMode: runMode is null");
  *runMode = ACL_HOST;
  return ACL_SUCCESS;
}

aclError aclrtCreateContext(aclrtContext* context, int32_t deviceId) {
  if (context == nullptr) return invalid("aclrtCreateContext: context is null");
  if (aclError e = aclrtSetDevice(deviceId)) return e;
  *context = &g_context_token;
  return ACL_SUCCESS;
}
aclError aclrtDestroyContext(aclrtContext context) {
  return context == &g_context_token ? ACL_SUCCESS
                                     : invalid("aclrtDestroyContext: unknown context");
}
aclError aclrtSetCurrentContext(aclrtContext context) {
  if (context != &g_context_token) return invalid("aclrtSetCurrentContext: unknown context");
  g_current_context = context;
  return ACL_SUCCESS;
}
aclError aclrtGetCurrentContext(aclrtContext* context) {
  if (context == nullptr) return invalid("aclrtGetCurrentContext: context is null");
  *context = g_current_context;
  return ACL_SUCCESS;
}

aclError aclrtCreateStream(aclrtStream* stream) {
  if (stream == nullptr) return invalid("aclrtCreateStream: stream is null");
  *stream = &g_stream_token;
  return ACL_SUCCESS;
}
aclError aclrtDestroyStream(aclrtStream) { return ACL_SUCCESS; }
aclError aclrtSynchronizeStream(aclrtStream) { return ACL_SUCCESS; }
aclError aclrtSynchronizeDevice(void) { return ACL_SUCCESS; }

aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy policy) {
  if (int(policy) < 0 || int(policy) > 5) return invalid("aclrtMalloc: unknown policy");
  return host_alloc(devPtr, size, "aclrtMalloc: devPtr is null or size is 0");
}
aclError aclrtFree(void* devPtr) {
  std::free(devPtr);
  return ACL_SUCCESS;
}
aclError aclrtMallocHost(void** hostPtr, size_t size) {
  return host_alloc(hostPtr, size, "aclrtMallocHost: hostPtr is null or size is 0");
}
aclError aclrtFreeHost(void* hostPtr) { return aclrtFree(hostPtr); }

aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count,
                     aclrtMemcpyKind kind) {
  if (int(kind) < 0 || int(kind) > 3) return invalid("aclrtMemcpy: unknown kind");
  if (count > destMax) return invalid("aclrtMemcpy: count exceeds destMax");
  if (count == 0) return ACL_SUCCESS;
  if (dst == nullptr || src == nullptr) return invalid("aclrtMemcpy: null pointer");
  std::memmove(dst, src, count);
  return ACL_SUCCESS;
}
aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count) {
  if (count > maxCount) return invalid("aclrtMemset: count exceeds maxCount");
  if (count == 0) return ACL_SUCCESS;
  if (devPtr == nullptr) return invalid("aclrtMemset: devPtr is null");
  std::memset(devPtr, value, count);
  return ACL_SUCCESS;
}

aclError aclrtCtxSetSysParamOpt(aclSysParamOpt opt, int64_t value) { return set_opt(opt, value); }
aclError aclrtCtxGetSysParamOpt(aclSysParamOpt opt, int64_t* value) { return get_opt(opt, value); }
aclError aclrtSetSysParamOpt(aclSysParamOpt opt, int64_t value) { return set_opt(opt, value); }
aclError aclrtGetSysParamOpt(aclSysParamOpt opt, int64_t* value) { return get_opt(opt, value); }

}  // extern "C"
