// `dagrad graph MODEL [--dot | --json]`: what a saved model (or a graph file) holds: a summary of
// its ops, variables and signature, its Graphviz drawing, or its graph JSON (GRAPH_FORMAT.md).
#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "dagrad/core/checked.hpp"
#include "dagrad/core/saved_model.hpp"
#include "dagrad/tools/command.hpp"

namespace dagrad::cli {
namespace {

struct GraphOptions {
  std::string model;
  bool dot = false;
  bool json = false;
};

// A model directory's graph and signature, or a graph file alone (no signature).
struct Shown {
  std::unique_ptr<Graph> graph;
  NodeDevices devices;
  Signature signature;
};

Shown read_model_or_graph(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) {
    LoadedGraph loaded = load_graph(path);
    return {std::move(loaded.graph), std::move(loaded.devices), {}};
  }
  Model model = load_model(path);  // checks the variables and the signature too
  model.session.reset();           // refers to the graph, which moves out
  return {std::move(model.graph), std::move(model.devices), std::move(model.signature)};
}

std::string describe(const Output& out) {
  return str_cat(out.name(), " ", dtype_name(out.dtype()), " ", out.shape().to_string());
}

void print_summary(const Shown& s) {
  const Graph& g = *s.graph;
  std::map<std::string, int> op_counts;
  std::int64_t parameters = 0;
  int variables = 0;
  for (int id = 0; id < g.num_nodes(); ++id) {
    const Node& n = g.node(id);
    ++op_counts[n.op()];
    if (n.op() == "VariableV2") {
      ++variables;
      const Shape& shape = n.output_shapes[0];
      if (shape.is_fully_defined()) parameters = checked_add(parameters, shape.num_elements(), "variable values");
    }
  }
  std::cout << "nodes: " << g.num_nodes() << "\nops:";
  for (const auto& [op, count] : op_counts) std::cout << " " << op << " x" << count;
  std::cout << "\nvariables: " << variables << " (" << parameters << " values)\n";
  for (const auto& [name, reference] : s.signature.inputs) {
    std::cout << "input " << name << ": " << describe(find_output(g, reference, "input")) << "\n";
  }
  for (const auto& [name, reference] : s.signature.outputs) {
    std::cout << "output " << name << ": " << describe(find_output(g, reference, "output")) << "\n";
  }
  for (const auto& [id, device] : s.devices) std::cout << "device of " << g.node(id).name << ": " << device << "\n";
}

// A string as a Graphviz quoted string: backslashes and quotes escaped, newlines as \n.
std::string dot_quoted(std::string_view text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') quoted += '\\';
    if (c == '\n') {
      quoted += "\\n";
      continue;
    }
    quoted += c;
  }
  return quoted + "\"";
}

// One box per node (name and op), one edge per input labelled with its dtype and shape, control
// edges dashed; signature inputs and outputs are filled.
void print_dot(const Shown& s) {
  const Graph& g = *s.graph;
  std::set<int> marked;
  for (const auto* names : {&s.signature.inputs, &s.signature.outputs}) {
    for (const auto& [name, reference] : *names) marked.insert(find_output(g, reference, "signature").node);
  }
  std::cout << "digraph dagrad {\n  rankdir=TB;\n  node [shape=box, fontname=\"Helvetica\"];\n";
  for (int id = 0; id < g.num_nodes(); ++id) {
    const Node& n = g.node(id);
    std::cout << "  n" << id << " [label=" << dot_quoted(n.name + "\n" + n.op())
              << (marked.count(id) ? ", style=filled, fillcolor=lightgrey" : "") << "];\n";
  }
  for (int id = 0; id < g.num_nodes(); ++id) {
    const Node& n = g.node(id);
    for (const Output& in : n.inputs) {
      const std::string label = str_cat(dtype_name(in.dtype()), " ", in.shape().to_string(),
                                        in.index != 0 ? str_cat(" (:", in.index, ")") : "");
      std::cout << "  n" << in.node << " -> n" << id << " [label=" << dot_quoted(label) << "];\n";
    }
    for (int c : n.control_inputs) std::cout << "  n" << c << " -> n" << id << " [style=dashed];\n";
  }
  std::cout << "}\n";
}

void run(const GraphOptions& o) {
  const Shown shown = read_model_or_graph(o.model);
  if (o.json) {
    std::cout << graph_to_json(*shown.graph, shown.devices);
  } else if (o.dot) {
    print_dot(shown);
  } else {
    print_summary(shown);
  }
}

}  // namespace

Subcommand add_graph_command(CLI::App& parent) {
  auto options = std::make_shared<GraphOptions>();
  CLI::App* app = parent.add_subcommand("graph", "Summarise, draw (Graphviz) or print a saved model's graph");
  app->add_option("MODEL", options->model, "A model directory, or a graph .json file")->required();
  auto* dot = app->add_flag("--dot", options->dot, "Write the graph as Graphviz dot text (dot -Tsvg draws it)");
  app->add_flag("--json", options->json, "Write the graph JSON (core/GRAPH_FORMAT.md)")->excludes(dot);
  return {app, "dagrad graph MODEL [--dot | --json]", [options] { run(*options); }};
}

}  // namespace dagrad::cli
