// GPU benchmark of the conv ops: dagrad's own CUDA kernels against cuDNN (through the "cudnn"
// backend) on the CPU benchmark's shapes and on the same shapes with 4x the batch, in half,
// bfloat16 and float32. Conv2DBackpropFilterV2 first (the goal), then Conv2D and
// Conv2DBackpropInputV2. Prints one line per case and the geometric mean of cuDNN time / dagrad
// time per op and dtype.
// Usage: dagrad_cuda_conv_bench [iterations] [nhwc|nchw]   (default 10, nhwc)
// Exit status: 0 done (also without a GPU: nothing to measure), 1 error, 2 usage error.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench_args.hpp"
#include "dagrad/dagrad.hpp"
#include "dagrad/ops/conv2d.hpp"
#include "dagrad/ops/conv_geometry.hpp"

namespace {

using namespace dagrad;
using i64 = std::int64_t;

struct BenchShape {
  i64 n, hw, c, k, kernel, stride;
  const char* padding;
  i64 dilation;
};

const BenchShape kShapes[] = {
    {32, 28, 1, 32, 3, 1, "SAME", 1},    {32, 14, 32, 64, 3, 1, "SAME", 1},   {16, 56, 64, 64, 3, 1, "SAME", 1},
    {16, 28, 128, 128, 3, 1, "SAME", 1}, {16, 14, 256, 256, 3, 1, "SAME", 1}, {16, 56, 64, 256, 1, 1, "VALID", 1},
    {16, 56, 128, 128, 3, 2, "SAME", 1}, {8, 224, 3, 64, 7, 2, "SAME", 1},    {16, 28, 64, 64, 3, 1, "SAME", 2},
};

Tensor random_on_device(DType dtype, const Shape& shape, std::mt19937& rng) {
  Tensor t = Tensor::empty(DType::Float32, shape);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (i64 i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = dist(rng);
  return t.cast(dtype).to(Device::cuda());
}

// Median wall time of `iterations` synchronised runs, in milliseconds.
template <class F>
double time_ms(F&& run, int iterations) {
  DeviceRuntime& runtime = device_runtime(Device::cuda());
  for (int i = 0; i < 2; ++i) run();  // warm-up: pools, cuDNN heuristics, module loading
  runtime.synchronize(0);
  std::vector<double> times;
  for (int i = 0; i < iterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    runtime.synchronize(0);
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// The benchmark proper: one table per op, then the summary.
void run_benchmark(int iterations, bool nchw) {
  std::mt19937 rng(1);
  std::map<std::string, std::vector<double>> ratios;  // "op dtype" -> cuDNN / dagrad per shape
  const char* ops[] = {"Conv2DBackpropFilterV2", "Conv2D", "Conv2DBackpropInputV2"};
  for (const char* op : ops) {
    std::printf("\n%-40s %-9s %10s %10s %9s %9s\n", op, "dtype", "dagrad ms", "cuDNN ms", "TFLOP/s", "cuDNN/dg");
    for (const i64 batch_scale : {1, 4}) {
      for (const BenchShape& s : kShapes) {
        ops::Conv2DOptions o{.strides = {1, s.stride, s.stride, 1}, .padding = s.padding};
        o.dilations = {1, s.dilation, s.dilation, 1};
        Shape input{s.n * batch_scale, s.hw, s.hw, s.c};
        if (nchw) {
          o.data_format = "NCHW";
          o.strides = {1, 1, s.stride, s.stride};
          o.dilations = {1, 1, s.dilation, s.dilation};
          input = Shape{s.n * batch_scale, s.c, s.hw, s.hw};
        }
        const Shape filter{s.kernel, s.kernel, s.c, s.k};
        const auto g =
            ops::conv2d_geometry("Conv2D", ops::parse_conv2d_attrs("Conv2D", ops::conv2d_attr_map(o)), input, filter);
        // cuDNN pads symmetrically only; with asymmetric SAME padding the "cudnn" backend falls back
        // to dagrad's kernel, so there is nothing to compare.
        const bool cudnn_applies = g.pad_top == g.pad_bottom && g.pad_left == g.pad_right;
        char label[64];
        std::snprintf(label, sizeof label, "%lld,%lld,%lld,%lld,%lld,%lld,%s,%lld", (long long)s.n * batch_scale,
                      (long long)s.hw, (long long)s.c, (long long)s.k, (long long)s.kernel, (long long)s.stride,
                      s.padding, (long long)s.dilation);
        for (DType t : {DType::Half, DType::BFloat16, DType::Float32}) {
          const Tensor x = random_on_device(t, input, rng), f = random_on_device(t, filter, rng);
          const Tensor dy = random_on_device(t, Shape(g.output_dims()), rng);
          const AttrMap attrs = ops::conv2d_attr_map(o);
          const std::string name = op;
          const std::vector<Tensor> inputs =
              name == "Conv2D" ? std::vector<Tensor>{x, f} : std::vector<Tensor>{x, f, dy};
          auto run = [&](const char* backend) {
            return [&, backend] { run_op(name, inputs, attrs, {.backend = backend}); };
          };
          const double own = time_ms(run("cuda"), iterations);
          const double cudnn = cudnn_applies ? time_ms(run("cudnn"), iterations) : NAN;
          const double tflops = g.flops() / (own * 1e-3) / 1e12;
          if (cudnn_applies) ratios[name + " " + std::string(dtype_name(t))].push_back(cudnn / own);
          std::printf("%-40s %-9s %10.3f %10.3f %9.2f %9.2f%s\n", label, std::string(dtype_name(t)).c_str(), own, cudnn,
                      tflops, cudnn / own, cudnn_applies ? "" : "  (asymmetric padding: no cuDNN case)");
        }
      }
    }
  }
  std::printf("\nsummary (%s): geometric mean of cuDNN time / dagrad time (goal: >= 0.9 for Conv2DBackpropFilterV2)\n",
              nchw ? "nchw" : "nhwc");
  for (const auto& [key, values] : ratios) {
    double log_sum = 0;
    for (double r : values) log_sum += std::log(r);
    std::printf("  %-32s %.3f over %zu shapes\n", key.c_str(), std::exp(log_sum / values.size()), values.size());
  }
}

}  // namespace

int main(int argc, char** argv) {
  constexpr const char* kUsage = "dagrad_cuda_conv_bench [iterations] [nhwc|nchw]   (default 10, nhwc)";
  return dagrad::run_main([&] {
    if (argc > 3) return dagrad_bench::usage_error("too many arguments", kUsage);
    const std::string count = argc > 1 ? argv[1] : "10", layout = argc > 2 ? argv[2] : "nhwc";
    const auto iterations = dagrad_bench::parse_int(count, 1, 1'000'000);
    if (!iterations) {
      return dagrad_bench::usage_error("iterations must be an integer between 1 and 1000000, got '" + count + "'",
                                       kUsage);
    }
    if (layout != "nhwc" && layout != "nchw") {
      return dagrad_bench::usage_error("the layout must be nhwc or nchw, got '" + layout + "'", kUsage);
    }
    if (!device_available(Device::cuda())) {
      std::printf("cuda_conv_bench: no CUDA device available; nothing to measure\n");
    } else {
      run_benchmark(static_cast<int>(*iterations), layout == "nchw");
    }
    return dagrad::kExitSuccess;
  });
}
