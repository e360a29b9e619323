// dagrad vs oneDNN on the conv shapes of issue 5, in one process, on dagrad's layouts: NHWC (or
// NCHW) activations and HWIO filters in and out. oneDNN runs in the faster of its two setups,
// activations in dagrad's layout or every layout its own blocked choice, its reorders from and to
// dagrad's layouts included in its time either way.
//   dagrad_conv_bench [--op filter|input|forward] [--dtype float|bfloat16] [--layout nhwc|nchw]
//                     [--set issue|depthwise] [--threads 1,2] [--repeat N]
// --layout nchw runs both libraries on NCHW activations (filters stay HWIO); --set depthwise
// runs MobileNet-style depthwise layers (groups = C, filter [k, k, 1, K]) instead of the issue's.
// Prints the CPU model and its ISA features and the float32 FMA peak of one core measured at the
// start, then one table row per shape and thread count: the fastest of `repeat` alternating runs
// of each, GFLOP/s, ratio (oneDNN time / dagrad time: > 1 means dagrad is faster), dagrad's
// fraction of that peak, for bfloat16 its speed-up over dagrad's float32 on the same shape, the
// path dagrad took and oneDNN's setup and implementation; then the geometric means of the ratios.
// Exit status: 0 done, 1 error, 2 usage error (each with an "error: ..." line).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <unistd.h>

#include <oneapi/dnnl/dnnl.hpp>

#include "bench_args.hpp"
#include "dagrad/backends/cpu/conv2d/paths.hpp"
#include "dagrad/backends/cpu/cpu_info.hpp"
#include "dagrad/dagrad.hpp"
#include "dagrad/ops/conv_geometry.hpp"
#include "fma_peak.hpp"

