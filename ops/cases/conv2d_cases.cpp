// Op cases of the five convolution ops, from one table of geometries (layout, padding mode,
// strides, dilations) so that each op sees the same ones: the op, its two gradients and the V1 forms.
#include "dagrad/ops/cases/case_inputs.hpp"

namespace dagrad::ops::cases {
namespace {

struct Geometry {
  const char* label;
  Shape input, filter, output;  // output: what Conv2D gives, the out_backprop of the gradients
  AttrMap attrs;
  int gradient_order = 2;  // the conv ops are bilinear: second derivatives are checked
};

std::vector<Geometry> geometries() {
  const auto attrs = [](std::vector<std::int64_t> strides, const char* padding, const char* format,
                        std::vector<std::int64_t> dilations, std::vector<std::int64_t> explicit_paddings = {}) {
    AttrMap a = {{"strides", strides},
                 {"padding", std::string(padding)},
                 {"data_format", std::string(format)},
                 {"dilations", dilations}};
    if (!explicit_paddings.empty()) a["explicit_paddings"] = explicit_paddings;
    return a;
  };
  return {
      {"NHWC VALID", {1, 4, 4, 2}, {2, 2, 2, 3}, {1, 3, 3, 3}, attrs({1, 1, 1, 1}, "VALID", "NHWC", {1, 1, 1, 1})},
      {"NHWC SAME stride 2",
       {2, 4, 5, 2},
       {3, 3, 2, 2},
       {2, 2, 3, 2},
       attrs({1, 2, 2, 1}, "SAME", "NHWC", {1, 1, 1, 1})},
      {"NHWC EXPLICIT dilation 2",
       {1, 5, 5, 1},
       {2, 2, 1, 2},
       {1, 4, 3, 2},
       attrs({1, 1, 1, 1}, "EXPLICIT", "NHWC", {1, 2, 2, 1}, {0, 0, 1, 0, 0, 0, 0, 0})},
      {"NCHW SAME", {1, 2, 4, 4}, {3, 3, 2, 2}, {1, 2, 4, 4}, attrs({1, 1, 1, 1}, "SAME", "NCHW", {1, 1, 1, 1})},
      // Wide enough for the CPU's Winograd tiles (16 channels and filters, stride 1): the case
      // table runs them under every DAGRAD_MAX_CPU_ISA cap. Values only: full Jacobians of its
      // 2304 filter taps took minutes under the sanitizers (conv2d_winograd_test checks that
      // path's gradients by random directions).
      {"NHWC SAME 16 channels",
       {1, 5, 6, 16},
       {3, 3, 16, 16},
       {1, 5, 6, 16},
       attrs({1, 1, 1, 1}, "SAME", "NHWC", {1, 1, 1, 1}),
       0},
      {"NCHW VALID stride 2 grouped",
       {1, 4, 5, 5},
       {2, 2, 2, 2},
       {1, 2, 2, 2},
       attrs({1, 1, 2, 2}, "VALID", "NCHW", {1, 1, 1, 1})},
  };
}

// One case per geometry; `inputs` makes the op's inputs from it.
template <class Inputs>
OpCasesFn cases_of(Inputs inputs) {
  return [inputs] {
    std::vector<OpCase> cases;
    for (const Geometry& g : geometries())
      cases.push_back({.label = g.label,
                       .inputs = inputs(g),
                       .attrs = g.attrs,
                       .gradient_order = g.gradient_order,
                       .tolerance_scale = 4});
    return cases;
  };
}

// A shape-only input (V2's input of the input gradient, filter of the filter gradient): its
// values reach no output, which the gradient checks verify.
CaseInput shape_only(const Shape& shape) { return with_zero_jacobian(uniform(shape)); }

// _FusedConv2D's cases: each geometry with a bias, with and without Relu. The op has no gradient
// (sessions put it in place of chains whose gradients are already built): forward only.
OpCasesFn fused_conv2d_cases() {
  return [] {
    std::vector<OpCase> cases;
    for (const Geometry& g : geometries()) {
      const bool nhwc = std::get<std::string>(g.attrs.at("data_format")) == "NHWC";
      for (const char* fused_ops : {"BiasAdd", "BiasAdd,Relu"}) {
        AttrMap attrs = g.attrs;
        attrs["num_args"] = std::int64_t{1};
        attrs["fused_ops"] = std::string(fused_ops);
        cases.push_back({.label = str_cat(g.label, " ", fused_ops),
                         .inputs = {uniform(g.input), uniform(g.filter), uniform(Shape{g.output[nhwc ? 3 : 1]})},
                         .attrs = attrs,
                         .gradient_order = 0,
                         .tolerance_scale = 4});
      }
    }
    return cases;
  };
}

}  // namespace

void register_conv2d_cases(OpRegistry& r) {
  r.set_cases("Conv2D", cases_of([](const Geometry& g) {
                return std::vector<CaseInput>{uniform(g.input), uniform(g.filter)};
              }));
  r.set_cases("_FusedConv2D", fused_conv2d_cases());
  r.set_cases("Conv2DBackpropInput", cases_of([](const Geometry& g) {
                return std::vector<CaseInput>{fixed(int32_dims(g.input)), uniform(g.filter), uniform(g.output)};
              }));
  r.set_cases("Conv2DBackpropInputV2", cases_of([](const Geometry& g) {
                return std::vector<CaseInput>{shape_only(g.input), uniform(g.filter), uniform(g.output)};
              }));
  r.set_cases("Conv2DBackpropFilter", cases_of([](const Geometry& g) {
                return std::vector<CaseInput>{uniform(g.input), fixed(int32_dims(g.filter)), uniform(g.output)};
              }));
  r.set_cases("Conv2DBackpropFilterV2", cases_of([](const Geometry& g) {
                return std::vector<CaseInput>{uniform(g.input), shape_only(g.filter), uniform(g.output)};
              }));
}

}  // namespace dagrad::ops::cases
