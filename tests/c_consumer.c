/* A plain C program using the public headers, as a C user of CANN would: it proves the headers
 * are valid C and that the library's symbols link from C. Exits non-zero on any mismatch. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_grid_sampler2d.h"
#include "aclnnop/aclnn_grid_sampler2d_backward.h"
#include "aclnnop/aclnn_grid_sampler3d.h"
#include "aclnnop/aclnn_grid_sampler3d_backward.h"

static int failures = 0;

static void expect_status(const char* what, int64_t got, int64_t want) {
  if (got != want) {
    fprintf(stderr, "%s: status %lld, want %lld (%s)\n", what, (long long)got, (long long)want,
            aclGetRecentErrMsg());
    ++failures;
  }
}

static void expect_values(const char* what, const float* got, const float* want, int n) {
  for (int i = 0; i < n; ++i) {
    if (fabsf(got[i] - want[i]) > 1e-6f) {
      fprintf(stderr, "%s[%d] = %g, want %g\n", what, i, (double)got[i], (double)want[i]);
      ++failures;
    }
  }
}

/* A contiguous FLOAT tensor in format ND over `data`. */
static aclTensor* tensor(const int64_t* dims, uint64_t rank, float* data) {
  int64_t strides[8];
  int64_t n = 1;
  for (uint64_t i = rank; i-- > 0;) {
    strides[i] = n;
    n *= dims[i];
  }
  return aclCreateTensor(dims, rank, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, &n, 1, data);
}

/* SPEC §5, the 3D backward example. */
static void backward_3d(void) {
  const int64_t go_dims[5] = {1, 1, 1, 2, 2}, in_dims[5] = {1, 1, 1, 3, 3},
                grid_dims[5] = {1, 1, 2, 2, 3};
  float go[4] = {1, 1, 1, 1};
  float in[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  float grid[12] = {-1, -1, 0, -1, 1, -1, -1, 0, 0, 0, 1, 0};
  float ig[9], gg[12];
  const float want_ig[9] = {0.25f, 0, 0, 0.5f, 0, 0, 0.125f, 0.5f, 0};
  const float want_gg[12] = {0.75f, 0.75f, -0.125f, 2.625f, -2.625f, 0.875f,
                             6,     2.25f, -1,      0.75f,  -12,     -2};
  const bool mask[2] = {true, true};

  aclTensor* t_go = tensor(go_dims, 5, go);
  aclTensor* t_in = tensor(in_dims, 5, in);
  aclTensor* t_grid = tensor(grid_dims, 5, grid);
  aclTensor* t_ig = tensor(in_dims, 5, ig);
  aclTensor* t_gg = tensor(grid_dims, 5, gg);
  aclBoolArray* m = aclCreateBoolArray(mask, 2);
  uint64_t ws_size = 0;
  aclOpExecutor* ex = NULL;
  aclnnStatus st = aclnnGridSampler3DBackwardGetWorkspaceSize(t_go, t_in, t_grid, 0, 0, false, m,
                                                              t_ig, t_gg, &ws_size, &ex);
  expect_status("aclnnGridSampler3DBackwardGetWorkspaceSize", st, ACLNN_SUCCESS);
  if (st == ACLNN_SUCCESS) {
    void* ws = NULL;
    if (ws_size > 0)
      expect_status("aclrtMalloc", aclrtMalloc(&ws, ws_size, ACL_MEM_MALLOC_HUGE_FIRST),
                    ACL_SUCCESS);
    expect_status("aclnnGridSampler3DBackward", aclnnGridSampler3DBackward(ws, ws_size, ex, NULL),
                  ACLNN_SUCCESS);
    aclrtFree(ws);
    expect_values("inputGrad", ig, want_ig, 9);
    expect_values("gridGrad", gg, want_gg, 12);
  }
  /* A refused call from C: the status macros and the message are usable too. */
  expect_status("null executor",
                aclnnGridSampler3DBackwardGetWorkspaceSize(t_go, t_in, t_grid, 0, 0, false, m, t_ig,
                                                           t_gg, &ws_size, NULL),
                ACLNN_ERR_PARAM_NULLPTR);
  aclDestroyBoolArray(m);
  aclDestroyTensor(t_go);
  aclDestroyTensor(t_in);
  aclDestroyTensor(t_grid);
  aclDestroyTensor(t_ig);
  aclDestroyTensor(t_gg);
}

/* Bilinear, zeros, alignCorners true on a 2x2 input: corners, edge midpoints and the centre. */
static void forward_2d(void) {
  const int64_t in_dims[4] = {1, 1, 2, 2}, grid_dims[4] = {1, 1, 5, 2}, out_dims[4] = {1, 1, 1, 5};
  float in[4] = {1, 2, 3, 4};
  float grid[10] = {-1, -1, 1, -1, 0, 0, 1, 1, 0, -1};
  float out[5];
  const float want[5] = {1, 2, 2.5f, 4, 1.5f};
  aclTensor* t_in = tensor(in_dims, 4, in);
  aclTensor* t_grid = tensor(grid_dims, 4, grid);
  aclTensor* t_out = tensor(out_dims, 4, out);
  uint64_t ws_size = 0;
  aclOpExecutor* ex = NULL;
  aclnnStatus st =
      aclnnGridSampler2DGetWorkspaceSize(t_in, t_grid, 0, 0, true, t_out, &ws_size, &ex);
  expect_status("aclnnGridSampler2DGetWorkspaceSize", st, ACLNN_SUCCESS);
  if (st == ACLNN_SUCCESS) {
    expect_status("aclnnGridSampler2D", aclnnGridSampler2D(NULL, ws_size, ex, NULL), ACLNN_SUCCESS);
    expect_values("out", out, want, 5);
  }
  aclDestroyTensor(t_in);
  aclDestroyTensor(t_grid);
  aclDestroyTensor(t_out);
}

int main(void) {
  expect_status("aclInit", aclInit(NULL), ACL_SUCCESS);
  expect_status("aclrtSetDevice", aclrtSetDevice(0), ACL_SUCCESS);
  backward_3d();
  forward_2d();
  aclrtResetDevice(0);
  aclFinalize();
  if (failures)
    fprintf(stderr, "c_consumer: %d failure(s)\n", failures);
  else
    printf("c_consumer: ok\n");
  return failures ? 1 : 0;
}
