// Op cases of CollectiveReduceShards in a group of one process (a group of several needs an MPI
// job: tests/mpi runs those). Each merge is one rounding per shard, in shard order, as the
// reference does it, so every backend must match it exactly. Not differentiated (no gradient).
#include "dagrad/ops/cases/case_inputs.hpp"

namespace dagrad::ops::cases {

void register_collective_cases(OpRegistry& r) {
  r.set_cases("CollectiveReduceShards", [] {
    const auto shards = [](int count, Shape shape) { return std::vector<CaseInput>(count, uniform(shape, -4, 4)); };
    std::vector<OpCase> cases;
    for (const char* merge : {"Add", "Mul", "Min", "Max"}) {
      for (const char* final_op : {"Id", "Div"}) {
        cases.push_back({.label = std::string(merge) + "/" + final_op + " four [3,5]",
                         .inputs = shards(4, {3, 5}),
                         .attrs = {{"group_size", std::int64_t{1}},
                                   {"merge_op", std::string(merge)},
                                   {"final_op", std::string(final_op)}},
                         .gradient_order = 0,
                         .exact = true});
      }
    }
    cases.push_back({.label = "one shard, scalar",
                     .inputs = shards(1, {}),
                     .attrs = {{"group_size", std::int64_t{1}}},
                     .gradient_order = 0,
                     .exact = true});
    // Three tensors a shard (fused gradients), in two shards: input k * 3 + t is shard k's tensor t.
    cases.push_back(
        {.label = "fused Add/Div two shards of [3,5], [7], []",
         .inputs = {uniform({3, 5}, -4, 4), uniform({7}, -4, 4), uniform({}, -4, 4), uniform({3, 5}, -4, 4),
                    uniform({7}, -4, 4), uniform({}, -4, 4)},
         .attrs = {{"group_size", std::int64_t{1}}, {"num_tensors", std::int64_t{3}}, {"final_op", std::string("Div")}},
         .gradient_order = 0,
         .exact = true});
    cases.push_back({.label = "large Add/Div eight [37,90]",
                     .inputs = shards(8, {37, 90}),
                     .attrs = {{"group_size", std::int64_t{1}}, {"final_op", std::string("Div")}},
                     .gradient_order = 0,
                     .exact = true});
    return cases;
  });
}

}  // namespace dagrad::ops::cases
