// Element-wise CUDA kernels: fill, Cast, broadcasting Add/Sub/Mul, Neg, AddN. Floats compute in
// the accumulator type and round once; integers wrap modulo 2^n as TensorFlow's do.
#include <limits>

#include "dagrad/backends/cuda/cuda_check.hpp"
#include "dagrad/backends/cuda/device_types.cuh"

namespace dagrad::cuda {
namespace {

constexpr int kThreads = 256;

template <class T>
__device__ __forceinline__ T apply(BinaryOp op, T a, T b) {
  if constexpr (is_float_v<T>) {
    const acc_t<T> x = to_acc(a), y = to_acc(b);
    return from_acc<T>(op == BinaryOp::Add ? x + y : op == BinaryOp::Sub ? x - y : x * y);
  } else {
    const auto x = static_cast<wrap_t<T>>(a), y = static_cast<wrap_t<T>>(b);
    return static_cast<T>(op == BinaryOp::Add   ? wrap_t<T>(x + y)
                          : op == BinaryOp::Sub ? wrap_t<T>(x - y)
                                                : wrap_t<T>(x * y));
  }
}

template <class T>
__global__ void binary_kernel(BinaryOp op, const T* x, const T* y, T* z, BroadcastIndex index) {
  DAGRAD_GRID_STRIDE(i, index.count) {
    std::int64_t xo, yo;
    broadcast_offsets(index, i, &xo, &yo);
    z[i] = apply<T>(op, x[xo], y[yo]);
  }
}

template <class T>
__global__ void neg_kernel(const T* x, T* y, std::int64_t count) {
  DAGRAD_GRID_STRIDE(i, count) {
    if constexpr (is_float_v<T>)
      y[i] = from_acc<T>(-to_acc(x[i]));
    else
      y[i] = static_cast<T>(wrap_t<T>(0) - static_cast<wrap_t<T>>(x[i]));
  }
}

template <class T>
__global__ void fill_kernel(T* out, std::int64_t count, T value) {
  DAGRAD_GRID_STRIDE(i, count) { out[i] = value; }
}

// dagrad::cast_value on the device.
template <class D, class S>
__host__ __device__ __forceinline__ D cast_one(S v) {
  if constexpr (std::is_same_v<D, bool>) {
    return to_double(v) != 0.0;
  } else if constexpr (std::is_integral_v<D> && std::is_integral_v<S>) {
    return static_cast<D>(v);
  } else if constexpr (std::is_integral_v<D>) {
    const double d = to_double(v);
    if (d != d) return 0;
    if (d <= static_cast<double>(std::numeric_limits<D>::min())) return std::numeric_limits<D>::min();
    if (d >= static_cast<double>(std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
    return static_cast<D>(d);
  } else if constexpr (std::is_same_v<S, std::int64_t> && std::is_same_v<D, float>) {
    return static_cast<float>(v);
  } else {
    if constexpr (is_float_v<S>) {
      if (to_double(v) != to_double(v)) return quiet_nan<D>(sign_bit(v));  // the reference's NaN bits
    }
    return from_double<D>(to_double(v));
  }
}

template <class D, class S>
__global__ void cast_kernel(const S* src, D* dst, std::int64_t count) {
  DAGRAD_GRID_STRIDE(i, count) { dst[i] = cast_one<D, S>(src[i]); }
}

template <class T>
__global__ void permute_kernel(const T* in, T* out, Permute4 p) {
  DAGRAD_GRID_STRIDE(i, p.count) { out[i] = in[unravel_offset(p.out_dims, p.src_stride, 4, i)]; }
}

template <class T>
using add_n_acc_t = wrap_t<acc_t<T>>;

template <class T>
__global__ void add_n_kernel(AddNChunk chunk, std::int64_t count) {
  using A = add_n_acc_t<T>;
  DAGRAD_GRID_STRIDE(i, count) {
    A total = chunk.acc_in ? static_cast<const A*>(chunk.acc_in)[i] : A(0);
    for (int k = 0; k < chunk.count; ++k) {
      const T v = static_cast<const T*>(chunk.inputs[k])[i];
      if constexpr (is_float_v<T>)
        total += to_acc(v);
      else
        total = A(total + static_cast<A>(v));
    }
    if (chunk.acc_out)
      static_cast<A*>(chunk.acc_out)[i] = total;
    else if constexpr (is_float_v<T>)
      static_cast<T*>(chunk.out)[i] = from_acc<T>(total);
    else
      static_cast<T*>(chunk.out)[i] = static_cast<T>(total);
  }
}

}  // namespace

void launch_fill(ElemType type, void* out, std::int64_t count, double value, void* stream) {
  if (count == 0) return;
  visit_elem(type, [&]<class T>() {
    DAGRAD_LAUNCH(grid_for(count, kThreads), kThreads, stream, fill_kernel<T>)
    (static_cast<T*>(out), count, cast_one<T, double>(value));
  });
  check_launch("fill_kernel");
}

void launch_cast(ElemType src_type, const void* src, ElemType dst_type, void* dst, std::int64_t count, void* stream) {
  if (count == 0) return;
  visit_elem(src_type, [&]<class S>() {
    visit_elem(dst_type, [&]<class D>() {
      DAGRAD_LAUNCH(grid_for(count, kThreads), kThreads, stream, cast_kernel<D, S>)
      (static_cast<const S*>(src), static_cast<D*>(dst), count);
    });
  });
  check_launch("cast_kernel");
}

void launch_binary(BinaryOp op, ElemType type, const void* x, const void* y, void* z, const BroadcastIndex& index,
                   void* stream) {
  if (index.count == 0) return;
  visit_elem(type, [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      DAGRAD_LAUNCH(grid_for(index.count, kThreads), kThreads, stream, binary_kernel<T>)
      (op, static_cast<const T*>(x), static_cast<const T*>(y), static_cast<T*>(z), index);
    }
  });
  check_launch("binary_kernel");
}

void launch_neg(ElemType type, const void* x, void* y, std::int64_t count, void* stream) {
  if (count == 0) return;
  visit_elem(type, [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      DAGRAD_LAUNCH(grid_for(count, kThreads), kThreads, stream, neg_kernel<T>)
      (static_cast<const T*>(x), static_cast<T*>(y), count);
    }
  });
  check_launch("neg_kernel");
}

void launch_permute4(ElemType type, const void* in, void* out, const std::int64_t in_dims[4], const int perm[4],
                     void* stream) {
  const Permute4 p = make_permute4(in_dims, perm);
  if (p.count == 0) return;
  visit_elem(type, [&]<class T>() {
    DAGRAD_LAUNCH(grid_for(p.count, kThreads), kThreads, stream, permute_kernel<T>)
    (static_cast<const T*>(in), static_cast<T*>(out), p);
  });
  check_launch("permute_kernel");
}

std::int64_t add_n_accumulator_bytes(ElemType type) {
  std::int64_t bytes = 0;
  visit_elem(type, [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) bytes = sizeof(add_n_acc_t<T>);
  });
  return bytes;
}

void launch_add_n(ElemType type, const AddNChunk& chunk, std::int64_t count, void* stream) {
  if (count == 0) return;
  visit_elem(type, [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      DAGRAD_LAUNCH(grid_for(count, kThreads), kThreads, stream, add_n_kernel<T>)(chunk, count);
    }
  });
  check_launch("add_n_kernel");
}

}  // namespace dagrad::cuda
