// check_ops: runs the op cases of the registry on the backends of one device, forward and gradients.
#include "dagrad/autodiff/op_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "dagrad/autodiff/gradient_checker.hpp"
#include "dagrad/core/error.hpp"
#include "dagrad/core/gradient_registry.hpp"
#include "dagrad/core/op_registry.hpp"
#include "dagrad/core/session.hpp"
#include "dagrad/core/threading.hpp"
#include "dagrad/ops/array_ops.hpp"
#include "dagrad/ops/state_ops.hpp"

namespace dagrad {
namespace {

using i64 = std::int64_t;

// How far a backend may be from the reference, relative to the reference's largest magnitude:
// about one rounding of the result in the dtype (the reference sums in double and rounds once;
// the backends sum in float32 or in another order). A case may scale it (long sums).
double forward_tolerance(DType dtype) {
  static const std::map<DType, double> tolerance = {
      {DType::Half, 1e-3}, {DType::BFloat16, 8e-3}, {DType::Float32, 1e-5}, {DType::Float64, 1e-12}};
  const auto it = tolerance.find(dtype);
  return it == tolerance.end() ? 0 : it->second;
}

// FNV-1a: a seed per op name that is the same on every platform and run.
std::uint64_t name_seed(std::string_view name) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : name) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return h;
}

// The attributes completed against the inputs (type attributes bound, defaults filled).
AttrMap completed(const OpDef& def, AttrMap attrs, const std::vector<Tensor>& inputs) {
  std::vector<DType> dtypes;
  for (const Tensor& t : inputs) dtypes.push_back(t.dtype());
  complete_attrs(def, attrs, dtypes);
  return attrs;
}

// Runs the op once in a session of its own on `device` with `backend`'s kernels and `threads`
// threads: the inputs are constants, ref inputs become variables holding them. Returns the
// outputs, then the ref inputs' values after the op ran, all on the host.
std::vector<Tensor> run_case(const OpDef& def, const std::vector<Tensor>& inputs, const AttrMap& attrs,
                             const std::string& backend, Device device, int threads, const std::string& path = {}) {
  Graph g;
  std::vector<Output> ins, variables, initialisers;
  const auto args = flat_input_args(def, completed(def, attrs, inputs));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Output value = ops::constant(g, inputs[i]);
    if (!args[i]->is_ref) {
      ins.push_back(value);
      continue;
    }
    const Output variable = ops::variable(g, inputs[i].shape(), inputs[i].dtype());
    initialisers.push_back(ops::assign(g, variable, value));
    ins.push_back(variable);
    variables.push_back(variable);
  }
  const Node& node = g.add_node(def.name, ins, attrs, def.name);
  std::vector<Output> outputs;
  for (int k = 0; k < node.num_outputs(); ++k) outputs.push_back(g.output(node.id, k));

  Session session(g, {.device = device, .threads = threads, .backend = backend, .kernel_path = path});
  if (!initialisers.empty()) session.run({}, initialisers);
  std::vector<Tensor> results = session.run({}, outputs);
  if (!variables.empty()) {
    for (Tensor& t : session.run({}, variables)) results.push_back(t);
  }
  for (Tensor& t : results) t = t.to(Device::cpu()).clone();  // variables are updated in place later
  return results;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

// The largest difference relative to the reference's largest magnitude; a mismatch that no
// tolerance excuses (shape, dtype, a different non-finite value, any bit of an exact result)
// sets `mismatch`.
struct Comparison {
  double relative = 0;
  std::string mismatch;
};

Comparison compare(const Tensor& got, const Tensor& want, bool exact) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    return {0, str_cat("got ", dtype_name(got.dtype()), got.shape().to_string(), ", the reference ",
                       dtype_name(want.dtype()), want.shape().to_string())};
  }
  const bool exact_values = exact || !is_floating(want.dtype());
  double worst = 0, scale = 0;
  for (i64 i = 0; i < want.num_elements(); ++i) {
    const double a = got.value_as_double(i), b = want.value_as_double(i);
    if (std::isnan(a) && std::isnan(b)) continue;
    if (exact_values || !std::isfinite(a) || !std::isfinite(b)) {
      if (a != b) return {0, str_cat("element ", i, ": got ", a, ", the reference ", b)};
      continue;
    }
    worst = std::max(worst, std::abs(a - b));
    scale = std::max(scale, std::abs(b));
  }
  return {scale > 0 ? worst / scale : worst, {}};
}

