// The five conv ops pass the gradient checker for every padding mode, strides 1-3, dilations
// 1-2, both layouts, groups 1 and 2, float64 and float32 (a covering subset here, every
// combination under [slow]); second order for Conv2D and both backprop ops; half and bfloat16.
#include <catch2/catch.hpp>

#include <dagrad/autodiff/gradient_checker.hpp>
#include <dagrad/dagrad.hpp>
#include <dagrad/ops/conv2d.hpp>

using namespace dagrad;

namespace {

struct ConvCase {
  std::string padding;
  int stride = 1, dilation = 1;
  bool nchw = false;
  int groups = 1;
  DType dtype = DType::Float64;

  std::string describe() const {
    return str_cat(padding, " stride ", stride, " dilation ", dilation, nchw ? " NCHW" : " NHWC", " groups ", groups,
                   " ", dtype_name(dtype));
  }
};

std::vector<ConvCase> all_cases() {
  std::vector<ConvCase> cases;
  for (const char* padding : {"VALID", "SAME", "EXPLICIT"}) {
    for (int stride : {1, 2, 3}) {
      for (int dilation : {1, 2}) {
        for (bool nchw : {false, true}) {
          for (int groups : {1, 2}) {
            for (DType dtype : {DType::Float64, DType::Float32})
              cases.push_back({padding, stride, dilation, nchw, groups, dtype});
          }
        }
      }
    }
  }
  return cases;
}

// One case per (padding, stride, dilation), the layout/groups/dtype combination rotating so that
// each padding mode meets both layouts, both group counts and both dtypes.
std::vector<ConvCase> covering_cases() {
  const auto all = all_cases();
  std::vector<ConvCase> picked;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (i % 8 == (i / 8) % 8) picked.push_back(all[i]);
  }
  return picked;
}

struct ConvProblem {
  ops::Conv2DOptions options;
  Shape input, filter, output;
};

// Input 1x6x7 with 2 channels per group; a 2x3 filter (non-square, so rows and cols cannot be
// swapped unnoticed) with 3 (groups 1) or 4 (groups 2) output channels; asymmetric explicit padding.
ConvProblem problem(const ConvCase& c) {
  ConvProblem p;
  const std::int64_t depth = 2 * c.groups, out = c.groups == 1 ? 3 : 4;
  p.input = c.nchw ? Shape{1, depth, 6, 7} : Shape{1, 6, 7, depth};
  p.filter = Shape{2, 3, 2, out};
  const std::int64_t s = c.stride, d = c.dilation;
  p.options.padding = c.padding;
  p.options.data_format = c.nchw ? "NCHW" : "NHWC";
  p.options.strides = c.nchw ? std::vector<std::int64_t>{1, 1, s, s} : std::vector<std::int64_t>{1, s, s, 1};
  p.options.dilations = c.nchw ? std::vector<std::int64_t>{1, 1, d, d} : std::vector<std::int64_t>{1, d, d, 1};
  if (c.padding == "EXPLICIT") {
    p.options.explicit_paddings =
        c.nchw ? std::vector<std::int64_t>{0, 0, 0, 0, 1, 2, 2, 0} : std::vector<std::int64_t>{0, 0, 1, 2, 2, 0, 0, 0};
  }
  Graph g;
  p.output =
      ops::conv2d(g, ops::placeholder(g, c.dtype, p.input), ops::placeholder(g, c.dtype, p.filter), p.options).shape();
  return p;
}

Tensor sizes(const Shape& s) {
  std::vector<std::int32_t> v(s.dims().begin(), s.dims().end());
  return Tensor::from_values<std::int32_t>(Shape{4}, v);
}

std::vector<Tensor> op_inputs(const std::string& op, const ConvCase& c, const ConvProblem& p) {
  const Tensor x = random_tensor(c.dtype, p.input, 1), w = random_tensor(c.dtype, p.filter, 2),
               dy = random_tensor(c.dtype, p.output, 3);
  if (op == "Conv2D") return {x, w};
  if (op == "Conv2DBackpropInput") return {sizes(p.input), w, dy};
  if (op == "Conv2DBackpropFilter") return {x, sizes(p.filter), dy};
  return {x, w, dy};  // the V2 ops
}

