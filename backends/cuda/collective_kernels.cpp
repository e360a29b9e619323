// CUDA kernel of CollectiveReduceShards for a group of one process (a CUDA session of a
// single-process data-parallel graph): the shards staged to the host and folded in shard order
// there (ops/shard_reduction.hpp: the op's definition, so the bits of every other backend), the
// results copied back. A larger group needs the MPI backend, whose exchange runs on host memory.
#include "dagrad/backends/cuda/glue.hpp"
#include "dagrad/ops/shard_reduction.hpp"

namespace dagrad::cuda {

void register_collective_kernels(KernelRegistry& r) {
  add_kernels(r, "CollectiveReduceShards", kCuda, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      const auto group_size = c.attr<std::int64_t>("group_size");
      if (group_size != 1) {
        fail(Code::Unimplemented, "CollectiveReduceShards: group_size ", group_size,
             " needs the MPI backend (build with DAGRAD_MPI and create a dagrad::mpi::World)");
      }
      Launch launch(c);
      const int tensors = c.num_outputs();
      const int shards = c.num_inputs() / tensors;
      std::vector<Tensor> host;  // input k * tensors + t: tensor t of shard k
      for (int i = 0; i < c.num_inputs(); ++i) host.push_back(c.input(i).to(Device::cpu()));
      for (int t = 0; t < tensors; ++t) {
        Tensor out = Tensor::empty(c.output_dtype(t), host[static_cast<std::size_t>(t)].shape(), Device::cpu());
        ops::fold_shards_in_order<T>(
            [&](std::int64_t k) { return host[static_cast<std::size_t>(k * tensors + t)].template data<T>(); }, shards,
            out.num_elements(), ops::merge_op_from_name(c.attr<std::string>("merge_op")),
            c.attr<std::string>("final_op") == "Div", out.data<T>());
        c.set_output(t, out.to(c.device()));
      }
    };
  });
}

}  // namespace dagrad::cuda
