// Broadcasting and reduction-axis rules.
#include "dagrad/ops/shape_util.hpp"

#include <algorithm>

namespace dagrad::ops {

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const int rank = std::max(a.rank(), b.rank());
  std::vector<std::int64_t> dims(static_cast<std::size_t>(rank));
  for (int i = 0; i < rank; ++i) {
    const int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    const std::int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    std::int64_t d;
    if (da == db)
      d = da;
    else if (da == 1)
      d = db;
    else if (db == 1)
      d = da;
    else if (da < 0)
      d = db;  // unknown vs known: the known one, checked at run time
    else if (db < 0)
      d = da;
    else
      invalid_argument("Incompatible shapes: ", a.to_string(), " vs. ", b.to_string());
    dims[static_cast<std::size_t>(i)] = d;
  }
  return Shape(dims);
}

std::vector<bool> reduction_mask(const std::vector<std::int64_t>& axes, int rank) {
  std::vector<bool> mask(static_cast<std::size_t>(rank), false);
  for (std::int64_t axis : axes) {
    if (axis < -rank || axis >= rank) {
      invalid_argument("Invalid reduction dimension (", axis, " for input with ", rank, " dimension(s)");
    }
    const auto a = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
    if (mask[a]) invalid_argument("Invalid reduction arguments: Axes contains duplicate dimension: ", a);
    mask[a] = true;
  }
  return mask;
}

void same_shape_as_input(ShapeContext& c) { c.set_output(0, c.input_shape(0)); }

void broadcast_binary(ShapeContext& c) {
  try {
    c.set_output(0, broadcast_shapes(c.input_shape(0), c.input_shape(1)));
  } catch (const Error& e) {
    throw Error(e.code(), str_cat(c.op_name(), ": ", e.what()));
  }
}

void same_shape_inputs(ShapeContext& c, std::string_view what) {
  Shape out = c.input_shape(0);
  for (int i = 1; i < c.num_inputs(); ++i) {
    const Shape& s = c.input_shape(i);
    bool ok = s.rank() == out.rank();
    for (int d = 0; ok && d < s.rank(); ++d) {
      if (out[d] < 0)
        out[d] = s[d];
      else
        ok = s[d] < 0 || s[d] == out[d];
    }
    if (!ok) {
      invalid_argument(what, "; input 0 has ", c.input_shape(0).to_string(), " and input ", i, " has ", s.to_string());
    }
  }
  c.set_output(0, out);
}

}  // namespace dagrad::ops
