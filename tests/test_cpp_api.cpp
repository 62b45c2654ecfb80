// The C++ face: same numbers as the C API, errors as exceptions with status and message.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "gridsample/gridsample.hpp"
#include "support.h"

namespace {

TEST(CppApi, BackwardMatchesKnownAnswer3D) {
  std::vector<float> go(4, 1.f), in(9), grid = {-1, -1, 0, -1, 1, -1, -1, 0, 0, 0, 1, 0};
  for (int i = 0; i < 9; ++i) in[size_t(i)] = float(i + 1);
  std::vector<float> ig(9, -7.f), gg(12, -7.f);
  using gridsample::DType;
  gridsample::grid_sample_backward(
      {go.data(), DType::Float32, {1, 1, 1, 2, 2}}, {in.data(), DType::Float32, {1, 1, 1, 3, 3}},
      {grid.data(), DType::Float32, {1, 1, 2, 2, 3}}, {ig.data(), DType::Float32, {1, 1, 1, 3, 3}},
      {gg.data(), DType::Float32, {1, 1, 2, 2, 3}});
  EXPECT_EQ(ig, (std::vector<float>{0.25, 0, 0, 0.5, 0, 0, 0.125, 0.5, 0}));
  EXPECT_EQ(gg, (std::vector<float>{0.75, 0.75, -0.125, 2.625, -2.625, 0.875, 6, 2.25, -1, 0.75,
                                    -12, -2}));
}

TEST(CppApi, ForwardChannelLastStridedMatchesCApi) {
  // 2D, channel-last input with a padded row stride; compare with the C API on the same data.
  std::mt19937_64 rng(7);
  const int64_t N = 2, H = 5, W = 4, C = 3, Ho = 3, Wo = 6;
  gstest::HostTensor in = gstest::HostTensor::strided(
      {N, H, W, C}, {H * W * C * 2, W * C * 2, C, 1}, 0, ACL_DOUBLE, ACL_FORMAT_NHWC);
  in.set_values(gstest::uniform(rng, in.numel(), -1, 1));
  gstest::HostTensor grid({N, Ho, Wo, 2}, ACL_DOUBLE);
  grid.set_values(gstest::uniform(rng, grid.numel(), -1.2, 1.2));
  gstest::HostTensor want({N, C, Ho, Wo}, ACL_DOUBLE, ACL_FORMAT_NCHW);
  ASSERT_EQ(gstest::forward(in, grid, want, {2, 1, true}), ACLNN_SUCCESS);

  std::vector<double> out(size_t(N * C * Ho * Wo));
  using gridsample::DType;
  gridsample::Options o;
  o.interpolation = gridsample::Interpolation::Bicubic;
  o.padding = gridsample::Padding::Border;
  o.align_corners = true;
  gridsample::grid_sample(
      {in.base(), DType::Float64, in.dims, in.strides, gridsample::Layout::ChannelLast},
      {grid.base(), DType::Float64, grid.dims}, {out.data(), DType::Float64, {N, C, Ho, Wo}}, o);
  EXPECT_EQ(out, want.values());
}

TEST(CppApi, ErrorsAreExceptionsWithStatusAndMessage) {
  std::vector<float> in(9), grid(12), out(4);
  using gridsample::DType;
  gridsample::Options o;
  o.padding = gridsample::Padding(5);
  try {
    gridsample::grid_sample({in.data(), DType::Float32, {1, 1, 1, 3, 3}},
                            {grid.data(), DType::Float32, {1, 1, 2, 2, 3}},
                            {out.data(), DType::Float32, {1, 1, 1, 2, 2}}, o);
    FAIL() << "no exception";
  } catch (const gridsample::Error& e) {
    EXPECT_EQ(e.status(), ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(std::string(e.what()).find("paddingMode"), std::string::npos) << e.what();
  }
}

// NOTE [ Cached workspace ]: a call keeps its thread's workspace for the next, a workspace that is
// too small grows, another thread has its own, release_workspace frees it, and the results are
// those of the C API (whose workspace the test support fills with junk) every time.
TEST(CppApi, WorkspaceIsKeptPerThreadAndReleased) {
  std::mt19937_64 rng(11);
  using gridsample::DType;
  auto run = [&](int64_t S, std::vector<float>* ig, std::vector<float>* gg) {
    const int64_t C = 4, P = S * S * S;
    gstest::HostTensor in({1, C, S, S, S}, ACL_FLOAT, ACL_FORMAT_NCDHW);
    gstest::HostTensor grid({1, S, S, S, 3}, ACL_FLOAT);
    gstest::HostTensor go({1, C, S, S, S}, ACL_FLOAT, ACL_FORMAT_NCDHW);
    in.set_values(gstest::uniform(rng, in.numel(), -1, 1));
    grid.set_values(gstest::uniform(rng, grid.numel(), -1.1, 1.1));
    go.set_values(gstest::uniform(rng, go.numel(), -1, 1));
    gstest::HostTensor want_ig({1, C, S, S, S}, ACL_FLOAT, ACL_FORMAT_NCDHW);
    gstest::HostTensor want_gg({1, S, S, S, 3}, ACL_FLOAT);
    EXPECT_EQ(gstest::backward(go, in, grid, &want_ig, &want_gg, {}), ACLNN_SUCCESS);
    ig->assign(size_t(C * P), -7.f);
    gg->assign(size_t(3 * P), -7.f);
    gridsample::grid_sample_backward(
        {go.base(), DType::Float32, go.dims}, {in.base(), DType::Float32, in.dims},
        {grid.base(), DType::Float32, grid.dims}, {ig->data(), DType::Float32, in.dims},
        {gg->data(), DType::Float32, grid.dims});
    EXPECT_EQ(std::vector<double>(ig->begin(), ig->end()), want_ig.values());
    EXPECT_EQ(std::vector<double>(gg->begin(), gg->end()), want_gg.values());
  };
  std::vector<float> ig, gg;
  const auto& cache = gridsample::detail::workspace_cache();
  gridsample::release_workspace();
  ASSERT_EQ(cache.size, 0u);
  run(12, &ig, &gg);
  const uint64_t kept = cache.size;
  const unsigned char* data = cache.data.get();
  ASSERT_GT(kept, 0u) << "the call kept no workspace";
  run(12, &ig, &gg);
  EXPECT_EQ(cache.data.get(), data) << "the second call did not reuse the workspace";
  EXPECT_EQ(cache.size, kept);
  run(20, &ig, &gg);
  EXPECT_GT(cache.size, kept) << "a larger problem's workspace did not grow the kept one";
  std::thread other([&] {
    EXPECT_EQ(gridsample::detail::workspace_cache().size, 0u) << "a new thread shares one";
    std::vector<float> ig2, gg2;
    run(12, &ig2, &gg2);
    EXPECT_EQ(gridsample::detail::workspace_cache().size, kept);
  });
  other.join();
  gridsample::release_workspace();
  EXPECT_EQ(cache.size, 0u);
  EXPECT_EQ(cache.data, nullptr);
  run(12, &ig, &gg);
  EXPECT_EQ(cache.size, kept);
}

TEST(CppApi, NumThreads) {
  gridsample::set_num_threads(3);
  EXPECT_EQ(gridsample::num_threads(), 3);
  EXPECT_THROW(gridsample::set_num_threads(-2), gridsample::Error);
  EXPECT_EQ(gridsample::num_threads(), 3);
  gridsample::set_num_threads(0);
}

}  // namespace
