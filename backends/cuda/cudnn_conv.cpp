// The conv ops through cuDNN (built with DAGRAD_WITH_CUDNN): deterministic algorithms only, the
// HWIO filter transposed to cuDNN's KRSC (NHWC) or KCRS (NCHW) layout and back.
#ifdef DAGRAD_WITH_CUDNN

#include <cudnn.h>

#include <limits>
#include <memory>
#include <mutex>
#include <vector>

#include "dagrad/backends/cuda/conv2d_kernels.hpp"
#include "dagrad/backends/cuda/glue.hpp"
#include "dagrad/backends/cuda/tf32.hpp"

namespace dagrad::cuda {
namespace {

void check_cudnn(cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS) fail(Code::Internal, "cuDNN error in ", what, ": ", cudnnGetErrorString(status));
}

// One handle per device, created on first use and kept (handles are costly to create).
cudnnHandle_t handle_for(int device) {
  static std::mutex mutex;
  static std::vector<cudnnHandle_t> handles;
  std::lock_guard lock(mutex);
  if (handles.size() <= static_cast<std::size_t>(device)) handles.resize(static_cast<std::size_t>(device) + 1);
  auto& h = handles[static_cast<std::size_t>(device)];
  if (h == nullptr) check_cudnn(cudnnCreate(&h), "cudnnCreate");
  return h;
}

template <class T, cudnnStatus_t (*Create)(T*), cudnnStatus_t (*Destroy)(T)>
struct Descriptor {
  Descriptor() { check_cudnn(Create(&d), "create descriptor"); }
  ~Descriptor() { Destroy(d); }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  T d{};
};
using TensorDesc = Descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDesc = Descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvDesc =
    Descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor>;

cudnnDataType_t cudnn_type(DType t) {
  switch (t) {
    case DType::Half:
      return CUDNN_DATA_HALF;
    case DType::BFloat16:
      return CUDNN_DATA_BFLOAT16;
    case DType::Float64:
      return CUDNN_DATA_DOUBLE;
    default:
      return CUDNN_DATA_FLOAT;
  }
}

bool fits_int(std::initializer_list<std::int64_t> values) {
  for (auto v : values) {
    if (v > std::numeric_limits<int>::max()) return false;
  }
  return true;
}

// Picks the first deterministic algorithm cuDNN's heuristics accept; -1 if there is none.
template <class Perf>
int pick_deterministic(const Perf* results, int count, std::size_t* workspace) {
  for (int i = 0; i < count; ++i) {
    if (results[i].status == CUDNN_STATUS_SUCCESS && results[i].determinism == CUDNN_DETERMINISTIC) {
      *workspace = results[i].memory;
      return static_cast<int>(results[i].algo);
    }
  }
  return -1;
}

}  // namespace

