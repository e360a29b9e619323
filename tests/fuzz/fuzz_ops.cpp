// Fuzzes every registered op through run_op: the input picks the op, dtypes, small shapes, input
// values and attributes (hostile extremes included); where both the reference and the CPU kernel
// succeed, their outputs must agree (bitwise for integers, within a per-dtype tolerance for floats).
//
// Input layout (bytes read from the front; a missing byte reads as 0):
//   op name, '\0'                      an unregistered name picks an op by its hash
//   one byte per type attribute        index into its allowed dtypes
//   one byte                           list length (AddN's N) when the op has a list input
//   one byte                           seed of the float/integer input values
//   per input: rank byte, dim bytes    rank % 5, each dim % 8; host inputs (shape-like ints)
//                                      then hold one value byte per element (see int_value)
//   per other attribute: a selector byte (% 4 == 0 keeps the default, if any), then its value
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include <dagrad/dagrad.hpp>

#include "fuzz_support.hpp"

using namespace dagrad;

namespace {

using i64 = std::int64_t;
constexpr i64 kMaxOutputElements = i64{1} << 14;  // keeps each execution in milliseconds

class Bytes {
 public:
  Bytes(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  std::uint8_t next() { return pos_ < size_ ? data_[pos_++] : 0; }
  std::string name() {
    std::string text;
    while (pos_ < size_ && data_[pos_] != 0) text += static_cast<char>(data_[pos_++]);
    ++pos_;
    return text;
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

// 0..223 as themselves, 0xE0..0xEF as -1..-16, 0xF0.. as the extremes that break arithmetic.
i64 int_value(std::uint8_t b) {
  constexpr i64 kMax = std::numeric_limits<i64>::max(), kMin = std::numeric_limits<i64>::min();
  const i64 extremes[16] = {kMax,
                            kMin,
                            kMax - 1,
                            kMin + 1,
                            i64{1} << 31,
                            (i64{1} << 31) - 1,
                            -(i64{1} << 31),
                            i64{1} << 32,
                            i64{1} << 40,
                            i64{1} << 62,
                            1000000000000000000,
                            -1000000000000000000,
                            65536,
                            1000000,
                            kMax / 2,
                            kMax / 3};
  if (b < 0xE0) return b;
  if (b < 0xF0) return 0xDF - i64{b};
  return extremes[b - 0xF0];
}

double float_value(std::uint8_t b) {
  const double table[16] = {0.0,
                            1.0,
                            0.5,
                            -1.0,
                            2.0,
                            1e-8,
                            0.9,
                            0.999,
                            1e30,
                            -1e30,
                            1e-300,
                            3.0,
                            std::numeric_limits<double>::quiet_NaN(),
                            std::numeric_limits<double>::infinity(),
                            -std::numeric_limits<double>::infinity(),
                            1e300};
  return table[b % 16];
}

std::vector<DType> allowed_types(const AttrDef& attr) {
  if (!attr.allowed_types.empty()) return attr.allowed_types;
  return {std::begin(kAllDTypes), std::end(kAllDTypes)};
}

const OpDef& pick_op(const std::string& name) {
  const OpDef* def = op_registry().find(name);
  if (def != nullptr && !def->stateful) return *def;
  std::vector<const OpDef*> stateless;
  for (const OpDef* d : op_registry().list()) {
    if (!d->stateful) stateless.push_back(d);
  }
  return *stateless[std::hash<std::string>()(name) % stateless.size()];
}

// Well-conditioned values (multiples of 1/8 in [-2, 2]; small integers) so that the reference
// (double accumulation) and the CPU kernels (float accumulation) differ only by rounding.
Tensor data_input(DType dtype, const Shape& shape, std::uint32_t& seed) {
  Tensor t = Tensor::empty(DType::Float64, shape);
  for (i64 i = 0; i < t.num_elements(); ++i) {
    seed = seed * 1664525u + 1013904223u;
    const int k = static_cast<int>((seed >> 16) % 33) - 16;
    t.data<double>()[i] = dtype == DType::Bool ? (k > 0) : is_integer(dtype) ? k : k / 8.0;
  }
  return t.cast(dtype);
}

// Shape-like inputs (int32/int64 sizes, axes, permutations) hold values straight from the input bytes.
Tensor host_input(DType dtype, const Shape& shape, Bytes& in) {
  Tensor t = Tensor::empty(dtype, shape);
  for (i64 i = 0; i < t.num_elements(); ++i) {
    const i64 v = int_value(in.next());
    if (dtype == DType::Int64)
      t.data<i64>()[i] = v;
    else
      t.data<std::int32_t>()[i] = static_cast<std::int32_t>(std::clamp<i64>(v, INT32_MIN, INT32_MAX));
  }
  return t;
}

AttrValue attr_value(const AttrDef& attr, Bytes& in) {
  switch (attr.kind) {
    case AttrKind::Int:
      return int_value(in.next());
    case AttrKind::Float:
      return float_value(in.next());
    case AttrKind::Bool:
      return (in.next() & 1) != 0;
    case AttrKind::String: {
      const std::uint8_t b = in.next();
      if (!attr.allowed_strings.empty()) return attr.allowed_strings[b % attr.allowed_strings.size()];
      const char* strings[] = {"", "x", "NHWC", "a/b", "../x", "SAME"};
      return std::string(strings[b % 6]);
    }
    case AttrKind::Type: {
      const auto types = allowed_types(attr);
      return types[in.next() % types.size()];
    }
    case AttrKind::Shape: {
      std::vector<i64> dims(in.next() % 5);
      for (auto& d : dims) d = int_value(in.next());
      return Shape(dims);
    }
    case AttrKind::Tensor:
      return Tensor::scalar<float>(static_cast<float>(float_value(in.next())));
    case AttrKind::ListInt: {
      std::vector<i64> values(in.next() % 9);
      for (auto& v : values) v = int_value(in.next());
      return values;
    }
    case AttrKind::ListFloat: {
      std::vector<double> values(in.next() % 5);
      for (auto& v : values) v = float_value(in.next());
      return values;
    }
  }
  return i64{0};
}

bool is_list_length(const OpDef& def, const std::string& attr) {
  return std::any_of(def.inputs.begin(), def.inputs.end(), [&](const ArgDef& arg) { return arg.number_attr == attr; });
}

struct Case {
  const OpDef* def = nullptr;
  std::vector<Tensor> inputs;
  AttrMap attrs;
};

Case make_case(Bytes& in) {
  Case c;
  c.def = &pick_op(in.name());
  std::map<std::string, DType> types;
  for (const auto& attr : c.def->attrs) {
    if (attr.kind != AttrKind::Type) continue;
    const auto allowed = allowed_types(attr);
    types[attr.name] = allowed[in.next() % allowed.size()];
    c.attrs[attr.name] = types[attr.name];
  }
  i64 list_length = 1;
  for (const auto& arg : c.def->inputs) {
    if (!arg.number_attr.empty()) list_length = 1 + in.next() % 3;
  }
  std::uint32_t seed = in.next();
  for (const auto& arg : c.def->inputs) {
    const i64 count = arg.number_attr.empty() ? 1 : list_length;
    for (i64 k = 0; k < count; ++k) {
      std::vector<i64> dims(in.next() % 5);
      for (auto& d : dims) d = in.next() % 8;
      const DType dtype = arg.type_attr.empty() ? arg.fixed_type : types.at(arg.type_attr);
      const bool shape_like = arg.host_memory && (dtype == DType::Int32 || dtype == DType::Int64);
      c.inputs.push_back(shape_like ? host_input(dtype, Shape(dims), in) : data_input(dtype, Shape(dims), seed));
    }
  }
  for (const auto& attr : c.def->attrs) {
    if (attr.kind == AttrKind::Type || is_list_length(*c.def, attr.name)) continue;  // set above
    const std::uint8_t selector = in.next();
    if (attr.default_value && selector % 4 == 0) continue;
    c.attrs[attr.name] = attr_value(attr, in);
  }
  return c;
}

// Shape inference as run_op does it (every CPU input's value known): false when the outputs
// would be too large for a quick execution.
bool small_outputs(const Case& c) {
  AttrMap attrs = c.attrs;
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  std::vector<const Tensor*> values;
  for (const auto& t : c.inputs) {
    dtypes.push_back(t.dtype());
    shapes.push_back(t.shape());
    values.push_back(&t);
  }
  complete_attrs(*c.def, attrs, dtypes);
  i64 total = 0;
  for (const Shape& s : infer_shapes(*c.def, attrs, dtypes, shapes, values)) {
    i64 n = 1;
    for (int d = 0; d < s.rank(); ++d) {
      if (s[d] < 0 || __builtin_mul_overflow(n, s[d], &n) || n > kMaxOutputElements) return false;
    }
    total += n;
  }
  return total <= kMaxOutputElements;
}

double tolerance(DType dtype) {
  switch (dtype) {
    case DType::Half:
      return 1e-3;
    case DType::BFloat16:
      return 8e-3;
    case DType::Float32:
      return 1e-5;
    default:
      return 1e-12;
  }
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         (a.nbytes() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0);
}

// Integers and bools bitwise; floats: the same NaNs and infinities, finite values within the
// dtype's tolerance of the largest reference value.
std::string difference(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    return "dtype/shape " + std::string(dtype_name(got.dtype())) + got.shape().to_string() + " vs " +
           std::string(dtype_name(want.dtype())) + want.shape().to_string();
  }
  if (!is_floating(want.dtype())) return same_bits(got, want) ? "" : "integer values differ";
  double scale = 0;
  for (i64 i = 0; i < want.num_elements(); ++i) {
    if (std::isfinite(want.value_as_double(i))) scale = std::max(scale, std::abs(want.value_as_double(i)));
  }
  const double limit = tolerance(want.dtype()) * std::max(scale, 1e-30);
  for (i64 i = 0; i < want.num_elements(); ++i) {
    const double g = got.value_as_double(i), w = want.value_as_double(i);
    const bool same = std::isnan(w) ? std::isnan(g) : std::isfinite(w) ? std::abs(g - w) <= limit : g == w;
    if (!same)
      return "element " + std::to_string(i) + ": cpu " + std::to_string(g) + ", reference " + std::to_string(w);
  }
  return "";
}

std::string describe(const Case& c) {
  std::string text = c.def->name + "(";
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    text += (i ? ", " : "") + std::string(dtype_name(c.inputs[i].dtype())) + c.inputs[i].shape().to_string();
  }
  text += ")";
  for (const auto& [name, value] : c.attrs) text += " " + name + "=" + attr_to_string(value);
  return text;
}

// DAGRAD_FUZZ_SKIP_OPS=Sum,Mean: a long run looks past ops whose known bug is being fixed.
bool skipped(const std::string& op) {
  const char* list = std::getenv("DAGRAD_FUZZ_SKIP_OPS");
  return list != nullptr && ("," + std::string(list) + ",").find("," + op + ",") != std::string::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Bytes in(data, size);
  const Case c = make_case(in);
  if (skipped(c.def->name)) return 0;
  bool small = false;
  if (!fuzz::accepted([&] { small = small_outputs(c); }) || !small) return 0;
  const bool verbose = std::getenv("DAGRAD_FUZZ_VERBOSE") != nullptr;  // what an input reaches, for triage
  if (verbose) std::fprintf(stderr, "case: %s\n", describe(c).c_str());
  std::vector<Tensor> before;
  for (const auto& t : c.inputs) before.push_back(t.clone());
  std::vector<Tensor> reference, cpu;
  const bool reference_ok =
      fuzz::accepted([&] { reference = run_op(c.def->name, c.inputs, c.attrs, {.backend = "reference"}); });
  const DType kernel_dtype = c.def->kernel_dtype(c.attrs);
  const bool has_cpu = kernel_registry().find(c.def->name, Device::Kind::CPU, kernel_dtype, "cpu") != nullptr;
  const bool cpu_ok =
      has_cpu && fuzz::accepted([&] { cpu = run_op(c.def->name, c.inputs, c.attrs, {.backend = "cpu"}); });
  for (std::size_t i = 0; i < before.size(); ++i) {
    if (!same_bits(before[i], c.inputs[i]))
      fuzz::finding("a kernel wrote into input " + std::to_string(i) + " of " + describe(c));
  }
  if (verbose) {
    std::fprintf(stderr, "reference %s, cpu %s\n", reference_ok ? "ran" : "refused",
                 !has_cpu ? "absent"
                 : cpu_ok ? "ran"
                          : "refused");
  }
  if (!has_cpu) return 0;
  if (reference_ok != cpu_ok) {
    fuzz::finding(std::string(reference_ok ? "only the reference" : "only the CPU kernel") + " accepted " +
                  describe(c));
  }
  if (!reference_ok) return 0;
  if (cpu.size() != reference.size()) fuzz::finding("output counts differ for " + describe(c));
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    const std::string diff = difference(cpu[i], reference[i]);
    if (!diff.empty()) fuzz::finding("output " + std::to_string(i) + " of " + describe(c) + ": " + diff);
  }
  return 0;
}