namespace {

using i64 = std::int64_t;

struct Case {
  i64 n, hw, c, k, kernel, stride;
  const char* padding;
  i64 dilation;
  i64 groups = 1;
};

// (N, H=W, C, K, kernel, stride, padding, dilation) from the issue.
const Case kCases[] = {
    {32, 28, 1, 32, 3, 1, "SAME", 1},    {32, 14, 32, 64, 3, 1, "SAME", 1},   {16, 56, 64, 64, 3, 1, "SAME", 1},
    {16, 28, 128, 128, 3, 1, "SAME", 1}, {16, 14, 256, 256, 3, 1, "SAME", 1}, {16, 56, 64, 256, 1, 1, "VALID", 1},
    {16, 56, 128, 128, 3, 2, "SAME", 1}, {8, 224, 3, 64, 7, 2, "SAME", 1},    {16, 28, 64, 64, 3, 1, "SAME", 2}};
// Depthwise layers of MobileNet-like networks: (N, H=W, C, K = C x multiplier, kernel, stride, ...).
const Case kDepthwiseCases[] = {{16, 112, 32, 32, 3, 1, "SAME", 1, 32},   {16, 56, 64, 64, 3, 1, "SAME", 1, 64},
                                {16, 56, 128, 128, 3, 2, "SAME", 1, 128}, {16, 28, 256, 256, 3, 1, "SAME", 1, 256},
                                {16, 14, 512, 512, 3, 1, "SAME", 1, 512}, {16, 28, 64, 128, 5, 1, "SAME", 1, 64}};

// Times the calls alternately, `repeat` times each (more for short calls: at least about
// kMinSideMs of runs per call), and keeps each one's fastest run: on a shared, noisy machine the
// minimum is the steadiest estimate of the uncontended cost, and alternating exposes every call
// to the same background load.
constexpr double kMinSideMs = 300;
std::vector<double> alternating_min_ms(const std::vector<std::function<void()>>& calls, int repeat) {
  auto time_ms = [](const std::function<void()>& body) {
    const auto t0 = std::chrono::steady_clock::now();
    body();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  // Warm-up (first touches, primitive caches), which also sizes the run count.
  double first = 0;
  for (const auto& call : calls) first = std::max(first, time_ms(call));
  repeat = std::max(repeat, static_cast<int>(std::min(1000.0, kMinSideMs / std::max(first, 1e-3))));
  std::vector<double> best(calls.size(), 1e300);
  for (int i = 0; i < repeat; ++i)
    for (std::size_t c = 0; c < calls.size(); ++c) best[c] = std::min(best[c], time_ms(calls[c]));
  return best;
}

dagrad::Tensor random_tensor(std::vector<i64> dims, dagrad::DType dtype, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  i64 count = 1;
  for (i64 d : dims) count *= d;
  std::vector<float> v(static_cast<std::size_t>(count));
  for (auto& e : v) e = u(rng);
  return dagrad::Tensor::from_values<float>(dagrad::Shape(dims), std::span<const float>(v)).cast(dtype);
}

struct Row {
  double dagrad_ms = 0, onednn_ms = 0, max_rel_diff = 0, flops = 0;
  double dagrad_f32_ms = 0;  // dagrad's float32 time on the same shape (0 when dtype is float32)
  std::string dagrad_path;   // the CPU conv path dagrad took
  std::string onednn_impl;   // oneDNN's faster setup: its layouts and implementation string
};

// Largest difference relative to the largest magnitude of b.
double relative_difference(const dagrad::Tensor& a, const dagrad::Tensor& b) {
  double worst = 0, scale = 0;
  for (i64 i = 0; i < b.num_elements(); ++i) {
    worst = std::max(worst, std::abs(a.value_as_double(i) - b.value_as_double(i)));
    scale = std::max(scale, std::abs(b.value_as_double(i)));
  }
  return scale > 0 ? worst / scale : worst;
}

// The convolution for oneDNN: geometry, dtype and dagrad's tensors (the output one is written).
struct OnednnProblem {
  std::string op;  // filter, input or forward
  dagrad::ops::Conv2DGeometry g;
  dagrad::DType dtype;
  bool nchw;
  dagrad::Tensor src, wei, dst;
};

struct OnednnSetup {
  std::function<void()> call;
  std::string impl;     // oneDNN's implementation string, e.g. "jit:avx512_core"
  std::string layouts;  // "nhwc", "nchw" (activations as dagrad's) or "blocked"
};

// One of oneDNN's two ways to run the op on dagrad's tensors, with every reorder each way counted
// in the call: `blocked` lets it choose every layout (its blocked ones); otherwise the activations
// stay in dagrad's layout and only the weights take its choice. None where it has no implementation.
std::optional<OnednnSetup> onednn_setup(const OnednnProblem& p, bool blocked) {
  using namespace dnnl;
  const auto& g = p.g;
  static engine eng(engine::kind::cpu, 0);
  static stream strm(eng);
  const auto dt = p.dtype == dagrad::DType::BFloat16 ? memory::data_type::bf16 : memory::data_type::f32;
  const memory::dims src_dims = {g.batch, g.in_depth, g.in_rows, g.in_cols};
  // Grouped weights are (G, O/G, I/G, H, W) in oneDNN; dagrad's [H][W][I/G][G*O/G] is its hwigo.
  const memory::dims wei_dims =
      g.groups == 1 ? memory::dims{g.out_depth, g.in_depth, g.filter_rows, g.filter_cols}
                    : memory::dims{g.groups, g.out_depth / g.groups, g.filter_in_depth, g.filter_rows, g.filter_cols};
  const memory::dims dst_dims = {g.batch, g.out_depth, g.out_rows, g.out_cols};
  const memory::dims strides = {g.stride_rows, g.stride_cols};
  const memory::dims dil = {g.dilation_rows - 1, g.dilation_cols - 1};  // oneDNN counts the gaps
  const memory::dims pad_l = {g.pad_top, g.pad_left}, pad_r = {g.pad_bottom, g.pad_right};
  const auto act_tag = p.nchw ? memory::format_tag::nchw : memory::format_tag::nhwc;
  const auto act_choice = blocked ? memory::format_tag::any : act_tag;
  const memory::desc src_any(src_dims, dt, act_choice), wei_any(wei_dims, dt, memory::format_tag::any),
      dst_any(dst_dims, dt, act_choice);
  // User memories in dagrad's layouts, wrapping dagrad's tensors.
  auto user = [&](const memory::dims& dims, memory::format_tag tag, const dagrad::Tensor& t) {
    return memory({dims, dt, tag}, eng, const_cast<void*>(t.raw_data()));
  };
  const memory src_u = user(src_dims, act_tag, p.src), dst_u = user(dst_dims, act_tag, p.dst),
               wei_u = user(wei_dims, g.groups == 1 ? memory::format_tag::hwio : memory::format_tag::hwigo, p.wei);
  auto staged = [&](const memory::desc& want, const memory& u) { return want == u.get_desc() ? u : memory(want, eng); };
  // One argument of the primitive: dagrad's memory and the primitive's (the same, or a staged copy).
  struct Arg {
    int id;
    memory user, primitive_side;
  };
  // A call that reorders the inputs in, runs `conv` and reorders its output back, each reorder only
  // where the layouts differ.
  auto staged_call = [](const primitive& conv, std::vector<Arg> inputs, Arg output) {
    return [=] {
      auto copy = [](memory from, memory to) {
        if (from != to) reorder(from, to).execute(strm, from, to);
      };
      std::unordered_map<int, memory> args = {{output.id, output.primitive_side}};
      for (const Arg& in : inputs) {
        copy(in.user, in.primitive_side);
        args.emplace(in.id, in.primitive_side);
      }
      conv.execute(strm, args);
      copy(output.primitive_side, output.user);
      strm.wait();
    };
  };
  try {
    const auto fwd_pd = convolution_forward::primitive_desc(
        convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct, src_any, wei_any, dst_any,
                                  strides, dil, pad_l, pad_r),
        eng);
    const std::string layouts = blocked ? "blocked" : (p.nchw ? "nchw" : "nhwc");
    if (p.op == "filter") {
      const auto pd = convolution_backward_weights::primitive_desc(
          convolution_backward_weights::desc(algorithm::convolution_direct, src_any, wei_any, dst_any, strides, dil,
                                             pad_l, pad_r),
          eng, fwd_pd);
      return OnednnSetup{staged_call(convolution_backward_weights(pd),
                                     {{DNNL_ARG_SRC, src_u, staged(pd.src_desc(), src_u)},
                                      {DNNL_ARG_DIFF_DST, dst_u, staged(pd.diff_dst_desc(), dst_u)}},
                                     {DNNL_ARG_DIFF_WEIGHTS, wei_u, staged(pd.diff_weights_desc(), wei_u)}),
                         pd.impl_info_str(), layouts};
    }
    if (p.op == "input") {
      const auto pd = convolution_backward_data::primitive_desc(
          convolution_backward_data::desc(algorithm::convolution_direct, src_any, wei_any, dst_any, strides, dil, pad_l,
                                          pad_r),
          eng, fwd_pd);
      return OnednnSetup{staged_call(convolution_backward_data(pd),
                                     {{DNNL_ARG_WEIGHTS, wei_u, staged(pd.weights_desc(), wei_u)},
                                      {DNNL_ARG_DIFF_DST, dst_u, staged(pd.diff_dst_desc(), dst_u)}},
                                     {DNNL_ARG_DIFF_SRC, src_u, staged(pd.diff_src_desc(), src_u)}),
                         pd.impl_info_str(), layouts};
    }
    return OnednnSetup{staged_call(convolution_forward(fwd_pd),
                                   {{DNNL_ARG_SRC, src_u, staged(fwd_pd.src_desc(), src_u)},
                                    {DNNL_ARG_WEIGHTS, wei_u, staged(fwd_pd.weights_desc(), wei_u)}},
                                   {DNNL_ARG_DST, dst_u, staged(fwd_pd.dst_desc(), dst_u)}),
                       fwd_pd.impl_info_str(), layouts};
  } catch (const dnnl::error&) {
    return std::nullopt;  // no implementation for these layouts
  }
}

Row run_case(const Case& cs, const std::string& op, dagrad::DType dtype, bool nchw, int repeat) {
  dagrad::ops::Conv2DAttrs attrs;
  attrs.data_format = nchw ? dagrad::ops::DataFormat::NCHW : dagrad::ops::DataFormat::NHWC;
  attrs.padding = std::string(cs.padding) == "SAME" ? dagrad::ops::Padding::Same : dagrad::ops::Padding::Valid;
  attrs.stride_rows = attrs.stride_cols = cs.stride;
  attrs.dilation_rows = attrs.dilation_cols = cs.dilation;
  // Activation shapes and spatial attribute lists in the chosen layout.
  auto act = [&](i64 n, i64 h, i64 w, i64 c) {
    return nchw ? std::vector<i64>{n, c, h, w} : std::vector<i64>{n, h, w, c};
  };
  auto spatial = [&](i64 v) { return nchw ? std::vector<i64>{1, 1, v, v} : std::vector<i64>{1, v, v, 1}; };
  const auto g = dagrad::ops::conv2d_geometry("bench", attrs, dagrad::Shape(act(cs.n, cs.hw, cs.hw, cs.c)),
                                              dagrad::Shape{cs.kernel, cs.kernel, cs.c / cs.groups, cs.k});
  const dagrad::Tensor x = random_tensor(act(g.batch, g.in_rows, g.in_cols, g.in_depth), dtype, 1);
  const dagrad::Tensor f = random_tensor({g.filter_rows, g.filter_cols, g.filter_in_depth, g.out_depth}, dtype, 2);
  const dagrad::Tensor dy = random_tensor(act(g.batch, g.out_rows, g.out_cols, g.out_depth), dtype, 3);
  const dagrad::AttrMap dattrs = {{"strides", spatial(cs.stride)},
                                  {"padding", std::string(cs.padding)},
                                  {"dilations", spatial(cs.dilation)},
                                  {"data_format", std::string(nchw ? "NCHW" : "NHWC")}};
  const char* op_name = op == "filter" ? "Conv2DBackpropFilterV2" : op == "input" ? "Conv2DBackpropInputV2" : "Conv2D";
  const std::vector<dagrad::Tensor> inputs = op == "forward" ? std::vector{x, f} : std::vector{x, f, dy};
  dagrad::Tensor ours;
  const std::function<void()> dagrad_call = [&] { ours = dagrad::run_op(op_name, inputs, dattrs)[0]; };
  dagrad_call();  // once here: `theirs` below takes the output's shape from `ours`
  // The same op in float32, to show what the narrower dtype gains (float32 copies only for that).
  std::vector<dagrad::Tensor> inputs_f32;
  if (dtype != dagrad::DType::Float32)
    for (const auto& t : inputs) inputs_f32.push_back(t.cast(dagrad::DType::Float32));
  const std::function<void()> dagrad_f32_call = [&] { (void)dagrad::run_op(op_name, inputs_f32, dattrs); };

  OnednnProblem problem{.op = op, .g = g, .dtype = dtype, .nchw = nchw};
  dagrad::Tensor theirs = dagrad::Tensor::zeros(dtype, ours.shape());
  problem.src = op == "input" ? theirs : x;
  problem.wei = op == "filter" ? theirs : f;
  problem.dst = op == "forward" ? theirs : dy;
  std::vector<OnednnSetup> setups;
  for (const bool blocked : {false, true})
    if (auto setup = onednn_setup(problem, blocked)) setups.push_back(std::move(*setup));
  if (setups.empty()) throw std::runtime_error("oneDNN has no implementation of this convolution");
  std::vector<std::function<void()>> calls = {dagrad_call};
  for (const OnednnSetup& setup : setups) calls.push_back(setup.call);
  if (dtype != dagrad::DType::Float32) calls.push_back(dagrad_f32_call);
  const std::vector<double> ms = alternating_min_ms(calls, repeat);
  Row row{.dagrad_ms = ms[0], .flops = g.flops(), .dagrad_f32_ms = dtype != dagrad::DType::Float32 ? ms.back() : 0.0};
  row.dagrad_path = std::string(dagrad::cpu::conv2d_paths(op_name, g, dtype).front());
  row.onednn_ms = 1e300;
  for (std::size_t i = 0; i < setups.size(); ++i) {
    // Each setup's result must agree with dagrad's, or the timing compares different work.
    setups[i].call();
    row.max_rel_diff = std::max(row.max_rel_diff, relative_difference(ours, theirs));
    if (ms[i + 1] < row.onednn_ms) {
      row.onednn_ms = ms[i + 1];
      row.onednn_impl = setups[i].layouts + " " + setups[i].impl;
    }
  }
  return row;
}

struct BenchArgs {
  std::string op = "filter", dtype_name = "float", layout = "nhwc", set = "issue";
  std::vector<int> threads = {1, 2};
  std::vector<int> shapes;  // 1-based rows of the set; empty: all
  int repeat = 10;
};

constexpr const char* kUsage =
    "dagrad_conv_bench [--op filter|input|forward] [--dtype float|bfloat16] [--layout nhwc|nchw] "
    "[--set issue|depthwise] [--shapes 1,6] [--threads 1,2] [--repeat N]";

constexpr const char* kHelp =
    "Times dagrad's conv kernels against oneDNN's on the issue's shapes (or --set depthwise), one row per\n"
    "shape and thread count: the fastest of --repeat alternating runs, GFLOP/s, oneDNN time / dagrad time,\n"
    "dagrad's share of one core's measured float32 FMA peak, the path dagrad took and oneDNN's setup.\n"
    "  --op filter|input|forward   Conv2DBackpropFilterV2, Conv2DBackpropInputV2 or Conv2D (default filter)\n"
    "  --dtype float|bfloat16      (default float; bfloat16 also times dagrad's float32)\n"
    "  --layout nhwc|nchw          activations' layout; filters stay HWIO (default nhwc)\n"
    "  --set issue|depthwise       the shapes (default issue)\n"
    "  --shapes 1,6                only these rows of the set, counted from 1 (default all)\n"
    "  --threads 1,2               thread counts, comma-separated (default 1,2)\n"
    "  --repeat N                  runs of each library per shape (default 10)\n";

// "1,2,4" as integers in [lo, hi], or nothing.
std::optional<std::vector<int>> int_list(const std::string& value, long lo, long hi) {
  std::vector<int> out;
  for (std::size_t pos = 0; pos <= value.size();) {
    const std::size_t comma = std::min(value.find(',', pos), value.size());
    const auto v = dagrad_bench::parse_int(value.substr(pos, comma - pos), lo, hi);
    if (!v) return std::nullopt;
    out.push_back(static_cast<int>(*v));
    pos = comma + 1;
  }
  return out;
}

// Fills `a` from the command line; returns the usage-error status (2) on a bad one.
std::optional<int> parse_args(int argc, char** argv, BenchArgs& a) {
  using dagrad_bench::usage_error;
  const std::map<std::string, std::string*> words = {
      {"--op", &a.op}, {"--dtype", &a.dtype_name}, {"--layout", &a.layout}, {"--set", &a.set}};
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return usage_error(flag + " needs a value", kUsage);
    const std::string value = argv[i + 1];
    if (words.count(flag)) {
      *words.at(flag) = value;
    } else if (flag == "--repeat") {
      const auto n = dagrad_bench::parse_int(value, 1, 1'000'000);
      if (!n) return usage_error("--repeat must be an integer between 1 and 1000000, got '" + value + "'", kUsage);
      a.repeat = static_cast<int>(*n);
    } else if (flag == "--threads" || flag == "--shapes") {
      const auto list = int_list(value, 1, 1024);
      if (!list) return usage_error(flag + " must list integers between 1 and 1024, got '" + value + "'", kUsage);
      (flag == "--threads" ? a.threads : a.shapes) = *list;
    } else {
      return usage_error("unknown option '" + flag + "'", kUsage);
    }
  }
  if (a.op != "filter" && a.op != "input" && a.op != "forward") {
    return usage_error("--op must be filter, input or forward, got '" + a.op + "'", kUsage);
  }
  if (a.layout != "nhwc" && a.layout != "nchw")
    return usage_error("--layout must be nhwc or nchw, got '" + a.layout + "'", kUsage);
  if (a.set != "issue" && a.set != "depthwise")
    return usage_error("--set must be issue or depthwise, got '" + a.set + "'", kUsage);
  if (a.dtype_name != "float" && a.dtype_name != "bfloat16") {
    return usage_error("--dtype must be float or bfloat16 (the types both libraries run), got '" + a.dtype_name + "'",
                       kUsage);
  }
  const std::size_t rows = a.set == "issue" ? std::size(kCases) : std::size(kDepthwiseCases);
  for (int s : a.shapes)
    if (static_cast<std::size_t>(s) > rows)
      return usage_error("--shapes: the set has " + std::to_string(rows) + " shapes, got " + std::to_string(s), kUsage);
  return std::nullopt;
}

