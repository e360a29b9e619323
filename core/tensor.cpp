// Tensor construction, device copies, casts and printing.
#include "dagrad/core/tensor.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
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
  visit_dtype(dtype, [&]<class T>() { std::fill_n(host.data<T>(), host.num_elements(), narrow<T>(value)); });
  return device.is_cpu() ? host : host.to(device);
}

Device Tensor::device() const { return buffer_ ? buffer_->device() : Device::cpu(); }

void Tensor::check_access(DType requested) const {
  if (!defined()) invalid_argument("Tensor: access to an undefined tensor");
  if (requested != dtype_) {
    invalid_argument("Tensor: requested ", dtype_name(requested), " data from a ", dtype_name(dtype_), " tensor");
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
    invalid_argument("Tensor::reshaped: cannot reshape ", shape_.to_string(), " (", num_elements_, " elements) to ",
                     shape.to_string());
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

// One element, exactly: integers in full, bools as true/false, floating values with the fewest
// digits that read back as the same value of their own dtype (0.1f prints as 0.1).
template <class T>
void append_value(std::string& out, T value) {
  char text[64];
  char* end = text;
  if constexpr (std::is_same_v<T, bool>) {
    out += value ? "true" : "false";
    return;
  } else if constexpr (std::is_integral_v<T>) {
    end = std::to_chars(text, text + sizeof text, value).ptr;
  } else if (std::isnan(static_cast<double>(widen<T>(value)))) {
    out += "nan";  // as numpy prints it: x86's default NaN has its sign bit set ("-nan")
    return;
  } else if constexpr (std::is_floating_point_v<T>) {
    end = std::to_chars(text, text + sizeof text, value).ptr;
  } else {  // half, bfloat16: no std::to_chars of their own
    const float wide = static_cast<float>(widen<T>(value));
    end = std::to_chars(text, text + sizeof text, wide).ptr;
    for (int digits = 1; digits < 9 && std::isfinite(wide); ++digits) {
      char* shorter = std::to_chars(text, text + sizeof text, wide, std::chars_format::general, digits).ptr;
      double back = 0;
      std::from_chars(text, shorter, back);
      if (widen<T>(narrow<T>(back)) == static_cast<double>(wide)) {
        end = shorter;
        break;
      }
    }
  }
  out.append(text, end);
}

// The values in nested brackets, row-major, at most `max_elements` of them, then "...". Walks a
// multi-index instead of recursing, so neither a high rank nor a long empty axis costs anything.
template <class T>
std::string format_values(const T* data, const Shape& shape, std::int64_t count, std::int64_t max_elements) {
  std::string out;
  const int rank = shape.rank();
  if (rank == 0) {
    append_value(out, data[0]);
    return out;
  }
  if (count == 0) return "[]";  // dims such as [10^18, 0] hold nothing to walk
  std::vector<std::int64_t> index(static_cast<std::size_t>(rank), 0);
  std::size_t open = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    if (i) out += ", ";
    if (i >= max_elements) {
      out += "...";
      break;
    }
    for (int a = rank - 1; a >= 0 && index[static_cast<std::size_t>(a)] == 0; --a) {  // axes starting here
      out += '[';
      ++open;
    }
    append_value(out, data[i]);
    for (int a = rank - 1; a >= 0; --a) {  // the next multi-index; each axis that wraps closes a bracket
      if (++index[static_cast<std::size_t>(a)] < shape[a]) break;
      index[static_cast<std::size_t>(a)] = 0;
      out += ']';
      --open;
    }
  }
  out.append(open, ']');
  return out;
}

}  // namespace

std::string Tensor::to_string(std::int64_t max_elements) const {
  if (!defined()) return "Tensor(undefined)";
  std::string out = str_cat("Tensor<", dtype_name(dtype_), ", ", shape_.to_string());
  if (!device().is_cpu()) return out + ", " + device().to_string() + ">";
  out += "> ";
  visit_dtype(dtype_, [&]<class T>() { out += format_values(data<T>(), shape_, num_elements_, max_elements); });
  return out;
}

std::ostream& operator<<(std::ostream& out, const Tensor& tensor) { return out << tensor.to_string(); }

}  // namespace dagrad
