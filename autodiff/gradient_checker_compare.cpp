// The gradient checker's comparisons: full Jacobians or random directions, the worst entry per
// input, the checks against vacuous passes, per-dtype defaults and the report.
#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "dagrad/autodiff/gradient_checker_detail.hpp"

namespace dagrad {

// Steps: the numeric side is float64, so truncation (O(h^2)) and round-off (eps64 / h) stay far
// below every tolerance; steps grow where tolerances are looser, so that round-off in long
// float64 chains (second order) matters even less. Tolerances: the symbolic side's rounding in
// its dtype (unit round-off 1.1e-16, 6e-8, 4.9e-4, 3.9e-3) over a few chained ops; atol is
// relative to the largest Jacobian entry (cancellation leaves errors of the terms' size).
double default_step(DType dtype) {
  switch (dtype) {
    case DType::Float64:
      return 1e-6;
    case DType::Float32:
      return 1e-5;
    case DType::Half:
    case DType::BFloat16:
      return 1e-4;
    default:
      invalid_argument("gradcheck: ", dtype_name(dtype), " is not a floating dtype");
  }
}
double default_atol(DType dtype) {
  switch (dtype) {
    case DType::Float64:
      return 1e-7;
    case DType::Float32:
      return 1e-4;
    case DType::Half:
      return 1e-2;
    case DType::BFloat16:
      return 5e-2;
    default:
      invalid_argument("gradcheck: ", dtype_name(dtype), " is not a floating dtype");
  }
}
double default_rtol(DType dtype) { return default_atol(dtype); }

namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::vector<double> random_doubles(std::int64_t n, std::uint64_t seed) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = 2.0 * static_cast<double>(splitmix64(seed) >> 11) * 0x1.0p-53 - 1.0;
  return v;
}

std::string index_string(const Shape& shape, std::int64_t flat) {
  std::vector<std::int64_t> idx(static_cast<std::size_t>(shape.rank()));
  for (int a = shape.rank() - 1; a >= 0; --a) {
    idx[static_cast<std::size_t>(a)] = shape[a] > 0 ? flat % shape[a] : 0;
    flat = shape[a] > 0 ? flat / shape[a] : 0;
  }
  return Shape(idx).to_string();
}

const char* status_name(InputCheck::Status s) {
  switch (s) {
    case InputCheck::Status::Passed:
      return "PASS";
    case InputCheck::Status::Failed:
      return "FAIL";
    case InputCheck::Status::NoGradient:
      return "NO-GRADIENT";
    case InputCheck::Status::Skipped:
      return "SKIPPED";
  }
  return "?";
}

// Records the entry whose error is largest relative to its tolerance (NaN counts as worst).
struct Worst {
  InputCheck& c;
  double ratio = -1;
  void add(double numeric, double symbolic, double tol, std::int64_t in, std::int64_t out) {
    const double err = std::abs(numeric - symbolic);
    const double r = std::isnan(err) ? std::numeric_limits<double>::infinity() : err / tol;
    if (r <= ratio) return;
    ratio = r;
    c.numeric = numeric, c.symbolic = symbolic, c.abs_error = err, c.tolerance = tol;
    c.rel_error = err / std::max(std::abs(numeric), std::numeric_limits<double>::min());
    c.input_index = in, c.output_index = out;
  }
};

void decide(InputCheck& c, bool has_gradient, bool finite, double worst_ratio, double max_abs_symbolic) {
  using S = InputCheck::Status;
  if (!has_gradient) {
    c.status = c.changed_output == 0 ? S::NoGradient : S::Failed;
    c.message = c.changed_output == 0 ? "no gradient, and no perturbation changed the output"
                                      : str_cat("no gradient, but ", c.changed_output, " of ", c.perturbations,
                                                " perturbations changed the output");
  } else if (!finite) {
    c.status = S::Failed, c.message = "the function is not finite at these inputs";
  } else if (c.changed_output == 0 || (c.max_abs_numeric == 0 && max_abs_symbolic == 0)) {
    c.status = S::Failed;
    c.message = "no perturbation changed the output: the Jacobians are zero and the check would pass vacuously";
  } else if (!(worst_ratio <= 1.0)) {
    c.status = S::Failed, c.message = "numeric and symbolic gradients differ beyond the tolerance";
  } else {
    c.status = S::Passed;
  }
}

}  // namespace