class Checker {
 public:
  Checker(const OpCheckOptions& options, OpCheckReport& report) : options_(options), report_(report) {}

  void check(const OpDef& def) {
    const std::vector<OpCase> cases = def.cases();
    for (std::size_t k = 0; k < cases.size(); ++k) {
      const OpCase& c = cases[k];
      for (DType dtype : dtypes_of(def, c)) {
        const std::vector<Tensor> inputs = make_case_inputs(c, dtype, name_seed(def.name) + 1000 * k);
        const DType key = def.kernel_dtype(completed(def, c.attrs, inputs));
        if (options_.forward) forward(def, c, inputs, dtype, key);
        if (options_.gradients && c.gradient_order > 0) gradients(def, c, inputs, dtype, key);
      }
    }
  }

 private:
  std::vector<DType> dtypes_of(const OpDef& def, const OpCase& c) const {
    std::vector<DType> dtypes = c.dtypes.empty() ? def.kernel_dtypes() : c.dtypes;
    if (dtypes.empty()) dtypes = {DType::Float32};  // an op without a type attribute
    if (options_.dtypes.empty()) return dtypes;
    std::vector<DType> chosen;
    for (DType d : dtypes)
      if (std::count(options_.dtypes.begin(), options_.dtypes.end(), d)) chosen.push_back(d);
    return chosen;
  }

  OpCheckRow row(const OpDef& def, const OpCase& c, std::string backend, DType dtype, CheckKind kind) const {
    OpCheckRow r;
    r.op = def.name;
    r.case_label = c.label;
    r.backend = std::move(backend);
    r.device = options_.device;
    r.dtype = dtype;
    r.check = kind;
    return r;
  }

  // Every backend's kernel for (op, device, dtype) against the reference kernel on the host.
  void forward(const OpDef& def, const OpCase& c, const std::vector<Tensor>& inputs, DType dtype, DType key) {
    std::vector<Tensor> want;
    try {
      want = run_case(def, inputs, c.attrs, "reference", Device::cpu(), 1);
    } catch (const Error& e) {  // a case the op refuses: the case is wrong, and says so
      OpCheckRow r = row(def, c, "reference", dtype, CheckKind::Forward);
      r.status = CheckStatus::Fail;
      r.message = str_cat("the reference kernel refused the case: ", e.what());
      report_.rows.push_back(r);
      return;
    }
    note_kernel(def.name, Device::Kind::CPU, key, "reference");
    for (const KernelDef* k : kernel_registry().list(def.name)) {
      if (k->device != options_.device.kind || k->dtype != key || k->backend == "reference") continue;
      OpCheckRow r = row(def, c, k->backend, dtype, CheckKind::Forward);
      r.tolerance = c.exact ? 0 : forward_tolerance(r.dtype) * c.tolerance_scale;
      if (!device_available(options_.device)) {
        r.message = str_cat("no device ", options_.device.to_string());
        report_.rows.push_back(r);
        continue;
      }
      run_forward(def, c, inputs, want, *k, {}, r);
      report_.rows.push_back(r);
      for (const std::string& path : k->paths) {  // each path that applies, forced
        OpCheckRow p = r;
        p.backend = k->backend + ":" + path;
        p.status = CheckStatus::Skip;
        p.error = 0;
        p.message.clear();
        run_forward(def, c, inputs, want, *k, path, p);
        if (p.status != CheckStatus::Skip) report_.rows.push_back(p);
      }
    }
  }