const std::vector<std::string> kOps = {"Conv2D", "Conv2DBackpropInputV2", "Conv2DBackpropFilterV2",
                                       "Conv2DBackpropInput", "Conv2DBackpropFilter"};

void check(const std::string& op, const ConvCase& c, GradCheckOptions options = {}) {
  const ConvProblem p = problem(c);
  const GradCheckResult r = check_gradients(op, op_inputs(op, c, p), ops::conv2d_attr_map(p.options), options);
  INFO(c.describe() << "\n" << r.report());
  CHECK(r.passed);
  // Every input that carries values is checked for real; shape-only inputs are seen to be so.
  for (const auto& in : r.inputs) {
    const bool shape_only = (op == "Conv2DBackpropInputV2" && in.name == "input") ||
                            (op == "Conv2DBackpropFilterV2" && in.name == "filter") || in.dtype == DType::Int32;
    if (options.order == 1) CHECK((in.status == InputCheck::Status::Passed) != shape_only);
  }
}

}  // namespace

TEST_CASE("conv ops pass the gradient check on a covering sweep", "[autodiff][gradcheck][conv]") {
  const auto cases = covering_cases();
  REQUIRE(cases.size() == 18);
  for (const auto& c : cases) {
    for (const auto& op : kOps) check(op, c);
  }
}

TEST_CASE("conv ops pass the second-order check", "[autodiff][gradcheck][conv]") {
  for (const char* padding : {"VALID", "SAME", "EXPLICIT"}) {
    const ConvCase c{padding,       2, padding == std::string("SAME") ? 2 : 1, padding == std::string("EXPLICIT"), 2,
                     DType::Float64};
    for (const char* op : {"Conv2D", "Conv2DBackpropFilterV2", "Conv2DBackpropInputV2"}) check(op, c, {.order = 2});
  }
}

TEST_CASE("conv ops pass in half and bfloat16 against float64, and in fast mode", "[autodiff][gradcheck][conv]") {
  for (DType dtype : {DType::Half, DType::BFloat16}) {
    const ConvCase c{"SAME", 2, 1, false, 2, dtype};
    for (const auto& op : kOps) check(op, c);
  }
  const ConvCase c{"EXPLICIT", 3, 2, true, 2, DType::Float32};
  for (const auto& op : kOps) check(op, c, {.mode = GradCheckMode::Fast});
}

TEST_CASE("conv ops pass the gradient check on every combination", "[autodiff][gradcheck][conv][slow]") {
  for (const auto& c : all_cases()) {
    for (const auto& op : kOps) check(op, c);
  }
}

TEST_CASE("conv gradients forward every attribute of the forward node", "[autodiff][conv]") {
  const ConvCase c{"EXPLICIT", 2, 2, true, 2, DType::Float32};
  ConvProblem p = problem(c);
  p.options.use_cudnn_on_gpu = false;
  Graph g;
  Output x = ops::placeholder(g, c.dtype, p.input), w = ops::placeholder(g, c.dtype, p.filter);
  Output y = ops::conv2d(g, x, w, p.options);
  const int before = g.num_nodes();
  auto d1 = gradients(g, {y}, {x, w});
  auto d2 = gradients(g, {d1[1]}, {x});  // through Conv2DBackpropFilterV2
  const AttrMap expected = ops::conv2d_attr_map(p.options);
  int conv_nodes = 0;
  for (int id = before; id < g.num_nodes(); ++id) {
    const Node& n = g.node(id);
    if (n.op().rfind("Conv2D", 0) != 0) continue;
    ++conv_nodes;
    for (const auto& [name, value] : expected) {
      INFO(n.op() << " attribute " << name);
      CHECK(attr_to_string(n.attrs.at(name)) == attr_to_string(value));
    }
  }
  // BackpropInputV2 and BackpropFilterV2; then, through BackpropFilterV2, BackpropInputV2 for its
  // input and Conv2D for its out_backprop (the OnesLike seed, which depends on x but sends nothing on).
  CHECK(conv_nodes == 4);
}