Tensor random_tensor(DType dtype, const Shape& shape, std::uint64_t seed, double lo, double hi) {
  Tensor t = Tensor::empty(dtype, shape);
  const auto u = random_doubles(t.num_elements(), seed);
  visit_floating(dtype, [&]<class T>() {
    T* p = t.data<T>();
    for (std::int64_t i = 0; i < t.num_elements(); ++i)
      p[i] = narrow<T>(lo + (hi - lo) * (u[static_cast<std::size_t>(i)] + 1) / 2);
  });
  return t;
}

std::string InputCheck::to_string() const {
  std::string line = str_cat(name, " ", dtype_name(dtype), shape.to_string(), ": ", status_name(status));
  if (status == Status::Skipped) return line + " (held constant)";
  if (input_index >= 0) {
    line += output_index >= 0
                ? str_cat(" worst ", name, index_string(shape, input_index), " -> output element ", output_index)
                : str_cat(" worst direction ", input_index);
    line += str_cat(": numeric ", numeric, " symbolic ", symbolic, " abs ", abs_error, " rel ", rel_error, " (tol ",
                    tolerance, ")");
  }
  line += str_cat("; max |numeric| ", max_abs_numeric, "; ", changed_output, "/", perturbations,
                  " perturbations changed the output");
  if (!message.empty() && status != Status::Passed) line += " - " + message;
  return line;
}

std::string_view GradCheckResult::backend_name() const {
  return options.backend.empty() ? std::string_view("default") : std::string_view(options.backend);
}

std::string GradCheckResult::report() const {
  std::string text =
      str_cat("gradcheck ", what, ": ", dtype_name(dtype), ", ", options.mode == GradCheckMode::Full ? "full" : "fast",
              " mode, order ", options.order, ", backend ", backend_name(), " on ", options.device.to_string());
  if (!options.kernel_path.empty()) text += str_cat(" (path ", options.kernel_path, ")");
  text += str_cat(", seed ", options.seed, ", step ", options.step, ", atol ", options.atol, ", rtol ", options.rtol,
                  passed ? " - PASSED" : " - FAILED", "\n");
  for (const auto& c : inputs) text += "  " + c.to_string() + "\n";
  return text;
}

