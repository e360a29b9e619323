// An embedding program: uses dagrad through its installed package and the one umbrella header
// only, the way the README says a program does: its version, a graph and a session, an eager op, layers
// trained with minimize, a checkpoint saved and restored, the model saved as a graph and loaded,
// and the gradient checker.
// Exit status: 0 right results, 1 wrong ones or an error (one "error: ..." line).
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include <dagrad/dagrad.hpp>

namespace {

using namespace dagrad;

bool check(bool ok, const std::string& what) {
  std::cout << (ok ? "ok: " : "WRONG: ") << what << "\n";
  return ok;
}

// A graph run and Conv2DBackpropFilterV2 called eagerly by name.
bool graph_and_eager() {
  Graph g;
  Output x = ops::placeholder(g, DType::Float32, Shape{3}, "x");
  Output y = ops::sum(g, ops::mul(g, x, x), {0});
  Session session(g);
  const float sum_of_squares = session.run({{x, Tensor::from_values<float>(Shape{3}, {1, 2, 3})}}, y).data<float>()[0];

  // A 1x1 filter's gradient is the sum over pixels of x * dy.
  Tensor input = Tensor::full(DType::Float32, Shape{1, 2, 2, 1}, 2.0);
  Tensor filter = Tensor::zeros(DType::Float32, Shape{1, 1, 1, 1});
  Tensor dy = Tensor::full(DType::Float32, Shape{1, 2, 2, 1}, 0.5);
  Tensor dw = run_op("Conv2DBackpropFilterV2", {input, filter, dy},
                     {{"strides", std::vector<std::int64_t>{1, 1, 1, 1}}, {"padding", std::string("VALID")}})
                  .front();
  return check(sum_of_squares == 14.f, "graph: sum of squares = 14") &
         check(std::fabs(dw.data<float>()[0] - 4.f) < 1e-6f, "eager Conv2DBackpropFilterV2 = 4");
}

// A dense layer trained with Adam lowers its loss; its weights survive a checkpoint round trip.
bool layers_minimize_checkpoint() {
  Graph g;
  layers::VariableSet vars(7);
  layers::Layers nn(g, vars);
  Output images = ops::placeholder(g, DType::Float32, Shape{4, 3}, "images");
  Output labels = ops::placeholder(g, DType::Int32, Shape{4}, "labels");
  Output logits = nn.dense(images, "dense", 2);
  layers::ClassifierMetrics metrics = layers::classifier_metrics(g, logits, labels);
  const Node& step = minimize(g, metrics.loss, vars, {.name = "adam", .learning_rate = 0.05});
  const Node& init = vars.initializer(g);

  Session session(g);
  session.run({}, {}, {&init});
  const FeedMap feeds = {{images, Tensor::from_values<float>(Shape{4, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 0})},
                         {labels, Tensor::from_values<std::int32_t>(Shape{4}, {0, 1, 1, 0})}};
  const float first_loss = session.run(feeds, metrics.loss).data<float>()[0];
  for (int i = 0; i < 50; ++i) session.run(feeds, {}, {&step});
  const float trained_loss = session.run(feeds, metrics.loss).data<float>()[0];

  const std::string dir =
      (std::filesystem::temp_directory_path() / ("dagrad-consumer-" + std::to_string(::getpid()))).string();
  save_checkpoint(session, g, dir, {.step = 50});
  Session fresh(g);
  const CheckpointInfo info = restore_checkpoint(fresh, g, dir);
  const float restored_loss = fresh.run(feeds, metrics.loss).data<float>()[0];
  std::filesystem::remove_all(dir);

  // The trained model as a saved graph: loaded without the code that built it.
  save_model(dir, g, session, {.inputs = {{"images", "images"}}, .outputs = {{"logits", logits.name()}}});
  Model model = load_model(dir);
  const Tensor images_value = feeds.at(images);
  const Tensor want = session.run({{images, images_value}}, logits);
  const Tensor got = model.session->run({{model.input("images"), images_value}}, model.output("logits"));
  std::filesystem::remove_all(dir);
  bool same_logits = got.shape() == want.shape();
  for (std::int64_t i = 0; same_logits && i < want.num_elements(); ++i)
    same_logits = got.data<float>()[i] == want.data<float>()[i];
  return check(trained_loss < first_loss, "Adam lowers the loss") &
         check(info.step == 50 && restored_loss == trained_loss, "a restored checkpoint gives the same loss") &
         check(same_logits, "a saved and loaded model gives the same logits");
}

// The installed headers and the library linked are one release (dagrad/version.hpp).
bool versions_match() {
  std::cout << "dagrad " << version().to_string() << " (headers " << DAGRAD_VERSION_STRING << ")\n";
  return check(library_matches_headers() && version().to_string() == DAGRAD_VERSION_STRING,
               "the library's version is the headers'");
}

// The finite-difference checker agrees with Relu's symbolic gradient away from its kink.
bool gradient_checker() {
  Tensor x = Tensor::from_values<double>(Shape{4}, {-1.5, -0.25, 0.5, 2.0});
  GradCheckResult result = check_gradients("Relu", {x});
  if (!result.passed) std::cout << result.report() << "\n";
  return check(result.passed, "check_gradients(Relu)");
}

}  // namespace

int main() {
  return dagrad::run_main([] {
    const bool ok = versions_match() & graph_and_eager() & layers_minimize_checkpoint() & gradient_checker();
    std::cout << (ok ? "consumer: OK" : "consumer: WRONG RESULT") << "\n";
    if (!ok) std::cerr << "error: consumer: wrong result\n";
    return ok ? 0 : 1;
  });
}
