// Schema and builder: CollectiveReduceShards.
#include "dagrad/ops/collective_ops.hpp"

#include "dagrad/ops/register.hpp"
#include "dagrad/ops/shape_util.hpp"

namespace dagrad::ops {

void register_collective_ops(OpRegistry& r) {
  r.add(OpDefBuilder("CollectiveReduceShards")
            .input_list("input", "T", "N")
            .output("data", "T")
            .attr_int("N", std::nullopt, 1)
            .attr_type("T", {DType::Float32, DType::Float64})
            .attr_int("group_size", std::nullopt, 1)
            .attr_string("merge_op", {"Add", "Mul", "Min", "Max"}, "Add")
            .attr_string("final_op", {"Id", "Div"}, "Id")
            .shape_fn([](ShapeContext& c) {
              same_shape_inputs(c, "CollectiveReduceShards: every shard must have one shape");
            })
            .cost([](const OpCall& call) {  // one merge per shard after the first, per element
              const auto shards = static_cast<double>(call.inputs.size()) *
                                  static_cast<double>(get_attr<std::int64_t>(call.attrs, "group_size"));
              return (shards - 1) * one_flop_per_output(call);
            })
            .doc("TF's CollectiveReduce over the micro-shards of a data-parallel batch: each of the group's "
                 "group_size processes gives its N shards, and every process gets merge_op over all "
                 "group_size * N of them in global shard order (process 0's first, each process's in input "
                 "order), then final_op (Div: divided by group_size * N). The order is fixed, so the result "
                 "is the same bits for any group_size with the same shards.")
            .build());
}

Output collective_reduce_shards(Graph& g, std::vector<Output> shards, const CollectiveReduceShardsAttrs& a) {
  return g.output(g.add_node("CollectiveReduceShards", std::move(shards),
                             {{"group_size", a.group_size}, {"merge_op", a.merge_op}, {"final_op", a.final_op}}, a.name)
                      .id);
}

}  // namespace dagrad::ops
