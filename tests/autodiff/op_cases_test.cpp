// The op case table (OpDef::cases, ops/cases/) and check_ops: every op has cases or a reason,
// every CPU kernel is exercised, no CPU op falls back to the reference kernels unless listed here,
// and a planted error in a kernel or a gradient is caught. The whole table runs as the ctest test
// "check: the op case table on the CPU" (`dagrad check --full`, tests/cli/CMakeLists.txt).
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <optional>
#include <set>
#include <type_traits>

#include <dagrad/autodiff/op_check.hpp>
#include <dagrad/dagrad.hpp>

#include "support/cuda_testing.hpp"

using namespace dagrad;

namespace {

// Ops whose CPU work is the reference kernel on purpose, with the reason.
const std::map<std::string, std::string> kReferenceOnCpu = {
    {"Assign", "a copy into the variable; nothing to vectorise"},
    {"Shape", "writes a handful of integers"},
    {"BroadcastGradientArgs", "integer shape arithmetic on a handful of values"},
    {"Reshape", "forwards the input buffer"},
    {"Identity", "forwards the input buffer"},
    {"CollectiveReduceShards",
     "in a group of one the fold is the op's definition; across processes dagrad::mpi::World registers the mpi kernel"},
};

}  // namespace

TEST_CASE("every registered op has cases or says why it has none", "[cases]") {
  std::vector<std::string> missing, both;
  for (const OpDef* def : op_registry().list()) {
    if (!def->cases && def->no_cases_reason.empty()) missing.push_back(def->name);
    if (def->cases && !def->no_cases_reason.empty()) both.push_back(def->name);
  }
  INFO("ops without cases: " << Catch::Detail::stringify(missing));
  CHECK(missing.empty());
  INFO("ops with cases and a reason for none: " << Catch::Detail::stringify(both));
  CHECK(both.empty());
}

namespace {

// The kernels of `device` that check_ops' forward checks never ran, as op/dtype/backend.
std::vector<std::string> unexercised_kernels(Device device, const OpCheckReport& report) {
  const std::set<const KernelDef*> run(report.kernels_run.begin(), report.kernels_run.end());
  std::vector<std::string> missing;
  for (const KernelDef* k : kernel_registry().list()) {
    if (k->device != device.kind || run.count(k)) continue;
    if (!op_registry().get(k->op).cases) continue;  // the ops without cases say why (the test above)
    missing.push_back(k->op + "/" + std::string(dtype_name(k->dtype)) + "/" + k->backend);
  }
  return missing;
}

}  // namespace

TEST_CASE("the op cases exercise every registered CPU kernel", "[cases]") {
  const auto unexercised = unexercised_kernels(Device::cpu(), check_ops({.gradients = false}));
  INFO("CPU kernels no case runs: " << Catch::Detail::stringify(unexercised));
  CHECK(unexercised.empty());
}

TEST_CASE("the op cases pass on CUDA and exercise every registered CUDA kernel", "[cases][cuda]") {
  DAGRAD_SKIP_WITHOUT_CUDA_DEVICE();
  const OpCheckReport report = check_ops({.device = Device::cuda(), .gradients = false});
  INFO(report.table());
  CHECK(report.passed());
  const auto unexercised = unexercised_kernels(Device::cuda(), report);
  INFO("CUDA kernels no case runs: " << Catch::Detail::stringify(unexercised));
  CHECK(unexercised.empty());
}

TEST_CASE("no CPU op falls back to the reference kernels unless it is listed", "[cases]") {
  std::vector<std::string> fallbacks;
  for (const OpDef* def : op_registry().list()) {
    if (!def->cases || kReferenceOnCpu.count(def->name)) continue;
    for (const KernelDef* k : kernel_registry().list(def->name)) {
      if (k->device != Device::Kind::CPU || k->backend != "reference") continue;
      const KernelDef& chosen = kernel_registry().get(def->name, Device::Kind::CPU, k->dtype);
      if (chosen.backend == "reference") fallbacks.push_back(def->name + "/" + std::string(dtype_name(k->dtype)));
    }
  }
  INFO("CPU ops served by the reference kernels: " << Catch::Detail::stringify(fallbacks));
  CHECK(fallbacks.empty());
  // The list holds no stale entries: each listed op really runs on the reference kernels.
  for (const auto& [op, why] : kReferenceOnCpu) {
    INFO(op << ": " << why);
    REQUIRE(op_registry().find(op) != nullptr);
    const auto kernels = kernel_registry().list(op);
    CHECK(std::all_of(kernels.begin(), kernels.end(),
                      [](const KernelDef* k) { return k->device != Device::Kind::CPU || k->backend == "reference"; }));
  }
}

