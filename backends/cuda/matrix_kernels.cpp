// CUDA kernels: MatMul (cuBLAS, float32/float64 accumulation, deterministic) and Transpose (the
// gather kernel in gather.cu, any dtype and rank).
#include <cublas_v2.h>

#include <climits>
#include <vector>

#include "dagrad/backends/cuda/glue.hpp"
#include "dagrad/backends/cuda/launch_ops.hpp"
#include "dagrad/backends/cuda/tf32.hpp"

namespace dagrad::cuda {
namespace {

void check_cublas(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const Code code = status == CUBLAS_STATUS_ALLOC_FAILED ? Code::ResourceExhausted : Code::Internal;
  fail(code, "cuBLAS error in ", what, ": ", cublasGetStatusName(status), " (", cublasGetStatusString(status), ")");
}

// One handle per thread and device (a handle must not be shared by threads that set different
// streams). Never destroyed: releasing it during process exit can race the runtime's teardown.
cublasHandle_t handle_for(int device) {
  thread_local std::vector<cublasHandle_t> handles;
  if (handles.size() <= static_cast<std::size_t>(device)) handles.resize(static_cast<std::size_t>(device) + 1);
  auto& handle = handles[static_cast<std::size_t>(device)];
  if (handle == nullptr) check_cublas(cublasCreate(&handle), "cublasCreate");
  return handle;
}

// cuBLAS' recommended workspace for Hopper (enough for the others too).
constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

int as_int(std::int64_t v, std::string_view what) {
  if (v > INT_MAX) fail(Code::Unimplemented, "MatMul: ", what, " ", v, " exceeds cuBLAS' int range on CUDA");
  return static_cast<int>(v);
}

// C[m, n] = op(A) op(B), row major. cuBLAS is column major, so it computes C^T = op(B)^T op(A)^T,
// reading each row-major operand as its column-major transpose.
void mat_mul(KernelContext& c) {
  Launch launch(c);
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  const bool ta = c.attr<bool>("transpose_a"), tb = c.attr<bool>("transpose_b");
  Tensor& out = c.allocate_output(0);
  const std::int64_t m = out.shape()[0], n = out.shape()[1], k = ta ? a.shape()[0] : a.shape()[1];
  const ElemType type = elem(out.dtype());
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum
    launch_fill(type, out.raw_data(), out.num_elements(), 0.0, launch.stream);
    return;
  }
  const int mi = as_int(m, "m"), ni = as_int(n, "n"), ki = as_int(k, "k");
  const int lda = as_int(a.shape()[1], "a's row length"), ldb = as_int(b.shape()[1], "b's row length");
  cudaDataType_t data = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F_PEDANTIC;  // float32 on CUDA cores: no silent TF32
  switch (out.dtype()) {
    case DType::Half:
      data = CUDA_R_16F, compute = CUBLAS_COMPUTE_32F;
      break;  // tensor cores, float32 sums
    case DType::BFloat16:
      data = CUDA_R_16BF, compute = CUBLAS_COMPUTE_32F;
      break;
    case DType::Float64:
      data = CUDA_R_64F, compute = CUBLAS_COMPUTE_64F;
      break;
    default:
      if (tf32_allowed()) compute = CUBLAS_COMPUTE_32F_FAST_TF32;
      break;
  }
  const float one_f = 1.0f, zero_f = 0.0f;
  const double one_d = 1.0, zero_d = 0.0;
  const bool f64 = out.dtype() == DType::Float64;
  cublasHandle_t handle = handle_for(c.device().index);
  check_cublas(cublasSetStream(handle, as_stream(launch.stream)), "cublasSetStream");
  // A workspace of our own per call: cuBLAS documents that its default workspace pool, shared
  // between streams, can break bitwise reproducibility. Freed in stream order after the GEMM.
  Buffer workspace(allocator_for(c.device()), kWorkspaceBytes);
  check_cublas(cublasSetWorkspace(handle, workspace.data(), kWorkspaceBytes), "cublasSetWorkspace");
  check_cublas(cublasGemmEx(handle, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, ni, mi, ki,
                            f64 ? static_cast<const void*>(&one_d) : &one_f, b.raw_data(), data, ldb, a.raw_data(),
                            data, lda, f64 ? static_cast<const void*>(&zero_d) : &zero_f, out.raw_data(), data, ni,
                            compute, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx");
}

}  // namespace

void register_matrix_kernels(KernelRegistry& r) {
  add_kernels(r, "MatMul", kCuda, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return [](KernelContext& c) { mat_mul(c); }; });
  add_kernels(r, "Transpose", kCuda, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      Launch launch(c);
      const Tensor& x = c.input(0);
      Tensor& out = c.allocate_output(0);
      GatherIndex index;
      if (!make_transpose_gather(x.shape().dims(), c.input(1).to_int64_vector(), &index)) {
        fail(Code::Unimplemented, "Transpose: permuting ", x.shape().to_string(), " needs more than ", kMaxRank,
             " distinct axes on CUDA");
      }
      launch_gather(elem(x.dtype()), x.raw_data(), out.raw_data(), index, launch.stream);
    };
  });
}

}  // namespace dagrad::cuda
