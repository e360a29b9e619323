// Host buffers for kernels run on tests/support/cuda_sim.hpp: exactly a tensor's bytes, so that the
// sanitizer build sees any access past the end, and back into tensors.
#pragma once

#include <cstddef>
#include <cstring>
#include <vector>

#include <dagrad/dagrad.hpp>

namespace dagrad::testing {

inline std::vector<std::byte> exact_bytes(const Tensor& t) {
  std::vector<std::byte> bytes(static_cast<std::size_t>(t.nbytes()));
  if (!bytes.empty()) std::memcpy(bytes.data(), t.raw_data(), bytes.size());
  return bytes;
}

// An output buffer for `count` elements of `dtype`, every byte 0xff (NaN for floats) so that an
// element the kernel never writes shows.
inline std::vector<std::byte> output_bytes(DType dtype, std::int64_t count) {
  return std::vector<std::byte>(static_cast<std::size_t>(count) * dtype_size(dtype), std::byte{0xff});
}

inline Tensor tensor_of(DType dtype, const Shape& shape, const std::vector<std::byte>& bytes) {
  Tensor t = Tensor::empty(dtype, shape);
  REQUIRE(static_cast<std::size_t>(t.nbytes()) == bytes.size());
  if (!bytes.empty()) std::memcpy(t.raw_data(), bytes.data(), bytes.size());
  return t;
}

}  // namespace dagrad::testing
