// The bridge between Tensor and xtensor: zero-copy host views and xarray conversions.
#pragma once

#include <vector>

#include <xtensor/xadapt.hpp>
#include <xtensor/xarray.hpp>

#include "dagrad/core/tensor.hpp"

namespace dagrad {

namespace detail {
inline std::vector<std::size_t> xt_shape(const Shape& shape) {
  std::vector<std::size_t> dims;
  for (auto d : shape.dims()) dims.push_back(static_cast<std::size_t>(d));
  return dims;
}
}  // namespace detail

// A mutable xtensor view over a host tensor's memory (no copy); valid while the tensor lives.
template <class T>
auto host_view(Tensor& tensor) {
  return xt::adapt(tensor.data<T>(), static_cast<std::size_t>(tensor.num_elements()), xt::no_ownership(),
                   detail::xt_shape(tensor.shape()));
}

template <class T>
auto host_view(const Tensor& tensor) {
  return xt::adapt(tensor.data<T>(), static_cast<std::size_t>(tensor.num_elements()), xt::no_ownership(),
                   detail::xt_shape(tensor.shape()));
}

template <class T>
xt::xarray<T> to_xarray(const Tensor& tensor) {
  const Tensor host = tensor.device().is_cpu() ? tensor : tensor.to(Device::cpu());
  return xt::xarray<T>(host_view<T>(host));
}

template <class E>
Tensor from_xarray(const xt::xexpression<E>& expression) {
  using T = typename E::value_type;
  xt::xarray<T> values = expression;  // evaluates lazy expressions, makes it row-major
  std::vector<std::int64_t> dims(values.shape().begin(), values.shape().end());
  return Tensor::from_values<T>(Shape(dims), std::span<const T>(values.data(), values.size()));
}

}  // namespace dagrad
