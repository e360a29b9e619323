// The CUDA kernel of CollectiveReduceShards (a group of one: the shards folded in order on the
// host) against the reference bit for bit, every merge op and both final ops ("[cuda]", skipped
// with a message without a device).
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "support/cuda_testing.hpp"

using namespace dagrad;
using namespace dagrad::testing;

TEST_CASE("cuda CollectiveReduceShards folds a group of one's shards as the reference", "[cuda]") {
  DAGRAD_SKIP_WITHOUT_CUDA_DEVICE();
  std::mt19937 rng(41);
  for (DType dtype : {DType::Float32, DType::Float64}) {
    // Three shards of two tensors: input k * 2 + t is tensor t of shard k.
    std::vector<Tensor> shards;
    for (int k = 0; k < 3; ++k)
      for (const Shape& shape : {Shape{4, 5}, Shape{7}}) shards.push_back(random_tensor(dtype, shape, rng));
    for (const char* merge : {"Add", "Mul", "Min", "Max"}) {
      for (const char* final_op : {"Id", "Div"}) {
        INFO(dtype_name(dtype) << " " << merge << " " << final_op);
        const AttrMap attrs{{"num_tensors", std::int64_t{2}},
                            {"group_size", std::int64_t{1}},
                            {"merge_op", std::string(merge)},
                            {"final_op", std::string(final_op)}};
        const std::vector<Tensor> got = run_on_cuda("CollectiveReduceShards", shards, attrs);
        const std::vector<Tensor> want = run_reference("CollectiveReduceShards", shards, attrs);
        REQUIRE(got.size() == 2);
        for (std::size_t t = 0; t < 2; ++t) CHECK(bitwise_equal(got[t], want[t]));
      }
    }
  }
}
