// The gradient checker on cuda:0: the symbolic gradients and the float64 finite differences both
// run on the GPU's kernels (dagrad's own conv kernels, and cuDNN's where use_cudnn_on_gpu lets
// the "cudnn" backend use it), for the conv ops in both layouts and every padding mode, and for
// the CNN's other ops.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include <dagrad/autodiff/gradient_checker.hpp>
#include <dagrad/dagrad.hpp>
#include <dagrad/ops/conv2d.hpp>
#include <dagrad/ops/conv_geometry.hpp>

#include "support/cuda_testing.hpp"

namespace {

using namespace dagrad;

GradCheckOptions on_cuda(const std::string& backend) { return {.backend = backend, .device = Device::cuda()}; }

// Passes, with every value-carrying input checked for real (shape-only inputs are held constant).
void require_passed(const GradCheckResult& r, const std::vector<std::string>& shape_only = {}) {
  INFO(r.report());
  CHECK(r.passed);
  for (const InputCheck& in : r.inputs) {
    const bool held =
        in.dtype == DType::Int32 || std::find(shape_only.begin(), shape_only.end(), in.name) != shape_only.end();
    CHECK((in.status == InputCheck::Status::Passed) != held);
  }
}

struct ConvCase {
  const char* format;
  const char* padding;
  std::int64_t stride, dilation, groups;
  DType dtype;
};

}  // namespace

TEST_CASE("cuda conv ops pass the gradient checker on the device, on cuDNN and on dagrad's kernels",
          "[cuda][gradcheck][conv]") {
  DAGRAD_SKIP_WITHOUT_CUDA_DEVICE();
  const ConvCase cases[] = {{"NHWC", "SAME", 2, 1, 1, DType::Float64},
                            {"NCHW", "EXPLICIT", 1, 2, 2, DType::Float32},
                            {"NHWC", "VALID", 3, 1, 2, DType::Float32},
                            {"NCHW", "SAME", 2, 2, 1, DType::Float64}};
  for (const ConvCase& c : cases) {
    const bool nchw = std::string(c.format) == "NCHW";
    const std::int64_t depth = 2 * c.groups, s = c.stride, d = c.dilation;
    ops::Conv2DOptions o{.padding = c.padding, .data_format = c.format};
    o.strides = nchw ? std::vector<std::int64_t>{1, 1, s, s} : std::vector<std::int64_t>{1, s, s, 1};
    o.dilations = nchw ? std::vector<std::int64_t>{1, 1, d, d} : std::vector<std::int64_t>{1, d, d, 1};
    if (std::string(c.padding) == "EXPLICIT") {
      o.explicit_paddings =
          nchw ? std::vector<std::int64_t>{0, 0, 0, 0, 1, 2, 2, 0} : std::vector<std::int64_t>{0, 0, 1, 2, 2, 0, 0, 0};
    }
    const Shape input = nchw ? Shape{1, depth, 6, 7} : Shape{1, 6, 7, depth}, filter{2, 3, 2, 2 * c.groups};
    const auto g =
        ops::conv2d_geometry("Conv2D", ops::parse_conv2d_attrs("Conv2D", ops::conv2d_attr_map(o)), input, filter);
    const Tensor x = random_tensor(c.dtype, input, 1), w = random_tensor(c.dtype, filter, 2);
    const Tensor dy = random_tensor(c.dtype, Shape(g.output_dims()), 3);
    // The "cudnn" backend: cuDNN where use_cudnn_on_gpu is true (and cuDNN can do the case
    // deterministically), dagrad's own kernels where it is false.
    for (bool use_cudnn : {true, false}) {
      o.use_cudnn_on_gpu = use_cudnn;
      const AttrMap attrs = ops::conv2d_attr_map(o);
      const GradCheckOptions options = on_cuda("cudnn");
      INFO(c.format << " " << c.padding << " stride " << s << " dilation " << d << " groups " << c.groups << " "
                    << dtype_name(c.dtype) << " use_cudnn_on_gpu " << use_cudnn);
      require_passed(check_gradients("Conv2D", {x, w}, attrs, options));
      require_passed(check_gradients("Conv2DBackpropFilterV2", {x, w, dy}, attrs, options), {"filter"});
      require_passed(check_gradients("Conv2DBackpropInputV2", {x, w, dy}, attrs, options), {"input"});
    }
  }
}

TEST_CASE("cuda nn ops pass the gradient checker on the device", "[cuda][gradcheck]") {
  DAGRAD_SKIP_WITHOUT_CUDA_DEVICE();
  auto rnd = [](Shape shape, std::uint64_t seed) { return random_tensor(DType::Float64, shape, seed); };
  auto pool = [](std::vector<std::int64_t> k, std::vector<std::int64_t> s, const char* padding) {
    return AttrMap{{"ksize", k}, {"strides", s}, {"padding", std::string(padding)}};
  };
  const GradCheckOptions options = on_cuda("");
  require_passed(check_gradients("Relu", {rnd({3, 4}, 1)}, {}, options));
  require_passed(check_gradients("BiasAdd", {rnd({2, 3, 2, 3}, 2), rnd({3}, 3)}, {}, options));
  require_passed(check_gradients("MatMul", {rnd({3, 4}, 4), rnd({4, 2}, 5)}, {}, options));
  require_passed(
      check_gradients("MaxPool", {rnd({2, 4, 4, 2}, 6)}, pool({1, 2, 2, 1}, {1, 2, 2, 1}, "VALID"), options));
  require_passed(check_gradients("AvgPool", {rnd({1, 5, 5, 2}, 7)}, pool({1, 3, 3, 1}, {1, 2, 2, 1}, "SAME"), options));
  require_passed(check_gradients("Softmax", {rnd({3, 5}, 8)}, {}, options));
  require_passed(check_gradients("SparseSoftmaxCrossEntropyWithLogits",
                                 {rnd({3, 4}, 9), Tensor::from_values<std::int32_t>(Shape{3}, {0, 3, 1})}, {},
                                 options));
  require_passed(
      check_gradients("Mean", {rnd({3, 4}, 10), Tensor::from_values<std::int32_t>(Shape{1}, {1})}, {}, options));
}