namespace {

// A custom op registered the way an embedding program would, with cases, a reference kernel, a
// CPU kernel that can be told to be wrong by one part in a thousand, and a gradient: the case
// table must notice a planted error in either.
std::atomic<bool> g_plant_error{false};

template <class T>
KernelFn scale_kernel(bool plantable) {
  if constexpr (!std::is_floating_point_v<T>) {
    return {};
  } else {
    return [plantable](KernelContext& c) {
      const double factor = plantable && g_plant_error ? 3.003 : 3.0;
      Tensor& y = c.allocate_output(0);
      const T* x = c.input(0).data<T>();
      for (std::int64_t i = 0; i < y.num_elements(); ++i) y.data<T>()[i] = static_cast<T>(x[i] * factor);
    };
  }
}

GradientFn scale_gradient(double factor) {
  return [factor](Graph& g, const Node& n, const std::vector<Output>& dy) -> std::vector<std::optional<Output>> {
    return {ops::mul(g, dy[0], ops::scalar(g, factor, n.output_dtypes[0]))};
  };
}

void register_scale_op() {
  static const bool registered = [] {
    op_registry().add(OpDefBuilder("DagradTestScale")
                          .input("x", "T")
                          .output("y", "T")
                          .attr_type("T", {DType::Float32, DType::Float64})
                          .shape_fn([](ShapeContext& c) { c.set_output(0, c.input_shape(0)); })
                          .doc("y = 3x (a test op)")
                          .cases([] { return std::vector<OpCase>{{.label = "[4]", .inputs = {uniform({4})}}}; })
                          .build());
    add_kernels(kernel_registry(), "DagradTestScale", Device::Kind::CPU, "reference", 0,
                {DType::Float32, DType::Float64}, []<class T>() { return scale_kernel<T>(false); });
    add_kernels(kernel_registry(), "DagradTestScale", Device::Kind::CPU, "cpu", 10, {DType::Float32, DType::Float64},
                []<class T>() { return scale_kernel<T>(true); });
    gradient_registry().add("DagradTestScale", scale_gradient(3.0));
    // The same op with its input wrongly declared as not reaching the output.
    op_registry().add(
        OpDefBuilder("DagradTestScaleMislabelled")
            .input("x", "T")
            .output("y", "T")
            .attr_type("T", {DType::Float32, DType::Float64})
            .shape_fn([](ShapeContext& c) { c.set_output(0, c.input_shape(0)); })
            .doc("y = 3x, its case claiming a zero Jacobian (a test op)")
            .cases([] { return std::vector<OpCase>{{.label = "[4]", .inputs = {with_zero_jacobian(uniform({4}))}}}; })
            .build());
    add_kernels(kernel_registry(), "DagradTestScaleMislabelled", Device::Kind::CPU, "reference", 0,
                {DType::Float32, DType::Float64}, []<class T>() { return scale_kernel<T>(false); });
    gradient_registry().add("DagradTestScaleMislabelled", scale_gradient(3.0));
    return true;
  }();
  (void)registered;
}

CheckStatus worst(const OpCheckReport& report, CheckKind kind) {
  CheckStatus status = CheckStatus::Skip;
  for (const OpCheckRow& r : report.rows) {
    if (r.check != kind) continue;
    if (r.status == CheckStatus::Fail) return CheckStatus::Fail;
    if (r.status == CheckStatus::Pass) status = CheckStatus::Pass;
  }
  return status;
}

}  // namespace

