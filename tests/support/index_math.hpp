// Row-major index arithmetic on dimension lists, the plain definitions that the [cuda-host] tests
// hold the CUDA backend's index helpers against.
#pragma once

#include <cstdint>
#include <vector>

namespace dagrad::testing {

inline std::int64_t product(const std::vector<std::int64_t>& dims) {
  std::int64_t p = 1;
  for (auto d : dims) p *= d;
  return p;
}

// The multi-index of a row-major linear index.
inline std::vector<std::int64_t> unravel(std::int64_t linear, const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> index(dims.size());
  for (auto a = dims.size(); a-- > 0;) {
    index[a] = linear % dims[a];
    linear /= dims[a];
  }
  return index;
}

inline std::int64_t ravel(const std::vector<std::int64_t>& index, const std::vector<std::int64_t>& dims) {
  std::int64_t linear = 0;
  for (std::size_t a = 0; a < dims.size(); ++a) linear = linear * dims[a] + index[a];
  return linear;
}

}  // namespace dagrad::testing
