// Reference kernel of CollectiveReduceShards for a group of one process: each tensor's shards
// folded in order (ops/shard_reduction.hpp), which is the definition of the op's result. A larger group
// needs the MPI backend (backends/mpi), registered by dagrad::mpi::World.
#include "dagrad/backends/reference/register.hpp"
#include "dagrad/ops/shard_reduction.hpp"

namespace dagrad::reference {

void register_collective_kernels(KernelRegistry& r) {
  add_kernels(r, "CollectiveReduceShards", Device::Kind::CPU, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn {
                return [](KernelContext& c) {
                  const auto group_size = c.attr<std::int64_t>("group_size");
                  if (group_size != 1) {
                    fail(Code::Unimplemented, "CollectiveReduceShards: group_size ", group_size,
                         " needs the MPI backend (build with DAGRAD_MPI and create a dagrad::mpi::World)");
                  }
                  // Output t: tensor t of every shard (input k * tensors + t), folded in shard order.
                  const int tensors = c.num_outputs();
                  const int shards = c.num_inputs() / tensors;
                  for (int t = 0; t < tensors; ++t) {
                    Tensor& out = c.allocate_output(t);
                    ops::fold_shards_in_order<T>(
                        [&](std::int64_t k) { return c.input(static_cast<int>(k) * tensors + t).data<T>(); }, shards,
                        out.num_elements(), ops::merge_op_from_name(c.attr<std::string>("merge_op")),
                        c.attr<std::string>("final_op") == "Div", out.data<T>());
                  }
                };
              });
}

}  // namespace dagrad::reference
