// Tensor: dtype + shape + a reference-counted buffer on a device. Dense and row-major.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "dagrad/core/allocator.hpp"
#include "dagrad/core/device.hpp"
#include "dagrad/core/dtype.hpp"
#include "dagrad/core/shape.hpp"

namespace dagrad {

class Tensor {
 public:
  Tensor() = default;  // undefined: defined() is false

  // Uninitialised memory of the given dtype and (fully defined) shape.
  static Tensor empty(DType dtype, const Shape& shape, Device device = Device::cpu());
  static Tensor zeros(DType dtype, const Shape& shape, Device device = Device::cpu());
  // A tensor filled with `value` converted to dtype (one rounding).
  static Tensor full(DType dtype, const Shape& shape, double value, Device device = Device::cpu());

  template <class T>
  static Tensor from_values(const Shape& shape, std::span<const T> values);
  template <class T>
  static Tensor from_values(const Shape& shape, std::initializer_list<T> values) {
    return from_values<T>(shape, std::span<const T>(values.begin(), values.size()));
  }
  template <class T>
  static Tensor scalar(T value) {
    return from_values<T>(Shape{}, std::span<const T>(&value, 1));
  }

  bool defined() const { return buffer_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  std::int64_t num_elements() const { return num_elements_; }
  std::size_t nbytes() const { return static_cast<std::size_t>(num_elements_) * dtype_size(dtype_); }
  Device device() const;

  void* raw_data() { return buffer_ ? buffer_->data() : nullptr; }
  const void* raw_data() const { return buffer_ ? buffer_->data() : nullptr; }
  // Typed host pointer; throws if T is not the dtype's host type or the tensor is not on the host.
  template <class T>
  T* data() {
    check_access(dtype_of<T>);
    return static_cast<T*>(raw_data());
  }
  template <class T>
  const T* data() const {
    check_access(dtype_of<T>);
    return static_cast<const T*>(raw_data());
  }
  // Element i converted to double (host tensors only).
  double value_as_double(std::int64_t index) const;
  // All elements as int64 (host integer tensors), for shape-like inputs.
  std::vector<std::int64_t> to_int64_vector() const;

  // A copy on another device (or a new copy on the same one).
  Tensor to(Device device) const;
  Tensor clone() const { return to(device()); }
  // Same buffer, another shape with the same number of elements.
  Tensor reshaped(const Shape& shape) const;
  // Same values converted to dtype with one rounding (host tensors).
  Tensor cast(DType dtype) const;

  // Whether both share one buffer (used by tests of buffer reuse).
  bool shares_buffer_with(const Tensor& other) const { return buffer_ == other.buffer_; }
  // Whether no other Tensor holds this one's buffer, so that writing it changes no value anyone
  // else can see (KernelContext::forward_input_or_allocate_output). Exact under threads: with no
  // other holder, no other thread can make one.
  bool buffer_unshared() const { return buffer_ != nullptr && buffer_.use_count() == 1; }
  std::string to_string(std::int64_t max_elements = 64) const;

 private:
  Tensor(DType dtype, Shape shape, std::shared_ptr<Buffer> buffer);
  void check_access(DType requested) const;

  DType dtype_ = DType::Invalid;
  Shape shape_;
  std::int64_t num_elements_ = 0;
  std::shared_ptr<Buffer> buffer_;
};

std::ostream& operator<<(std::ostream& out, const Tensor& tensor);

// Process-wide count of the copies Tensor::to makes from the host onto a device, the one road by
// which host values reach a device (feeds, constants, host-memory outputs read on the device).
struct TransferStats {
  std::int64_t host_to_device_copies = 0;
  std::int64_t host_to_device_bytes = 0;
};
TransferStats transfer_stats();

template <class T>
Tensor Tensor::from_values(const Shape& shape, std::span<const T> values) {
  Tensor tensor = empty(dtype_of<T>, shape);
  if (static_cast<std::int64_t>(values.size()) != tensor.num_elements()) {
    invalid_argument("Tensor::from_values: ", values.size(), " values given for shape ", shape.to_string(), " of ",
                     tensor.num_elements(), " elements");
  }
  std::copy(values.begin(), values.end(), tensor.data<T>());
  return tensor;
}

}  // namespace dagrad
