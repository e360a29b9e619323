// Every registered op has a gradient function or an explicit no-gradient declaration.
#include <catch2/catch.hpp>

#include <dagrad/dagrad.hpp>

using namespace dagrad;

TEST_CASE("every op has a gradient or an explicit no-gradient", "[autodiff][registry]") {
  std::string missing;
  const auto ops = op_registry().list();
  REQUIRE(ops.size() >= 20);
  for (const OpDef* def : ops) {
    if (!gradient_registry().has_entry(def->name)) missing += def->name + " ";
  }
  INFO("ops with neither a gradient nor an explicit no-gradient (register one in autodiff/grads/): " << missing);
  CHECK(missing.empty());
}
