// A gradient-check walk-through: a small conv net (conv -> conv -> mean squared output), the
// gradients of its loss with respect to both filters built as graph nodes, their values, and the
// finite-difference checker's report on the whole net and on each conv op alone.
// Exit status: 0 all checks passed, 1 a check failed or an error (one "error: ..." line).
#include <iostream>

#include <dagrad/autodiff/gradient_checker.hpp>
#include <dagrad/dagrad.hpp>
#include <dagrad/ops/conv2d.hpp>

using namespace dagrad;

namespace {

// The net as a function of (image, filter1, filter2): what the checker differentiates.
std::vector<Output> net(Graph& g, const std::vector<Output>& in) {
  Output h = ops::conv2d(g, in[0], in[1], {.strides = {1, 1, 1, 1}, .padding = "SAME"});
  Output y = ops::conv2d(g, ops::mul(g, h, h), in[2], {.strides = {1, 2, 2, 1}, .padding = "VALID"});
  return {ops::mean(g, ops::mul(g, y, y), {0, 1, 2, 3})};
}

}  // namespace

int main() {
  return run_main([&] {
    const std::vector<Tensor> values = {random_tensor(DType::Float64, Shape{1, 6, 6, 2}, 1),
                                        random_tensor(DType::Float64, Shape{3, 3, 2, 3}, 2),
                                        random_tensor(DType::Float64, Shape{2, 2, 3, 2}, 3)};
    // 1. Gradients as graph nodes, like tf.gradients.
    Graph g;
    std::vector<Output> in;
    for (const char* name : {"image", "filter1", "filter2"}) {
      in.push_back(ops::placeholder(g, DType::Float64, values[in.size()].shape(), name));
    }
    Output loss = net(g, in).front();
    const int forward_nodes = g.num_nodes();
    auto grads = gradients(g, {loss}, {in[1], in[2]});
    std::cout << "forward graph: " << forward_nodes << " nodes; with gradients: " << g.num_nodes() << " nodes\n";
    Session session(g);
    FeedMap feeds;
    for (std::size_t i = 0; i < in.size(); ++i) feeds[in[i]] = values[i];
    auto out = session.run(feeds, {loss, grads[0], grads[1]});
    std::cout << "loss = " << out[0].value_as_double(0) << "\n"
              << "d loss / d filter1: " << out[1].to_string(8) << "\n"
              << "d loss / d filter2: " << out[2].to_string(8) << "\n\n";

    // 2. The checker on the whole net: every input separately, full Jacobians, then order 2.
    bool ok = true;
    for (int order : {1, 2}) {
      const GradCheckResult r = check_graph_gradients(net, values, {.order = order}, {"image", "filter1", "filter2"});
      std::cout << r.report();
      ok = ok && r.passed;
    }
    // 3. The conv ops alone, in float32 and in fast mode.
    const ops::Conv2DOptions conv{.strides = {1, 2, 2, 1}, .padding = "SAME"};
    const GradCheckResult r =
        check_gradients("Conv2D", {values[0].cast(DType::Float32), values[1].cast(DType::Float32)},
                        ops::conv2d_attr_map(conv), {.mode = GradCheckMode::Fast});
    std::cout << r.report();
    ok = ok && r.passed;
    std::cout << (ok ? "all gradient checks passed\n" : "SOME GRADIENT CHECKS FAILED\n");
    if (!ok) std::cerr << "error: some gradient checks failed\n";
    return ok ? 0 : 1;
  });
}