  // Runs kernel k (forced onto `path` when one is given) and compares it with the reference; a
  // forced path that does not apply to the case leaves the row skipped.
  void run_forward(const OpDef& def, const OpCase& c, const std::vector<Tensor>& inputs,
                   const std::vector<Tensor>& want, const KernelDef& k, const std::string& path, OpCheckRow& r) {
    try {
      // Determinism: the same bits on 1 thread and on every core (CPU), or on two runs (a GPU).
      const std::vector<Tensor> one = run_case(def, inputs, c.attrs, k.backend, options_.device, 1, path);
      const std::vector<Tensor> all = run_case(def, inputs, c.attrs, k.backend, options_.device, 0, path);
      note_kernel(def.name, k.device, k.dtype, k.backend);
      r.status = CheckStatus::Pass;
      for (std::size_t i = 0; i < want.size(); ++i) {
        if (!same_bits(one[i], all[i])) {
          r.status = CheckStatus::Fail;
          r.message = str_cat("output ", i, " differs between 1 and ", num_threads(), " threads");
          return;
        }
        const Comparison d = compare(one[i], want[i], c.exact);
        r.error = std::max(r.error, d.relative);
        if (!d.mismatch.empty() || d.relative > r.tolerance) {
          r.status = CheckStatus::Fail;
          r.message = d.mismatch.empty() ? str_cat("output ", i, ": relative error ", d.relative, " > ", r.tolerance)
                                         : str_cat("output ", i, ": ", d.mismatch);
          return;
        }
      }
    } catch (const Error& e) {
      if (!path.empty() && std::string_view(e.what()).find(kPathDoesNotApply) != std::string_view::npos) return;
      r.status = CheckStatus::Fail;
      r.message = e.what();
    }
  }

  // Gradient checks of each order on the reference kernels (CPU only) and on the device's own.
  void gradients(const OpDef& def, const OpCase& c, const std::vector<Tensor>& inputs, DType dtype, DType key) {
    const bool declared = gradient_registry().has_entry(def.name);
    if (!declared || gradient_registry().find(def.name) == nullptr) {
      OpCheckRow r = row(def, c, "reference", dtype, CheckKind::Gradient);
      r.status = declared ? CheckStatus::Skip : CheckStatus::Fail;
      r.message = declared ? "declared without gradient" : "no gradient and no explicit no-gradient registered";
      report_.rows.push_back(r);
      return;
    }
    std::vector<std::string> backends;
    if (options_.device.is_cpu()) backends.push_back("reference");
    const KernelDef* fastest = kernel_registry().find(def.name, options_.device.kind, key);
    if (fastest != nullptr && fastest->backend != "reference") backends.push_back(fastest->backend);
    const std::vector<std::string> names = gradcheck_input_names(def.name, inputs, c.attrs);
    std::vector<std::string> checked, zero;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (!is_floating(inputs[i].dtype())) continue;
      if (c.inputs[i].differentiable) checked.push_back(names[i]);
      if (c.inputs[i].zero_jacobian) zero.push_back(names[i]);
    }
    // Second order in float64 only: in the narrower dtypes the rounding of the first-order graph
    // swamps the differences of its differences.
    const int orders = std::min(dtype == DType::Float64 ? 2 : 1, std::min(c.gradient_order, options_.max_order));
    for (const std::string& backend : backends) {
      for (int order = 1; order <= orders; ++order) {
        OpCheckRow r = row(def, c, backend, dtype, order == 1 ? CheckKind::Gradient : CheckKind::SecondOrder);
        if (checked.empty() && zero.empty()) {
          r.message = str_cat("no differentiable ", dtype_name(dtype), " input");
          report_.rows.push_back(r);
          break;
        }
        if (!device_available(options_.device)) {
          r.message = str_cat("no device ", options_.device.to_string());
          report_.rows.push_back(r);
          continue;
        }
        GradCheckOptions g;
        g.mode = options_.mode;
        g.order = order;
        g.backend = backend == "reference" ? "reference" : "";
        g.device = options_.device;
        g.inputs_to_check = checked;
        g.inputs_to_check.insert(g.inputs_to_check.end(), zero.begin(), zero.end());
        run_gradient(def, c, inputs, g, zero, r);
        report_.rows.push_back(r);
      }
    }
  }

  // The inputs with a zero Jacobian pass when no perturbation changed an output and both
  // Jacobians are zero (the checker itself calls that a vacuous check); the others as the checker says.
  static void run_gradient(const OpDef& def, const OpCase& c, const std::vector<Tensor>& inputs,
                           const GradCheckOptions& g, const std::vector<std::string>& zero, OpCheckRow& r) {
    try {
      const GradCheckResult result = check_gradients(def.name, inputs, c.attrs, g);
      bool passed = false, failed = false;
      double worst = -1;
      for (const InputCheck& in : result.inputs) {
        if (std::count(zero.begin(), zero.end(), in.name)) {
          const bool zero_jacobian = in.changed_output == 0 && in.max_abs_numeric == 0 && in.abs_error == 0;
          passed |= zero_jacobian;
          failed |= !zero_jacobian;
          if (zero_jacobian) continue;
          if (r.message.empty())
            r.message = str_cat(in.name, ": expected a zero Jacobian; ", in.changed_output, " of ", in.perturbations,
                                " perturbations changed the output, max |numeric| ", in.max_abs_numeric, ", error ",
                                in.abs_error);
          continue;
        }
        passed |= in.status == InputCheck::Status::Passed;
        failed |= !in.ok();
        const double ratio = in.tolerance > 0 ? in.abs_error / in.tolerance : in.abs_error;
        if (ratio > worst) {
          worst = ratio;
          r.error = in.abs_error;
          r.tolerance = in.tolerance;
        }
        if (!in.ok() && r.message.empty()) r.message = in.to_string();
      }
      r.status = passed && !failed ? CheckStatus::Pass : CheckStatus::Fail;
      if (r.status == CheckStatus::Fail && r.message.empty()) r.message = "no input was checked";
    } catch (const Error& e) {
      r.status = CheckStatus::Fail;
      r.message = e.what();
    }
  }

  void note_kernel(const std::string& op, Device::Kind device, DType dtype, const std::string& backend) {
    const KernelDef* k = kernel_registry().find(op, device, dtype, backend);
    if (k != nullptr &&
        std::find(report_.kernels_run.begin(), report_.kernels_run.end(), k) == report_.kernels_run.end())
      report_.kernels_run.push_back(k);
  }

  const OpCheckOptions& options_;
  OpCheckReport& report_;
};

}  // namespace

