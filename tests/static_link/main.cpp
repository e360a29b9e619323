// A minimal program linked against the dagrad library (static by default): proves that op and
// kernel registration survive static linking, where self-registering objects would be dropped.
#include <iostream>

#include <dagrad/dagrad.hpp>

int main() {
  using namespace dagrad;
  try {
    Tensor x = Tensor::from_values<float>(Shape{3}, {1.f, 2.f, 3.f});
    Tensor eager = run_op("AddV2", {x, x}).front();
    Graph g;
    Output p = ops::placeholder(g, DType::Float32, Shape{3}, "p");
    Output total = ops::sum(g, ops::mul(g, p, p), {0});
    Session session(g);
    Tensor graph = session.run({{p, x}}, total);
    const bool ok = eager.data<float>()[2] == 6.f && graph.data<float>()[0] == 14.f &&
                    op_registry().list().size() >= 15 && !kernel_registry().list().empty();
    std::cout << "ops registered: " << op_registry().list().size() << ", AddV2 -> " << eager << ", Sum(p*p) -> "
              << graph << (ok ? "" : "  WRONG") << "\n";
    return ok ? 0 : 1;
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
