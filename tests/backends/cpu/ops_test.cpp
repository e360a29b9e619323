// The CPU kernels of the remaining ops (Reciprocal, ArgMax, Equal, Transpose, BroadcastTo, the
// dense softmax cross-entropy, the pooling family in every float dtype with EXPLICIT padding, and
// the optimiser updates) against the reference kernels on random shapes, attributes and dtypes,
// and bitwise-identical results on 1 and 4 threads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include <dagrad/dagrad.hpp>

using namespace dagrad;

namespace {

using i64 = std::int64_t;
const DType kFloats[] = {DType::Half, DType::BFloat16, DType::Float32, DType::Float64};
const DType kNumeric[] = {DType::Half, DType::BFloat16, DType::Float32, DType::Float64, DType::Int32, DType::Int64};

// Normal values (rounded to `round_to` when > 0, so that ties and equal pairs occur), in dtype.
Tensor random_values(DType dtype, const Shape& shape, std::mt19937& rng, double round_to = 0) {
  Tensor t = Tensor::empty(DType::Float64, shape);
  std::normal_distribution<double> dist(0, 3);
  const bool integer = dtype == DType::Int32 || dtype == DType::Int64 || dtype == DType::Bool;
  for (i64 i = 0; i < t.num_elements(); ++i) {
    double v = dist(rng);
    if (round_to > 0) v = std::round(v / round_to) * round_to;
    t.data<double>()[i] = integer ? std::round(v * 10) : v;
  }
  return t.cast(dtype);
}

std::vector<i64> random_dims(std::mt19937& rng, int rank, i64 max_dim) {
  std::vector<i64> dims(static_cast<std::size_t>(rank));
  for (auto& d : dims) d = std::uniform_int_distribution<i64>(1, max_dim)(rng);
  return dims;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

// The precision of each dtype, for the kernels that accumulate differently from the reference
// (float instead of double): one rounding of the result in that dtype, relative to the largest value.
double tolerance(DType dtype) {
  switch (dtype) {
    case DType::Half:
      return 1e-3;
    case DType::BFloat16:
      return 8e-3;
    case DType::Float32:
      return 1e-5;
    default:
      return 1e-12;
  }
}

double relative_error(const Tensor& a, const Tensor& b) {
  double worst = 0, scale = 0;
  for (i64 i = 0; i < b.num_elements(); ++i) {
    worst = std::max(worst, std::abs(a.value_as_double(i) - b.value_as_double(i)));
    scale = std::max(scale, std::abs(b.value_as_double(i)));
  }
  return worst == 0 ? 0 : worst / scale;
}

// Runs op on the reference kernel and on the CPU kernel with 1 and with 4 threads. The CPU kernel
// must exist for `dtype` (else the comparison would compare the reference with itself), its two
// runs must agree bit for bit, and it must match the reference bitwise or within the tolerance.
void compare(const std::string& op, const std::vector<Tensor>& inputs, const AttrMap& attrs, DType dtype,
             bool bitwise) {
  INFO(op << " " << dtype_name(dtype) << " on " << inputs[0].shape().to_string() << " " << attrs.size() << " attrs");
  REQUIRE(kernel_registry().find(op, Device::Kind::CPU, dtype, "cpu") != nullptr);
  const auto ref = run_op(op, inputs, attrs, {.name = {}, .backend = "reference"});
  set_num_threads(1);
  const auto one = run_op(op, inputs, attrs, {.name = {}, .backend = "cpu"});
  set_num_threads(4);
  const auto four = run_op(op, inputs, attrs, {.name = {}, .backend = "cpu"});
  set_num_threads(0);
  REQUIRE(ref.size() == one.size());
  for (std::size_t k = 0; k < ref.size(); ++k) {
    REQUIRE(one[k].shape() == ref[k].shape());
    CHECK(same_bits(one[k], four[k]));
    if (bitwise)
      CHECK(same_bits(one[k], ref[k]));
    else
      CHECK(relative_error(one[k], ref[k]) <= tolerance(dtype));
  }
}

// v of Adam is a running mean of squares: non-negative.
Tensor squares(const Tensor& t, DType dtype) {
  Tensor d = t.cast(DType::Float64);
  for (i64 i = 0; i < d.num_elements(); ++i) d.data<double>()[i] *= d.data<double>()[i];
  return d.cast(dtype);
}

Tensor int32_vector(const std::vector<i64>& v) {
  std::vector<std::int32_t> w(v.begin(), v.end());
  return Tensor::from_values<std::int32_t>(Shape{static_cast<i64>(w.size())}, w);
}

}  // namespace

TEST_CASE("CPU Reciprocal, ArgMax and Equal match the reference bit for bit", "[cpu]") {
  std::mt19937 rng(71);
  for (DType dtype : kNumeric) {
    for (int trial = 0; trial < 3; ++trial) {
      const auto dims = random_dims(rng, 1 + trial, trial == 2 ? 40 : 200);
      Tensor x = random_values(dtype, Shape(dims), rng);
      if (dtype == DType::Int32 || dtype == DType::Int64) {
        // Integer 1/x needs non-zero x; its zero case is checked below.
        Tensor d = x.cast(DType::Float64);
        for (i64 i = 0; i < d.num_elements(); ++i)
          d.data<double>()[i] = d.data<double>()[i] == 0 ? 1 : d.data<double>()[i];
        x = d.cast(dtype);
      }
      compare("Reciprocal", {x}, {}, dtype, true);
      // Coarse values make ties, which must resolve to the first maximum.
      const Tensor ties = random_values(dtype, Shape(dims), rng, 2.0);
      for (i64 axis = -static_cast<i64>(dims.size()); axis < static_cast<i64>(dims.size()); ++axis) {
        for (DType out : {DType::Int32, DType::Int64}) {
          compare("ArgMax", {ties, Tensor::scalar<std::int32_t>(static_cast<std::int32_t>(axis))},
                  {{"output_type", out}}, dtype, true);
        }
      }
      // Equal with broadcasting: y keeps some dims of x and sets the others to 1, or drops leading ones.
      std::vector<i64> ydims = dims;
      for (auto& d : ydims) d = std::uniform_int_distribution<int>(0, 1)(rng) ? d : 1;
      if (trial == 2) ydims.erase(ydims.begin());
      const Tensor a = random_values(dtype, Shape(dims), rng, 2.0), b = random_values(dtype, Shape(ydims), rng, 2.0);
      compare("Equal", {a, b}, {}, dtype, true);
      compare("Equal", {b, a}, {}, dtype, true);
    }
  }
  const Tensor bools = random_values(DType::Float64, Shape{7, 30}, rng).cast(DType::Bool);
  compare("Equal", {bools, random_values(DType::Float64, Shape{30}, rng).cast(DType::Bool)}, {}, DType::Bool, true);
  for (const char* backend : {"reference", "cpu"}) {
    CHECK_THROWS_WITH(run_op("Reciprocal", {Tensor::from_values<std::int32_t>(Shape{3}, {2, 0, 1})}, {},
                             {.name = {}, .backend = backend}),
                      Catch::Contains("Reciprocal: Integer division by zero"));
  }
}

TEST_CASE("CPU Transpose and BroadcastTo match the reference for every dtype", "[cpu]") {
  std::mt19937 rng(72);
  const DType all[] = {DType::Half,  DType::BFloat16, DType::Float32, DType::Float64,
                       DType::Int32, DType::Int64,    DType::Bool};
  for (DType dtype : all) {
    for (int trial = 0; trial < 8; ++trial) {
      const int rank = 1 + trial % 5;
      auto dims = random_dims(rng, rank, rank <= 2 ? 90 : 9);
      if (trial == 6) dims[0] = 1;  // size-1 axes are dropped before tiling
      std::vector<i64> perm(static_cast<std::size_t>(rank));
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      const Tensor x = random_values(dtype, Shape(dims), rng);
      compare("Transpose", {x, int32_vector(perm)}, {}, dtype, true);
      // BroadcastTo: the input has some of the output's dims set to 1, and maybe fewer of them.
      auto in_dims = dims;
      for (auto& d : in_dims) d = std::uniform_int_distribution<int>(0, 1)(rng) ? d : 1;
      if (trial % 3 == 0 && in_dims.size() > 1) in_dims.erase(in_dims.begin());
      compare("BroadcastTo", {random_values(dtype, Shape(in_dims), rng), int32_vector(dims)}, {}, dtype, true);
    }
  }
  // The NHWC <-> NCHW permutations of a conv-sized activation.
  const Tensor act = random_values(DType::Float32, Shape{8, 14, 14, 32}, rng);
  compare("Transpose", {act, int32_vector({0, 3, 1, 2})}, {}, DType::Float32, true);
  compare("Transpose", {act, int32_vector({0, 2, 3, 1})}, {}, DType::Float32, true);
}

TEST_CASE("CPU SoftmaxCrossEntropyWithLogits matches the reference bit for bit", "[cpu]") {
  std::mt19937 rng(73);
  for (DType dtype : kFloats) {
    for (const Shape& shape : {Shape{1, 1}, Shape{32, 10}, Shape{300, 77}}) {
      compare("SoftmaxCrossEntropyWithLogits", {random_values(dtype, shape, rng), random_values(dtype, shape, rng)}, {},
              dtype, true);
    }
  }
}

TEST_CASE("CPU pooling kernels match the reference in every float dtype, EXPLICIT padding included", "[cpu][nn]") {
  std::mt19937 rng(74);
  for (DType dtype : kFloats) {
    for (int trial = 0; trial < 6; ++trial) {
      const bool nchw = trial % 2 == 1;
      const auto d = random_dims(rng, 4, 7);
      const i64 n = d[0], h = d[1] + 2, w = d[2] + 3, ch = d[3];  // w >= the widest window
      const i64 k = 1 + trial % 3, s = 1 + (trial / 2) % 2;
      const auto in_order = [&](i64 a, i64 b) {
        return nchw ? std::vector<i64>{1, 1, a, b} : std::vector<i64>{1, a, b, 1};
      };
      const Shape x_shape = nchw ? Shape{n, ch, h, w} : Shape{n, h, w, ch};
      const std::string format = nchw ? "NCHW" : "NHWC";
      const Tensor x = random_values(dtype, x_shape, rng, trial == 5 ? 2.0 : 0);
      for (const char* padding : {"SAME", "VALID", "EXPLICIT"}) {
        AttrMap attrs = {{"ksize", in_order(k, k + 1)},
                         {"strides", in_order(s, s)},
                         {"padding", std::string(padding)},
                         {"data_format", format}};
        const bool explicit_pad = std::string(padding) == "EXPLICIT";
        if (explicit_pad) {
          // Each padding below its window size (TF's rule); asymmetric on purpose.
          const i64 top = k - 1, bottom = 0, left = 0, right = k;
          attrs["explicit_paddings"] = nchw ? std::vector<i64>{0, 0, 0, 0, top, bottom, left, right}
                                            : std::vector<i64>{0, 0, top, bottom, left, right, 0, 0};
        } else {
          AttrMap avg = attrs;
          compare("AvgPool", {x}, avg, dtype, false);
          const Tensor y = run_op("AvgPool", {x}, avg)[0];
          compare("AvgPoolGrad", {int32_vector(x_shape.dims()), random_values(dtype, y.shape(), rng)}, avg, dtype,
                  false);
        }
        compare("MaxPool", {x}, attrs, dtype, true);
        const Tensor y = run_op("MaxPool", {x}, attrs)[0];
        // Overlapping windows add several gradients into one input, in float here: not bitwise.
        compare("MaxPoolGrad", {x, y, random_values(dtype, y.shape(), rng)}, attrs, dtype, false);
        compare("MaxPoolGradGrad", {x, y, random_values(dtype, x.shape(), rng)}, attrs, dtype, true);
      }
    }
  }
}

TEST_CASE("CPU optimiser updates match the reference bit for bit on any thread count", "[cpu][train]") {
  std::mt19937 rng(75);
  for (DType dtype : kFloats) {
    for (const char* op : {"ApplyGradientDescent", "ApplyMomentum", "ApplyAdam"}) {
      for (bool nesterov : {false, true}) {
        if (std::string(op) == "ApplyGradientDescent" && nesterov) continue;
        INFO(op << " " << dtype_name(dtype) << " nesterov " << nesterov);
        REQUIRE(kernel_registry().find(op, Device::Kind::CPU, dtype, "cpu") != nullptr);
        // More elements than one parallel block, so that several threads share the update.
        const Shape shape{37, 1000};
        Graph g;
        std::vector<const Node*> inits;
        auto variable = [&](const char* name, Tensor init) {
          Output v = ops::variable(g, shape, dtype, name);
          inits.push_back(&ops::assign(g, v, ops::constant(g, init)).op());
          return v;
        };
        const Output var = variable("var", random_values(dtype, shape, rng));
        const Output grad = ops::constant(g, random_values(dtype, shape, rng));
        const auto sc = [&](double v) { return ops::scalar(g, v, dtype); };
        Output step;
        std::vector<std::string> names = {"var"};
        if (std::string(op) == "ApplyGradientDescent") {
          step = ops::apply_gradient_descent(g, var, sc(0.1), grad);
        } else if (std::string(op) == "ApplyMomentum") {
          const Output accum = variable("accum", random_values(dtype, shape, rng));
          step = ops::apply_momentum(g, var, accum, sc(0.05), grad, sc(0.9), nesterov);
          names.push_back("accum");
        } else {
          const Output m = variable("m", random_values(dtype, shape, rng));
          const Output v = variable("v", squares(random_values(dtype, shape, rng), dtype));
          step = ops::apply_adam(
              g, {var, m, v, sc(0.9 * 0.9), sc(0.999 * 0.999), sc(0.01), sc(0.9), sc(0.999), sc(1e-7), grad}, nesterov);
          names.insert(names.end(), {"m", "v"});
        }
        const auto train = [&](const char* backend, int threads) {
          Session session(g, SessionOptions{.threads = threads, .backend = backend});
          session.run({}, {}, inits);
          for (int i = 0; i < 3; ++i) session.run({}, {}, {&step.op()});
          std::vector<Tensor> values;
          for (const auto& name : names) values.push_back(session.variables().get(name).cast(DType::Float64));
          return values;
        };
        const auto ref = train("reference", 1), one = train("cpu", 1), four = train("cpu", 4);
        for (std::size_t i = 0; i < ref.size(); ++i) {
          INFO(names[i]);
          CHECK(same_bits(one[i], ref[i]));
          CHECK(same_bits(four[i], ref[i]));
        }
      }
    }
  }
}
