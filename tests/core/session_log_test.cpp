// SessionOptions::log_level and DAGRAD_LOG_LEVEL: at Info, a plan's first run writes one line per
// kernel node (name, op, device, dtype, kernel backend, path ran) to the sink; later runs of the
// plan write nothing; Off writes nothing; a bad environment value is an error naming the variable.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include <dagrad/dagrad.hpp>

#include "support/error_of.hpp"
#include "support/scoped_env.hpp"

using namespace dagrad;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;

namespace {

// input [1,6,6,2] -> Conv2D 3x3 SAME -> Relu.
struct Net {
  Graph g;
  Output x, conv, y;
  Net() {
    x = ops::placeholder(g, DType::Float32, Shape{1, 6, 6, 2}, "x");
    const Output f = ops::constant(g, Tensor::full(DType::Float32, Shape{3, 3, 2, 4}, 0.25), "f");
    conv = ops::conv2d(g, x, f, {.strides = {1, 1, 1, 1}, .padding = "SAME", .name = "conv"});
    y = ops::relu(g, conv, "relu");
  }
  FeedMap feeds() const { return {{x, Tensor::full(DType::Float32, Shape{1, 6, 6, 2}, 1.0)}}; }
};

struct Captured {
  std::mutex mutex;
  std::vector<std::string> lines;
  LogSink sink() {
    return [this](std::string_view line) {
      std::lock_guard lock(mutex);
      lines.emplace_back(line);
    };
  }
  std::string line_of(const std::string& node) const {
    for (const std::string& l : lines)
      if (l.find("node '" + node + "'") != std::string::npos) return l;
    return "(no line for " + node + ")";
  }
};

using testing::ScopedEnv;

}  // namespace

TEST_CASE("log level info: a plan's first run logs each kernel node's choices once", "[log][session]") {
  Net net;
  Captured log;
  Session session(net.g, {.profile = true, .rewrite = false, .log_level = LogLevel::Info, .log_sink = log.sink()});
  RunStats stats;
  session.run(net.feeds(), {net.y}, {}, &stats);
  // The profile of the same run says what ran: each of its nodes has its line, in the same order,
  // with the same kernel backend and path.
  REQUIRE(log.lines.size() == stats.profile.nodes.size());
  REQUIRE(log.lines.size() >= 2);
  for (std::size_t i = 0; i < log.lines.size(); ++i) {
    const NodeTiming& n = stats.profile.nodes[i];
    INFO(log.lines[i]);
    CHECK_THAT(log.lines[i], StartsWith("dagrad: node '" + n.name + "' (" + n.op + ", cpu, "));
    CHECK_THAT(log.lines[i], Contains("): kernel " + n.backend));
    if (n.path.empty())
      CHECK_THAT(log.lines[i], !Contains(", path "));
    else
      CHECK_THAT(log.lines[i], EndsWith(", path " + n.path));
  }
  CHECK_THAT(log.line_of("conv"), StartsWith("dagrad: node 'conv' (Conv2D, cpu, float): kernel cpu, path "));
  CHECK(log.line_of("relu") == "dagrad: node 'relu' (Relu, cpu, float): kernel cpu");

  // The plan is cached: its next runs log nothing. Another plan (fetching the conv) logs its own.
  const std::size_t first = log.lines.size();
  session.run(net.feeds(), {net.y});
  CHECK(log.lines.size() == first);
  session.run(net.feeds(), {net.conv});
  CHECK(log.lines.size() > first);
  CHECK_THAT(log.lines.back(), StartsWith("dagrad: node 'conv' (Conv2D"));
}

TEST_CASE("log lines name a forced path and the backend asked for", "[log][session]") {
  Net net;
  Captured forced, reference;
  Session a(net.g,
            {.kernel_path = "generic", .rewrite = false, .log_level = LogLevel::Info, .log_sink = forced.sink()});
  a.run(net.feeds(), {net.y});
  CHECK(forced.line_of("conv") == "dagrad: node 'conv' (Conv2D, cpu, float): kernel cpu, path generic");
  Session b(net.g,
            {.backend = "reference", .rewrite = false, .log_level = LogLevel::Info, .log_sink = reference.sink()});
  b.run(net.feeds(), {net.y});
  CHECK(reference.line_of("conv") == "dagrad: node 'conv' (Conv2D, cpu, float): kernel reference");
}

TEST_CASE("log level off, explicit or by default, logs nothing", "[log][session]") {
  Net net;
  Captured off, unset;
  Session quiet(net.g, {.log_level = LogLevel::Off, .log_sink = off.sink()});
  quiet.run(net.feeds(), {net.y});
  CHECK(off.lines.empty());
  unsetenv("DAGRAD_LOG_LEVEL");
  Session plain(net.g, {.log_sink = unset.sink()});
  plain.run(net.feeds(), {net.y});
  CHECK(unset.lines.empty());
}

TEST_CASE("DAGRAD_LOG_LEVEL sets the level of sessions that set none, and is validated", "[log][session]") {
  Net net;
  {
    const ScopedEnv env("DAGRAD_LOG_LEVEL", "info");
    Captured by_env, overridden;
    Session s(net.g, {.log_sink = by_env.sink()});
    s.run(net.feeds(), {net.y});
    CHECK_THAT(by_env.line_of("relu"), StartsWith("dagrad: node 'relu'"));
    Session quiet(net.g, {.log_level = LogLevel::Off, .log_sink = overridden.sink()});  // the option wins
    quiet.run(net.feeds(), {net.y});
    CHECK(overridden.lines.empty());
  }
  const ScopedEnv bad("DAGRAD_LOG_LEVEL", "verbose");
  CHECK(testing::error_of([&] { Session s(net.g); }) ==
        "DAGRAD_LOG_LEVEL: unknown log level 'verbose'; expected one of off, info");
  CHECK(parse_log_level("info") == LogLevel::Info);
  CHECK(parse_log_level("off") == LogLevel::Off);
  CHECK(log_level_name(LogLevel::Info) == "info");
  CHECK_THAT(testing::error_of([] { parse_log_level("INFO", "--log-level"); }),
             StartsWith("--log-level: unknown log level 'INFO'"));
}
