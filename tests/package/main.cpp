// Built against an installed gridsample found with find_package: the installed headers and the
// exported target are enough to run an operator. Checks SPEC §5's 2D backward example.
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_grid_sampler2d_backward.h"

namespace {

aclTensor* tensor(const std::vector<int64_t>& dims, std::vector<float>& data) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  const int64_t n = int64_t(data.size());
  return aclCreateTensor(dims.data(), dims.size(), ACL_FLOAT, strides.data(), 0, ACL_FORMAT_ND, &n,
                         1, data.data());
}

}  // namespace

int main() {
  std::vector<float> go(9, 1.0f), in(40),
      grid = {-1, -1, 0, -1, 1, -1, -1, 0, 0, 0, 1, 0, -1, 1, 0, 1, 1, 1};
  for (size_t i = 0; i < in.size(); ++i) in[i] = float(i + 1);
  std::vector<float> ig(40, -7.0f), gg(18, -7.0f);
  aclTensor* t_go = tensor({1, 1, 3, 3}, go);
  aclTensor* t_in = tensor({1, 1, 5, 8}, in);
  aclTensor* t_grid = tensor({1, 3, 3, 2}, grid);
  aclTensor* t_ig = tensor({1, 1, 5, 8}, ig);
  aclTensor* t_gg = tensor({1, 3, 3, 2}, gg);
  const bool mask[2] = {true, true};
  aclBoolArray* m = aclCreateBoolArray(mask, 2);
  uint64_t ws_size = 0;
  aclOpExecutor* ex = nullptr;
  int failures = 0;
  aclnnStatus st = aclnnGridSampler2DBackwardGetWorkspaceSize(t_go, t_in, t_grid, 0, 0, false, m,
                                                              t_ig, t_gg, &ws_size, &ex);
  if (st == ACLNN_SUCCESS) {
    std::vector<unsigned char> ws(ws_size + 1);
    st = aclnnGridSampler2DBackward(ws.data(), ws_size, ex, nullptr);
  }
  if (st != ACLNN_SUCCESS) {
    std::fprintf(stderr, "status %d: %s\n", int(st), aclGetRecentErrMsg());
    ++failures;
  } else {
    std::vector<float> want_ig(40, 0.0f);
    for (int i : {0, 3, 4, 7, 32, 35, 36, 39}) want_ig[size_t(i)] = 0.25f;
    for (int i : {16, 19, 20, 23}) want_ig[size_t(i)] = 0.5f;
    const std::vector<float> want_gg = {2,  1.25f, 2,  11.25f, -16,     10, 68,      10,  4,
                                        20, -96,   10, 66,     -41.25f, 2,  -91.25f, -80, -50};
    for (size_t i = 0; i < ig.size(); ++i)
      if (ig[i] != want_ig[i]) {
        std::fprintf(stderr, "inputGrad[%zu] = %g, want %g\n", i, ig[i], want_ig[i]);
        ++failures;
      }
    for (size_t i = 0; i < gg.size(); ++i)
      if (gg[i] != want_gg[i]) {
        std::fprintf(stderr, "gridGrad[%zu] = %g, want %g\n", i, gg[i], want_gg[i]);
        ++failures;
      }
  }
  aclDestroyBoolArray(m);
  for (aclTensor* t : {t_go, t_in, t_grid, t_ig, t_gg}) aclDestroyTensor(t);
  std::printf("package consumer: %s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
