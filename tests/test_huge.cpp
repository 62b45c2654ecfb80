// SPEC §4.8: tensors whose element offsets pass 2^31 and whose byte spans pass 4 GiB work, and
// give the numbers of a small contiguous tensor holding the same values.
//
// The huge views are cheap: each lives in its own mmap(MAP_NORESERVE) region, of which only the
// pages holding addressed elements are ever touched, because the views have few elements
// spread far apart (a huge batch stride, a huge spatial stride, a huge offset). inputGrad is
// zero-filled by the library, but only at its elements, so it stays cheap too.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "support.h"

using namespace gstest;

namespace {

constexpr int64_t kHuge = (int64_t(1) << 31) + 37;  // elements; odd, so nothing lines up

// A view over a sparse anonymous mapping just large enough for it.
struct Sparse {
  HostTensor view;  // dims/strides/offset/dtype describe the view; storage unused
  void* base = nullptr;
  size_t bytes = 0;
  Sparse(std::vector<int64_t> dims, std::vector<int64_t> strides, int64_t offset, aclDataType t) {
    view.dtype = t;
    view.dims = std::move(dims);
    view.strides = std::move(strides);
    view.offset = offset;
    int64_t hi = offset;
    for (size_t i = 0; i < view.dims.size(); ++i) hi += (view.dims[i] - 1) * view.strides[i];
    bytes = size_t(hi + 1) * size_t(dtype_bytes(t));
    base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                -1, 0);
  }
  ~Sparse() {
    if (base != MAP_FAILED) munmap(base, bytes);
  }
  Sparse(const Sparse&) = delete;
  Sparse& operator=(const Sparse&) = delete;
  bool ok() const { return base != MAP_FAILED; }

  unsigned char* at(int64_t flat) const {
    return static_cast<unsigned char*>(base) + view.elem_offset(flat) * dtype_bytes(view.dtype);
  }
  std::vector<double> values() const {
    std::vector<double> v(size_t(view.numel()));
    for (int64_t i = 0; i < view.numel(); ++i) v[size_t(i)] = to_double(view.dtype, at(i));
    return v;
  }
  void set_values(const std::vector<double>& v) {
    for (int64_t i = 0; i < view.numel(); ++i) from_double(view.dtype, v[size_t(i)], at(i));
  }
  void fill_canary() {
    for (int64_t i = 0; i < view.numel(); ++i)
      std::memset(at(i), 0xC3, size_t(dtype_bytes(view.dtype)));
  }
  aclTensor* make() const {
    return aclCreateTensor(view.dims.data(), view.dims.size(), view.dtype, view.strides.data(),
                           view.offset, ACL_FORMAT_ND, nullptr, 0, base);
  }
};

// Contiguous strides of `dims`, with `huge` as the stride of dim `at` (the dims inside it stay
// dense) and every outer dim above it.
std::vector<int64_t> strides_with(const std::vector<int64_t>& dims, size_t at, int64_t huge) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = i - 1 == at ? huge : s[i] * dims[i];
  return s;
}

struct Case {
  int nd;
  bool bwd;
  aclDataType dtype;
  int64_t interp;
  const char* where;  // which stride or offset is huge
};

std::string case_name(const Case& c) {
  return std::string(c.nd == 2 ? "2d_" : "3d_") + (c.bwd ? "bwd_" : "fwd_") +
         (c.dtype == ACL_FLOAT16  ? "f16_"
          : c.dtype == ACL_DOUBLE ? "f64_"
                                  : "f32_") +
         "interp" + std::to_string(c.interp) + "_" + c.where;
}