TEST_CASE("a custom op's cases run through check_ops, which catches a wrong kernel or gradient", "[cases]") {
  register_scale_op();
  OpCheckOptions options;
  options.ops = {"DagradTestScale"};
  const OpCheckReport good = check_ops(options);
  INFO(good.table());
  CHECK(good.passed());
  CHECK(worst(good, CheckKind::Forward) == CheckStatus::Pass);
  CHECK(worst(good, CheckKind::Gradient) == CheckStatus::Pass);

  g_plant_error = true;
  const OpCheckReport wrong_kernel = check_ops(options);
  g_plant_error = false;
  INFO(wrong_kernel.table());
  CHECK(!wrong_kernel.passed());
  CHECK(worst(wrong_kernel, CheckKind::Forward) == CheckStatus::Fail);
  CHECK_THAT(wrong_kernel.table(), Catch::Matchers::Contains("FAIL DagradTestScale [[4]] cpu float forward"));

  gradient_registry().replace("DagradTestScale", scale_gradient(3.1));
  const OpCheckReport wrong_gradient = check_ops(options);
  gradient_registry().replace("DagradTestScale", scale_gradient(3.0));
  INFO(wrong_gradient.table());
  CHECK(worst(wrong_gradient, CheckKind::Forward) == CheckStatus::Pass);
  CHECK(worst(wrong_gradient, CheckKind::Gradient) == CheckStatus::Fail);
  CHECK_THAT(wrong_gradient.json(), Catch::Matchers::Contains("\"status\":\"FAIL\""));
}

TEST_CASE("an input declared with a zero Jacobian fails the check when the output depends on it", "[cases]") {
  register_scale_op();
  const OpCheckReport report = check_ops({.ops = {"DagradTestScaleMislabelled"}, .dtypes = {DType::Float64}});
  INFO(report.table());
  CHECK(worst(report, CheckKind::Gradient) == CheckStatus::Fail);
  CHECK_THAT(report.table(), Catch::Matchers::Contains("gradient: x: expected a zero Jacobian; 4 of 4 perturbations"));
}

TEST_CASE("the whole case table passes the gradient checks in the fast mode too", "[cases][autodiff]") {
  // The ctest "check: the op case table on the CPU" runs the full mode (whole Jacobians).
  std::vector<std::string> library_ops;  // not the test ops registered above, some wrong on purpose
  for (const OpDef* def : op_registry().list())
    if (def->cases && def->name.rfind("DagradTest", 0) != 0) library_ops.push_back(def->name);
  const OpCheckReport report = check_ops({.ops = library_ops, .forward = false, .mode = GradCheckMode::Fast});
  INFO(report.table());
  CHECK(report.passed());
  CHECK(worst(report, CheckKind::SecondOrder) == CheckStatus::Pass);
}

TEST_CASE("check_ops refuses unknown ops, ops without cases and bad orders by name", "[cases]") {
  CHECK_THROWS_WITH(check_ops({.ops = {"NoSuchOp"}}), Catch::Matchers::Contains("Op type not registered 'NoSuchOp'"));
  CHECK_THROWS_WITH(check_ops({.ops = {"Placeholder"}}),
                    Catch::Matchers::Contains("Placeholder has no cases (graph-only"));
  CHECK_THROWS_WITH(check_ops({.ops = {"Neg"}, .max_order = 3}), Catch::Matchers::Contains("must be 0, 1 or 2, got 3"));
}

TEST_CASE("check_ops runs the conv cases on each forced path that applies to them", "[cases][conv]") {
  const OpCheckReport report = check_ops({.ops = {"Conv2D", "Conv2DBackpropInputV2", "Conv2DBackpropFilterV2"},
                                          .dtypes = {DType::Float32},
                                          .gradients = false});
  INFO(report.table());
  CHECK(report.passed());
  for (const char* op : {"Conv2D", "Conv2DBackpropInputV2", "Conv2DBackpropFilterV2"}) {
    INFO(op);
    std::set<std::string> paths;
    for (const OpCheckRow& r : report.rows)
      if (r.op == op && r.status == CheckStatus::Pass && r.backend.rfind("cpu:", 0) == 0) paths.insert(r.backend);
    // The generic path applies to every case, and the NHWC cases reach a fast path (every path
    // of every table is covered by tests/backends/cpu/conv2d_paths_test.cpp's sweep).
    CHECK(paths.count("cpu:generic"));
    CHECK(paths.count("cpu:nhwc_fast"));
  }
}
