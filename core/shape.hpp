// Shape: a list of int64 dimensions; -1 marks a dimension unknown until run time.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

#include "dagrad/core/checked.hpp"

namespace dagrad {

class Shape {
 public:
  static constexpr std::int64_t kUnknown = -1;
  // The most dimensions a shape may have (TensorFlow's TensorShape::MaxDimensions()). Shape
  // functions enforce it, so no op output (and no dims list built from a shape input) exceeds it.
  static constexpr int kMaxRank = 254;

  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<std::int64_t> dims) : dims_(std::move(dims)) {}

  int rank() const { return static_cast<int>(dims_.size()); }
  std::int64_t operator[](int axis) const { return dims_[static_cast<std::size_t>(axis)]; }
  std::int64_t& operator[](int axis) { return dims_[static_cast<std::size_t>(axis)]; }
  // Checked access with negative axes counted from the end, as numpy does.
  std::int64_t dim(int axis) const;
  const std::vector<std::int64_t>& dims() const { return dims_; }

  // True when no dimension is unknown.
  bool is_fully_defined() const;
  // Product of the dimensions; throws on unknown dimensions or int64 overflow.
  std::int64_t num_elements() const;
  // Whether `concrete` (fully defined) fits this shape, treating unknown dims as wildcards.
  bool is_compatible_with(const Shape& concrete) const;

  std::string to_string() const;  // "[2,3]", "[?,28,28,1]", "[]"

  friend bool operator==(const Shape&, const Shape&) = default;

 private:
  std::vector<std::int64_t> dims_;
};

std::ostream& operator<<(std::ostream& out, const Shape& shape);

}  // namespace dagrad
