// Sessions fuse Conv2D -> BiasAdd [-> Relu] into _FusedConv2D and MaxPoolGrad -> ReluGrad into
// _MaxPoolGradReluGrad (ops/fusions.cpp): the fused plan gives the unfused plan's results bit for
// bit (forward and gradients, every float dtype, both layouts), runs the fused op in place of the
// chain, and leaves chains alone where the inside is fetched or read elsewhere.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <dagrad/autodiff/gradients.hpp>
#include <dagrad/dagrad.hpp>

namespace {

using namespace dagrad;

Tensor random_tensor(const Shape& shape, DType dtype, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(static_cast<std::size_t>(shape.num_elements()));
  for (auto& x : v) x = u(rng);
  return Tensor::from_values<double>(shape, v).cast(dtype);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

struct Chain {
  Graph g;
  Output x, conv, biased, out, loss;
  std::vector<Output> grads;  // d loss / d (x, filter, bias)

  Chain(DType dtype, const std::string& format, bool relu) {
    const bool nhwc = format == "NHWC";
    x = ops::placeholder(g, dtype, nhwc ? Shape{2, 6, 5, 3} : Shape{2, 3, 6, 5}, "x");
    Output filter = ops::constant(g, random_tensor(Shape{3, 3, 3, 4}, dtype, 2), "filter");
    Output bias = ops::constant(g, random_tensor(Shape{4}, dtype, 3), "bias");
    conv = ops::conv2d(g, x, filter, {.strides = {1, 1, 1, 1}, .padding = "SAME", .data_format = format});
    biased = ops::bias_add(g, conv, bias, format);
    out = relu ? ops::relu(g, biased) : biased;
    loss = ops::reduce_sum_all(g, ops::mul(g, out, out));
    grads = gradients(g, {loss}, {x, filter, bias});
  }
};

std::vector<std::string> ops_run(Session& s, const FeedMap& feeds, const std::vector<Output>& fetches) {
  RunStats stats;
  s.run(feeds, fetches, {}, &stats);
  std::vector<std::string> names;
  for (const auto& node : stats.profile.nodes) names.push_back(node.op);
  return names;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Runs g's fetches fused and with rewrite = false: they must agree bit for bit, and only the fused
// plan may run `fused_op`. Returns the ops the fused plan ran.
std::vector<std::string> fused_ops_of(const Graph& g, const FeedMap& feeds, const std::vector<Output>& fetches,
                                      const std::string& fused_op) {
  Session fused(g, {.profile = true});
  Session plain(g, {.profile = true, .rewrite = false});
  const auto a = fused.run(feeds, fetches);
  const auto b = plain.run(feeds, fetches);
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(same_bits(a[i], b[i]));
  CHECK_FALSE(contains(ops_run(plain, feeds, fetches), fused_op));
  const auto ops = ops_run(fused, feeds, fetches);
  CHECK(contains(ops, fused_op));
  return ops;
}

}  // namespace

TEST_CASE("Fused Conv2D + BiasAdd [+ Relu] equals the unfused chain bit for bit", "[session][fusion]") {
  for (DType dtype : {DType::Float32, DType::Float64, DType::Half, DType::BFloat16}) {
    for (const std::string format : {"NHWC", "NCHW"}) {
      for (bool relu : {true, false}) {
        INFO(dtype_name(dtype) << " " << format << (relu ? " with Relu" : ""));
        Chain c(dtype, format, relu);
        const FeedMap feeds{{c.x, random_tensor(c.x.shape(), dtype, 1)}};
        std::vector<Output> fetches{c.out, c.loss};
        fetches.insert(fetches.end(), c.grads.begin(), c.grads.end());
        const auto fused_ops = fused_ops_of(c.g, feeds, fetches, "_FusedConv2D");
        CHECK_FALSE(contains(fused_ops, "Conv2D"));
        CHECK_FALSE(contains(fused_ops, "BiasAdd"));
        CHECK_FALSE(contains(fused_ops, "Relu"));
        // The fused node stands for the chain's last node, with the conv's cost and path.
        RunStats stats;
        Session(c.g, {.profile = true}).run(feeds, fetches, {}, &stats);
        for (const NodeTiming& t : stats.profile.nodes) {
          if (t.op != "_FusedConv2D") continue;
          CHECK(t.node == c.out.node);
          CHECK(t.name == c.out.op().name);
          CHECK(t.flops == 2.0 * (2 * 6 * 5 * 4) * 27);
          CHECK_FALSE(t.path.empty());
        }
      }
    }
  }
}

TEST_CASE("A chain whose inside is fetched or read elsewhere is not fused", "[session][fusion]") {
  Chain c(DType::Float32, "NHWC", true);
  const FeedMap feeds{{c.x, random_tensor(c.x.shape(), DType::Float32, 1)}};
  Session s(c.g, {.profile = true});
  // The conv's output fetched: Conv2D must run; BiasAdd + Relu alone match no fusion.
  CHECK(contains(ops_run(s, feeds, {c.out, c.conv}), "Conv2D"));
  // BiasAdd's output fetched: Conv2D + BiasAdd fuse, Relu runs on its own.
  const auto ops = ops_run(s, feeds, {c.out, c.biased});
  CHECK(contains(ops, "_FusedConv2D"));
  CHECK(contains(ops, "Relu"));
  // The BiasAdd read by a second node: only Conv2D + BiasAdd fuse.
  Output twice = ops::add(c.g, c.out, c.biased);
  const auto ops2 = ops_run(s, feeds, {twice});
  CHECK(contains(ops2, "_FusedConv2D"));
  CHECK(contains(ops2, "Relu"));
  // The conv's input fed as an intermediate is fine; feeding the conv's output cuts the chain.
  CHECK_FALSE(
      contains(ops_run(s, {{c.x, feeds.at(c.x)}, {c.conv, random_tensor(c.conv.shape(), DType::Float32, 4)}}, {c.out}),
               "_FusedConv2D"));
}

TEST_CASE("The backward pass of Relu -> MaxPool runs as _MaxPoolGradReluGrad, bit for bit", "[session][fusion]") {
  for (DType dtype : {DType::Float32, DType::Float64, DType::Half, DType::BFloat16}) {
    for (const std::string format : {"NHWC", "NCHW"}) {
      for (const char* padding : {"VALID", "SAME"}) {
        INFO(dtype_name(dtype) << " " << format << " " << padding);
        const bool nhwc = format == "NHWC";
        Graph g;
        Output x = ops::placeholder(g, dtype, nhwc ? Shape{2, 7, 6, 3} : Shape{2, 3, 7, 6}, "x");
        Output activated = ops::relu(g, x);
        const std::vector<std::int64_t> window =
            nhwc ? std::vector<std::int64_t>{1, 2, 2, 1} : std::vector<std::int64_t>{1, 1, 2, 2};
        Output pooled = ops::max_pool(g, activated,
                                      {.ksize = window, .strides = window, .padding = padding, .data_format = format});
        Output loss = ops::reduce_sum_all(g, ops::mul(g, pooled, pooled));
        const std::vector<Output> fetches{loss, gradients(g, {loss}, {x})[0]};
        const FeedMap feeds{{x, random_tensor(x.shape(), dtype, 7)}};
        const auto fused_ops = fused_ops_of(g, feeds, fetches, "_MaxPoolGradReluGrad");
        CHECK_FALSE(contains(fused_ops, "MaxPoolGrad"));
        CHECK_FALSE(contains(fused_ops, "ReluGrad"));
        // Fetching MaxPoolGrad's output keeps the pair apart.
        const Output pool_grad = g.node(fetches[1].node).inputs[0];
        REQUIRE(pool_grad.op().op() == "MaxPoolGrad");
        Session fused(g, {.profile = true});
        const auto apart = ops_run(fused, feeds, {fetches[1], pool_grad});
        CHECK(contains(apart, "MaxPoolGrad"));
        CHECK(contains(apart, "ReluGrad"));
      }
    }
  }
}
