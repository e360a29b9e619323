// `dagrad run-graph MODEL --in NAME=SPEC ... [--fetch NAME]... [--out NAME=FILE.npy]...`: runs a
// saved model (core/saved_model.hpp) without the code that built it, feeding inputs by signature
// name or node reference and printing or writing the fetched outputs as run-op does.
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>
#include <set>

#include "dagrad/core/npy.hpp"
#include "dagrad/core/saved_model.hpp"
#include "dagrad/tools/command.hpp"
#include "dagrad/tools/input_spec.hpp"
#include "dagrad/tools/option_checks.hpp"

namespace dagrad::cli {
namespace {

struct RunGraphOptions {
  std::string model;
  std::vector<std::string> inputs;   // NAME=SPEC
  std::vector<std::string> fetches;  // signature output names or node references
  std::vector<std::string> outs;     // NAME=FILE.npy, or FILE.npy for a single fetch
  std::string device = "cpu";
  int threads = 0;
};

constexpr std::int64_t kPrintLimit = 100;  // values printed per output before "..."

// The names to fetch: those given, else every output of the model's signature.
std::vector<std::string> fetch_names(const Model& model, const std::vector<std::string>& given) {
  if (!given.empty()) return given;
  std::vector<std::string> names;
  for (const auto& [name, reference] : model.signature.outputs) names.push_back(name);
  if (names.empty()) invalid_argument("the model's signature names no outputs; name what to fetch with --fetch");
  return names;
}

// --out arguments as (fetch position, file); "FILE.npy" alone names the only fetch.
std::vector<std::pair<std::size_t, std::string>> out_files(const std::vector<std::string>& fetches,
                                                           const std::vector<std::string>& outs) {
  std::vector<std::pair<std::size_t, std::string>> files;
  for (const std::string& text : outs) {
    const std::size_t eq = text.find('=');
    std::size_t index = fetches.size();
    for (std::size_t i = 0; eq != std::string::npos && i < fetches.size(); ++i) {
      if (fetches[i] == text.substr(0, eq)) index = i;
    }
    if (index < fetches.size()) {
      files.emplace_back(index, text.substr(eq + 1));
    } else if (eq == std::string::npos && fetches.size() == 1) {
      files.emplace_back(0, text);
    } else if (eq == std::string::npos) {
      throw UsageError("--out " + abbreviated(text) + ": name the fetch, --out NAME=FILE.npy (" +
                       std::to_string(fetches.size()) + " outputs are fetched)");
    } else {
      invalid_argument("--out names '", text.substr(0, eq), "', which is not fetched");
    }
    if (files.back().second.empty())
      throw UsageError("--out expects NAME=FILE.npy or FILE.npy, got " + abbreviated(text));
  }
  return files;
}

void run(const RunGraphOptions& o) {
  const Model model = load_model(o.model, {.device = Device::parse(o.device), .threads = o.threads});
  FeedMap feeds;
  std::set<std::string> fed;
  for (const std::string& text : o.inputs) {
    auto [name, spec] = split_name_value(text, "--in");
    if (!fed.insert(name).second) invalid_argument("input '", name, "' is given twice");
    const Output input = model.input(name);
    if (!feeds.emplace(input, make_input(spec)).second) {
      invalid_argument("input '", name, "' names ", input.name(), ", which another --in feeds already");
    }
  }
  const std::vector<std::string> names = fetch_names(model, o.fetches);
  const auto files = out_files(names, o.outs);  // before running: a bad --out costs no compute
  std::vector<Output> fetches;
  for (const std::string& name : names) fetches.push_back(model.output(name));
  const std::vector<Tensor> values = model.session->run(feeds, fetches);
  if (!files.empty()) {
    for (const auto& [index, path] : files) write_npy(path, values.at(index));
    return;
  }
  for (std::size_t i = 0; i < values.size(); ++i)
    std::cout << names[i] << ": " << values[i].to_string(kPrintLimit) << "\n";
}

}  // namespace

Subcommand add_run_graph_command(CLI::App& parent) {
  auto options = std::make_shared<RunGraphOptions>();
  CLI::App* app = parent.add_subcommand("run-graph", "Run a saved model (graph, variables and signature)");
  app->add_option("MODEL", options->model, "The model directory, as save_model or train_cnn --save writes it")
      ->required();
  app->add_option("--in", options->inputs,
                  "Feed NAME=SPEC: NAME is a signature input or a node (\"x\" or \"x:0\"); SPEC is FILE.npy, "
                  "random:D0,D1,...[:SEED], zeros:D0,D1,..., scalar:V or ints:v0,v1,...")
      ->take_all()
      ->allow_extra_args(false);
  app->add_option("--fetch", options->fetches,
                  "Fetch NAME: a signature output or a node output (default: every signature output)")
      ->allow_extra_args(false);
  app->add_option("--out", options->outs,
                  "Write a fetched output: NAME=FILE.npy (FILE.npy alone for a single fetch); without --out, "
                  "every fetched output is printed")
      ->allow_extra_args(false);
  app->add_option("--device", options->device, "Device: cpu, cuda or cuda:N");
  app->add_option("--threads", options->threads, "CPU threads (0: all cores)")->check(integer_in(0, 1 << 16));
  return {app,
          "dagrad run-graph MODEL [--in NAME=SPEC]... [--fetch NAME]... [--out NAME=FILE.npy]... [--device D] "
          "[--threads N]",
          [options] { run(*options); }};
}

}  // namespace dagrad::cli
