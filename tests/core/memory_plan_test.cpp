// The session's memory: a kernel writes its output over an input that it reads last and that no
// one else holds (KernelContext::forward_input_or_allocate_output), never over a fed tensor, a
// fetched value, a Const or a variable; in-place results equal allocated ones bit for bit; and a
// training step after the first takes no fresh block from the system.
#include <catch2/catch.hpp>

#include <cstring>
#include <functional>

#include <dagrad/dagrad.hpp>

#include "dagrad/core/random.hpp"
#include "support/small_cnn.hpp"

using namespace dagrad;

namespace {

// Values in [-2, 2], away from zero (Reciprocal), in any dtype.
Tensor random_values(DType dtype, const Shape& shape, std::uint64_t seed) {
  Tensor t = Tensor::empty(DType::Float64, shape);
  SplitMix64 rng(seed);
  for (std::int64_t i = 0; i < t.num_elements(); ++i) {
    const double v = 0.25 + 1.75 * rng.uniform();
    t.data<double>()[i] = rng.uniform() < 0.5 ? -v : v;
  }
  return t.cast(dtype);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

std::int64_t allocations(const RunStats& stats) { return stats.fresh_allocations + stats.reused_allocations; }

// An op applied to `n`, a value the run computes (so that the op may write over it), and to fed
// operands made by the graph builder.
using Apply = std::function<Output(Graph&, Output n, DType)>;

struct InPlaceCase {
  const char* name;
  Shape shape;  // n's
  Apply apply;
  std::vector<DType> dtypes;
};

// Placeholders fed by `feeds_of` below: their names say what they hold.
Output fed(Graph& g, const char* name, DType dtype, const Shape& shape) {
  return ops::placeholder(g, dtype, shape, name);
}

std::vector<InPlaceCase> in_place_cases() {
  const Shape s{3, 130, 129};  // 50,310 elements: several blocks, chunks and tasks
  const std::vector<DType> floats(std::begin(kFloatingDTypes), std::end(kFloatingDTypes));
  std::vector<DType> numbers = floats;
  numbers.push_back(DType::Int32);
  return {
      {"Relu", s, [](Graph& g, Output n, DType) { return ops::relu(g, n); }, floats},
      {"ReluGrad (gradient)", s,
       [s](Graph& g, Output n, DType t) { return ops::relu_grad(g, n, fed(g, "full", t, s)); }, floats},
      {"BiasAdd (value)", s,
       [](Graph& g, Output n, DType t) { return ops::bias_add(g, n, fed(g, "row", t, Shape{129})); }, floats},
      {"AddV2 (x)", s, [s](Graph& g, Output n, DType t) { return ops::add(g, n, fed(g, "full", t, s)); }, numbers},
      {"Add (x, y broadcast)", s,
       [](Graph& g, Output n, DType t) {
         return g.output(g.add_node("Add", {n, fed(g, "row", t, Shape{129})}).id);
       },
       numbers},
      {"Sub (y, x broadcast)", s,
       [](Graph& g, Output n, DType t) { return ops::sub(g, fed(g, "row", t, Shape{129}), n); }, numbers},
      {"Mul (x, y scalar)", s, [](Graph& g, Output n, DType t) { return ops::mul(g, n, fed(g, "scalar", t, Shape{})); },
       numbers},
      {"Neg", s, [](Graph& g, Output n, DType) { return ops::neg(g, n); }, numbers},
      {"Reciprocal", s, [](Graph& g, Output n, DType) { return ops::reciprocal(g, n); }, floats},
      {"AddN", s,
       [s](Graph& g, Output n, DType t) {
         return ops::add_n(g, {n, fed(g, "full", t, s), fed(g, "full2", t, s)});
       },
       floats},
  };
}

FeedMap feeds_of(const Graph& g, const Output& x, DType dtype) {
  FeedMap feeds{{x, random_values(dtype, x.shape(), 1)}};
  std::uint64_t seed = 2;
  for (int id = 0; id < g.num_nodes(); ++id) {
    const Node& node = g.node(id);
    if (node.op() == "Placeholder" && id != x.node) {
      const Output out = g.output(id);
      feeds.emplace(out, random_values(dtype, out.shape(), seed++));
    }
  }
  return feeds;
}

}  // namespace

TEST_CASE("a kernel writes over an input only when no other tensor holds its buffer", "[memory]") {
  const AttrMap attrs;
  auto context = [&](std::vector<Tensor> inputs, DType dtype, Shape shape) {
    return KernelContext("Op", "node", attrs, Device::cpu(), std::move(inputs), {dtype}, {std::move(shape)});
  };
  const Shape shape{4, 5};
  SECTION("handed over: the output is the input's buffer") {
    Tensor in = Tensor::zeros(DType::Float32, shape);
    const void* data = in.raw_data();
    KernelContext c = context({std::move(in)}, DType::Float32, shape);
    CHECK(c.forward_input_or_allocate_output({0}, 0).raw_data() == data);
    CHECK(c.outputs()[0].shares_buffer_with(c.input(0)));
  }
  SECTION("the first candidate that can be reused") {
    const Tensor held = Tensor::zeros(DType::Float32, shape);
    Tensor free = Tensor::zeros(DType::Float32, shape);
    const void* data = free.raw_data();
    KernelContext c = context({held, std::move(free)}, DType::Float32, shape);
    CHECK(c.forward_input_or_allocate_output({0, 1}, 0).raw_data() == data);
  }
  SECTION("held elsewhere, another shape or dtype: a fresh output") {
    const Tensor held = Tensor::zeros(DType::Float32, shape);
    KernelContext shared = context({held}, DType::Float32, shape);
    CHECK_FALSE(shared.forward_input_or_allocate_output({0}, 0).shares_buffer_with(held));
    KernelContext twice = context({Tensor::zeros(DType::Float32, shape)}, DType::Float32, shape);
    const Tensor alias = twice.input(0);  // e.g. Mul(x, x): the kernel holds it twice
    CHECK_FALSE(twice.forward_input_or_allocate_output({0}, 0).shares_buffer_with(alias));
    KernelContext reshaped = context({Tensor::zeros(DType::Float32, shape)}, DType::Float32, Shape{20});
    CHECK(reshaped.forward_input_or_allocate_output({0}, 0).shape() == Shape{20});
    CHECK_FALSE(reshaped.outputs()[0].shares_buffer_with(reshaped.input(0)));
    KernelContext cast = context({Tensor::zeros(DType::Int32, shape)}, DType::Float32, shape);
    CHECK(cast.forward_input_or_allocate_output({0}, 0).dtype() == DType::Float32);
    CHECK_FALSE(cast.outputs()[0].shares_buffer_with(cast.input(0)));
  }
}

TEST_CASE("kernels that write over their input give the bits of kernels that allocate", "[memory]") {
  for (const InPlaceCase& c : in_place_cases()) {
    for (DType dtype : c.dtypes) {
      INFO(c.name << " in " << dtype_name(dtype));
      Graph g;
      const Output x = fed(g, "x", dtype, c.shape);
      const Output n = ops::neg(g, x, "n");  // a fresh buffer: fed x itself is never written
      const Output y = c.apply(g, n, dtype);
      Session session(g);
      const FeedMap feeds = feeds_of(g, x, dtype);
      RunStats in_place, kept;
      session.run(feeds, {y}, {}, &in_place);  // compiles the plan: its allocations come next
      const Tensor written = session.run(feeds, {y}, {}, &in_place).front();
      const Tensor allocated = session.run(feeds, {y, n}, {}, &kept).front();  // n fetched: kept
      CHECK(same_bits(written, allocated));
      CHECK(allocations(kept) - allocations(in_place) == 1);  // y took n's buffer
    }
  }
}

TEST_CASE("fed tensors are never written over", "[memory]") {
  Graph g;
  const Output x = ops::placeholder(g, DType::Float32, Shape{64, 100}, "x");
  const Output b = ops::placeholder(g, DType::Float32, Shape{100}, "b");
  // The fed buffers under other names: Identity and Reshape pass them on without a copy.
  const Output via_identity = ops::identity(g, x);
  const Output via_reshape = ops::reshape(g, x, {100, 64});
  const std::vector<Output> fetches{ops::relu(g, x),
                                    ops::neg(g, via_reshape),
                                    ops::bias_add(g, via_identity, b),
                                    ops::add(g, ops::identity(g, x), ops::identity(g, x)),
                                    ops::sub(g, ops::identity(g, b), ops::identity(g, x)),
                                    ops::relu_grad(g, ops::identity(g, x), x),
                                    ops::add_n(g, {ops::reshape(g, x, {6400}), ops::reshape(g, x, {6400})})};
  const Tensor xv = random_values(DType::Float32, Shape{64, 100}, 3);
  const Tensor bv = random_values(DType::Float32, Shape{100}, 4);
  const Tensor x_copy = xv.clone(), b_copy = bv.clone();
  Session session(g);
  for (int run = 0; run < 2; ++run) {
    const std::vector<Tensor> out = session.run({{x, xv}, {b, bv}}, fetches);
    CHECK(same_bits(xv, x_copy));
    CHECK(same_bits(bv, b_copy));
    CHECK(out[0].data<float>()[0] == std::max(x_copy.data<float>()[0], 0.f));
    CHECK(out[1].data<float>()[7] == -x_copy.data<float>()[7]);
  }
}

TEST_CASE("fetched values, Const values and variables are never written over", "[memory]") {
  Graph g;
  const Shape shape{32, 50};
  const Tensor cv = random_values(DType::Float32, shape, 5);
  const Tensor initial = random_values(DType::Float32, shape, 6);
  const Tensor c_copy = cv.clone();  // cv is the Const's value itself
  const Output c = ops::constant(g, cv, "c");
  const Output v = ops::variable(g, shape, DType::Float32, "v");
  const Output init = ops::assign(g, v, ops::constant(g, initial), true, "init");
  const Output a = ops::neg(g, c, "a");  // fetched, and read last by b
  const Output b = ops::relu(g, a, "b");
  const std::vector<Output> fetches{
      a,
      b,
      ops::relu(g, c),
      ops::neg(g, v),
      ops::relu(g, ops::identity(g, v)),
      ops::bias_add(g, ops::identity(g, v), ops::constant(g, Tensor::zeros(DType::Float32, Shape{50}))),
      ops::add(g, v, ops::identity(g, c))};
  Session session(g);
  session.run({}, init);
  std::vector<Tensor> first = session.run({}, fetches);
  for (Tensor& t : first) t = t.clone();
  for (int run = 0; run < 2; ++run) {
    const std::vector<Tensor> out = session.run({}, fetches);
    for (std::size_t i = 0; i < out.size(); ++i) {
      INFO("fetch " << i << ", run " << run);
      CHECK(same_bits(out[i], first[i]));
    }
    CHECK(same_bits(session.variables().get_or_undefined("v"), initial));
    CHECK(same_bits(get_attr<Tensor>(g.node(c.node).attrs, "value"), c_copy));
  }
  CHECK(first[0].data<float>()[3] == -cv.data<float>()[3]);
  CHECK(first[1].data<float>()[3] == std::max(-cv.data<float>()[3], 0.f));
}

TEST_CASE("a chain of kernels that write over their input keeps one buffer alive", "[memory]") {
  constexpr std::int64_t n = 1 << 18;  // 1 MiB of float32
  constexpr int depth = 39;
  Graph g;
  const Output x = ops::placeholder(g, DType::Float32, Shape{n}, "x");
  Output y = x;
  for (int i = 0; i < depth; ++i) y = i % 3 == 2 ? ops::relu(g, y) : ops::neg(g, y);  // -(-x), then Relu
  Session s(g);
  const Tensor xv = Tensor::full(DType::Float32, Shape{n}, 1.5);
  const std::int64_t before = host_allocator().stats().bytes_in_use;
  RunStats stats;
  const Tensor out = s.run({{x, xv}}, {y}, {}, &stats).front();
  CHECK(out.data<float>()[n - 1] == 1.5f);
  CHECK(xv.data<float>()[0] == 1.5f);
  // The first Neg reads the feed into a new buffer; every later step writes over its input.
  CHECK(allocations(stats) == 1);
  const std::int64_t extra = stats.peak_bytes_in_use - before;
  INFO("peak bytes in use above the start: " << extra);
  CHECK(extra <= n * 4 + 64 * 1024);
}

TEST_CASE("training steps after the first take no fresh memory from the system", "[memory]") {
  constexpr std::int64_t kBatch = 16;
  ImageDataset batch{random_values(DType::Float32, Shape{kBatch, 28, 28, 1}, 7),
                     Tensor::empty(DType::Int32, Shape{kBatch})};
  for (std::int64_t i = 0; i < kBatch; ++i) batch.labels.data<std::int32_t>()[i] = static_cast<std::int32_t>(i % 10);
  for (const char* optimizer : {"sgd", "momentum", "adam"}) {
    INFO(optimizer);
    testing::SmallCnn m(3, 8, optimizer, 0.01);
    for (int threads : {1, 2}) {
      INFO(threads << " threads");
      Session s(m.g, {.threads = threads});
      s.run({}, {}, {m.init});
      for (int step = 0; step < 5; ++step) {
        RunStats stats;
        s.run(m.feed(batch), {m.loss}, {m.step}, &stats);
        INFO("step " << step << ": " << stats.fresh_allocations << " fresh, " << stats.reused_allocations << " reused");
        CHECK(stats.reused_allocations > 0);
        if (step >= 1) CHECK(stats.fresh_allocations == 0);
      }
    }
  }
}
