// Name scopes (Graph::name_scope): prefixes that nest, stay unique, refuse bad names, and are used
// by the layers ("conv1/Conv2D") and the gradient builder ("gradients/conv1/Conv2D_grad/...")
// while variable and slot names stay what checkpoints hold.
#include <catch2/catch.hpp>

#include <optional>

#include <dagrad/autodiff/optimizers.hpp>
#include <dagrad/dagrad.hpp>
#include <dagrad/ops/layers.hpp>

#include "support/error_of.hpp"

using namespace dagrad;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using dagrad::testing::error_of;

namespace {

Output input(Graph& g, std::string_view name = "x") { return ops::placeholder(g, DType::Float32, Shape{2}, name); }

}  // namespace

TEST_CASE("name scopes nest, close in order and leave names unique", "[graph][scope]") {
  Graph g;
  CHECK(input(g).op().name == "x");
  {
    auto outer = g.name_scope("outer");
    CHECK(g.name_scope_prefix() == "outer/");
    CHECK(input(g).op().name == "outer/x");
    {
      auto inner = g.name_scope("inner/deeper");
      CHECK(ops::relu(g, input(g, "y")).op().name == "outer/inner/deeper/Relu");
      CHECK(input(g, "y").op().name == "outer/inner/deeper/y_1");
      CHECK(g.scoped_name("z") == "outer/inner/deeper/z");
    }
    CHECK(input(g, "y").op().name == "outer/y");
    {
      auto root = g.root_name_scope();
      CHECK(input(g, "top").op().name == "top");
    }
    CHECK(input(g).op().name == "outer/x_1");
  }
  CHECK(g.name_scope_prefix().empty());
  CHECK(input(g).op().name == "x_1");
  // Entering a scope again puts its nodes beside the first ones.
  {
    auto again = g.name_scope("outer");
    CHECK(input(g).op().name == "outer/x_2");
  }
  // A scope may move (into an optional, as the gradient builder holds one).
  std::optional<NameScope> held;
  held.emplace(g.name_scope("held"));
  CHECK(input(g).op().name == "held/x");
  held.reset();
  CHECK(input(g).op().name == "x_2");
}

TEST_CASE("a name scope outside TF's node-name charset is refused by name", "[graph][scope]") {
  Graph g;
  for (const char* bad : {"", "a b", "_a", "-a", "a//b", "a/", "/a", "a:0", "a\\b", "caf\xc3\xa9"}) {
    INFO("'" << bad << "'");
    const std::string message = error_of([&] { auto s = g.name_scope(bad); });
    CHECK_THAT(message, StartsWith(std::string("name scope '") + bad + "' is not valid"));
    CHECK(g.name_scope_prefix().empty());
  }
  for (const char* good : {"a", "A9", ".hidden", "conv-1", "a_b/c.d/e-f", "9"}) {
    INFO(good);
    CHECK(is_valid_name_scope(good));
  }
}

TEST_CASE("layers name their nodes in scopes, variables and slots keep their checkpoint names", "[graph][scope]") {
  Graph g;
  layers::VariableSet vars(1);
  Output loss;
  {
    auto model = g.name_scope("model");
    layers::Layers nn(g, vars);
    Output x = ops::placeholder(g, DType::Float32, Shape{2, 4, 4, 1}, "images");
    Output y = nn.dense(nn.flatten(nn.conv2d(x, "conv1", 2, 3)), "dense1", 3);
    loss = ops::mean(g, ops::mean(g, y, {1}), {0});
    CHECK_THAT(error_of([&] { nn.dense(nn.flatten(x), "bad name", 3); }),
               Contains("name scope 'bad name' is not valid"));
  }
  for (const char* name : {"model/conv1/kernel", "model/conv1/bias", "model/conv1/Conv2D", "model/conv1/BiasAdd",
                           "model/conv1/Relu", "model/dense1/kernel", "model/dense1/MatMul", "model/dense1/BiasAdd"}) {
    INFO(name);
    CHECK(g.find(name) != nullptr);
  }
  CHECK(g.find("model/conv1/model/conv1/kernel") == nullptr);
  {
    auto train = g.name_scope("train");
    minimize(g, loss, vars, {.name = "adam"});
  }
  // Slots are named after their variable's full name, whatever scope minimize ran in.
  CHECK(g.find("model/conv1/kernel/Adam") != nullptr);
  CHECK(g.find("model/conv1/kernel/Adam_1") != nullptr);
  CHECK(g.find("model/conv1/kernel/ApplyAdam") != nullptr);
  CHECK(g.find("train/beta1_power") != nullptr);
  // Gradients under the enclosing scope's "gradients/", per forward node as TF names them.
  CHECK(g.find("train/gradients/model/conv1/Conv2D_grad/Conv2DBackpropFilterV2") != nullptr);
  int gradient_nodes = 0;
  for (int i = 0; i < g.num_nodes(); ++i) gradient_nodes += g.node(i).name.rfind("train/gradients/", 0) == 0;
  CHECK(gradient_nodes > 10);
}

TEST_CASE("gradient nodes go under gradients/, each forward node's under its own _grad scope", "[graph][scope]") {
  Graph g;
  Output x = input(g);
  Output y = ops::relu(g, ops::mul(g, x, x, "square"), "act");
  const Output dx = gradients(g, {y}, {x}).at(0);
  CHECK_THAT(dx.op().name, StartsWith("gradients/"));
  CHECK(g.find("gradients/act_grad/ReluGrad") != nullptr);
  CHECK(g.find("gradients/grad_ys") != nullptr);
  // Second order: the gradient of a gradient node is scoped by that node's full name.
  const Output ddx = gradients(g, {dx}, {x}).at(0);
  CHECK(g.find("gradients/gradients/act_grad/ReluGrad_grad/ReluGrad") != nullptr);
  CHECK(ddx.valid());
}
