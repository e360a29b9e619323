// An embedding program: builds a graph, runs it, and calls an op eagerly through dagrad's public API.
// Exit status: 0 right results, 1 wrong ones or an error (one "error: ..." line).
#include <cmath>
#include <iostream>

#include <dagrad/dagrad.hpp>

int main() {
  using namespace dagrad;
  return run_main([&] {
    // The installed headers and the library linked are one release (dagrad/version.hpp).
    if (!library_matches_headers() || version().to_string() != DAGRAD_VERSION_STRING) {
      std::cerr << "error: consumer: headers " << DAGRAD_VERSION_STRING << ", library " << version().to_string()
                << "\n";
      return 1;
    }
    Graph g;
    Output x = ops::placeholder(g, DType::Float32, Shape{3}, "x");
    Output y = ops::sum(g, ops::mul(g, x, x), {0});
    Session session(g);
    const float sum_of_squares =
        session.run({{x, Tensor::from_values<float>(Shape{3}, {1, 2, 3})}}, y).data<float>()[0];

    // Conv2DBackpropFilterV2 by name: a 1x1 filter's gradient is sum over pixels of x * dy.
    Tensor input = Tensor::full(DType::Float32, Shape{1, 2, 2, 1}, 2.0);
    Tensor filter = Tensor::zeros(DType::Float32, Shape{1, 1, 1, 1});
    Tensor dy = Tensor::full(DType::Float32, Shape{1, 2, 2, 1}, 0.5);
    Tensor dw = run_op("Conv2DBackpropFilterV2", {input, filter, dy},
                       {{"strides", std::vector<std::int64_t>{1, 1, 1, 1}}, {"padding", std::string("VALID")}})
                    .front();
    std::cout << "dagrad " << version().to_string() << ": sum of squares = " << sum_of_squares
              << ", filter gradient = " << dw << "\n";
    const bool ok = sum_of_squares == 14.f && std::fabs(dw.data<float>()[0] - 4.f) < 1e-6f;
    std::cout << (ok ? "consumer: OK" : "consumer: WRONG RESULT") << "\n";
    if (!ok) std::cerr << "error: consumer: wrong result\n";
    return ok ? 0 : 1;
  });
}