std::string_view check_status_name(CheckStatus status) {
  static const std::map<CheckStatus, std::string_view> names = {
      {CheckStatus::Pass, "PASS"}, {CheckStatus::Fail, "FAIL"}, {CheckStatus::Skip, "SKIP"}};
  return names.at(status);
}

std::string_view check_kind_name(CheckKind kind) {
  static const std::map<CheckKind, std::string_view> names = {
      {CheckKind::Forward, "forward"}, {CheckKind::Gradient, "gradient"}, {CheckKind::SecondOrder, "second order"}};
  return names.at(kind);
}

bool OpCheckReport::passed() const {
  return std::none_of(rows.begin(), rows.end(), [](const OpCheckRow& r) { return r.status == CheckStatus::Fail; });
}

OpCheckReport check_ops(const OpCheckOptions& options) {
  std::vector<const OpDef*> defs;
  if (options.ops.empty()) {
    for (const OpDef* def : op_registry().list())
      if (def->cases) defs.push_back(def);
  } else {
    for (const std::string& name : options.ops) {
      const OpDef& def = op_registry().get(name);
      if (!def.cases) {
        invalid_argument("check: op ", name, " has no cases",
                         def.no_cases_reason.empty() ? "" : " (" + def.no_cases_reason + ")");
      }
      defs.push_back(&def);
    }
  }
  if (options.shards < 1 || options.shard < 1 || options.shard > options.shards)
    invalid_argument("check: shard ", options.shard, " of ", options.shards, " does not exist");
  std::vector<const OpDef*> sharded;
  for (std::size_t i = 0; i < defs.size(); ++i)
    if (static_cast<int>(i % static_cast<std::size_t>(options.shards)) == options.shard - 1) sharded.push_back(defs[i]);
  defs = sharded;
  if (options.max_order < 0 || options.max_order > 2)
    invalid_argument("check: the gradient order must be 0, 1 or 2, got ", options.max_order);
  OpCheckReport report;
  Checker checker(options, report);
  for (const OpDef* def : defs) checker.check(*def);
  return report;
}

}  // namespace dagrad
