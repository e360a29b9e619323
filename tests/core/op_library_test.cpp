// OpLibrary (core/op_library.hpp): ops from outside are checked whole before anything is added:
// duplicates, kernels for unknown ops or disallowed dtypes, missing cases or gradients.
#include <catch2/catch.hpp>

#include <fstream>

#include <dagrad/core/op_library.hpp>
#include <dagrad/dagrad.hpp>
#include <dagrad/ops/shape_util.hpp>

#include "support/error_of.hpp"

namespace dagrad {
namespace {

using Catch::Matchers::Contains;
using testing::error_of;

constexpr auto kCpu = Device::Kind::CPU;

OpDef unary(const std::string& name, bool with_cases = true) {
  OpDefBuilder b(name);
  b.input("x", "T")
      .output("y", "T")
      .attr_type("T", {DType::Float32, DType::Float64})
      .shape_fn(ops::same_shape_as_input);
  if (with_cases) b.cases([] { return std::vector<OpCase>{{.label = "[3]", .inputs = {uniform({3})}}}; });
  return b.build();
}

KernelDef kernel(const std::string& op, DType dtype, const std::string& backend = "reference") {
  return {op, kCpu, dtype, backend, 0, [](KernelContext& c) { c.set_output(0, c.input(0)); }};
}

GradientFn identity_gradient() {
  return
      [](Graph&, const Node&, const std::vector<Output>& dy) -> std::vector<std::optional<Output>> { return {dy[0]}; };
}

// Registries of their own, so that the tests leave the process's alone; "Base" is registered.
struct Fixture {
  Registries r;
  Fixture() {
    OpLibrary base("base");
    base.op(unary("Base")).kernel(kernel("Base", DType::Float32)).gradient("Base", identity_gradient());
    base.add_to(r);
  }
};

// A library with one good op, "Fresh", to which a test adds one mistake.
OpLibrary fresh_library() {
  OpLibrary library("mine");
  library.op(unary("Fresh")).kernel(kernel("Fresh", DType::Float64)).gradient("Fresh", identity_gradient());
  return library;
}

Code code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  FAIL("no error");
  return Code::Internal;
}

}  // namespace

TEST_CASE("an op library adds its ops, kernels and gradients", "[op_library]") {
  Fixture f;
  OpLibrary library = fresh_library();
  library.kernel(kernel("Base", DType::Float64, "mine"));  // a kernel for an op registered before
  library.add_to(f.r);
  CHECK(f.r.ops.find("Fresh") != nullptr);
  CHECK(f.r.kernels.find("Fresh", kCpu, DType::Float64, "reference") != nullptr);
  CHECK(f.r.kernels.find("Base", kCpu, DType::Float64, "mine") != nullptr);
  CHECK(f.r.gradients.has_entry("Fresh"));
}

TEST_CASE("an op library that repeats a name adds nothing and names it", "[op_library]") {
  Fixture f;
  SECTION("an op registered before") {
    OpLibrary library = fresh_library();
    library.op(unary("Base"));
    CHECK_THAT(error_of([&] { library.add_to(f.r); }),
               Contains("op library 'mine': op 'Base' is already registered; ops are never replaced"));
  }
  SECTION("an op twice in the library") {
    OpLibrary library = fresh_library();
    library.op(unary("Fresh"));
    CHECK_THAT(error_of([&] { library.add_to(f.r); }), Contains("op 'Fresh' is already registered"));
  }
  SECTION("a kernel registered before") {
    OpLibrary library = fresh_library();
    library.kernel(kernel("Base", DType::Float32));
    CHECK_THAT(error_of([&] { library.add_to(f.r); }),
               Contains("kernel Base for cpu/float of backend 'reference' is already registered"));
  }
  SECTION("a gradient registered before, unless replaced explicitly") {
    OpLibrary library = fresh_library();
    library.gradient("Base", identity_gradient());
    CHECK_THAT(error_of([&] { library.add_to(f.r); }),
               Contains("op 'Base' already has a gradient; replace it with replace_gradient"));
    OpLibrary replacing = fresh_library();
    replacing.replace_gradient("Base", identity_gradient());
    replacing.add_to(f.r);
    CHECK(f.r.ops.find("Fresh") != nullptr);
    return;
  }
  CHECK(code_of([&] {
          OpLibrary again = fresh_library();
          again.op(unary("Base"));
          again.add_to(f.r);
        }) == Code::InvalidArgument);
  CHECK(f.r.ops.find("Fresh") == nullptr);  // all or nothing
  CHECK(f.r.kernels.find("Fresh", kCpu, DType::Float64) == nullptr);
  CHECK(!f.r.gradients.has_entry("Fresh"));
}

