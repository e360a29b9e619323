// "Did you mean": closest_names ranks case-insensitive matches first, then the nearest names
// within a third of the name's length; the op registry's NotFound error carries the suggestion.
#include <catch2/catch.hpp>

#include <dagrad/core/suggest.hpp>
#include <dagrad/dagrad.hpp>

#include "support/error_of.hpp"

using namespace dagrad;
using Names = std::vector<std::string>;

TEST_CASE("closest_names: case first, then the nearest within a third of the length", "[suggest]") {
  const Names ops = {"Conv2D", "Conv2DBackpropFilterV2", "Conv2DBackpropInputV2", "MatMul", "Mul", "Neg", "Relu"};
  CHECK(closest_names("conv2d", ops) == Names{"Conv2D"});
  CHECK(closest_names("Conv2DBackpropFiterV2", ops) == Names{"Conv2DBackpropFilterV2"});  // one letter left out
  CHECK(closest_names("matmull", ops) == Names{"MatMul"});
  CHECK(closest_names("Reluu", ops) == Names{"Relu"});
  CHECK(closest_names("Rleu", ops).empty());  // a swap is two edits; a 4-letter name allows one
  CHECK(closest_names("NoSuchOp", ops).empty());
  CHECK(closest_names("", ops).empty());
  CHECK(closest_names(std::string(10000, 'x'), ops).empty());  // long input: no quadratic work, no match
  // Ties are all kept, in the candidates' order, at most three.
  CHECK(closest_names("Mux", {"Mul", "Max", "Min", "Mix", "Mux2"}) == Names{"Mul", "Max", "Mix"});
  // A case match beats a nearer-by-edits name.
  CHECK(closest_names("neg", {"Neg", "nag"}) == Names{"Neg"});
}

TEST_CASE("did_you_mean words one, two or three names", "[suggest]") {
  CHECK(did_you_mean({}).empty());
  CHECK(did_you_mean({"A"}) == "; did you mean 'A'?");
  CHECK(did_you_mean({"A", "B"}) == "; did you mean 'A' or 'B'?");
  CHECK(did_you_mean({"A", "B", "C"}) == "; did you mean 'A', 'B' or 'C'?");
}

TEST_CASE("an unknown op name is NotFound with the closest registered names", "[suggest]") {
  CHECK(testing::error_of([] { op_registry().get("conv2d"); }) ==
        "Op type not registered 'conv2d'; did you mean 'Conv2D'?");
  CHECK(testing::error_of([] { op_registry().get("NoSuchOp"); }) == "Op type not registered 'NoSuchOp'");
  try {
    op_registry().get("relu");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == Code::NotFound);
    CHECK_THAT(e.what(), Catch::Matchers::EndsWith("did you mean 'Relu'?"));
  }
}
