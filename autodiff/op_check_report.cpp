// The text table and the JSON form of an OpCheckReport.
#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

#include <nlohmann/json.hpp>

#include "dagrad/autodiff/op_check.hpp"
#include "dagrad/core/error.hpp"

namespace dagrad {
namespace {

std::string error_text(double error) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1e", error);
  return text;
}

// The worst of several rows: a failure over a pass over a skip; among equals the largest error.
bool worse(const OpCheckRow& a, const OpCheckRow& b) {
  static const std::map<CheckStatus, int> rank = {
      {CheckStatus::Skip, 0}, {CheckStatus::Pass, 1}, {CheckStatus::Fail, 2}};
  return std::tuple(rank.at(a.status), a.error) > std::tuple(rank.at(b.status), b.error);
}

std::string cell(const OpCheckRow* r) {
  if (r == nullptr) return "-";
  if (r->status == CheckStatus::Skip) return "SKIP";
  return str_cat(check_status_name(r->status), " ", error_text(r->error));
}

}  // namespace

std::string OpCheckReport::table() const {
  using Key = std::tuple<std::string, std::string, std::string>;  // op, backend, dtype
  std::map<Key, std::map<CheckKind, const OpCheckRow*>> worst;
  for (const OpCheckRow& r : rows) {
    const OpCheckRow*& w = worst[{r.op, r.backend, std::string(dtype_name(r.dtype))}][r.check];
    if (w == nullptr || worse(r, *w)) w = &r;
  }
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-36s %-16s %-9s %-13s %-13s %s\n", "op", "backend", "dtype", "forward", "gradient",
                "second order");
  out += line;
  for (const auto& entry : worst) {
    const auto& key = entry.first;
    const auto& checks = entry.second;  // not a structured binding: clang 14 cannot capture one
    const auto find = [&checks](CheckKind k) {
      const auto it = checks.find(k);
      return it == checks.end() ? nullptr : it->second;
    };
    std::snprintf(line, sizeof line, "%-36s %-16s %-9s %-13s %-13s %s\n", std::get<0>(key).c_str(),
                  std::get<1>(key).c_str(), std::get<2>(key).c_str(), cell(find(CheckKind::Forward)).c_str(),
                  cell(find(CheckKind::Gradient)).c_str(), cell(find(CheckKind::SecondOrder)).c_str());
    out += line;
  }
  std::size_t passed = 0, failed = 0, skipped = 0;
  for (const OpCheckRow& r : rows) {
    if (r.status == CheckStatus::Fail) {
      ++failed;
      out += str_cat("FAIL ", r.op, " [", r.case_label, "] ", r.backend, " ", dtype_name(r.dtype), " ",
                     check_kind_name(r.check), ": ", r.message, "\n");
    }
    passed += r.status == CheckStatus::Pass;
    skipped += r.status == CheckStatus::Skip;
  }
  return out + str_cat(passed, " passed, ", failed, " failed, ", skipped, " skipped\n");
}

std::string OpCheckReport::json() const {
  nlohmann::json rows_json = nlohmann::json::array();
  for (const OpCheckRow& r : rows) {
    rows_json.push_back({{"op", r.op},
                         {"case", r.case_label},
                         {"backend", r.backend},
                         {"device", r.device.to_string()},
                         {"dtype", dtype_name(r.dtype)},
                         {"check", check_kind_name(r.check)},
                         {"status", check_status_name(r.status)},
                         {"error", r.error},
                         {"tolerance", r.tolerance},
                         {"message", r.message}});
  }
  // One line, as every JSON report of dagrad's: a stream of them reads as JSON Lines.
  return nlohmann::json{{"passed", passed()}, {"rows", rows_json}}.dump(-1, ' ', false,
                                                                        nlohmann::json::error_handler_t::replace) +
         "\n";
}

}  // namespace dagrad
