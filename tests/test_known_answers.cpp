// SPEC §5: the known answers (checked against PyTorch's aten kernels), through the C API.
#include <gtest/gtest.h>

#include "support.h"

using namespace gstest;

namespace {

std::vector<double> iota(int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = double(i + 1);
  return v;
}

TEST(KnownAnswers, Backward3DBilinearZeros) {
  HostTensor go({1, 1, 1, 2, 2}, ACL_FLOAT), in({1, 1, 1, 3, 3}, ACL_FLOAT),
      grid({1, 1, 2, 2, 3}, ACL_FLOAT), ig({1, 1, 1, 3, 3}, ACL_FLOAT),
      gg({1, 1, 2, 2, 3}, ACL_FLOAT);
  go.fill(1);
  in.set_values(iota(9));
  grid.set_values({-1, -1, 0, -1, 1, -1, -1, 0, 0, 0, 1, 0});
  ASSERT_EQ(backward(go, in, grid, &ig, &gg, {0, 0, false}), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_EQ(ig.values(), (std::vector<double>{0.25, 0, 0, 0.5, 0, 0, 0.125, 0.5, 0}));
  EXPECT_EQ(gg.values(), (std::vector<double>{0.75, 0.75, -0.125, 2.625, -2.625, 0.875, 6, 2.25, -1,
                                              0.75, -12, -2}));
}

TEST(KnownAnswers, Backward2DBilinearZeros) {
  HostTensor go({1, 1, 3, 3}, ACL_FLOAT), in({1, 1, 5, 8}, ACL_FLOAT),
      grid({1, 3, 3, 2}, ACL_FLOAT), ig({1, 1, 5, 8}, ACL_FLOAT), gg({1, 3, 3, 2}, ACL_FLOAT);
  go.fill(1);
  in.set_values(iota(40));
  grid.set_values({-1, -1, 0, -1, 1, -1, -1, 0, 0, 0, 1, 0, -1, 1, 0, 1, 1, 1});
  ASSERT_EQ(backward(go, in, grid, &ig, &gg, {0, 0, false}), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  std::vector<double> want(40, 0);
  for (int i : {0, 3, 4, 7, 32, 35, 36, 39}) want[size_t(i)] = 0.25;
  for (int i : {16, 19, 20, 23}) want[size_t(i)] = 0.5;
  EXPECT_EQ(ig.values(), want);
  EXPECT_EQ(gg.values(), (std::vector<double>{2, 1.25, 2, 11.25, -16, 10, 68, 10, 4, 20, -96, 10,
                                              66, -41.25, 2, -91.25, -80, -50}));
}

}  // namespace
