// Profiler: per-op totals of profiled runs, the text report and the Chrome trace.
#include "dagrad/core/profile.hpp"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "dagrad/core/file_io.hpp"

namespace dagrad {
namespace {

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

// "nhwc_fast (120), strips (40)": most calls first.
std::string paths_text(const std::map<std::string, std::int64_t>& paths) {
  std::vector<std::pair<std::string, std::int64_t>> sorted(paths.begin(), paths.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string text;
  for (const auto& [path, calls] : sorted)
    text += (text.empty() ? "" : ", ") + path + " (" + std::to_string(calls) + ")";
  return text;
}

std::string padded(std::string text, std::size_t width, bool right) {
  if (text.size() >= width) return text;
  const std::string pad(width - text.size(), ' ');
  return right ? pad + text : text + pad;
}

}  // namespace

double RunProfile::kernels_us() const {
  double sum = 0;
  for (const NodeTiming& n : nodes) sum += n.duration_us;
  return sum;
}

std::optional<double> Profiler::OpTotal::gflops() const {
  if (flops <= 0 || costed_us <= 0) return std::nullopt;
  return flops / costed_us * 1e-3;
}

void Profiler::add(const RunProfile& run) {
  ++runs_;
  total_us_ += run.duration_us;
  for (const NodeTiming& n : run.nodes) {
    OpTotal& t = ops_[n.op];
    t.op = n.op;
    t.calls += n.deferred ? 0 : 1;
    t.total_us += n.duration_us;
    kernels_us_ += n.duration_us;
    if (n.flops) t.flops += *n.flops, t.costed_us += n.duration_us;
    if (!n.path.empty() && !n.deferred) ++t.paths[n.path];
  }
  if (trace_.size() < trace_runs_) trace_.push_back(run);
}

std::vector<Profiler::OpTotal> Profiler::by_op() const {
  std::vector<OpTotal> ops;
  for (const auto& [name, total] : ops_) ops.push_back(total);
  std::stable_sort(ops.begin(), ops.end(), [](const OpTotal& a, const OpTotal& b) { return a.total_us > b.total_us; });
  return ops;
}

std::string Profiler::report(std::size_t top) const {
  const double share = total_us_ > 0 ? 100.0 / total_us_ : 0.0;
  std::string text = "profile: " + std::to_string(runs_) + " runs, " + fixed(total_us_ * 1e-3, 1) + " ms (" +
                     fixed(runs_ > 0 ? total_us_ * 1e-3 / static_cast<double>(runs_) : 0.0, 3) +
                     " ms a run); kernels " + fixed(kernels_us_ * share, 1) + "%, executor " +
                     fixed((total_us_ - kernels_us_) * share, 1) + "%\n";
  text += padded("op", 28, false) + padded("calls", 8, true) + padded("total ms", 11, true) + padded("share", 8, true) +
          padded("ms/call", 10, true) + padded("GFLOP/s", 9, true) + "  paths\n";
  const std::vector<OpTotal> ops = by_op();
  for (std::size_t i = 0; i < std::min(top, ops.size()); ++i) {
    const OpTotal& t = ops[i];
    const auto gflops = t.gflops();
    text += padded(t.op, 28, false) + padded(std::to_string(t.calls), 8, true) +
            padded(fixed(t.total_us * 1e-3, 2), 11, true) + padded(fixed(t.total_us * share, 1) + "%", 8, true) +
            padded(fixed(t.total_us * 1e-3 / static_cast<double>(t.calls), 3), 10, true) +
            padded(gflops ? fixed(*gflops, 1) : "-", 9, true) + "  " + paths_text(t.paths) + "\n";
  }
  if (ops.size() > top) text += "(" + std::to_string(ops.size() - top) + " more ops)\n";
  return text;
}

void Profiler::write_chrome_trace(const std::string& path) const {
  nlohmann::json events = nlohmann::json::array();
  const double origin = trace_.empty() ? 0.0 : trace_.front().start_us;
  for (std::size_t r = 0; r < trace_.size(); ++r) {
    const RunProfile& run = trace_[r];
    const double begin = run.start_us - origin;
    events.push_back({{"name", "run " + std::to_string(r)},
                      {"cat", "run"},
                      {"ph", "X"},
                      {"ts", begin},
                      {"dur", run.duration_us},
                      {"pid", 1},
                      {"tid", 1}});
    for (const NodeTiming& n : run.nodes) {
      nlohmann::json args = {{"op", n.op}, {"backend", n.backend}};
      if (!n.path.empty()) args["path"] = n.path;
      if (n.flops && n.duration_us > 0) args["GFLOP/s"] = *n.flops / n.duration_us * 1e-3;
      events.push_back({{"name", n.name},
                        {"cat", n.op},
                        {"ph", "X"},
                        {"ts", begin + n.start_us},
                        {"dur", n.duration_us},
                        {"pid", 1},
                        {"tid", 2},
                        {"args", args}});
    }
  }
  const std::string text = nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump();
  write_file(path, [&](OutputFile& out) { out.write(text); });
}

}  // namespace dagrad
