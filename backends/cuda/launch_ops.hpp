// Launchers of the CUDA kernels of the nn, pooling, matrix, compare, shape and training ops:
// plain signatures (raw pointers, ElemType, index structs, a stream) like launch.hpp, so the .cu
// files need neither Eigen nor xtensor and the registration .cpp files need no nvcc.
#pragma once

#include <cstdint>

#include "dagrad/backends/cuda/gather_index.hpp"
#include "dagrad/backends/cuda/launch.hpp"
#include "dagrad/backends/cuda/pool_index.hpp"

namespace dagrad::cuda {

// --- unary.cu: element-wise float ops; each rounds the accumulator-type result to T once, which
// equals the reference's double result rounded once (one +, *, / of two T values).
void launch_relu(ElemType type, const void* x, void* y, std::int64_t count, void* stream);
void launch_relu_grad(ElemType type, const void* gradients, const void* features, void* y, std::int64_t count,
                      void* stream);
// Floats: 1 / x. Integers: 1 / x, and the device int `*zero_flag` is set to 1 where x == 0 (the
// caller reads it back and raises TF's "Integer division by zero").
void launch_reciprocal(ElemType type, const void* x, void* y, std::int64_t count, int* zero_flag, void* stream);
// y[(o, c, i)] = x[(o, c, i)] + bias[c] over `count` elements with `channels` x `inner` trailing.
void launch_bias_add(ElemType type, const void* x, const void* bias, void* y, std::int64_t count, std::int64_t channels,
                     std::int64_t inner, void* stream);

// --- gather.cu: out[i] = in[gather_offset(index, i)] (Transpose, BroadcastTo), any dtype.
void launch_gather(ElemType type, const void* in, void* out, const GatherIndex& index, void* stream);

// --- compare.cu
// z = (x == y) with broadcasting, any dtype (floats compare as values: NaN != NaN, -0 == 0).
void launch_equal(ElemType type, const void* x, const void* y, bool* z, const BroadcastIndex& index, void* stream);
// out[o, i] = the first k maximising in[o, k, i] (NaN never wins unless it comes first, as in the
// reference's "replace only on strictly greater"). out_type is Int32 or Int64.
void launch_arg_max(ElemType type, ElemType out_type, const void* in, void* out, const AxisSplit& split, void* stream);

// --- softmax.cu: one block per row of [rows, classes]; the row max and the sum of exponentials
// use a fixed tree in the block, so results repeat bitwise.
void launch_softmax(ElemType type, bool log, const void* logits, void* out, std::int64_t rows, std::int64_t classes,
                    void* stream);
void launch_softmax_xent(ElemType type, const void* logits, const void* labels, void* loss, void* backprop,
                         std::int64_t rows, std::int64_t classes, void* stream);
// labels: Int32 or Int64 class indices, already checked to lie in [0, classes).
void launch_sparse_softmax_xent(ElemType type, ElemType label_type, const void* logits, const void* labels, void* loss,
                                void* backprop, std::int64_t rows, std::int64_t classes, void* stream);

// --- pooling.cu: every output (forward) or input (gradients) element is one thread that walks
// its windows in the reference's order and sums in double, so results equal the reference.
void launch_max_pool(ElemType type, const void* x, void* y, const PoolIndex& index, void* stream);
void launch_avg_pool(ElemType type, const void* x, void* y, const PoolIndex& index, void* stream);
// `argmax` is scratch for one int64 per output element.
void launch_max_pool_grad(ElemType type, const void* x, const void* grad, void* out, std::int64_t* argmax,
                          const PoolIndex& index, void* stream);
void launch_max_pool_grad_grad(ElemType type, const void* x, const void* grad, void* out, const PoolIndex& index,
                               void* stream);
void launch_avg_pool_grad(ElemType type, const void* grad, void* out, const PoolIndex& index, void* stream);

// --- training.cu: in-place updates in double with explicitly rounded operations (no fused
// multiply-add), exactly the reference's arithmetic. Scalars are device pointers to one T.
void launch_apply_gradient_descent(ElemType type, void* var, const void* alpha, const void* delta, std::int64_t count,
                                   void* stream);
void launch_apply_momentum(ElemType type, void* var, void* accum, const void* lr, const void* grad,
                           const void* momentum, bool nesterov, std::int64_t count, void* stream);
struct AdamScalars {
  const void* beta1_power = nullptr;
  const void* beta2_power = nullptr;
  const void* lr = nullptr;
  const void* beta1 = nullptr;
  const void* beta2 = nullptr;
  const void* epsilon = nullptr;
};
void launch_apply_adam(ElemType type, void* var, void* m, void* v, const AdamScalars& scalars, const void* grad,
                       bool nesterov, std::int64_t count, void* stream);

}  // namespace dagrad::cuda