bool run_cudnn_conv(KernelContext& c, ConvKind kind) {
  const ops::Conv2DGeometry g = ops::conv2d_geometry(c);
  if (g.pad_top != g.pad_bottom || g.pad_left != g.pad_right) return false;  // cuDNN pads symmetrically
  if (g.batch == 0 || g.out_depth == 0 || g.filter_in_depth == 0 || g.out_rows == 0 || g.out_cols == 0) return false;
  if (!fits_int({g.batch, g.in_rows, g.in_cols, g.in_depth, g.out_depth, g.filter_rows, g.filter_cols, g.out_rows,
                 g.out_cols, g.pad_top, g.pad_left, g.stride_rows, g.stride_cols, g.dilation_rows, g.dilation_cols})) {
    return false;
  }
  Launch launch(c);
  const DType dtype = c.output_dtype(0);
  const cudnnDataType_t type = cudnn_type(dtype);
  const bool nhwc = g.data_format == ops::DataFormat::NHWC;
  const cudnnTensorFormat_t format = nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  auto i32 = [](std::int64_t v) { return static_cast<int>(v); };

  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
  check_cudnn(
      cudnnSetTensor4dDescriptor(x.d, format, type, i32(g.batch), i32(g.in_depth), i32(g.in_rows), i32(g.in_cols)),
      "x descriptor");
  check_cudnn(
      cudnnSetTensor4dDescriptor(y.d, format, type, i32(g.batch), i32(g.out_depth), i32(g.out_rows), i32(g.out_cols)),
      "y descriptor");
  check_cudnn(cudnnSetFilter4dDescriptor(w.d, type, format, i32(g.out_depth), i32(g.filter_in_depth),
                                         i32(g.filter_rows), i32(g.filter_cols)),
              "filter descriptor");
  const cudnnDataType_t compute = dtype == DType::Float64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  check_cudnn(
      cudnnSetConvolution2dDescriptor(conv.d, i32(g.pad_top), i32(g.pad_left), i32(g.stride_rows), i32(g.stride_cols),
                                      i32(g.dilation_rows), i32(g.dilation_cols), CUDNN_CROSS_CORRELATION, compute),
      "conv descriptor");
  check_cudnn(cudnnSetConvolutionGroupCount(conv.d, i32(g.groups)), "group count");
  // Tensor cores for half/bfloat16; plain FMA for float32 (no silent TF32), as dagrad's kernels,
  // unless the user opted in to TF32 (tf32.hpp). float64 always uses FMA.
  const bool reduced = dtype == DType::Half || dtype == DType::BFloat16;
  const bool tensor_ops = reduced || (dtype == DType::Float32 && tf32_allowed());
  check_cudnn(cudnnSetConvolutionMathType(conv.d, tensor_ops ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH), "math type");

  cudnnHandle_t handle = handle_for(c.device().index);
  check_cudnn(cudnnSetStream(handle, as_stream(launch.stream)), "cudnnSetStream");

  // HWIO <-> KRSC (NHWC) or KCRS (NCHW).
  const std::int64_t hwio[4] = {g.filter_rows, g.filter_cols, g.filter_in_depth, g.out_depth};
  const int to_krsc[4] = {3, 0, 1, 2}, to_kcrs[4] = {3, 2, 0, 1};
  const std::int64_t krsc[4] = {g.out_depth, g.filter_rows, g.filter_cols, g.filter_in_depth};
  const std::int64_t kcrs[4] = {g.out_depth, g.filter_in_depth, g.filter_rows, g.filter_cols};
  const int from_krsc[4] = {1, 2, 3, 0}, from_kcrs[4] = {2, 3, 1, 0};
  const Shape filter_shape{g.filter_rows, g.filter_cols, g.filter_in_depth, g.out_depth};
  Tensor cudnn_filter = Tensor::empty(dtype, filter_shape, c.device());  // same count, cuDNN's order

  constexpr int kMaxAlgos = 16;
  int returned = 0;
  std::size_t workspace_bytes = 0;
  int algo = -1;
  if (kind == ConvKind::Forward) {
    cudnnConvolutionFwdAlgoPerf_t perf[kMaxAlgos];
    check_cudnn(cudnnGetConvolutionForwardAlgorithm_v7(handle, x.d, w.d, conv.d, y.d, kMaxAlgos, &returned, perf),
                "forward algorithm");
    algo = pick_deterministic(perf, returned, &workspace_bytes);
  } else if (kind == ConvKind::BackpropInput) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[kMaxAlgos];
    check_cudnn(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, w.d, y.d, conv.d, x.d, kMaxAlgos, &returned, perf),
                "backward data algorithm");
    algo = pick_deterministic(perf, returned, &workspace_bytes);
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[kMaxAlgos];
    check_cudnn(
        cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, x.d, y.d, conv.d, w.d, kMaxAlgos, &returned, perf),
        "backward filter algorithm");
    algo = pick_deterministic(perf, returned, &workspace_bytes);
  }
  if (algo < 0) return false;

  std::unique_ptr<Buffer> workspace;
  if (workspace_bytes > 0) workspace = std::make_unique<Buffer>(allocator_for(c.device()), workspace_bytes);
  void* ws = workspace ? workspace->data() : nullptr;
  const float one_f = 1.0f, zero_f = 0.0f;
  const double one_d = 1.0, zero_d = 0.0;
  const void* one = dtype == DType::Float64 ? static_cast<const void*>(&one_d) : &one_f;
  const void* zero = dtype == DType::Float64 ? static_cast<const void*>(&zero_d) : &zero_f;
  Tensor& out = c.allocate_output(0);

  if (kind != ConvKind::BackpropFilter) {
    launch_permute4(elem(dtype), c.input(1).raw_data(), cudnn_filter.raw_data(), hwio, nhwc ? to_krsc : to_kcrs,
                    launch.stream);
  }
  if (kind == ConvKind::Forward) {
    check_cudnn(cudnnConvolutionForward(handle, one, x.d, c.input(0).raw_data(), w.d, cudnn_filter.raw_data(), conv.d,
                                        static_cast<cudnnConvolutionFwdAlgo_t>(algo), ws, workspace_bytes, zero, y.d,
                                        out.raw_data()),
                "cudnnConvolutionForward");
  } else if (kind == ConvKind::BackpropInput) {
    check_cudnn(cudnnConvolutionBackwardData(handle, one, w.d, cudnn_filter.raw_data(), y.d, c.input(2).raw_data(),
                                             conv.d, static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), ws,
                                             workspace_bytes, zero, x.d, out.raw_data()),
                "cudnnConvolutionBackwardData");
  } else {
    check_cudnn(cudnnConvolutionBackwardFilter(handle, one, x.d, c.input(0).raw_data(), y.d, c.input(2).raw_data(),
                                               conv.d, static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), ws,
                                               workspace_bytes, zero, w.d, cudnn_filter.raw_data()),
                "cudnnConvolutionBackwardFilter");
    launch_permute4(elem(dtype), cudnn_filter.raw_data(), out.raw_data(), nhwc ? krsc : kcrs,
                    nhwc ? from_krsc : from_kcrs, launch.stream);
  }
  return true;
}

}  // namespace dagrad::cuda

#endif  // DAGRAD_WITH_CUDNN
