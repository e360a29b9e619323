// Op cases of the pooling ops and their gradients, from one table of window geometries.
#include "dagrad/ops/cases/case_inputs.hpp"

namespace dagrad::ops::cases {
namespace {

struct Window {
  const char* label;
  Shape input, output;
  AttrMap attrs;
  bool explicit_padding = false;  // only the max-pool ops take EXPLICIT
};

AttrMap pool(std::vector<std::int64_t> k, std::vector<std::int64_t> s, const char* padding, const char* format) {
  return {{"ksize", k}, {"strides", s}, {"padding", std::string(padding)}, {"data_format", std::string(format)}};
}

std::vector<Window> windows() {
  AttrMap explicit_attrs = pool({1, 3, 3, 1}, {1, 2, 2, 1}, "EXPLICIT", "NHWC");
  explicit_attrs["explicit_paddings"] = std::vector<std::int64_t>{0, 0, 2, 1, 0, 2, 0, 0};
  return {
      {"NHWC VALID 2x2 stride 2", {2, 4, 4, 2}, {2, 2, 2, 2}, pool({1, 2, 2, 1}, {1, 2, 2, 1}, "VALID", "NHWC")},
      {"NHWC SAME 3x3 stride 2", {1, 5, 5, 2}, {1, 3, 3, 2}, pool({1, 3, 3, 1}, {1, 2, 2, 1}, "SAME", "NHWC")},
      {"NCHW VALID 2x2 stride 1", {1, 2, 4, 5}, {1, 2, 3, 4}, pool({1, 1, 2, 2}, {1, 1, 1, 1}, "VALID", "NCHW")},
      {"NHWC EXPLICIT 3x3 stride 2", {1, 5, 4, 2}, {1, 3, 2, 2}, explicit_attrs, true},
  };
}

// Cases of one op over the windows it accepts. Pooling is piecewise linear: order 1 (MaxPoolGrad
// is checked at order 1 as an op of its own; its gradient is MaxPoolGradGrad).
template <class Inputs>
OpCasesFn cases_of(bool takes_explicit, Inputs inputs) {
  return [takes_explicit, inputs] {
    std::vector<OpCase> cases;
    for (const Window& w : windows())
      if (takes_explicit || !w.explicit_padding)
        cases.push_back({.label = w.label, .inputs = inputs(w), .attrs = w.attrs});
    return cases;
  };
}

}  // namespace

void register_pooling_cases(OpRegistry& r) {
  r.set_cases("MaxPool", cases_of(true, [](const Window& w) { return std::vector<CaseInput>{distinct(w.input)}; }));
  // orig_input only locates each window's maximum: a zero Jacobian, held constant.
  r.set_cases("MaxPoolGrad", cases_of(true, [](const Window& w) {
                CaseInput x = distinct(w.input);
                x.differentiable = false;
                return std::vector<CaseInput>{x, output_of("MaxPool", {0}, w.attrs), uniform(w.output)};
              }));
  r.set_cases("MaxPoolGradGrad", cases_of(true, [](const Window& w) {
                CaseInput x = distinct(w.input);
                x.differentiable = false;
                return std::vector<CaseInput>{x, output_of("MaxPool", {0}, w.attrs), uniform(w.input)};
              }));
  r.set_cases("AvgPool", cases_of(false, [](const Window& w) { return std::vector<CaseInput>{uniform(w.input)}; }));
  r.set_cases("AvgPoolGrad", cases_of(false, [](const Window& w) {
                return std::vector<CaseInput>{fixed(int32_dims(w.input)), uniform(w.output)};
              }));
}

}  // namespace dagrad::ops::cases
