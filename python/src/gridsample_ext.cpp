// gridsample._ext: the Python bindings, a client of the public aclnn C API (STYLE.md layer 5).
//
// Arrays of any framework arrive as nb::ndarray (DLPack or the buffer protocol) and are described
// to the library in place, with their own strides: no copy, no conversion, no libtorch. The
// framework-specific parts (autograd, torch.library, NumPy conventions) are pure Python on top
// (python/gridsample/*.py). Every call releases the GIL, sets the calling thread's run thread
// count (gridsampleSetNumThreads) and runs the two aclnn phases on that same OS thread.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "acl/acl.h"
#include "aclnnop/aclnn_grid_sampler2d.h"
#include "aclnnop/aclnn_grid_sampler2d_backward.h"
#include "aclnnop/aclnn_grid_sampler3d.h"
#include "aclnnop/aclnn_grid_sampler3d_backward.h"
#include "gridsample/gridsample.h"
#include "gridsample/gridsample.hpp"

namespace nb = nanobind;

namespace {

using Array = nb::ndarray<nb::ro, nb::device::cpu>;

// Python exception types, set by the Python layer (gridsample/_errors.py): both derive from
// RuntimeError (what torch raises) and from ValueError / TypeError (what NumPy users expect).
PyObject* g_value_error = PyExc_ValueError;
PyObject* g_type_error = PyExc_TypeError;

struct TensorDeleter {
  void operator()(aclTensor* t) const { aclDestroyTensor(t); }
};
using Tensor = std::unique_ptr<aclTensor, TensorDeleter>;

struct BoolArrayDeleter {
  void operator()(aclBoolArray* a) const { aclDestroyBoolArray(a); }
};

// The DLPack type as the library's enum; ACL_DT_UNDEFINED for one the C API cannot even name.
aclDataType acl_dtype(const nb::dlpack::dtype& t) {
  if (t.lanes != 1) return ACL_DT_UNDEFINED;
  switch (nb::dlpack::dtype_code(t.code)) {
    case nb::dlpack::dtype_code::Float:
      return t.bits == 16   ? ACL_FLOAT16
             : t.bits == 32 ? ACL_FLOAT
             : t.bits == 64 ? ACL_DOUBLE
                            : ACL_DT_UNDEFINED;
    case nb::dlpack::dtype_code::Bfloat:
      return t.bits == 16 ? ACL_BF16 : ACL_DT_UNDEFINED;
    case nb::dlpack::dtype_code::Int:
      return t.bits == 8    ? ACL_INT8
             : t.bits == 16 ? ACL_INT16
             : t.bits == 32 ? ACL_INT32
             : t.bits == 64 ? ACL_INT64
                            : ACL_DT_UNDEFINED;
    case nb::dlpack::dtype_code::UInt:
      return t.bits == 8    ? ACL_UINT8
             : t.bits == 16 ? ACL_UINT16
             : t.bits == 32 ? ACL_UINT32
             : t.bits == 64 ? ACL_UINT64
                            : ACL_DT_UNDEFINED;
    case nb::dlpack::dtype_code::Bool:
      return ACL_BOOL;
    case nb::dlpack::dtype_code::Complex:
      return t.bits == 64 ? ACL_COMPLEX64 : t.bits == 128 ? ACL_COMPLEX128 : ACL_DT_UNDEFINED;
    default:
      return ACL_DT_UNDEFINED;
  }
}

// The library's message for the last failure on this thread (never null in this library; a CANN
// runtime may return null).
std::string recent_message() {
  const char* m = aclGetRecentErrMsg();
  return m != nullptr && *m != '\0' ? m
                                    : "gridsample: the library reported an error without a message";
}

bool is_float(aclDataType t) {
  return t == ACL_FLOAT || t == ACL_FLOAT16 || t == ACL_DOUBLE || t == ACL_BF16;
}

// One array's description, taken while holding the GIL.
struct Desc {
  bool present = false;
  void* data = nullptr;
  aclDataType dtype = ACL_DT_UNDEFINED;
  int ndim = 0;
  int64_t sizes[8] = {};
  int64_t strides[8] = {};
};

Desc describe(const std::optional<Array>& a, const char* name) {
  Desc d;
  if (!a) return d;
  d.present = true;
  d.data = const_cast<void*>(a->data());
  d.dtype = acl_dtype(a->dtype());
  d.ndim = int(a->ndim());
  if (d.ndim > 8) {
    PyErr_Format(g_value_error, "gridsample: %s has %d dimensions; expected 4 or 5", name, d.ndim);
    throw nb::python_error();
  }
  for (int i = 0; i < d.ndim; ++i) {
    d.sizes[i] = int64_t(a->shape(size_t(i)));
    d.strides[i] = a->stride(size_t(i));
  }
  return d;
}

// The tensor over exactly the extent the view addresses (as gridsample.hpp does). Strides are
// passed as they are; the library rejects what it cannot read, with a message.
Tensor make_tensor(const Desc& d, aclFormat format) {
  if (!d.present) return nullptr;
  uint64_t extent = 1;
  for (int i = 0; i < d.ndim; ++i) {
    if (d.sizes[i] == 0) extent = 0;
    if (extent > 0 && d.sizes[i] > 0) extent += uint64_t(d.sizes[i] - 1) * uint64_t(d.strides[i]);
  }
  const int64_t storage[1] = {int64_t(extent)};
  // A dtype the C API has no name for: call it FLOAT16's neighbour INT8 so that the library
  // still rejects it with its own message naming the tensor.
  const aclDataType dt = d.dtype == ACL_DT_UNDEFINED ? ACL_INT8 : d.dtype;
  return Tensor(
      aclCreateTensor(d.sizes, uint64_t(d.ndim), dt, d.strides, 0, format, storage, 1, d.data));
}

aclFormat feature_format(int ndim, bool channel_last) {
  if (ndim == 5) return channel_last ? ACL_FORMAT_NDHWC : ACL_FORMAT_NCDHW;
  if (ndim == 4) return channel_last ? ACL_FORMAT_NHWC : ACL_FORMAT_NCHW;
  return ACL_FORMAT_ND;  // the rank is wrong; the library says so
}

// The outcome of a call made without the GIL; turned into a Python exception after.
struct Result {
  aclnnStatus status = ACLNN_SUCCESS;
  std::string message;
  double seconds = 0;
};

[[noreturn]] void raise(const Result& r, const Desc* descs, int n) {
  // A dtype problem (not a float type, or two types that differ) is a TypeError; everything
  // else the library rejects is a ValueError. Both are RuntimeErrors too, as torch raises.
  bool type_problem = false;
  aclDataType first = ACL_DT_UNDEFINED;
  for (int i = 0; i < n; ++i) {
    if (!descs[i].present) continue;
    if (!is_float(descs[i].dtype)) type_problem = true;
    if (first == ACL_DT_UNDEFINED) first = descs[i].dtype;
    if (descs[i].dtype != first) type_problem = true;
  }
  PyObject* type = type_problem ? g_type_error : g_value_error;
  if (r.status != ACLNN_ERR_PARAM_INVALID && r.status != ACLNN_ERR_PARAM_NULLPTR)
    type = PyExc_RuntimeError;
  PyErr_SetString(type, r.message.c_str());
  throw nb::python_error();
}

using Phase2 = aclnnStatus (*)(void*, uint64_t, aclOpExecutor*, aclrtStream);

// Phase 2 with a workspace of the size phase 1 asked for, `reps` times (reps > 1 only for the
// benchmark's C-side timing, with a repeatable executor).
// The workspace is the thread's, kept between calls (NOTE [ Cached workspace ] in gridsample.hpp).
void run_phase2(Result& r, uint64_t ws_size, aclOpExecutor* ex, Phase2 phase2, int reps) {
  void* ws = gridsample::detail::workspace(ws_size);
  if (ws_size > 0 && ws == nullptr) {
    aclDestroyAclOpExecutor(ex);
    r.status = ACLNN_ERR_INNER;
    r.message = "gridsample: cannot allocate a workspace of " + std::to_string(ws_size) + " bytes";
    return;
  }
  if (reps > 1) aclSetAclOpExecutorRepeatable(ex);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps && r.status == ACLNN_SUCCESS; ++i)
    r.status = phase2(ws, ws_size, ex, nullptr);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (reps > 1) aclDestroyAclOpExecutor(ex);
  if (r.status != ACLNN_SUCCESS) r.message = recent_message();
}

