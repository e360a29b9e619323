// Graph construction: every validation error surfaces when the node is added, with TF's wording.
#include <catch2/catch.hpp>

#include <dagrad/dagrad.hpp>

#include "support/error_of.hpp"

using namespace dagrad;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;
using Catch::Matchers::StartsWith;
using dagrad::testing::error_of;

TEST_CASE("adding a node validates the op, its inputs and its attributes", "[graph]") {
  Graph g;
  Output x = ops::placeholder(g, DType::Float32, Shape{2, 3}, "x");
  Output d = ops::placeholder(g, DType::Float64, Shape{2, 3}, "d");
  Output b = ops::placeholder(g, DType::Bool, Shape{2}, "b");

  CHECK_THAT(error_of([&] { g.add_node("NoSuchOp", {}); }), Equals("Op type not registered 'NoSuchOp'"));
  CHECK_THAT(error_of([&] { g.add_node("AddV2", {x}, {}, "add"); }),
             Equals("AddV2: expected 2 inputs (x, y), got 1 (node 'add')"));
  CHECK_THAT(error_of([&] {
               g.add_node("AddV2", {x, d}, {}, "add");
             }),
             Equals("Input 'y' of 'AddV2' Op has type double that does not match type float of argument 'x'. "
                    "(node 'add')"));
  CHECK_THAT(error_of([&] { g.add_node("Neg", {b}); }),
             StartsWith("Neg: Value for attr 'T' of bool is not in the list of allowed values: half, bfloat16"));
  CHECK_THAT(error_of([&] {
               g.add_node("Placeholder", {}, {{"dtype", DType::Float32}}, "p");
             }),
             Equals("Placeholder: missing required attribute 'shape' (node 'p')"));
  CHECK_THAT(error_of([&] {
               g.add_node("Neg", {x}, {{"alpha", std::int64_t{1}}}, "n");
             }),
             Equals("Neg: unknown attribute 'alpha' (node 'n')"));
  CHECK_THAT(error_of([&] {
               g.add_node("Neg", {x}, {{"T", DType::Float64}}, "n");
             }),
             Equals("Input 'x' of 'Neg' Op has type float that does not match attribute T=double. (node 'n')"));
  CHECK_THAT(error_of([&] {
               g.add_node("Cast", {x}, {{"DstT", std::string("float")}}, "c");
             }),
             Equals("Cast: attribute 'DstT' must be of type type, got string \"float\" (node 'c')"));
  CHECK_THAT(error_of([&] { g.add_node("AddN", {}, {}, "sum"); }),
             Equals("AddN: Value for attr 'N' of 0 must be at least minimum 1 (node 'sum')"));
  Graph other;
  Output foreign = ops::placeholder(other, DType::Float32, Shape{2, 3});
  CHECK_THAT(error_of([&] { ops::add(g, x, foreign); }), Contains("input 1 is not an output of this graph"));
  // Nothing was added by the failed calls.
  CHECK(g.num_nodes() == 3);
}

TEST_CASE("string attributes are checked against their allowed values", "[graph]") {
  // A schema of our own, checked directly: no op of this issue has a string enum.
  OpDef def = OpDefBuilder("Padded")
                  .input("x", "T")
                  .output("y", "T")
                  .attr_type("T", {DType::Float32})
                  .attr_string("padding", {"SAME", "VALID"})
                  .attr_int("groups", 1, 1)
                  .shape_fn([](ShapeContext& c) { c.set_output(0, c.input_shape(0)); })
                  .build();
  AttrMap bad{{"padding", std::string("FULL")}};
  CHECK_THAT(
      error_of([&] { complete_attrs(def, bad, {DType::Float32}); }),
      Equals("Padded: Value for attr 'padding' of \"FULL\" is not in the list of allowed values: \"SAME\", \"VALID\""));
  AttrMap small{{"padding", std::string("SAME")}, {"groups", std::int64_t{0}}};
  CHECK_THAT(error_of([&] { complete_attrs(def, small, {DType::Float32}); }),
             Equals("Padded: Value for attr 'groups' of 0 must be at least minimum 1"));
  AttrMap good{{"padding", std::string("VALID")}};
  CHECK(complete_attrs(def, good, {DType::Float32}) == std::vector<DType>{DType::Float32});
  CHECK(get_attr<std::int64_t>(good, "groups") == 1);   // the default was filled in
  CHECK(get_attr<DType>(good, "T") == DType::Float32);  // bound from the input
}

TEST_CASE("nodes get unique names and inferred outputs", "[graph]") {
  Graph g;
  Output x = ops::placeholder(g, DType::Float32, Shape{-1, 3}, "x");
  Output a = ops::neg(g, x, "n");
  Output b = ops::neg(g, x, "n");
  Output c = ops::neg(g, x, "n");
  CHECK(a.op().name == "n");
  CHECK(b.op().name == "n_1");
  CHECK(c.name() == "n_2:0");
  CHECK(g.find("n_1") == &b.op());
  CHECK(c.dtype() == DType::Float32);
  CHECK(c.shape() == Shape{-1, 3});
  Output cast = ops::cast(g, x, DType::Half);
  CHECK(cast.dtype() == DType::Half);
  CHECK(get_attr<bool>(cast.op().attrs, "Truncate") == false);
}
