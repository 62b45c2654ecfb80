#include "core/plan.h"

#include <cstdio>
#include <cstdlib>

#include "aclnn/acl_meta.h"

namespace gridsample {

bool verbose() {
  const char* e = std::getenv("GRIDSAMPLE_VERBOSE");
  return e != nullptr && e[0] != '\0' && e[0] != '0';
}

bool make_plan(const Problem& p, const std::vector<const Impl*>& impls, Plan* plan, Error* error) {
  std::string log;
  for (const Impl* impl : impls) {
    std::string why;
    if (!impl->accepts(p, &why)) {
      log += std::string(" [") + impl->name + " declined: " + why + "]";
      continue;
    }
    uint64_t bytes = 0;
    if (!impl->workspace(p, &bytes)) {
      *error = {ACLNN_ERR_PARAM_INVALID,
                "the workspace for " + p.str() + " overflows 64 bits; the tensors are too large"};
      return false;
    }
    if (verbose())
      std::fprintf(stderr, "gridsample: %s %s -> %s, workspace %llu bytes%s\n",
                   p.op == Op::Forward ? "fwd" : "bwd", p.str().c_str(), impl->name,
                   (unsigned long long)bytes, log.c_str());
    plan->problem = p;
    plan->impl = impl;
    plan->workspace_bytes = bytes;
    return true;
  }
  *error = {ACLNN_ERR_INNER, "no implementation accepts " + p.str() + ":" + log};
  return false;
}

}  // namespace gridsample