void set_threads(Result& r, int threads) {
  if (gridsampleSetNumThreads(threads) != ACL_SUCCESS) {
    r.status = ACLNN_ERR_PARAM_INVALID;
    r.message = recent_message();
  }
}

// out = grid_sample(input, grid): the forward operator (2D or 3D by the grid's rank).
double forward(const Array& input, const Array& grid, const Array& out, int64_t interpolation,
               int64_t padding, bool align_corners, bool channel_last, int threads, int reps) {
  const Desc d[3] = {describe(input, "input"), describe(grid, "grid"), describe(out, "out")};
  Result r;
  {
    nb::gil_scoped_release release;
    set_threads(r, threads);
    if (r.status == ACLNN_SUCCESS) {
      Tensor in = make_tensor(d[0], feature_format(d[0].ndim, channel_last));
      Tensor g = make_tensor(d[1], ACL_FORMAT_ND);
      Tensor o = make_tensor(d[2], feature_format(d[2].ndim, channel_last));
      const bool is3d = d[1].ndim == 5;
      uint64_t ws = 0;
      aclOpExecutor* ex = nullptr;
      if (!in || !g || !o) {
        r.status = ACLNN_ERR_PARAM_INVALID;
        r.message = recent_message();
      } else {
        r.status = (is3d ? aclnnGridSampler3DGetWorkspaceSize : aclnnGridSampler2DGetWorkspaceSize)(
            in.get(), g.get(), interpolation, padding, align_corners, o.get(), &ws, &ex);
        if (r.status != ACLNN_SUCCESS)
          r.message = recent_message();
        else
          run_phase2(r, ws, ex, is3d ? aclnnGridSampler3D : aclnnGridSampler2D, reps);
      }
    }
  }
  if (r.status != ACLNN_SUCCESS) raise(r, d, 3);
  return r.seconds;
}

