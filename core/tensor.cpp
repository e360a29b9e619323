// Tensor construction, device copies, casts and printing.
#include "dagrad/core/tensor.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <new>
#include <sstream>

#include "dagrad/core/memory_limit.hpp"

namespace dagrad {

Tensor::Tensor(DType dtype, Shape shape, std::shared_ptr<Buffer> buffer)
    : dtype_(dtype), shape_(std::move(shape)), buffer_(std::move(buffer)) {
  num_elements_ = shape_.num_elements();
}

namespace {

template <class... Why>
[[noreturn]] void out_of_memory(DType dtype, const Shape& shape, Device device, const Why&... why) {
  fail(Code::ResourceExhausted, "OOM when allocating tensor with shape ", shape.to_string(), " and type ",
       dtype_name(dtype), " on ", device.to_string(), ": ", why...);
}

}  // namespace

Tensor Tensor::empty(DType dtype, const Shape& shape, Device device) {
  if (dtype == DType::Invalid) invalid_argument("Tensor: invalid dtype");
  if (!shape.is_fully_defined()) {
    invalid_argument("Tensor: shape ", shape.to_string(), " must be fully defined");
  }
  const std::int64_t n = shape.num_elements();
  const auto element = static_cast<std::int64_t>(dtype_size(dtype));
  // Refused before anything is allocated: a few bytes of input may ask for any output size.
  const std::int64_t limit = memory_limit();
  if (n > limit / element) {
    if (n > std::numeric_limits<std::int64_t>::max() / element) {
      out_of_memory(dtype, shape, device, "more than 2**63 - 1 bytes exceed the memory limit of ", limit, " bytes");
    }
    out_of_memory(dtype, shape, device, n * element, " bytes exceed the memory limit of ", limit,
                  " bytes (dagrad::set_memory_limit)");  // n * element fits: checked just above
  }
  const std::size_t bytes = checked_bytes(n, dtype_size(dtype), "tensor bytes");
  try {
    return Tensor(dtype, shape, std::make_shared<Buffer>(allocator_for(device), bytes));
  } catch (const std::bad_alloc&) {
    out_of_memory(dtype, shape, device, bytes, " bytes");
  }
}

Tensor Tensor::zeros(DType dtype, const Shape& shape, Device device) {
  Tensor host = empty(dtype, shape);
  // All-zero bits are zero for every dtype.
  if (host.nbytes()) std::memset(host.raw_data(), 0, host.nbytes());
  return device.is_cpu() ? host : host.to(device);
}

Tensor Tensor::full(DType dtype, const Shape& shape, double value, Device device) {
  Tensor host = empty(dtype, shape);
  visit_dtype(dtype, [&]<class T>() {
    std::fill_n(host.data<T>(), host.num_elements(), narrow<T>(value));
  });
  return device.is_cpu() ? host : host.to(device);
}

Device Tensor::device() const { return buffer_ ? buffer_->device() : Device::cpu(); }

void Tensor::check_access(DType requested) const {
  if (!defined()) invalid_argument("Tensor: access to an undefined tensor");
  if (requested != dtype_) {
    invalid_argument("Tensor: requested ", dtype_name(requested), " data from a ", dtype_name(dtype_),
                     " tensor");
  }
  if (!device().is_cpu()) {
    invalid_argument("Tensor: host access to a tensor on ", device().to_string(),
                     "; copy it with .to(Device::cpu()) first");
  }
}

double Tensor::value_as_double(std::int64_t index) const {
  if (index < 0 || index >= num_elements_) {
    fail(Code::OutOfRange, "Tensor: index ", index, " out of range for ", num_elements_, " elements");
  }
  return visit_dtype(dtype_, [&]<class T>() { return widen<T>(data<T>()[index]); });
}

std::vector<std::int64_t> Tensor::to_int64_vector() const {
  if (!is_integer(dtype_)) invalid_argument("expected an int32 or int64 tensor, got ", dtype_name(dtype_));
  std::vector<std::int64_t> values(static_cast<std::size_t>(num_elements_));
  if (dtype_ == DType::Int32) {
    std::copy_n(data<std::int32_t>(), num_elements_, values.begin());
  } else {
    std::copy_n(data<std::int64_t>(), num_elements_, values.begin());
  }
  return values;
}

namespace {

std::atomic<std::int64_t> host_to_device_copies{0};
std::atomic<std::int64_t> host_to_device_bytes{0};

}  // namespace

TransferStats transfer_stats() {
  return {host_to_device_copies.load(std::memory_order_relaxed), host_to_device_bytes.load(std::memory_order_relaxed)};
}

Tensor Tensor::to(Device target) const {
  if (!defined()) invalid_argument("Tensor::to: undefined tensor");
  Tensor copy = empty(dtype_, shape_, target);
  if (nbytes() == 0) return copy;
  if (device().is_cpu() && !target.is_cpu()) {
    host_to_device_copies.fetch_add(1, std::memory_order_relaxed);
    host_to_device_bytes.fetch_add(static_cast<std::int64_t>(nbytes()), std::memory_order_relaxed);
  }
  // The runtime of the non-host side moves the bytes.
  DeviceRuntime& runtime = device_runtime(target.is_cpu() ? device() : target);
  runtime.copy(copy.raw_data(), target, raw_data(), device(), nbytes());
  return copy;
}

Tensor Tensor::reshaped(const Shape& shape) const {
  if (!shape.is_fully_defined() || shape.num_elements() != num_elements_) {
    invalid_argument("Tensor::reshaped: cannot reshape ", shape_.to_string(), " (", num_elements_,
                     " elements) to ", shape.to_string());
  }
  return Tensor(dtype_, shape, buffer_);
}

Tensor Tensor::cast(DType dtype) const {
  Tensor out = empty(dtype, shape_);
  visit_dtype(dtype_, [&]<class S>() {
    visit_dtype(dtype, [&]<class D>() {
      const S* src = data<S>();
      D* dst = out.data<D>();
      for (std::int64_t i = 0; i < num_elements_; ++i) dst[i] = cast_value<D, S>(src[i]);
    });
  });
  return out;
}

namespace {

void print_values(std::ostream& out, const Tensor& t, int axis, std::int64_t offset,
                  std::int64_t stride_product, std::int64_t& budget) {
  // Iterates the outer axes with an explicit index instead of recursion on data; rank bounds depth.
  if (t.rank() == 0) {
    out << t.value_as_double(0);
    return;
  }
  const std::int64_t n = t.shape()[axis];
  const std::int64_t inner = stride_product / std::max<std::int64_t>(n, 1);
  out << "[";
  for (std::int64_t i = 0; i < n; ++i) {
    if (budget <= 0) {
      out << "...";
      break;
    }
    if (i) out << ", ";
    if (axis + 1 == t.rank()) {
      out << t.value_as_double(offset + i);
      --budget;
    } else {
      print_values(out, t, axis + 1, offset + i * inner, inner, budget);
    }
  }
  out << "]";
}

}  // namespace

std::string Tensor::to_string(std::int64_t max_elements) const {
  if (!defined()) return "Tensor(undefined)";
  std::ostringstream out;
  out << "Tensor<" << dtype_name(dtype_) << ", " << shape_.to_string();
  if (!device().is_cpu()) out << ", " << device().to_string();
  out << ">";
  if (!device().is_cpu()) return out.str();
  out << " ";
  std::int64_t budget = max_elements;
  print_values(out, *this, 0, 0, num_elements_, budget);
  return out.str();
}

std::ostream& operator<<(std::ostream& out, const Tensor& tensor) { return out << tensor.to_string(); }

}  // namespace dagrad
