// Launchers of the CUDA kernels: plain signatures (raw pointers, ElemType, index structs, a
// stream) so the .cu files need neither Eigen nor xtensor and the glue .cpp files need no nvcc.
#pragma once

#include <cstdint>

#include "dagrad/backends/cuda/elementwise_index.hpp"

namespace dagrad::cuda {

// Mirrors dagrad::DType value for value (checked by a static_assert in the glue code).
enum class ElemType : std::uint8_t { Invalid, Half, BFloat16, Float32, Float64, Int32, Int64, Bool };

enum class BinaryOp { Add, Sub, Mul };

// out[i] = value (converted as Cast converts a float64).
void launch_fill(ElemType type, void* out, std::int64_t count, double value, void* stream);
// dst[i] = Cast(src[i]) with TF's Cast semantics (as dagrad::cast_value).
void launch_cast(ElemType src_type, const void* src, ElemType dst_type, void* dst, std::int64_t count, void* stream);
void launch_binary(BinaryOp op, ElemType type, const void* x, const void* y, void* z, const BroadcastIndex& index,
                   void* stream);
void launch_neg(ElemType type, const void* x, void* y, std::int64_t count, void* stream);

// AddN in chunks of kAddNChunk inputs: the first chunk starts from zero, later ones from
// `acc_in`; every chunk but the last writes the accumulator type to `acc_out`, the last writes `out`.
inline constexpr int kAddNChunk = 16;
struct AddNChunk {
  const void* inputs[kAddNChunk] = {};
  int count = 0;
  const void* acc_in = nullptr;
  void* acc_out = nullptr;
  void* out = nullptr;
};
// Bytes per element of AddN's accumulator for `type` (float for half/bfloat16).
std::int64_t add_n_accumulator_bytes(ElemType type);
void launch_add_n(ElemType type, const AddNChunk& chunk, std::int64_t count, void* stream);

// out = transpose(in): out axis a is in axis perm[a] (4-d; used for the cuDNN filter layouts).
void launch_permute4(ElemType type, const void* in, void* out, const std::int64_t in_dims[4], const int perm[4],
                     void* stream);

// Sum or Mean: one block per output element, a fixed tree inside the block (deterministic).
void launch_reduce(ElemType type, bool mean, const void* in, void* out, const ReduceIndex& index, void* stream);

}  // namespace dagrad::cuda
