// Shared by the fuzzers (docs/robustness.md): a byte reader, the four operators behind one call,
// dtype conversions written independently of the library's, and a failure macro.
//
// Only the public C API is used. Every check failure prints what failed and aborts, which
// libFuzzer reports as a crash and saves the input; the replay driver (replay_main.cpp) turns
// the same abort into a failed test.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_grid_sampler2d.h"
#include "aclnnop/aclnn_grid_sampler2d_backward.h"
#include "aclnnop/aclnn_grid_sampler3d.h"
#include "aclnnop/aclnn_grid_sampler3d_backward.h"
#include "host_values.h"  // tests/

#define FUZZ_CHECK(cond, ...)                                                         \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::fprintf(stderr, "%s:%d: check failed: %s\n  ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                              \
      std::fprintf(stderr, "\n  last library message: %s\n", aclGetRecentErrMsg());   \
      std::abort();                                                                   \
    }                                                                                 \
  } while (0)

namespace gsfuzz {

// Reads the fuzzer's bytes front to back. Past the end every read is 0, and every decoder is
// written so that 0 selects the plain, valid choice: a short input is a valid call, and the
// fuzzer reaches the hostile ones by mutating bytes.
class Bytes {
 public:
  Bytes(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  uint8_t u8() {
    if (n_ == 0) return 0;
    --n_;
    return *p_++;
  }
  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t(u8()) << (8 * i);
    return v;
  }
  double unit() { return (u8() | (uint32_t(u8()) << 8)) / 65536.0; }  // [0, 1)

 private:
  const uint8_t* p_;
  size_t n_;
};

// splitmix64: deterministic values for tensor contents, so that a saved input replays exactly.
inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
inline double hash_unit(uint64_t seed, uint64_t i) {  // [0, 1)
  return double(mix(seed * 0x100000001b3ull + i) >> 11) * 0x1.0p-53;
}

enum Op { kF2 = 0, kF3 = 1, kB2 = 2, kB3 = 3 };
inline int op_nd(int op) { return op == kF3 || op == kB3 ? 3 : 2; }
inline bool op_bwd(int op) { return op >= kB2; }
inline const char* op_name(int op) {
  static const char* const n[] = {"aclnnGridSampler2D", "aclnnGridSampler3D",
                                  "aclnnGridSampler2DBackward", "aclnnGridSampler3DBackward"};
  return n[op];
}

// The tensor slots of a call. kOut is `out` (forward) or `gradOutput` (backward); kIG and kGG
// are only passed to the backward operators.
enum Slot { kInput = 0, kGrid, kOut, kIG, kGG, kSlots };

struct CallArgs {
  int op = kF2;
  const aclTensor* t[kSlots] = {};
  int64_t interp = 0, padding = 0;
  bool align = false;
  const aclBoolArray* mask = nullptr;
  uint64_t* ws = nullptr;
  aclOpExecutor** ex = nullptr;
};

inline aclnnStatus get_workspace(const CallArgs& a) {
  aclTensor* ig = const_cast<aclTensor*>(a.t[kIG]);
  aclTensor* gg = const_cast<aclTensor*>(a.t[kGG]);
  aclTensor* out = const_cast<aclTensor*>(a.t[kOut]);
  switch (a.op) {
    case kF2:
      return aclnnGridSampler2DGetWorkspaceSize(a.t[kInput], a.t[kGrid], a.interp, a.padding,
                                                a.align, out, a.ws, a.ex);
    case kF3:
      return aclnnGridSampler3DGetWorkspaceSize(a.t[kInput], a.t[kGrid], a.interp, a.padding,
                                                a.align, out, a.ws, a.ex);
    case kB2:
      return aclnnGridSampler2DBackwardGetWorkspaceSize(a.t[kOut], a.t[kInput], a.t[kGrid],
                                                        a.interp, a.padding, a.align, a.mask, ig,
                                                        gg, a.ws, a.ex);
    default:
      return aclnnGridSampler3DBackwardGetWorkspaceSize(a.t[kOut], a.t[kInput], a.t[kGrid],
                                                        a.interp, a.padding, a.align, a.mask, ig,
                                                        gg, a.ws, a.ex);
  }
}

inline aclnnStatus run_op(int op, void* ws, uint64_t size, aclOpExecutor* ex) {
  switch (op) {
    case kF2:
      return aclnnGridSampler2D(ws, size, ex, nullptr);
    case kF3:
      return aclnnGridSampler3D(ws, size, ex, nullptr);
    case kB2:
      return aclnnGridSampler2DBackward(ws, size, ex, nullptr);
    default:
      return aclnnGridSampler3DBackward(ws, size, ex, nullptr);
  }
}

// The statuses GetWorkspaceSize and the run call may return (SPEC §2). The inner-error codes
// are documented too, but no argument may provoke them, so the fuzzers treat them as bugs.
inline bool documented_refusal(aclnnStatus s) {
  return s == ACLNN_ERR_PARAM_NULLPTR || s == ACLNN_ERR_PARAM_INVALID;
}

// ---- dtypes -------------------------------------------------------------------------------

inline int dtype_size(int32_t t) {
  switch (t) {
    case ACL_FLOAT16:
    case ACL_BF16:
      return 2;
    case ACL_DOUBLE:
      return 8;
    case ACL_FLOAT:
      return 4;
    default:
      return 0;  // not a dtype the operators accept
  }
}

inline double load(int32_t t, const void* p) { return gstest::to_double(aclDataType(t), p); }
inline void store(int32_t t, double v, void* p) { gstest::from_double(aclDataType(t), v, p); }

// Tolerances for comparing two results of one problem that may differ in summation order or in
// fused multiply-adds: relative to the largest magnitude involved (SPEC §1 for FLOAT and DOUBLE;
// one rounding step of the 16-bit types).
inline double tolerance(int32_t t) {
  switch (t) {
    case ACL_FLOAT16:
      return 4e-3;
    case ACL_BF16:
      return 2e-2;
    case ACL_DOUBLE:
      return 1e-12;
    default:
      return 1e-5;
  }
}

}  // namespace gsfuzz