TEST_CASE("an op library's kernels need a registered op and a dtype its schema allows", "[op_library]") {
  Fixture f;
  OpLibrary unknown = fresh_library();
  unknown.kernel(kernel("Nope", DType::Float32));
  CHECK(code_of([&] { unknown.add_to(f.r); }) == Code::NotFound);
  CHECK_THAT(error_of([&] { fresh_library().kernel(kernel("Nope", DType::Float32)).add_to(f.r); }),
             Contains("kernel Nope for cpu/float of backend 'reference': op 'Nope' is not registered"));

  CHECK_THAT(error_of([&] { fresh_library().kernel(kernel("Fresh", DType::Int32)).add_to(f.r); }),
             Contains("kernel Fresh for cpu/int32 of backend 'reference': the op's schema allows {float, double}"));
  CHECK_THAT(error_of([&] {
               fresh_library().kernel({"Fresh", kCpu, DType::Float32, "mine", 0, nullptr}).add_to(f.r);
             }),
             Contains("is empty"));
  CHECK_THAT(error_of([&] { fresh_library().gradient("Nope", identity_gradient()).add_to(f.r); }),
             Contains("gradient for op 'Nope', which is not registered"));
  CHECK(f.r.ops.find("Fresh") == nullptr);

  // The kernel registry itself refuses the same, for kernels added to it directly.
  CHECK(code_of([&] { f.r.kernels.add(kernel("Nope", DType::Float32)); }) == Code::NotFound);
  CHECK_THAT(error_of([&] { f.r.kernels.add(kernel("Base", DType::Half, "mine")); }),
             Contains("the schema of Base does not allow half"));
}

TEST_CASE("an op library's ops need a valid name, cases and a gradient", "[op_library]") {
  Fixture f;
  CHECK_THAT(error_of([&] { OpLibrary("mine").op(unary("Bare", false)).no_gradient("Bare").add_to(f.r); }),
             Contains("op 'Bare' has no cases"));
  OpLibrary no_cases_reason("mine");
  OpDef described = unary("Described", false);
  described.no_cases_reason = "a test op";
  no_cases_reason.op(std::move(described)).no_gradient("Described").add_to(f.r);
  CHECK(f.r.ops.find("Described") != nullptr);

  CHECK_THAT(error_of([&] { OpLibrary("mine").op(unary("NoGrad")).add_to(f.r); }),
             Contains("op 'NoGrad' has no gradient"));
  for (const char* name : {"_Internal", "9Lives", "With space", "Semi;colon"}) {
    CHECK_THAT(error_of([&] { OpLibrary("mine").op(unary(name)).no_gradient(name).add_to(f.r); }),
               Contains(std::string("op name '") + name + "' is not"));
  }
  OpLibrary("mine").op(unary("Scoped>Op_2")).no_gradient("Scoped>Op_2").add_to(f.r);
  CHECK(f.r.ops.find("Scoped>Op_2") != nullptr);
}

TEST_CASE("load_op_library names a file that is missing, not a file, or not a shared object", "[op_library]") {
  CHECK(code_of([] { load_op_library("/nonexistent/libmissing.so"); }) == Code::NotFound);
  CHECK_THAT(error_of([] { load_op_library("/nonexistent/libmissing.so"); }),
             Contains("op library '/nonexistent/libmissing.so': no such file"));
  CHECK_THAT(error_of([] { load_op_library(DAGRAD_TEST_DATA_DIR); }), Contains("': not a file"));
  const std::string text = std::string(DAGRAD_TEST_DATA_DIR) + "/op_library_test_not_elf.so";
  {
    std::ofstream out(text);
    out << "not a shared object\n";
  }
  CHECK_THAT(error_of([&] { load_op_library(text); }), Contains("op library '" + text + "': cannot load it: "));
}

}  // namespace dagrad
