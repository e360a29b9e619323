// Every registered op has a typed raw op or a stated reason not to (raw_ops::ops_without_raw_op),
// and each typed raw op computes, on every case of its op's case table, exactly what run_op does
// with the op's name and the case's attributes: the typed arguments reach the attributes they name.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <set>

#include <dagrad/dagrad.hpp>

using namespace dagrad;

namespace {

// A typed raw op called with the completed attributes of a case, each passed as its named field.
using TypedCall = std::function<std::vector<Tensor>(const std::vector<Tensor>& in, const AttrMap& a)>;

template <class T>
const T& attr(const AttrMap& a, std::string_view name) {
  return get_attr<T>(a, name);
}
constexpr raw_ops::NameOnly n{.name = "typed"};

std::vector<Tensor> one(Tensor t) { return {std::move(t)}; }

raw_ops::MaxPoolAttrs max_pool(const AttrMap& a) {
  return {.ksize = attr<std::vector<std::int64_t>>(a, "ksize"),
          .strides = attr<std::vector<std::int64_t>>(a, "strides"),
          .padding = attr<std::string>(a, "padding"),
          .explicit_paddings = attr<std::vector<std::int64_t>>(a, "explicit_paddings"),
          .data_format = attr<std::string>(a, "data_format"),
          .name = "typed"};
}
raw_ops::AvgPoolAttrs avg_pool(const AttrMap& a) {
  return {.ksize = attr<std::vector<std::int64_t>>(a, "ksize"),
          .strides = attr<std::vector<std::int64_t>>(a, "strides"),
          .padding = attr<std::string>(a, "padding"),
          .data_format = attr<std::string>(a, "data_format"),
          .name = "typed"};
}
raw_ops::Conv2DOptions conv(const AttrMap& a) {
  return {.strides = attr<std::vector<std::int64_t>>(a, "strides"),
          .padding = attr<std::string>(a, "padding"),
          .use_cudnn_on_gpu = attr<bool>(a, "use_cudnn_on_gpu"),
          .explicit_paddings = attr<std::vector<std::int64_t>>(a, "explicit_paddings"),
          .data_format = attr<std::string>(a, "data_format"),
          .dilations = attr<std::vector<std::int64_t>>(a, "dilations"),
          .name = "typed"};
}

// One entry per typed raw op.
const std::map<std::string, TypedCall>& typed_raw_ops() {
  static const std::map<std::string, TypedCall> table = {
      {"Const",
       [](auto&, auto& a) { return one(raw_ops::Const(attr<Tensor>(a, "value"), {attr<DType>(a, "dtype")})); }},
      {"Identity", [](auto& in, auto&) { return one(raw_ops::Identity(in[0], n)); }},
      {"ZerosLike", [](auto& in, auto&) { return one(raw_ops::ZerosLike(in[0], n)); }},
      {"OnesLike", [](auto& in, auto&) { return one(raw_ops::OnesLike(in[0], n)); }},
      {"Cast",
       [](auto& in, auto& a) {
         return one(raw_ops::Cast(in[0], {.DstT = attr<DType>(a, "DstT"), .Truncate = attr<bool>(a, "Truncate")}));
       }},
      {"NoOp",
       [](auto&, auto&) {
         raw_ops::NoOp(n);
         return std::vector<Tensor>{};
       }},
      {"Add", [](auto& in, auto&) { return one(raw_ops::Add(in[0], in[1], n)); }},
      {"AddV2", [](auto& in, auto&) { return one(raw_ops::AddV2(in[0], in[1], n)); }},
      {"Sub", [](auto& in, auto&) { return one(raw_ops::Sub(in[0], in[1], n)); }},
      {"Mul", [](auto& in, auto&) { return one(raw_ops::Mul(in[0], in[1], n)); }},
      {"Neg", [](auto& in, auto&) { return one(raw_ops::Neg(in[0], n)); }},
      {"Reciprocal", [](auto& in, auto&) { return one(raw_ops::Reciprocal(in[0], n)); }},
      {"AddN", [](auto& in, auto&) { return one(raw_ops::AddN(in, n)); }},
      {"Sum",
       [](auto& in, auto& a) {
         return one(raw_ops::Sum(in[0], in[1], {attr<bool>(a, "keep_dims"), "typed"}));
       }},
      {"Mean",
       [](auto& in, auto& a) {
         return one(raw_ops::Mean(in[0], in[1], {attr<bool>(a, "keep_dims"), "typed"}));
       }},
      {"Conv2D", [](auto& in, auto& a) { return one(raw_ops::Conv2D(in[0], in[1], conv(a))); }},
      {"Conv2DBackpropInput",
       [](auto& in, auto& a) { return one(raw_ops::Conv2DBackpropInput(in[0], in[1], in[2], conv(a))); }},
      {"Conv2DBackpropInputV2",
       [](auto& in, auto& a) { return one(raw_ops::Conv2DBackpropInputV2(in[0], in[1], in[2], conv(a))); }},
      {"Conv2DBackpropFilter",
       [](auto& in, auto& a) { return one(raw_ops::Conv2DBackpropFilter(in[0], in[1], in[2], conv(a))); }},
      {"Conv2DBackpropFilterV2",
       [](auto& in, auto& a) { return one(raw_ops::Conv2DBackpropFilterV2(in[0], in[1], in[2], conv(a))); }},
      {"BiasAdd",
       [](auto& in, auto& a) {
         return one(raw_ops::BiasAdd(in[0], in[1], {.data_format = attr<std::string>(a, "data_format"), .name = "t"}));
       }},
      {"BiasAddGrad",
       [](auto& in, auto& a) {
         return one(raw_ops::BiasAddGrad(in[0], {.data_format = attr<std::string>(a, "data_format"), .name = "t"}));
       }},
      {"Relu", [](auto& in, auto&) { return one(raw_ops::Relu(in[0], n)); }},
      {"ReluGrad", [](auto& in, auto&) { return one(raw_ops::ReluGrad(in[0], in[1], n)); }},
      {"Softmax", [](auto& in, auto&) { return one(raw_ops::Softmax(in[0], n)); }},
      {"LogSoftmax", [](auto& in, auto&) { return one(raw_ops::LogSoftmax(in[0], n)); }},
      {"SoftmaxCrossEntropyWithLogits",
       [](auto& in, auto&) {
         auto r = raw_ops::SoftmaxCrossEntropyWithLogits(in[0], in[1], n);
         return std::vector<Tensor>{r.loss, r.backprop};
       }},
      {"SparseSoftmaxCrossEntropyWithLogits",
       [](auto& in, auto&) {
         auto r = raw_ops::SparseSoftmaxCrossEntropyWithLogits(in[0], in[1], n);
         return std::vector<Tensor>{r.loss, r.backprop};
       }},
      {"MaxPool", [](auto& in, auto& a) { return one(raw_ops::MaxPool(in[0], max_pool(a))); }},
      {"MaxPoolGrad", [](auto& in, auto& a) { return one(raw_ops::MaxPoolGrad(in[0], in[1], in[2], max_pool(a))); }},
      {"MaxPoolGradGrad",
       [](auto& in, auto& a) { return one(raw_ops::MaxPoolGradGrad(in[0], in[1], in[2], max_pool(a))); }},
      {"AvgPool", [](auto& in, auto& a) { return one(raw_ops::AvgPool(in[0], avg_pool(a))); }},
      {"AvgPoolGrad", [](auto& in, auto& a) { return one(raw_ops::AvgPoolGrad(in[0], in[1], avg_pool(a))); }},
      {"MatMul",
       [](auto& in, auto& a) {
         return one(raw_ops::MatMul(in[0], in[1],
                                    {.transpose_a = attr<bool>(a, "transpose_a"),
                                     .transpose_b = attr<bool>(a, "transpose_b"),
                                     .name = "typed"}));
       }},
      {"Transpose", [](auto& in, auto&) { return one(raw_ops::Transpose(in[0], in[1], n)); }},
      {"ArgMax",
       [](auto& in, auto& a) {
         return one(raw_ops::ArgMax(in[0], in[1], {.output_type = attr<DType>(a, "output_type"), .name = "t"}));
       }},
      {"Equal",
       [](auto& in, auto& a) {
         return one(raw_ops::Equal(
             in[0], in[1], {.incompatible_shape_error = attr<bool>(a, "incompatible_shape_error"), .name = "t"}));
       }},
      {"Shape",
       [](auto& in, auto& a) {
         return one(raw_ops::Shape(in[0], {.out_type = attr<DType>(a, "out_type"), .name = "typed"}));
       }},
      {"Reshape", [](auto& in, auto&) { return one(raw_ops::Reshape(in[0], in[1], n)); }},
      {"BroadcastTo", [](auto& in, auto&) { return one(raw_ops::BroadcastTo(in[0], in[1], n)); }},
      {"BroadcastGradientArgs",
       [](auto& in, auto&) {
         auto r = raw_ops::BroadcastGradientArgs(in[0], in[1], n);
         return std::vector<Tensor>{r.r0, r.r1};
       }},
  };
  return table;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const auto bytes = static_cast<std::size_t>(a.num_elements()) * dtype_size(a.dtype());
  return bytes == 0 || std::memcmp(a.raw_data(), b.raw_data(), bytes) == 0;
}

}  // namespace

