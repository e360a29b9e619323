// Schema and builder: CollectiveReduceShards.
#include "dagrad/ops/collective_ops.hpp"

#include "dagrad/ops/register.hpp"
#include "dagrad/ops/shape_util.hpp"

namespace dagrad::ops {
namespace {

// Inputs are shards of num_tensors tensors each; tensor t has one shape in every shard, output t's.
void shard_tensor_shapes(ShapeContext& c) {
  const auto tensors = c.attr<std::int64_t>("num_tensors");
  const std::int64_t inputs = c.num_inputs();
  if (inputs % tensors != 0) {
    invalid_argument("CollectiveReduceShards: ", inputs, " inputs do not make whole shards of num_tensors=", tensors,
                     " tensors");
  }
  for (std::int64_t t = 0; t < tensors; ++t) {
    const Shape& shape = c.input_shape(static_cast<int>(t));
    for (std::int64_t i = t + tensors; i < inputs; i += tensors) {
      if (c.input_shape(static_cast<int>(i)) != shape) {
        invalid_argument("CollectiveReduceShards: tensor ", t, " of shard ", i / tensors, " has shape ",
                         c.input_shape(static_cast<int>(i)).to_string(), " but ", shape.to_string(),
                         " in shard 0; every shard must have the same shapes");
      }
    }
    c.set_output(static_cast<int>(t), shape);
  }
}

}  // namespace

void register_collective_ops(OpRegistry& r) {
  r.add(OpDefBuilder("CollectiveReduceShards")
            .input_list("input", "T", "N")
            .output_list("data", "T", "num_tensors")
            .attr_int("N", std::nullopt, 1)
            .attr_type("T", {DType::Float32, DType::Float64})
            .attr_int("num_tensors", 1, 1)
            .attr_int("group_size", std::nullopt, 1)
            .attr_string("merge_op", {"Add", "Mul", "Min", "Max"}, "Add")
            .attr_string("final_op", {"Id", "Div"}, "Id")
            .shape_fn(shard_tensor_shapes)
            .start_early()                  // the exchange overlaps the nodes after it (the MPI kernel defers its end)
            .cost([](const OpCall& call) {  // one merge per shard after the first, per element
              const auto tensors = get_attr<std::int64_t>(call.attrs, "num_tensors");
              const auto shards = static_cast<double>(static_cast<std::int64_t>(call.inputs.size()) / tensors) *
                                  static_cast<double>(get_attr<std::int64_t>(call.attrs, "group_size"));
              double elements = 0;
              for (const Shape& s : call.outputs) elements += static_cast<double>(s.num_elements());
              return (shards - 1) * elements;
            })
            .doc("TF's CollectiveReduce over the micro-shards of a data-parallel batch: each of the group's "
                 "group_size processes gives its shards, each of num_tensors tensors (input i is shard "
                 "i / num_tensors, tensor i % num_tensors: several tensors fuse into one exchange), and "
                 "every process gets, for each tensor, merge_op over all the group's shards in global shard "
                 "order (process 0's first, each process's in input order), then final_op (Div: divided by "
                 "the group's shard count). The order is fixed, so the result is the same bits for any "
                 "group_size with the same shards. Sessions run it as soon as its inputs are ready, and "
                 "its exchange goes on while the nodes after it run.")
            .build());
}

Output collective_reduce_shards(Graph& g, std::vector<Output> shards, const CollectiveReduceShardsAttrs& a) {
  return g.output(g.add_node("CollectiveReduceShards", std::move(shards),
                             {{"group_size", a.group_size}, {"merge_op", a.merge_op}, {"final_op", a.final_op}}, a.name)
                      .id);
}

std::vector<Output> collective_reduce_shards(Graph& g, const std::vector<std::vector<Output>>& shards,
                                             const CollectiveReduceShardsAttrs& a) {
  if (shards.empty() || shards.front().empty()) {
    invalid_argument("collective_reduce_shards: expected at least one shard of at least one tensor");
  }
  const std::size_t tensors = shards.front().size();
  std::vector<Output> inputs;
  for (const auto& shard : shards) {
    if (shard.size() != tensors) {
      invalid_argument("collective_reduce_shards: a shard has ", shard.size(), " tensors, the first ", tensors);
    }
    inputs.insert(inputs.end(), shard.begin(), shard.end());
  }
  const Node& n = g.add_node("CollectiveReduceShards", std::move(inputs),
                             {{"num_tensors", static_cast<std::int64_t>(tensors)},
                              {"group_size", a.group_size},
                              {"merge_op", a.merge_op},
                              {"final_op", a.final_op}},
                             a.name);
  std::vector<Output> outputs;
  for (int t = 0; t < n.num_outputs(); ++t) outputs.push_back(g.output(n.id, t));
  return outputs;
}

}  // namespace dagrad::ops
