// Op cases of the pooling ops and their gradients, from one table of window geometries.
#include "dagrad/core/eager.hpp"
#include "dagrad/ops/cases/case_inputs.hpp"

namespace dagrad::ops::cases {
namespace {

struct Window {
  const char* label;
  Shape input;
  AttrMap attrs;
  bool explicit_padding = false;  // only the max-pool ops take EXPLICIT
  bool large = false;             // crosses the CPU kernels' blocking: forward only
};

AttrMap pool(std::vector<std::int64_t> k, std::vector<std::int64_t> s, const char* padding, const char* format,
             std::vector<std::int64_t> explicit_paddings = {}) {
  AttrMap attrs = {
      {"ksize", k}, {"strides", s}, {"padding", std::string(padding)}, {"data_format", std::string(format)}};
  if (!explicit_paddings.empty()) attrs["explicit_paddings"] = explicit_paddings;
  return attrs;
}

// Every padding and layout, overlapping windows (several gradients into one input) and windows
// wider than their stride; EXPLICIT paddings asymmetric and each below its window size (TF's rule).
std::vector<Window> windows() {
  return {
      {"NHWC VALID 2x2 stride 2", {2, 4, 4, 2}, pool({1, 2, 2, 1}, {1, 2, 2, 1}, "VALID", "NHWC")},
      {"NHWC SAME 3x3 stride 2", {1, 5, 5, 2}, pool({1, 3, 3, 1}, {1, 2, 2, 1}, "SAME", "NHWC")},
      {"NCHW VALID 2x2 stride 1", {1, 2, 4, 5}, pool({1, 1, 2, 2}, {1, 1, 1, 1}, "VALID", "NCHW")},
      {"NHWC EXPLICIT 3x3 stride 2",
       {1, 5, 4, 2},
       pool({1, 3, 3, 1}, {1, 2, 2, 1}, "EXPLICIT", "NHWC", {0, 0, 2, 1, 0, 2, 0, 0}),
       true},
      {"NCHW EXPLICIT 2x3 stride 1x2",
       {1, 2, 4, 5},
       pool({1, 1, 2, 3}, {1, 1, 1, 2}, "EXPLICIT", "NCHW", {0, 0, 0, 0, 1, 0, 2, 1}),
       true},
      {"large NHWC SAME 3x4 stride 1", {3, 8, 9, 5}, pool({1, 3, 4, 1}, {1, 1, 1, 1}, "SAME", "NHWC"), false, true},
      {"large NCHW VALID 2x3 stride 2", {2, 5, 9, 10}, pool({1, 1, 2, 3}, {1, 1, 2, 2}, "VALID", "NCHW"), false, true},
      {"large NHWC EXPLICIT 3x4 stride 2",
       {2, 8, 9, 3},
       pool({1, 3, 4, 1}, {1, 2, 2, 1}, "EXPLICIT", "NHWC", {0, 0, 2, 0, 0, 3, 0, 0}),
       true,
       true},
  };
}

// The shape of the window's pooled output (the incoming gradient of the pooling gradients).
Shape pooled_shape(const Window& w) {
  return run_op("MaxPool", {Tensor::zeros(DType::Float32, w.input)}, w.attrs)[0].shape();
}

// Cases of one op over the windows it accepts. Pooling is piecewise linear: order 1 (MaxPoolGrad
// is checked at order 1 as an op of its own; its gradient is MaxPoolGradGrad), or 0 for an op
// without a gradient. MaxPool and MaxPoolGradGrad select values: exact; the others add in another
// order than the reference.
template <class Inputs>
OpCasesFn cases_of(bool takes_explicit, bool exact, Inputs inputs, bool has_gradient = true) {
  return [takes_explicit, exact, inputs, has_gradient] {
    std::vector<OpCase> cases;
    for (const Window& w : windows())
      if (takes_explicit || !w.explicit_padding)
        cases.push_back({.label = w.label,
                         .inputs = inputs(w),
                         .attrs = w.attrs,
                         .gradient_order = w.large || !has_gradient ? 0 : 1,
                         .exact = exact});
    return cases;
  };
}

}  // namespace

void register_pooling_cases(OpRegistry& r) {
  r.set_cases("MaxPool",
              cases_of(true, true, [](const Window& w) { return std::vector<CaseInput>{distinct(w.input)}; }));
  // orig_input only locates each window's maximum and orig_output is not read: zero Jacobians.
  r.set_cases("MaxPoolGrad", cases_of(true, false, [](const Window& w) {
                return std::vector<CaseInput>{with_zero_jacobian(distinct(w.input)),
                                              with_zero_jacobian(output_of("MaxPool", {0}, w.attrs)),
                                              uniform(pooled_shape(w))};
              }));
  // Sessions make it from MaxPoolGrad -> ReluGrad (no gradient of its own); features of both signs.
  r.set_cases("_MaxPoolGradReluGrad", cases_of(
                                          true, false,
                                          [](const Window& w) {
                                            return std::vector<CaseInput>{distinct(w.input),
                                                                          output_of("MaxPool", {0}, w.attrs),
                                                                          uniform(pooled_shape(w)), uniform(w.input)};
                                          },
                                          false));
  r.set_cases("MaxPoolGradGrad", cases_of(true, true, [](const Window& w) {
                return std::vector<CaseInput>{with_zero_jacobian(distinct(w.input)),
                                              with_zero_jacobian(output_of("MaxPool", {0}, w.attrs)), uniform(w.input)};
              }));
  r.set_cases("AvgPool",
              cases_of(false, false, [](const Window& w) { return std::vector<CaseInput>{uniform(w.input)}; }));
  r.set_cases("AvgPoolGrad", cases_of(false, false, [](const Window& w) {
                return std::vector<CaseInput>{fixed(int32_dims(w.input)), uniform(pooled_shape(w))};
              }));
}

}  // namespace dagrad::ops::cases