std::string GradCheckResult::json() const {
  nlohmann::json checks = nlohmann::json::array();
  for (const InputCheck& c : inputs) {
    nlohmann::json entry = {{"name", c.name},
                            {"dtype", dtype_name(c.dtype)},
                            {"shape", c.shape.dims()},
                            {"status", status_name(c.status)},
                            {"message", c.message}};
    if (c.status != InputCheck::Status::Skipped) {
      entry.update({{"max_abs_numeric", c.max_abs_numeric},
                    {"perturbations", c.perturbations},
                    {"changed_output", c.changed_output}});
    }
    if (c.input_index >= 0) {
      // Full mode: the worst input and output elements (flat indices); fast mode: the direction.
      entry.update({{options.mode == GradCheckMode::Full ? "worst_input_element" : "worst_direction", c.input_index},
                    {"numeric", c.numeric},
                    {"symbolic", c.symbolic},
                    {"abs_error", c.abs_error},
                    {"rel_error", c.rel_error},
                    {"tolerance", c.tolerance}});
      if (c.output_index >= 0) entry["worst_output_element"] = c.output_index;
    }
    checks.push_back(std::move(entry));
  }
  const nlohmann::json out = {
      {"op", what},
      {"passed", passed},
      {"dtype", dtype_name(dtype)},
      {"mode", options.mode == GradCheckMode::Full ? "full" : "fast"},
      {"order", options.order},
      {"backend", backend_name()},
      {"device", options.device.to_string()},
      {"path", options.kernel_path.empty() ? nlohmann::json(nullptr) : nlohmann::json(options.kernel_path)},
      {"seed", options.seed},
      {"step", options.step},
      {"atol", options.atol},
      {"rtol", options.rtol},
      {"inputs", checks}};
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

namespace gradcheck {

Problem make_problem(SidedFunction fn, const std::vector<Tensor>& inputs, const GradCheckOptions& options,
                     std::vector<std::string> names) {
  if (options.order != 1 && options.order != 2)
    invalid_argument("gradcheck: order must be 1 or 2, got ", options.order);
  if (options.directions < 1) invalid_argument("gradcheck: directions must be >= 1, got ", options.directions);
  if (names.empty()) {
    for (std::size_t i = 0; i < inputs.size(); ++i) names.push_back(str_cat("x", i));
  }
  if (names.size() != inputs.size())
    invalid_argument("gradcheck: ", names.size(), " names for ", inputs.size(), " inputs");
  Problem p{.fn = std::move(fn),
            .names = std::move(names),
            .backend = options.backend,
            .device = options.device,
            .kernel_path = options.kernel_path};
  for (const Tensor& t : inputs) {
    if (!t.defined()) invalid_argument("gradcheck: an input is an undefined tensor");
    p.inputs.push_back(t.device().is_cpu() ? t : t.to(Device::cpu()));
    p.checked.push_back(is_floating(t.dtype()));
  }
  for (const auto& name : options.inputs_to_check) {
    if (std::find(p.names.begin(), p.names.end(), name) == p.names.end()) {
      std::string all;
      for (const auto& n : p.names) all += (all.empty() ? "" : ", ") + n;
      invalid_argument("gradcheck: inputs_to_check names '", name, "', which is not an input; the inputs are ", all);
    }
  }
  if (!options.inputs_to_check.empty()) {
    for (std::size_t i = 0; i < p.names.size(); ++i) {
      const auto& wanted = options.inputs_to_check;
      p.checked[i] = p.checked[i] && std::find(wanted.begin(), wanted.end(), p.names[i]) != wanted.end();
    }
  }
  if (options.order == 2) {
    // Fixed weights for the first gradient, drawn once in the checked dtype so both sides agree.
    Built first = build(p, false);
    for (std::size_t k = 0; k < first.outputs.size(); ++k) {
      const Shape& s = first.outputs[k].shape();
      if (!s.is_fully_defined())
        invalid_argument("gradcheck: order 2 needs output shapes known when built, got ", s.to_string());
      p.weights.push_back(random_tensor(first.outputs[k].dtype(), s, options.seed + 1000 + k));
    }
    p.order = 2;
  }
  return p;
}

GradCheckResult run_check(Problem& p, const GradCheckOptions& options) {
  GradCheckResult result{.what = p.what, .options = options};
  for (std::size_t i = 0; i < p.inputs.size() && result.dtype == DType::Invalid; ++i) {
    if (p.checked[i]) result.dtype = p.inputs[i].dtype();
  }
  if (result.dtype == DType::Invalid) invalid_argument("gradcheck: ", p.what, " has no floating-point input to check");
  for (std::size_t i = 0; i < p.inputs.size(); ++i) {
    if (is_floating(p.inputs[i].dtype()))
      result.dtype = std::min(result.dtype, p.inputs[i].dtype(), [](DType a, DType b) {
        return default_atol(a) > default_atol(b);  // the least precise floating input sets the defaults
      });
  }
  GradCheckOptions& o = result.options;
  if (o.step == 0) o.step = default_step(result.dtype);
  if (o.atol == 0) o.atol = default_atol(result.dtype);
  if (o.rtol == 0) o.rtol = default_rtol(result.dtype);
  if (!(o.step > 0) || !(o.atol > 0) || !(o.rtol > 0)) invalid_argument("gradcheck: step, atol and rtol must be > 0");

  Built sym = build(p, false);
  Built num = build(p, true);
  const std::vector<Tensor> forward = sym.session->run(base_feeds(p, sym, false), sym.outputs);
  bool finite = true;
  for (double v : run_outputs(num, base_feeds(p, num, true))) finite = finite && std::isfinite(v);
  std::int64_t n_out = 0;
  for (const auto& t : forward) n_out += t.num_elements();

  // Output weights: one-hot rows (full mode) or random vectors (fast mode), in the outputs' dtypes.
  auto weights = [&](std::int64_t hot, std::uint64_t seed) {
    std::vector<Tensor> w;
    std::int64_t offset = 0;
    for (std::size_t k = 0; k < forward.size(); ++k) {
      const Tensor& f = forward[k];
      if (hot < 0) {
        w.push_back(random_tensor(f.dtype(), f.shape(), seed + k));
      } else {
        std::vector<double> v(static_cast<std::size_t>(f.num_elements()), 0.0);
        if (hot >= offset && hot < offset + f.num_elements()) v[static_cast<std::size_t>(hot - offset)] = 1.0;
        w.push_back(Tensor::from_values<double>(f.shape(), v).cast(f.dtype()));
      }
      offset += f.num_elements();
    }
    return w;
  };

  for (std::size_t i = 0; i < p.inputs.size(); ++i) {
    InputCheck c{.name = p.names[i], .dtype = p.inputs[i].dtype(), .shape = p.inputs[i].shape()};
    if (p.checked[i]) c.status = InputCheck::Status::Passed;
    result.inputs.push_back(c);
  }
  const std::int64_t kMaxEntries = std::int64_t{1} << 24;
  if (o.mode == GradCheckMode::Full) {
    std::vector<std::vector<std::vector<double>>> jsym(p.inputs.size());
    for (std::int64_t j = 0; j < n_out; ++j) {
      auto grads = run_gradients(p, sym, weights(j, 0));
      for (std::size_t i = 0; i < p.inputs.size(); ++i) jsym[i].push_back(std::move(grads[i]));
    }
    for (std::size_t i = 0; i < p.inputs.size(); ++i) {
      if (!p.checked[i]) continue;
      InputCheck& c = result.inputs[i];
      const std::int64_t n_in = p.inputs[i].num_elements();
      if (n_in * std::max<std::int64_t>(n_out, 1) > kMaxEntries) {
        invalid_argument("gradcheck: the Jacobian of ", c.name, " has ", n_in, " x ", n_out,
                         " entries: too many for full mode; use fast mode");
      }
      std::vector<std::vector<double>> jnum;  // per input element: the column over all outputs
      for (std::int64_t e = 0; e < n_in; ++e) {
        const Differences d = perturb(p, num, i, e, nullptr, o.step);
        std::vector<double> col(d.plus.size());
        for (std::size_t j = 0; j < col.size(); ++j) col[j] = (d.plus[j] - d.minus[j]) / (2 * o.step);
        for (double v : col) c.max_abs_numeric = std::max(c.max_abs_numeric, std::abs(v));
        ++c.perturbations;
        c.changed_output += d.changed;
        jnum.push_back(std::move(col));
      }
      const bool has = sym.grads[i].valid();
      double max_sym = 0;
      Worst worst{c};
      const double abs_tol = o.atol * std::max(1.0, c.max_abs_numeric);
      for (std::int64_t e = 0; e < n_in; ++e) {
        for (std::int64_t j = 0; j < n_out; ++j) {
          const double s = has ? jsym[i][static_cast<std::size_t>(j)][static_cast<std::size_t>(e)] : 0.0;
          const double n = jnum[static_cast<std::size_t>(e)][static_cast<std::size_t>(j)];
          max_sym = std::max(max_sym, std::abs(s));
          worst.add(n, s, abs_tol + o.rtol * std::abs(n), e, j);
        }
      }
      decide(c, has, finite, worst.ratio, max_sym);
    }
  } else {
    std::vector<Worst> worst;
    std::vector<double> max_sym(p.inputs.size(), 0.0);
    for (auto& c : result.inputs) worst.push_back(Worst{c});
    for (int d = 0; d < o.directions; ++d) {
      const std::uint64_t seed = o.seed + 7919 * static_cast<std::uint64_t>(d + 1);
      const auto v = weights(-1, seed);
      std::vector<double> v64;
      for (const auto& t : v) {
        for (std::int64_t e = 0; e < t.num_elements(); ++e) v64.push_back(t.value_as_double(e));
      }
      const auto grads = run_gradients(p, sym, v);
      for (std::size_t i = 0; i < p.inputs.size(); ++i) {
        if (!p.checked[i]) continue;
        InputCheck& c = result.inputs[i];
        const auto u = random_doubles(p.inputs[i].num_elements(), seed * 31 + i);
        const Differences diff = perturb(p, num, i, -1, &u, o.step);
        double plus = 0, minus = 0, s = 0, terms = 0;
        for (std::size_t j = 0; j < v64.size(); ++j) plus += v64[j] * diff.plus[j], minus += v64[j] * diff.minus[j];
        // The rounding errors of the terms are independent: they grow like the terms' 2-norm.
        for (std::size_t e = 0; e < grads[i].size(); ++e)
          s += grads[i][e] * u[e], terms += grads[i][e] * u[e] * grads[i][e] * u[e];
        terms = std::sqrt(terms);
        const double n = (plus - minus) / (2 * o.step);
        ++c.perturbations;
        c.changed_output += diff.changed;
        c.max_abs_numeric = std::max(c.max_abs_numeric, std::abs(n));
        max_sym[i] = std::max(max_sym[i], std::abs(s));
        worst[i].add(n, s, o.atol * std::max(1.0, terms) + o.rtol * std::abs(n), d, -1);
      }
    }
    for (std::size_t i = 0; i < p.inputs.size(); ++i) {
      if (p.checked[i]) decide(result.inputs[i], sym.grads[i].valid(), finite, worst[i].ratio, max_sym[i]);
    }
  }
  bool any_passed = false, all_ok = true;
  for (const auto& c : result.inputs) {
    any_passed = any_passed || c.status == InputCheck::Status::Passed;
    all_ok = all_ok && c.ok();
  }
  result.passed = any_passed && all_ok;
  return result;
}

}  // namespace gradcheck
}  // namespace dagrad
