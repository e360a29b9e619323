// CUDA kernels: Add/AddV2/Sub/Mul with broadcasting, Neg, Reciprocal, AddN, Sum, Mean.
#include <algorithm>
#include <memory>
#include <vector>

#include "dagrad/backends/cuda/glue.hpp"
#include "dagrad/backends/cuda/launch_ops.hpp"

namespace dagrad::cuda {
namespace {

std::vector<std::int64_t> dims_of(const Shape& s) {
  std::vector<std::int64_t> d;
  for (int i = 0; i < s.rank(); ++i) d.push_back(s[i]);
  return d;
}

void binary(KernelContext& c, BinaryOp op) {
  Launch launch(c);
  const Tensor& x = c.input(0);
  const Tensor& y = c.input(1);
  Tensor& out = c.allocate_output(0);
  BroadcastIndex index;
  if (!make_broadcast_index(dims_of(out.shape()), dims_of(x.shape()), dims_of(y.shape()), &index)) {
    fail(Code::Unimplemented, c.op_name(), ": broadcasting ", x.shape().to_string(), " with ", y.shape().to_string(),
         " needs more than ", kMaxRank, " distinct axes on CUDA");
  }
  launch_binary(op, elem(out.dtype()), x.raw_data(), y.raw_data(), out.raw_data(), index, launch.stream);
}

void reduce(KernelContext& c, bool mean) {
  Launch launch(c);
  const Tensor& in = c.input(0);
  std::vector<bool> mask(static_cast<std::size_t>(in.rank()), false);
  for (auto a : c.input(1).to_int64_vector()) mask[static_cast<std::size_t>(a < 0 ? a + in.rank() : a)] = true;
  Tensor& out = c.allocate_output(0);
  ReduceIndex index;
  if (!make_reduce_index(dims_of(in.shape()), mask, &index)) {
    fail(Code::Unimplemented, c.op_name(), ": reducing ", in.shape().to_string(), " needs more than ", kMaxRank,
         " distinct axes on CUDA");
  }
  launch_reduce(elem(in.dtype()), mean, in.raw_data(), out.raw_data(), index, launch.stream);
}

void add_n(KernelContext& c) {
  Launch launch(c);
  Tensor& out = c.allocate_output(0);
  const ElemType type = elem(out.dtype());
  const std::int64_t count = out.num_elements();
  // Inputs beyond one chunk carry the running sum in the accumulator type between launches,
  // so the result is the same left-to-right sum whatever N is.
  std::unique_ptr<Buffer> acc[2];
  const int n = c.num_inputs();
  for (int first = 0; first < n; first += kAddNChunk) {
    AddNChunk chunk;
    chunk.count = std::min(kAddNChunk, n - first);
    for (int k = 0; k < chunk.count; ++k) chunk.inputs[k] = c.input(first + k).raw_data();
    const int step = first / kAddNChunk;
    if (first > 0) chunk.acc_in = acc[(step + 1) % 2]->data();
    if (first + chunk.count < n) {
      auto& next = acc[step % 2];
      if (!next) {
        const auto bytes = checked_mul(count, add_n_accumulator_bytes(type));
        next = std::make_unique<Buffer>(allocator_for(c.device()), static_cast<std::size_t>(bytes));
      }
      chunk.acc_out = next->data();
    } else {
      chunk.out = out.raw_data();
    }
    launch_add_n(type, chunk, count, launch.stream);
  }
}

void reciprocal(KernelContext& c) {
  Launch launch(c);
  Tensor& out = c.allocate_output(0);
  const ElemType type = elem(out.dtype());
  if (is_floating(out.dtype())) {
    launch_reciprocal(type, c.input(0).raw_data(), out.raw_data(), out.num_elements(), nullptr, launch.stream);
    return;
  }
  // Integer 1/0 is an error, as in the reference: the kernel raises a device flag that is read
  // back here (this waits for the stream; integer Reciprocal is rare and small).
  Buffer flag(allocator_for(c.device()), sizeof(std::int32_t));
  launch_fill(ElemType::Int32, flag.data(), 1, 0.0, launch.stream);
  launch_reciprocal(type, c.input(0).raw_data(), out.raw_data(), out.num_elements(), static_cast<int*>(flag.data()),
                    launch.stream);
  std::int32_t zero = 0;
  device_runtime(c.device()).copy(&zero, Device::cpu(), flag.data(), c.device(), sizeof zero);
  if (zero != 0) invalid_argument("Reciprocal: Integer division by zero");
}

}  // namespace

void register_math_kernels(KernelRegistry& r) {
  for (auto [op, kind] : {std::pair{"Add", BinaryOp::Add}, std::pair{"AddV2", BinaryOp::Add},
                          std::pair{"Sub", BinaryOp::Sub}, std::pair{"Mul", BinaryOp::Mul}}) {
    add_kernels(r, op, kCuda, kBackend, kPriority, kSchemaDTypes,
                [kind]<class T>() -> KernelFn { return [kind](KernelContext& c) { binary(c, kind); }; });
  }
  add_kernels(r, "Neg", kCuda, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      Launch launch(c);
      Tensor& out = c.allocate_output(0);
      launch_neg(elem(out.dtype()), c.input(0).raw_data(), out.raw_data(), out.num_elements(), launch.stream);
    };
  });
  add_kernels(r, "Reciprocal", kCuda, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return [](KernelContext& c) { reciprocal(c); }; });
  add_kernels(r, "AddN", kCuda, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return [](KernelContext& c) { add_n(c); }; });
  add_kernels(r, "Sum", kCuda, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return [](KernelContext& c) { reduce(c, false); }; });
  add_kernels(r, "Mean", kCuda, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return [](KernelContext& c) { reduce(c, true); }; });
}

}  // namespace dagrad::cuda