void run(const BenchArgs& a) {
  const bool nchw = a.layout == "nchw";
  const std::span<const Case> set =
      a.set == "issue" ? std::span<const Case>(kCases) : std::span<const Case>(kDepthwiseCases);
  std::vector<Case> cases;
  for (std::size_t i = 0; i < set.size(); ++i)
    if (a.shapes.empty() || std::find(a.shapes.begin(), a.shapes.end(), static_cast<int>(i + 1)) != a.shapes.end())
      cases.push_back(set[i]);
  const dagrad::DType dtype = dagrad::parse_dtype(a.dtype_name);
  const bool narrow = dtype != dagrad::DType::Float32;
  const double peak = dagrad_bench::measured_fma_peak_gflops();
  std::printf("op=%s dtype=%s layout=%s set=%s repeat=%d (min ms of alternating runs; ratio = oneDNN ms / dagrad ms)\n",
              a.op.c_str(), a.dtype_name.c_str(), a.layout.c_str(), a.set.c_str(), a.repeat);
  std::printf("CPU: %s\n", dagrad::cpu::cpu_info().to_string().c_str());
  std::printf("float32 FMA peak of one core, measured now: %.1f GFLOP/s (peak%% = dagrad GFLOP/s / (threads x this))\n",
              peak);
  std::printf(
      "oneDNN: the faster of its two setups, each with its reorders from and to dagrad's layouts: activations "
      "in dagrad's layout (weights in its choice), or every layout its choice (\"blocked\")\n");
  if (narrow) std::printf("vs_f32 = dagrad float32 ms / dagrad %s ms on the same shape\n", a.dtype_name.c_str());
  std::printf("%-34s %3s %10s %10s %9s %9s %7s %6s %9s%s\n", "shape N,HW,C,K,k,s,pad,dil", "thr", "dagrad_ms",
              "onednn_ms", "dagrad_GF", "onednn_GF", "ratio", "peak%", "rel_diff",
              narrow ? "  vs_f32  dagrad path | oneDNN setup" : "  dagrad path | oneDNN setup");
  for (int t : a.threads) {
    dagrad::set_num_threads(t);
    omp_set_num_threads(t);
    double log_sum = 0, log_f32 = 0;
    for (const Case& cs : cases) {
      const Row r = run_case(cs, a.op, dtype, nchw, a.repeat);
      const double gflops = r.flops / (r.dagrad_ms * 1e6);
      char shape[64];
      std::snprintf(shape, sizeof shape, "%lld,%lld,%lld,%lld,%lld,%lld,%s,%lld", (long long)cs.n, (long long)cs.hw,
                    (long long)cs.c, (long long)cs.k, (long long)cs.kernel, (long long)cs.stride, cs.padding,
                    (long long)cs.dilation);
      std::printf("%-34s %3d %10.3f %10.3f %9.1f %9.1f %7.2f %6.0f %9.1e", shape, t, r.dagrad_ms, r.onednn_ms, gflops,
                  r.flops / (r.onednn_ms * 1e6), r.onednn_ms / r.dagrad_ms, peak > 0 ? 100 * gflops / (t * peak) : 0.0,
                  r.max_rel_diff);
      if (narrow) std::printf(" %7.2f", r.dagrad_f32_ms / r.dagrad_ms);
      std::printf("  %s | %s\n", r.dagrad_path.c_str(), r.onednn_impl.c_str());
      log_sum += std::log(r.onednn_ms / r.dagrad_ms);
      if (narrow) log_f32 += std::log(r.dagrad_f32_ms / r.dagrad_ms);
    }
    const double count = static_cast<double>(cases.size());
    std::printf("geometric mean ratio at %d thread(s): %.3f", t, std::exp(log_sum / count));
    if (narrow) std::printf("; %s vs float32: %.3f", a.dtype_name.c_str(), std::exp(log_f32 / count));
    std::printf("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (dagrad_bench::asks_for_help(argc, argv)) {
    return dagrad::run_main([] {
      std::printf("usage: %s\n%s", kUsage, kHelp);
      return dagrad::kExitSuccess;
    });
  }
  // oneDNN's OpenMP threads spin for a while after each call by default, on the cores that
  // dagrad's next (alternating) run needs; passive waiting keeps the two timings independent.
  // libgomp reads the setting when it loads, hence the re-exec.
  if (std::getenv("OMP_WAIT_POLICY") == nullptr) {
    setenv("OMP_WAIT_POLICY", "passive", 1);
    execv("/proc/self/exe", argv);  // returns only on failure: then run with the default policy
  }
  return dagrad::run_main([&] {
    BenchArgs args;
    if (const auto status = parse_args(argc, argv, args)) return *status;
    run(args);
    return dagrad::kExitSuccess;
  });
}
