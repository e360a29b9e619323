// A first tour of dagrad: build a small graph, run it in a session, and call an op eagerly.
// Exit status: 0 done, 1 error (one "error: ..." line).
#include <iostream>

#include <dagrad/dagrad.hpp>

int main() {
  using namespace dagrad;
  return run_main([&] {
    Graph g;
    Output x = ops::placeholder(g, DType::Float32, Shape{Shape::kUnknown, 3}, "x");
    Output w = ops::constant(g, Tensor::from_values<float>(Shape{3}, {0.5f, -1.f, 2.f}), "w");
    Output y = ops::add(g, ops::mul(g, x, w), ops::neg(g, x), "y");
    Output total = ops::sum(g, y, {1}, false, "row_sums");
    Output avg = ops::mean(g, total, {0}, false, "mean");

    Session session(g);
    Tensor batch = Tensor::from_values<float>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
    auto out = session.run({{x, batch}}, {y, total, avg});
    std::cout << "x        = " << batch << "\n"
              << "y        = x * w - x = " << out[0] << "\n"
              << "row_sums = " << out[1] << "\n"
              << "mean     = " << out[2] << "\n";

    Tensor h = run_op("Cast", {out[0]}, {{"DstT", DType::Half}}).front();
    std::cout << "eager Cast to half: " << h << "\n";
    return 0;
  });
}
