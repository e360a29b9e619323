// The executor: plan compilation (pruning, order, last readers, kernel choice) and runs.
#include "dagrad/core/session.hpp"

#include <algorithm>
#include <atomic>
#include <deque>
#include <set>
#include <utility>

#include "dagrad/core/deferred_work.hpp"
#include "dagrad/core/execute.hpp"
#include "dagrad/core/rewrite.hpp"
#include "dagrad/core/run_order.hpp"
#include "dagrad/core/threading.hpp"

namespace dagrad {
namespace {

// A profiled node's cost, where its op models one.
std::optional<double> node_flops(const Node& n, const std::vector<Shape>& inputs, const std::vector<Tensor>& outputs) {
  if (!n.def->cost) return std::nullopt;
  std::vector<Shape> shapes;
  for (const Tensor& t : outputs) shapes.push_back(t.defined() ? t.shape() : Shape{});
  try {
    return n.def->flops(OpCall{n.attrs, inputs, shapes});
  } catch (const Error&) {
    return std::nullopt;  // a cost model that does not cover this call (the kernel took it)
  }
}

// The log line of a kernel node's choices (SessionOptions::log_level Info).
std::string kernel_choice_line(const Node& n, const KernelDef& kernel, Device device, std::string_view path) {
  const DType dtype = n.def->kernel_dtype(n.attrs);
  std::string line =
      str_cat("dagrad: node '", n.name, "' (", n.op(), ", ", device.to_string(), ", ",
              dtype == DType::Invalid ? std::string_view("no dtype") : dtype_name(dtype), "): kernel ", kernel.backend);
  if (!path.empty()) line += str_cat(", path ", path);
  return line;
}

}  // namespace

struct Session::Plan {
  struct Step {
    const Node* node;
    const KernelDef* kernel;
    std::vector<std::string> variable_names;
    // The values freed at this step: those it reads last, which the executor hands to the kernel
    // without keeping them (so that their buffers may become outputs), and its own outputs that
    // nothing reads or fetches, freed once it has run.
    std::vector<Output> last_reads;
    std::vector<Output> unread;
    // Device sessions only; false and empty on the CPU, where a Const's kernel hands out its
    // attribute without a copy. A Const step yields its host attribute (no kernel, no copy);
    // each device-memory input it feeds reads the session's device copy instead.
    bool host_const = false;
    struct ConstInput {
      std::size_t input;
      const Node* node;
      const KernelDef* kernel;
    };
    std::vector<ConstInput> device_const_inputs;
    // use_locking=true: the variables whose update locks the kernel holds, sorted (the one lock
    // order, so that concurrent runs cannot deadlock) and without repeats.
    std::vector<std::string> locked_variables;
  };
  std::vector<Step> steps;
  std::vector<int> nodes_needed;            // ids, for sizing value storage
  std::deque<Node> fused_nodes;             // the nodes rewrites put in the place of graph nodes (stable addresses)
  mutable std::atomic<bool> logged{false};  // its kernel choices were logged (by its first run)
};

Session::Session(const Graph& graph, SessionOptions options) : graph_(&graph), options_(std::move(options)) {
  DeviceRuntime& runtime = device_runtime(options_.device);  // fails early: "no CUDA device available"
  if (!options_.log_level) options_.log_level = env_log_level();
  if (options_.threads < 0) invalid_argument("Session: threads must be >= 0, got ", options_.threads);
  if (options_.threads > 0) {
    arena_ = std::make_unique<tbb::task_arena>(options_.threads);
    arena_->initialize();  // now, not lazily by whichever of several running threads comes first
  }
  stream_ = runtime.create_stream(options_.device.index);
}

Session::~Session() {
  if (stream_ != nullptr) device_runtime(options_.device).destroy_stream(options_.device.index, stream_);
}

namespace {

std::string plan_key(const FeedMap& feeds, const std::vector<Output>& fetches,
                     const std::vector<const Node*>& targets) {
  std::string key;
  for (const auto& [out, value] : feeds) key += str_cat("f", out.node, ":", out.index, ";");
  for (const auto& out : fetches) key += str_cat("o", out.node, ":", out.index, ";");
  for (const Node* t : targets) key += str_cat("t", t->id, ";");
  return key;
}

// A node whose output is a variable names it by `shared_name`, else by its own name.
std::string variable_name(const Node& node) {
  auto it = node.attrs.find("shared_name");
  if (it != node.attrs.end()) {
    const auto* shared = std::get_if<std::string>(&it->second);
    if (shared && !shared->empty()) return *shared;
  }
  return node.name;
}

// The variables a use_locking=true step updates under their locks, in the one lock order.
std::vector<std::string> locked_variables(const Node& node, const std::vector<std::string>& variable_names) {
  auto it = node.attrs.find("use_locking");
  const bool* use_locking = it == node.attrs.end() ? nullptr : std::get_if<bool>(&it->second);
  if (use_locking == nullptr || !*use_locking) return {};
  std::vector<std::string> names;
  for (const auto& name : variable_names) {
    if (!name.empty()) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

// Counts runs in flight, process-wide. The host allocator's peak is reset only by a run that
// starts alone, so no run resets the peak that an overlapping run is measuring.
class PeakWindow {
 public:
  PeakWindow() {
    std::lock_guard lock(state().mutex);
    if (state().runs++ == 0) host_allocator().reset_peak();
  }
  ~PeakWindow() {
    std::lock_guard lock(state().mutex);
    --state().runs;
  }
  PeakWindow(const PeakWindow&) = delete;
  PeakWindow& operator=(const PeakWindow&) = delete;
  std::int64_t peak() const { return host_allocator().stats().peak_bytes_in_use; }

 private:
  struct State {
    std::mutex mutex;
    int runs = 0;
  };
  static State& state() {
    static auto* instance = new State();  // never destroyed: sessions may run at exit
    return *instance;
  }
};

}  // namespace

std::unique_ptr<Session::Plan> Session::compile(const FeedMap& feeds, const std::vector<Output>& fetches,
                                                const std::vector<const Node*>& targets) const {
  const Graph& g = *graph_;
  for (const auto& out : fetches) {
    if (out.graph != graph_) invalid_argument("Session::run: fetch is not an output of the session's graph");
    g.output(out.node, out.index);
  }
  for (const auto& [out, value] : feeds) {
    if (out.graph != graph_) invalid_argument("Session::run: feed is not an output of the session's graph");
    g.output(out.node, out.index);
  }
  // Reachability from fetches and targets, not crossing fed edges. Iterative: deep graphs are fine.
  std::vector<char> needed(static_cast<std::size_t>(g.num_nodes()), 0);
  std::vector<int> stack;
  for (const auto& out : fetches) {
    if (!feeds.count(out)) stack.push_back(out.node);
  }
  for (const Node* t : targets) {
    if (t == nullptr || t->id >= g.num_nodes() || &g.node(t->id) != t) {
      invalid_argument("Session::run: target is not a node of the session's graph");
    }
    stack.push_back(t->id);
  }
  // A control edge from a stateless node whose every output is fed waits for the feeds, as TF moves
  // a fed Placeholder's control edges to the feed: running the node would only fail for want of
  // its value. A stateful node still runs.
  auto fed_whole = [&](int id) {
    const Node& n = g.node(id);
    if (n.def->stateful || n.num_outputs() == 0) return false;
    for (int i = 0; i < n.num_outputs(); ++i) {
      if (!feeds.count(Output{graph_, id, i})) return false;
    }
    return true;
  };
  while (!stack.empty()) {
    const int id = stack.back();
    stack.pop_back();
    if (needed[static_cast<std::size_t>(id)]) continue;
    needed[static_cast<std::size_t>(id)] = 1;
    const Node& n = g.node(id);
    for (const auto& in : n.inputs) {
      if (!feeds.count(in)) stack.push_back(in.node);
    }
    for (int c : n.control_inputs) {
      if (!fed_whole(c)) stack.push_back(c);
    }
  }
  // Rewrites first: fused nodes take the place of the nodes they replace; absorbed nodes do not run.
  std::vector<Output> fed;
  for (const auto& [out, value] : feeds) fed.push_back(out);
  Rewritten rewritten = options_.rewrite
                            ? apply_rewrites(g, needed, fed, fetches, targets, options_.device, options_.backend)
                            : Rewritten{{}, std::vector<char>(needed.size(), 0), {}};
  std::map<int, Node>& fused = rewritten.fused;
  const std::vector<int> order = run_order(g, needed, rewritten, feeds);
  auto plan = std::make_unique<Plan>();
  std::map<Output, std::size_t> last_reader;
  const bool on_device = !options_.device.is_cpu();
  std::map<int, const KernelDef*> const_kernels;  // device sessions: the Const nodes planned so far
  for (const int id : order) {
    auto replacement = fused.find(id);
    if (replacement != fused.end()) plan->fused_nodes.push_back(std::move(replacement->second));
    const Node& n = replacement != fused.end() ? plan->fused_nodes.back() : g.node(id);
    Plan::Step step{&n, &select_kernel(*n.def, n.attrs, options_.device, options_.backend), {}, {}};
    const auto args = flat_input_args(*n.def, n.attrs);
    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
      const Node& producer = g.node(n.inputs[i].node);
      const bool names_variable =
          args[i]->is_ref ||
          flat_output_args(*producer.def, producer.attrs)[static_cast<std::size_t>(n.inputs[i].index)]->is_ref;
      step.variable_names.push_back(names_variable ? variable_name(producer) : std::string());
      if (feeds.count(n.inputs[i])) continue;
      last_reader[n.inputs[i]] = plan->steps.size();
      auto konst = on_device ? const_kernels.find(producer.id) : const_kernels.end();
      if (konst != const_kernels.end() && !args[i]->host_memory) {
        step.device_const_inputs.push_back({i, &producer, konst->second});
      }
    }
    if (on_device && n.op() == "Const") {
      step.host_const = true;
      const_kernels.emplace(id, step.kernel);
    }
    if (n.def->outputs.size() == 1 && n.def->outputs[0].is_ref) step.variable_names.push_back(variable_name(n));
    step.locked_variables = locked_variables(n, step.variable_names);
    plan->steps.push_back(std::move(step));
    plan->nodes_needed.push_back(id);
  }
  const std::set<Output> fetched(fetches.begin(), fetches.end());
  for (std::size_t s = 0; s < plan->steps.size(); ++s) {
    const Node& n = *plan->steps[s].node;
    for (int i = 0; i < n.num_outputs(); ++i) {
      const Output out{graph_, n.id, i};
      if (fetched.count(out)) continue;
      auto it = last_reader.find(out);
      if (it == last_reader.end())
        plan->steps[s].unread.push_back(out);
      else
        plan->steps[it->second].last_reads.push_back(out);
    }
  }
  return plan;
}

const Session::Plan& Session::plan_for(const FeedMap& feeds, const std::vector<Output>& fetches,
                                       const std::vector<const Node*>& targets) {
  const std::string key = plan_key(feeds, fetches, targets);
  {
    std::lock_guard lock(plans_mutex_);
    auto it = plans_.find(key);
    if (it != plans_.end()) return *it->second;
  }
  // Compiled outside the lock, so that runs of other plans go on meanwhile. Two threads may
  // compile the same plan at once; the first one cached wins, and cached plans never move.
  std::unique_ptr<Plan> plan = compile(feeds, fetches, targets);
  std::lock_guard lock(plans_mutex_);
  return *plans_.try_emplace(key, std::move(plan)).first->second;
}

PlanInfo Session::plan_info(const FeedMap& feeds, const std::vector<Output>& fetches,
                            const std::vector<const Node*>& targets) {
  const Plan& plan = plan_for(feeds, fetches, targets);
  PlanInfo info;
  for (const auto& step : plan.steps) {
    info.order.push_back(step.node->id);
    info.released_after.push_back(step.last_reads);
    info.released_after.back().insert(info.released_after.back().end(), step.unread.begin(), step.unread.end());
  }
  return info;
}

std::vector<Tensor> Session::execute(const Plan& plan, const FeedMap& feeds, const std::vector<Output>& fetches,
                                     VariableStore& variables, RunStats& stats) {
  std::map<int, std::vector<Tensor>> values;
  const bool profiling = options_.profile;
  // One run logs a plan's choices: the first to start, even when several start at once.
  const bool logging = *options_.log_level >= LogLevel::Info && !plan.logged.exchange(true);
  auto value_of = [&](const Output& out) -> Tensor {
    auto fed = feeds.find(out);
    if (fed != feeds.end()) return fed->second;
    return values.at(out.node).at(static_cast<std::size_t>(out.index));
  };
  DeferredWork deferred_work(profiling ? &stats.profile : nullptr);
  try {
    for (const auto& step : plan.steps) {
      const Node& n = *step.node;
      for (const auto& in : n.inputs) deferred_work.finish(in.node);  // done before anything reads it
      if (step.host_const) {
        values[n.id] = {get_attr<Tensor>(n.attrs, "value")};
        ++stats.nodes_run;
        continue;
      }
      std::vector<Tensor> inputs;
      inputs.reserve(n.inputs.size());
      for (const auto& in : n.inputs) inputs.push_back(value_of(in));
      for (const auto& out : step.last_reads) values[out.node][static_cast<std::size_t>(out.index)] = Tensor();
      for (const auto& c : step.device_const_inputs) inputs[c.input] = device_const(*c.node, *c.kernel, stats);
      std::string_view ran_path;
      KernelContext::Finish deferred;
      KernelCall call{n.def,
                      &n.attrs,
                      n.name,
                      &n.output_dtypes,
                      step.kernel,
                      options_.device,
                      &variables,
                      step.variable_names,
                      stream_,
                      options_.kernel_path,
                      profiling || logging ? &ran_path : nullptr,
                      &deferred};
      std::vector<Shape> input_shapes;
      if (profiling)
        for (const Tensor& t : inputs) input_shapes.push_back(t.defined() ? t.shape() : Shape{});
      const double begin = profiling ? steady_us() : 0.0;
      try {
        std::vector<std::unique_lock<std::mutex>> update_locks;
        for (const auto& name : step.locked_variables) update_locks.emplace_back(variables.update_mutex(name));
        values[n.id] = execute_kernel(call, std::move(inputs));
        variables.publish_replaced();
        if (profiling && !options_.device.is_cpu()) device_runtime(options_.device).synchronize(options_.device.index);
      } catch (const Error& e) {
        throw Error(e.code(), with_node_name(e.what(), n.name));
      }
      if (profiling) {
        const double end = steady_us();
        stats.profile.nodes.push_back({n.id, n.name, n.op(), step.kernel->backend, std::string(ran_path),
                                       begin - stats.profile.start_us, end - begin,
                                       node_flops(n, input_shapes, values[n.id])});
      }
      if (logging) write_log_line(options_.log_sink, kernel_choice_line(n, *step.kernel, options_.device, ran_path));
      for (const auto& out : step.unread) values[n.id][static_cast<std::size_t>(out.index)] = Tensor();
      ++stats.nodes_run;
      if (deferred) deferred_work.add(n, step.kernel->backend, std::move(deferred));
      deferred_work.poll();
    }
    deferred_work.finish_all();
  } catch (...) {
    deferred_work.finish_after_error();
    throw;
  }
  std::vector<Tensor> results;
  for (const auto& out : fetches) {
    Tensor value = value_of(out);
    results.push_back(value.defined() && !value.device().is_cpu() ? value.to(Device::cpu()) : value);
  }
  return results;
}

// The Const's own kernel makes the device copy, once per session: a backend keeps its say in how
// a constant lands on its device. The lock is held for the whole copy, so concurrent runs wait for
// it rather than copy twice; the reference stays valid, as map entries never move or go.
const Tensor& Session::device_const(const Node& node, const KernelDef& kernel, RunStats& stats) {
  std::lock_guard lock(device_consts_mutex_);
  auto it = device_consts_.find(node.id);
  if (it != device_consts_.end()) return it->second;
  KernelCall call{node.def,    &node.attrs, node.name, &node.output_dtypes, &kernel, options_.device,
                  &variables_, {},          stream_};
  Tensor value;
  try {
    value = std::move(execute_kernel(call, {}).front());
  } catch (const Error& e) {
    throw Error(e.code(), with_node_name(e.what(), node.name));
  }
  ++stats.const_uploads;
  return device_consts_.emplace(node.id, std::move(value)).first->second;
}

RunStats Session::last_run_stats() const {
  std::lock_guard lock(stats_mutex_);
  return stats_;
}

std::vector<Tensor> Session::run(const FeedMap& feeds, const std::vector<Output>& fetches,
                                 const std::vector<const Node*>& targets, RunStats* stats_out) {
  const double run_start = steady_us();
  const std::int64_t copies_before = transfer_stats().host_to_device_copies;  // the feeds' count too
  FeedMap placed;
  for (const auto& [out, value] : feeds) {
    if (out.graph != graph_) invalid_argument("Session::run: feed is not an output of the session's graph");
    if (!value.defined()) invalid_argument("Session::run: the value fed for ", out.name(), " is undefined");
    if (value.dtype() != out.dtype()) {
      invalid_argument("Cannot feed value of dtype ", dtype_name(value.dtype()), " for Tensor '", out.name(),
                       "', which has dtype ", dtype_name(out.dtype()));
    }
    if (!out.shape().is_compatible_with(value.shape())) {
      invalid_argument("Cannot feed value of shape ", value.shape().to_string(), " for Tensor '", out.name(),
                       "', which has shape ", out.shape().to_string());
    }
    placed.emplace(out, value.device() == options_.device ? value : value.to(options_.device));
  }
  const Plan& plan = plan_for(placed, fetches, targets);
  RunStats stats;
  if (options_.profile) stats.profile.start_us = run_start;
  const PeakWindow window;
  const AllocatorStats host_before = host_allocator().stats();
  VariableStore variables = variables_.run_view();  // keeps this run's variable handles alive
  std::vector<Tensor> results;
  auto body = [&] { results = execute(plan, placed, fetches, variables, stats); };
  if (arena_)
    arena_->execute(body);
  else
    default_arena().execute(body);  // a handle: set_num_threads cannot pull it from under us
  if (!options_.device.is_cpu()) device_runtime(options_.device).synchronize(options_.device.index);
  stats.peak_bytes_in_use = window.peak();
  const AllocatorStats host_after = host_allocator().stats();
  stats.fresh_allocations = host_after.fresh_allocations - host_before.fresh_allocations;
  stats.reused_allocations = host_after.reused_allocations - host_before.reused_allocations;
  stats.host_to_device_copies = transfer_stats().host_to_device_copies - copies_before;
  if (options_.profile) stats.profile.duration_us = steady_us() - run_start;
  if (stats_out != nullptr) *stats_out = stats;
  std::lock_guard lock(stats_mutex_);
  stats_ = stats;
  return results;
}

}  // namespace dagrad
