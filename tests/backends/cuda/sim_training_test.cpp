// backends/cuda/training.cu (ApplyGradientDescent, ApplyMomentum, ApplyAdam) run on the host
// simulator for three steps against a reference session's variables, bit for bit.
#ifdef DAGRAD_CUDA_SIM_TESTS  // set where the CUDA toolkit's headers are found (tests/CMakeLists.txt)
// clang-format off
#include "support/cuda_sim.hpp"  // first: it defines the CUDA keywords for the host compiler
// clang-format on

#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "dagrad/backends/cuda/launch_ops.hpp"
#include "support/cuda_testing.hpp"
#include "support/sim_buffers.hpp"

// The kernel file itself, its launchers renamed so that they do not meet the library's.
#define launch_apply_gradient_descent simulated_launch_apply_gradient_descent
#define launch_apply_momentum simulated_launch_apply_momentum
#define launch_apply_adam simulated_launch_apply_adam
#include "dagrad/backends/cuda/training.cu"
#undef launch_apply_gradient_descent
#undef launch_apply_momentum
#undef launch_apply_adam

using namespace dagrad;
using namespace dagrad::testing;
using i64 = std::int64_t;

TEST_CASE("cuda Apply* kernels on the host simulator update variables exactly as the reference", "[cuda-host]") {
  std::mt19937 rng(45);
  const Shape shape{5, 7};
  for (DType t : {DType::Half, DType::BFloat16, DType::Float32, DType::Float64}) {
    for (bool nesterov : {false, true}) {
      // Initial values: w1 (SGD), w2 and accum (momentum), w3, m and v >= 0 (Adam).
      std::vector<Tensor> init;
      for (int i = 0; i < 6; ++i) init.push_back(random_tensor(t, shape, rng));
      init[5] = run_reference("Mul", {init[5], init[5]}, {})[0];
      const Tensor grad = random_tensor(t, shape, rng);
      const double scalars[] = {0.1, 0.05, 0.9, 0.81, 0.998, 0.01, 0.9, 0.999, 1e-3};
      std::vector<Tensor> s;
      for (double v : scalars) s.push_back(Tensor::scalar<double>(v).cast(t));

      Graph g;
      std::vector<Output> vars;
      std::vector<const Node*> inits;
      const char* names[] = {"w1", "w2", "accum", "w3", "m", "v"};
      for (int i = 0; i < 6; ++i) {
        vars.push_back(ops::variable(g, shape, t, names[i]));
        inits.push_back(&ops::assign(g, vars.back(), ops::constant(g, init[static_cast<std::size_t>(i)])).op());
      }
      auto c = [&](int i) { return ops::constant(g, s[static_cast<std::size_t>(i)]); };
      const Output grad_c = ops::constant(g, grad);
      const Output sgd = ops::apply_gradient_descent(g, vars[0], c(0), grad_c);
      const Output momentum = ops::apply_momentum(g, vars[1], vars[2], c(1), grad_c, c(2), nesterov);
      const Output adam =
          ops::apply_adam(g, {vars[3], vars[4], vars[5], c(3), c(4), c(5), c(6), c(7), c(8), grad_c}, nesterov);
      Session reference(g, {.backend = "reference"});
      reference.run({}, {}, inits);
      for (int step = 0; step < 3; ++step) reference.run({}, {}, {&sgd.op(), &momentum.op(), &adam.op()});
      const auto want = reference.run({}, vars);

      std::vector<std::vector<std::byte>> var_bytes, scalar_bytes;
      for (const Tensor& v : init) var_bytes.push_back(exact_bytes(v));
      for (const Tensor& v : s) scalar_bytes.push_back(exact_bytes(v));
      const auto gb = exact_bytes(grad);
      const auto type = static_cast<cuda::ElemType>(t);
      const i64 n = shape.num_elements();
      cuda::AdamScalars adam_s{scalar_bytes[3].data(), scalar_bytes[4].data(), scalar_bytes[5].data(),
                               scalar_bytes[6].data(), scalar_bytes[7].data(), scalar_bytes[8].data()};
      for (int step = 0; step < 3; ++step) {
        cuda::simulated_launch_apply_gradient_descent(type, var_bytes[0].data(), scalar_bytes[0].data(), gb.data(), n,
                                                      nullptr);
        cuda::simulated_launch_apply_momentum(type, var_bytes[1].data(), var_bytes[2].data(), scalar_bytes[1].data(),
                                              gb.data(), scalar_bytes[2].data(), nesterov, n, nullptr);
        cuda::simulated_launch_apply_adam(type, var_bytes[3].data(), var_bytes[4].data(), var_bytes[5].data(), adam_s,
                                          gb.data(), nesterov, n, nullptr);
      }
      for (std::size_t i = 0; i < vars.size(); ++i) {
        INFO(dtype_name(t) << " nesterov " << nesterov << " variable " << names[i]);
        CHECK(bitwise_equal(tensor_of(t, shape, var_bytes[i]), want[i]));
      }
    }
  }
}
#endif  // DAGRAD_CUDA_SIM_TESTS
