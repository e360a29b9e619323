// Shape arithmetic with overflow checks.
#include "dagrad/core/shape.hpp"

#include "dagrad/core/error.hpp"

namespace dagrad {

std::int64_t Shape::dim(int axis) const {
  const int r = rank();
  const int a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r) {
    fail(Code::OutOfRange, "axis ", axis, " is out of range for shape ", to_string(), " of rank ", r);
  }
  return dims_[static_cast<std::size_t>(a)];
}

bool Shape::is_fully_defined() const {
  for (auto d : dims_) {
    if (d < 0) return false;
  }
  return true;
}

std::int64_t Shape::num_elements() const {
  std::int64_t n = 1;
  for (auto d : dims_) {
    if (d < 0) invalid_argument("shape ", to_string(), " is not fully defined");
    n = checked_mul(n, d);
  }
  return n;
}

bool Shape::is_compatible_with(const Shape& concrete) const {
  if (rank() != concrete.rank()) return false;
  for (int i = 0; i < rank(); ++i) {
    if ((*this)[i] >= 0 && (*this)[i] != concrete[i]) return false;
  }
  return true;
}

std::string Shape::to_string() const {
  std::string text = "[";
  for (std::size_t i = 0; i < dims_.size(); ++i) {
    if (i) text += ",";
    text += dims_[i] < 0 ? "?" : std::to_string(dims_[i]);
  }
  return text + "]";
}

std::ostream& operator<<(std::ostream& out, const Shape& shape) { return out << shape.to_string(); }

}  // namespace dagrad