void run_case(const Case& c) {
  SCOPED_TRACE(case_name(c));
  const int nd = c.nd;
  const std::vector<int64_t> in_dims =
      nd == 2 ? std::vector<int64_t>{2, 3, 3, 4} : std::vector<int64_t>{2, 3, 2, 3, 4};
  const std::vector<int64_t> grid_dims =
      nd == 2 ? std::vector<int64_t>{2, 2, 3, 2} : std::vector<int64_t>{2, 2, 1, 3, 3};
  std::vector<int64_t> out_dims = {2, 3};
  for (int i = 0; i < nd; ++i) out_dims.push_back(grid_dims[size_t(1 + i)]);

  // Where the hugeness goes: "batch" puts kHuge on dim 0 of every tensor; "spatial" on the
  // outermost spatial dim of the input and inputGrad (so a single tap offset passes 2^31), and
  // on dim 1 of the others; "offset" starts every view 2^32 + 5 elements in.
  const std::string where = c.where;
  auto layout = [&](const std::vector<int64_t>& dims, bool feature_input, int64_t* offset) {
    *offset = where == "offset" ? (int64_t(1) << 32) + 5 : 3;
    if (where == "offset") return strides_with(dims, dims.size(), 0);  // contiguous
    const size_t at = where == "batch" ? 0 : (feature_input ? 2 : 1);
    return strides_with(dims, at, kHuge);
  };
  int64_t off[3];
  const std::vector<int64_t> in_st = layout(in_dims, true, &off[0]),
                             grid_st = layout(grid_dims, false, &off[1]),
                             out_st = layout(out_dims, false, &off[2]);
  Sparse input(in_dims, in_st, off[0], c.dtype), grid(grid_dims, grid_st, off[1], c.dtype);
  Sparse out(out_dims, out_st, off[2], c.dtype), ig(in_dims, in_st, off[0], c.dtype);
  Sparse gg(grid_dims, grid_st, off[1], c.dtype);
  // Sparse mappings need overcommit (vm.overcommit_memory 0 or 1); without it there is nothing
  // to test here.
  for (const Sparse* s : {&input, &grid, &out, &ig, &gg})
    if (!s->ok()) GTEST_SKIP() << "mmap(MAP_NORESERVE) of " << s->bytes << " bytes failed";
  ASSERT_GT(input.bytes, size_t(4) << 30);

  // The same values in small contiguous tensors.
  HostTensor s_in(in_dims, c.dtype), s_grid(grid_dims, c.dtype), s_out(out_dims, c.dtype);
  HostTensor s_ig(in_dims, c.dtype), s_gg(grid_dims, c.dtype);
  std::mt19937_64 rng(seed_of(case_name(c)));
  s_in.set_values(uniform(rng, s_in.numel(), -2, 2));
  s_grid.set_values(uniform(rng, s_grid.numel(), -1.1, 1.1));
  s_out.set_values(uniform(rng, s_out.numel(), -1, 1));
  input.set_values(s_in.values());
  grid.set_values(s_grid.values());
  const Modes m{c.interp, 1, false};

  aclTensor *hi = input.make(), *hg = grid.make(), *ho = out.make();
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  aclnnStatus st;
  if (!c.bwd) {
    out.fill_canary();
    ASSERT_EQ(forward(s_in, s_grid, s_out, m), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    st = (nd == 2 ? aclnnGridSampler2DGetWorkspaceSize : aclnnGridSampler3DGetWorkspaceSize)(
        hi, hg, m.interp, m.padding, m.align, ho, &ws, &ex);
  } else {
    out.set_values(s_out.values());
    ig.fill_canary();
    gg.fill_canary();
    ASSERT_EQ(backward(s_out, s_in, s_grid, &s_ig, &s_gg, m), ACLNN_SUCCESS)
        << aclGetRecentErrMsg();
    const bool mk[2] = {true, true};
    aclBoolArray* mask = aclCreateBoolArray(mk, 2);
    aclTensor *hig = ig.make(), *hgg = gg.make();
    st = (nd == 2 ? aclnnGridSampler2DBackwardGetWorkspaceSize
                  : aclnnGridSampler3DBackwardGetWorkspaceSize)(ho, hi, hg, m.interp, m.padding,
                                                                m.align, mask, hig, hgg, &ws, &ex);
    aclDestroyBoolArray(mask);
    aclDestroyTensor(hig);
    aclDestroyTensor(hgg);
  }
  aclDestroyTensor(hi);
  aclDestroyTensor(hg);
  aclDestroyTensor(ho);
  ASSERT_EQ(st, ACLNN_SUCCESS) << aclGetRecentErrMsg();
  // The workspace depends on the shapes, not on where the views lie.
  ASSERT_LT(ws, uint64_t(1) << 20);
  std::vector<unsigned char> w(size_t(ws) + 1, 0xA5);
  void* wp = ws ? w.data() : nullptr;
  if (!c.bwd)
    st = (nd == 2 ? aclnnGridSampler2D : aclnnGridSampler3D)(wp, ws, ex, nullptr);
  else
    st = (nd == 2 ? aclnnGridSampler2DBackward : aclnnGridSampler3DBackward)(wp, ws, ex, nullptr);
  ASSERT_EQ(st, ACLNN_SUCCESS) << aclGetRecentErrMsg();

  if (!c.bwd) {
    EXPECT_EQ(out.values(), s_out.values());
  } else {
    EXPECT_EQ(ig.values(), s_ig.values());
    // The huge views exceed cpu:fast's vector offsets and run on cpu:ref, whose gridGrad order
    // differs from cpu:fast's (NOTE [ gridGrad tolerance ] in support.h).
    const std::vector<int64_t> in_sp(in_dims.begin() + 2, in_dims.end());
    EXPECT_EQ(grid_grad_mismatch(c.dtype, gg.values(), s_gg.values(),
                                 grid_grad_floor(s_in, s_out, in_dims[1], in_sp, m.align)),
              "");
  }
}

TEST(Huge, ViewsBeyond4GiBMatchSmallCopies) {
  for (int nd : {2, 3})
    for (bool bwd : {false, true})
      for (const char* where : {"batch", "spatial", "offset"})
        for (int64_t interp : {0, 1, 2}) run_case({nd, bwd, ACL_FLOAT, interp, where});
}

// The 16-bit path accumulates inputGrad in a FLOAT32 workspace laid out from the shapes; the
// huge views must not leak into its size or indexing.
TEST(Huge, HalfPrecisionBackwardThroughTheWorkspace) {
  for (int nd : {2, 3})
    for (const char* where : {"batch", "spatial", "offset"})
      run_case({nd, true, ACL_FLOAT16, 0, where});
}

TEST(Huge, DoubleBeyond2To31Elements) {
  for (int nd : {2, 3})
    for (bool bwd : {false, true}) run_case({nd, bwd, ACL_DOUBLE, 2, "spatial"});
}

// NOTE [ Forward copies ] (src/cpu/fast.cpp): a forward that reads few of its input points reads
// them in place, except where the view's offsets pass the vector index range: there it copies
// them into rows, so that cpu:fast still takes it. Nearest, 16 channels, a read per two to four
// input points, the outermost spatial stride huge: FLOAT16 (which the copy rule never counts as
// cached) on a random grid; FLOAT past 4 MiB of rows on a smooth grid (a resize), which make_args
// would otherwise read in place. out equals the small copy's, and the log names cpu:fast.
void sparse_forward(aclDataType dt, const std::vector<int64_t>& in_sp,
                    const std::vector<int64_t>& out_sp, bool smooth) {
  SCOPED_TRACE(smooth ? "FLOAT, smooth grid" : "FLOAT16, random grid");
  const std::vector<int64_t> in_dims = {1, 16, in_sp[0], in_sp[1]},
                             grid_dims = {1, out_sp[0], out_sp[1], 2},
                             out_dims = {1, 16, out_sp[0], out_sp[1]};
  Sparse input(in_dims, strides_with(in_dims, 2, kHuge), 3, dt);
  Sparse grid(grid_dims, strides_with(grid_dims, grid_dims.size(), 0), 0, dt);
  Sparse out(out_dims, strides_with(out_dims, out_dims.size(), 0), 0, dt);
  for (const Sparse* s : {&input, &grid, &out})
    if (!s->ok()) GTEST_SKIP() << "mmap(MAP_NORESERVE) of " << s->bytes << " bytes failed";
  HostTensor s_in(in_dims, dt), s_grid(grid_dims, dt), s_out(out_dims, dt);
  std::mt19937_64 rng(seed_of("SparseForwardCopiesHugeViews"));
  s_in.set_values(uniform(rng, s_in.numel(), -2, 2));
  std::vector<double> g = uniform(rng, s_grid.numel(), -1, 1);
  if (smooth)  // x: the identity at the output's size (alignCorners false), a 2x downsampling
    for (int64_t y = 0; y < out_sp[0]; ++y)
      for (int64_t x = 0; x < out_sp[1]; ++x) {
        g[size_t(2 * (y * out_sp[1] + x))] = (2.0 * double(x) + 1.0) / double(out_sp[1]) - 1.0;
        g[size_t(2 * (y * out_sp[1] + x) + 1)] = 0.5;  // row 1, past the huge stride
      }
  s_grid.set_values(g);
  input.set_values(s_in.values());
  grid.set_values(s_grid.values());
  out.fill_canary();
  const Modes m{1, 0, false};
  ASSERT_EQ(forward(s_in, s_grid, s_out, m), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  aclTensor *hi = input.make(), *hg = grid.make(), *ho = out.make();
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  setenv("GRIDSAMPLE_VERBOSE", "1", 1);
  ::testing::internal::CaptureStderr();
  aclnnStatus st =
      aclnnGridSampler2DGetWorkspaceSize(hi, hg, m.interp, m.padding, m.align, ho, &ws, &ex);
  if (st == ACLNN_SUCCESS) {
    std::vector<unsigned char> w(size_t(ws) + 1, 0xA5);
    st = aclnnGridSampler2D(ws ? w.data() : nullptr, ws, ex, nullptr);
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  unsetenv("GRIDSAMPLE_VERBOSE");
  aclDestroyTensor(hi);
  aclDestroyTensor(hg);
  aclDestroyTensor(ho);
  ASSERT_EQ(st, ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_NE(log.find("-> cpu:fast"), std::string::npos) << log;
  EXPECT_NE(log.find(": channel rows"), std::string::npos) << log;
  EXPECT_EQ(out.values(), s_out.values());
}

TEST(Huge, SparseForwardCopiesHugeViews) {
  sparse_forward(ACL_FLOAT16, {3, 4}, {1, 5}, false);
  // 16 x 2 x 34816 FLOAT: 4.5 MB of rows; 17408 points read one input point in four.
  sparse_forward(ACL_FLOAT, {2, 34816}, {1, 17408}, true);
}

}  // namespace
