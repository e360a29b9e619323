// CUDA kernels: BiasAdd, BiasAddGrad, Relu, ReluGrad, Softmax, LogSoftmax and the softmax
// cross-entropy losses (registrations; the kernels are in unary.cu, softmax.cu and reduce.cu).
#include "dagrad/backends/cuda/glue.hpp"
#include "dagrad/backends/cuda/launch_ops.hpp"
#include "dagrad/ops/nn_ops.hpp"

namespace dagrad::cuda {
namespace {

// Rows of the last axis: (rows, classes).
std::pair<std::int64_t, std::int64_t> rows_and_classes(const Shape& shape) {
  const std::int64_t classes = shape[shape.rank() - 1];
  return {classes == 0 ? 0 : shape.num_elements() / classes, classes};
}

void bias_add_grad(KernelContext& c) {
  Launch launch(c);
  const Tensor& grad = c.input(0);
  Tensor& out = c.allocate_output(0);
  const ops::ChannelSplit s = ops::split_at_channel(grad.shape(), c.attr<std::string>("data_format"));
  // A Sum over the outer and inner axes of the (outer, channels, inner) view: reduce.cu's fixed tree.
  ReduceIndex index;
  make_reduce_index({s.outer, s.channels, s.inner}, {true, false, true}, &index);
  launch_reduce(elem(out.dtype()), false, grad.raw_data(), out.raw_data(), index, launch.stream);
}

// The sparse labels are checked on the host first, so a bad label is TF's InvalidArgument.
void sparse_xent(KernelContext& c) {
  Launch launch(c);
  const Tensor& logits = c.input(0);
  const Tensor& labels = c.input(1);
  const std::int64_t rows = logits.shape()[0], classes = logits.shape()[1];
  const Tensor host_labels = labels.to(Device::cpu());
  if (labels.dtype() == DType::Int32)
    ops::check_sparse_labels(host_labels.data<std::int32_t>(), rows, classes);
  else
    ops::check_sparse_labels(host_labels.data<std::int64_t>(), rows, classes);
  Tensor& loss = c.allocate_output(0);
  Tensor& backprop = c.allocate_output(1);
  launch_sparse_softmax_xent(elem(logits.dtype()), elem(labels.dtype()), logits.raw_data(), labels.raw_data(),
                             loss.raw_data(), backprop.raw_data(), rows, classes, launch.stream);
}

}  // namespace

void register_nn_kernels(KernelRegistry& r) {
  add_kernels(r, "BiasAdd", kCuda, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      Launch launch(c);
      const Tensor& value = c.input(0);
      Tensor& out = c.allocate_output(0);
      const ops::ChannelSplit s = ops::split_at_channel(value.shape(), c.attr<std::string>("data_format"));
      launch_bias_add(elem(out.dtype()), value.raw_data(), c.input(1).raw_data(), out.raw_data(), out.num_elements(),
                      s.channels, s.inner, launch.stream);
    };
  });
  add_kernels(r, "BiasAddGrad", kCuda, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return [](KernelContext& c) { bias_add_grad(c); }; });
  add_kernels(r, "Relu", kCuda, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      Launch launch(c);
      Tensor& out = c.allocate_output(0);
      launch_relu(elem(out.dtype()), c.input(0).raw_data(), out.raw_data(), out.num_elements(), launch.stream);
    };
  });
  add_kernels(r, "ReluGrad", kCuda, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      Launch launch(c);
      Tensor& out = c.allocate_output(0);
      launch_relu_grad(elem(out.dtype()), c.input(0).raw_data(), c.input(1).raw_data(), out.raw_data(),
                       out.num_elements(), launch.stream);
    };
  });
  for (auto [op, log] : {std::pair{"Softmax", false}, std::pair{"LogSoftmax", true}}) {
    add_kernels(r, op, kCuda, kBackend, kPriority, kSchemaDTypes, [log]<class T>() -> KernelFn {
      return [log](KernelContext& c) {
        Launch launch(c);
        const Tensor& in = c.input(0);
        Tensor& out = c.allocate_output(0);
        const auto [rows, classes] = rows_and_classes(in.shape());
        launch_softmax(elem(out.dtype()), log, in.raw_data(), out.raw_data(), rows, classes, launch.stream);
      };
    });
  }
  add_kernels(r, "SoftmaxCrossEntropyWithLogits", kCuda, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      Launch launch(c);
      const Tensor& logits = c.input(0);
      Tensor& loss = c.allocate_output(0);
      Tensor& backprop = c.allocate_output(1);
      launch_softmax_xent(elem(logits.dtype()), logits.raw_data(), c.input(1).raw_data(), loss.raw_data(),
                          backprop.raw_data(), logits.shape()[0], logits.shape()[1], launch.stream);
    };
  });
  add_kernels(r, "SparseSoftmaxCrossEntropyWithLogits", kCuda, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return [](KernelContext& c) { sparse_xent(c); }; });
}

}  // namespace dagrad::cuda