TEST_CASE("every registered op has a typed raw op or a stated reason for none", "[ops][raw_ops]") {
  std::set<std::string> excluded;
  for (const auto& e : raw_ops::ops_without_raw_op()) {
    INFO(e.op);
    CHECK_FALSE(e.reason.empty());
    CHECK(op_registry().find(e.op) != nullptr);  // no reason kept for an op that is gone
    CHECK(typed_raw_ops().count(std::string(e.op)) == 0);
    excluded.insert(std::string(e.op));
  }
  std::vector<std::string> missing;
  for (const OpDef* def : op_registry().list()) {
    // Ops that other test cases of this program register for themselves are not the library's.
    if (def->name.rfind("DagradTest", 0) == 0) continue;
    if (!typed_raw_ops().count(def->name) && !excluded.count(def->name)) missing.push_back(def->name);
  }
  std::string list;
  for (const auto& m : missing) list += m + " ";
  INFO("ops with neither a raw op nor a reason in raw_ops::ops_without_raw_op(): " << list);
  CHECK(missing.empty());
  for (const auto& [op, call] : typed_raw_ops()) {
    INFO(op);
    CHECK(op_registry().find(op) != nullptr);
  }
}

TEST_CASE("each typed raw op equals run_op by name on every case of its op", "[ops][raw_ops]") {
  int compared = 0;
  for (const auto& [op, call] : typed_raw_ops()) {
    const OpDef& def = op_registry().get(op);
    if (!def.cases) continue;  // NoOp and Const: checked by hand in raw_ops_test.cpp
    for (const OpCase& c : def.cases()) {
      std::vector<DType> dtypes = c.dtypes.empty() ? def.kernel_dtypes() : c.dtypes;
      if (dtypes.empty()) dtypes = {DType::Float32};
      const DType dtype = std::count(dtypes.begin(), dtypes.end(), DType::Float32) ? DType::Float32 : dtypes.front();
      INFO(op << " case '" << c.label << "' in " << dtype_name(dtype));
      const std::vector<Tensor> inputs = make_case_inputs(c, dtype, 7);
      AttrMap completed = c.attrs;
      std::vector<DType> input_dtypes;
      for (const Tensor& t : inputs) input_dtypes.push_back(t.dtype());
      complete_attrs(def, completed, input_dtypes);
      const std::vector<Tensor> by_name = run_op(op, inputs, c.attrs);
      const std::vector<Tensor> typed = call(inputs, completed);
      REQUIRE(typed.size() == by_name.size());
      for (std::size_t i = 0; i < typed.size(); ++i) CHECK(same_bits(typed[i], by_name[i]));
      ++compared;
    }
  }
  CHECK(compared > 50);
}