// (inputGrad, gridGrad) from gradOutput; a gradient passed as None is not computed
// (outputMask false).
double backward(const Array& grad_output, const Array& input, const Array& grid,
                const std::optional<Array>& input_grad, const std::optional<Array>& grid_grad,
                int64_t interpolation, int64_t padding, bool align_corners, bool channel_last,
                int threads, int reps) {
  const Desc d[5] = {describe(grad_output, "grad_output"), describe(input, "input"),
                     describe(grid, "grid"), describe(input_grad, "input_grad"),
                     describe(grid_grad, "grid_grad")};
  Result r;
  {
    nb::gil_scoped_release release;
    set_threads(r, threads);
    if (r.status == ACLNN_SUCCESS) {
      Tensor go = make_tensor(d[0], feature_format(d[0].ndim, channel_last));
      Tensor in = make_tensor(d[1], feature_format(d[1].ndim, channel_last));
      Tensor g = make_tensor(d[2], ACL_FORMAT_ND);
      Tensor ig = make_tensor(d[3], feature_format(d[3].ndim, channel_last));
      Tensor gg = make_tensor(d[4], ACL_FORMAT_ND);
      const bool mask[2] = {d[3].present, d[4].present};
      std::unique_ptr<aclBoolArray, BoolArrayDeleter> m(aclCreateBoolArray(mask, 2));
      const bool is3d = d[2].ndim == 5;
      uint64_t ws = 0;
      aclOpExecutor* ex = nullptr;
      if (!go || !in || !g || (d[3].present && !ig) || (d[4].present && !gg) || !m) {
        r.status = ACLNN_ERR_PARAM_INVALID;
        r.message = recent_message();
      } else {
        r.status = (is3d ? aclnnGridSampler3DBackwardGetWorkspaceSize
                         : aclnnGridSampler2DBackwardGetWorkspaceSize)(
            go.get(), in.get(), g.get(), interpolation, padding, align_corners, m.get(), ig.get(),
            gg.get(), &ws, &ex);
        if (r.status != ACLNN_SUCCESS)
          r.message = recent_message();
        else
          run_phase2(r, ws, ex, is3d ? aclnnGridSampler3DBackward : aclnnGridSampler2DBackward,
                     reps);
      }
    }
  }
  if (r.status != ACLNN_SUCCESS) raise(r, d, 5);
  return r.seconds;
}

}  // namespace

NB_MODULE(_ext, m) {
  m.doc() = "gridsample's bindings over the aclnn C API (use the gridsample package instead)";
  m.def("forward", &forward, nb::arg("input"), nb::arg("grid"), nb::arg("out"),
        nb::arg("interpolation"), nb::arg("padding"), nb::arg("align_corners"),
        nb::arg("channel_last"), nb::arg("threads"), nb::arg("reps") = 1);
  m.def("backward", &backward, nb::arg("grad_output"), nb::arg("input"), nb::arg("grid"),
        nb::arg("input_grad").none(), nb::arg("grid_grad").none(), nb::arg("interpolation"),
        nb::arg("padding"), nb::arg("align_corners"), nb::arg("channel_last"), nb::arg("threads"),
        nb::arg("reps") = 1);
  m.def(
      "set_error_types",
      [](nb::handle value_error, nb::handle type_error) {
        g_value_error = value_error.inc_ref().ptr();
        g_type_error = type_error.inc_ref().ptr();
      },
      "The exception types raised for rejected arguments (ValueError-like, TypeError-like).");
  m.def(
      "release_workspace", []() { gridsample::release_workspace(); },
      "Frees the workspace this thread's calls keep (NOTE [ Cached workspace ]).");
  m.def(
      "workspace_size", []() { return gridsample::detail::workspace_cache().size; },
      "The bytes of workspace this thread keeps.");
  m.def("default_num_threads", []() {
    // The count a run would use with no per-thread setting: OpenMP's default.
    const int32_t saved = gridsampleGetNumThreads();
    gridsampleSetNumThreads(0);
    const int32_t n = gridsampleGetNumThreads();
    gridsampleSetNumThreads(saved);
    return n;
  });
}
