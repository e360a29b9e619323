// Runs the `dagrad` binary as a user would: run-op on .npy files and generated inputs, `ops`,
// and the exit statuses (0, 1 for dagrad errors, 2 for usage) with a single stderr line.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>

#include <dagrad/dagrad.hpp>

#include "cli_runner.hpp"

using namespace dagrad;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

namespace fs = std::filesystem;
using namespace dagrad::cli_testing;

std::string npy(const std::string& name, const Tensor& t) {
  const std::string path = path_in_dir(name);
  write_npy(path, t);
  return path;
}

}  // namespace

TEST_CASE("cli: run-op on .npy files writes the expected output", "[cli]") {
  Tensor x = Tensor::from_values<float>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor y = Tensor::from_values<float>(Shape{3}, {0.5f, -1.f, 10.f});
  const std::string out = path_in_dir("z.npy");
  fs::remove(out);
  Result r = run_cli("run-op AddV2 --in x=" + npy("x.npy", x) + " --in y=" + npy("y.npy", y) + " --out " + out);
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.empty());
  Tensor z = read_npy(out);
  REQUIRE(z.dtype() == DType::Float32);
  REQUIRE(z.shape() == Shape{2, 3});
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) CHECK(z.data<float>()[i * 3 + j] == x.data<float>()[i * 3 + j] + y.data<float>()[j]);

  // Named --out, an int32 shape input, and a bool attribute.
  r = run_cli("run-op Sum --in input=" + npy("x.npy", x) +
              " --in axis=ints:1 --attr keep_dims=true --out output=" + out);
  REQUIRE(r.status == 0);
  Tensor s = read_npy(out);
  REQUIRE(s.shape() == Shape{2, 1});
  CHECK(s.data<float>()[0] == 6.f);
  CHECK(s.data<float>()[1] == 15.f);

  // A list input given three times, and a type attribute spelled as TF spells it.
  r = run_cli("run-op AddN --in inputs=" + npy("x.npy", x) + " --in inputs=" + npy("x.npy", x) +
              " --in inputs=zeros:2,3 --out " + out);
  REQUIRE(r.status == 0);
  CHECK(read_npy(out).data<float>()[5] == 12.f);
  r = run_cli("run-op Cast --in x=" + npy("c.npy", Tensor::from_values<double>(Shape{3}, {-1.5, 2.7, 1e10})) +
              " --attr DstT=int32 --out " + out);
  REQUIRE(r.status == 0);
  Tensor c = read_npy(out);
  REQUIRE(c.dtype() == DType::Int32);
  CHECK(c.to_int64_vector() == std::vector<std::int64_t>{-1, 2, std::numeric_limits<std::int32_t>::max()});
}

TEST_CASE("cli: without --out, outputs are printed", "[cli]") {
  Result r =
      run_cli("run-op Mul --in x=scalar:2.5 --in y=" + npy("v.npy", Tensor::from_values<float>(Shape{2}, {2, -4})));
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out == "z: Tensor<float, [2]> [5, -10]\n");
  CHECK(r.err.empty());
}

TEST_CASE("cli: random and zeros specs are deterministic", "[cli]") {
  const std::string a = path_in_dir("ra.npy"), b = path_in_dir("rb.npy"), c = path_in_dir("rc.npy"),
                    d = path_in_dir("rd.npy");
  REQUIRE(run_cli("run-op Identity --in x=random:3,4:7 --out " + a).status == 0);
  REQUIRE(run_cli("run-op Identity --in x=random:3,4:7 --out " + b).status == 0);
  REQUIRE(run_cli("run-op Identity --in x=random:3,4:8 --out " + c).status == 0);
  REQUIRE(run_cli("run-op Identity --in x=random:3,4 --out " + d).status == 0);
  Tensor ta = read_npy(a), tb = read_npy(b), tc = read_npy(c), td = read_npy(d);
  REQUIRE(ta.shape() == Shape{3, 4});
  REQUIRE(ta.dtype() == DType::Float32);
  int same_ab = 0, same_ac = 0, in_range = 0;
  for (int i = 0; i < 12; ++i) {
    const float v = ta.data<float>()[i];
    same_ab += v == tb.data<float>()[i];
    same_ac += v == tc.data<float>()[i];
    in_range += v >= -1.f && v < 1.f;
  }
  CHECK(same_ab == 12);
  CHECK(same_ac < 12);
  CHECK(in_range == 12);
  REQUIRE(td.shape() == Shape{3, 4});  // default seed 0
  REQUIRE(run_cli("run-op Identity --in x=zeros:2,0,3 --out " + a).status == 0);
  CHECK(read_npy(a).shape() == Shape{2, 0, 3});
  REQUIRE(run_cli("run-op Neg --in x=zeros:2,2 --out " + a).status == 0);
  for (int i = 0; i < 4; ++i) CHECK(read_npy(a).data<float>()[i] == 0.f);
}

TEST_CASE("cli: --dtype casts floating inputs before the op runs", "[cli]") {
  Tensor x = Tensor::from_values<float>(Shape{4}, {0.1f, 1.f / 3.f, -65519.f, 1e-8f});
  Tensor axis = Tensor::from_values<std::int32_t>(Shape{1}, {0});
  const std::string out = path_in_dir("dt.npy");
  Result r = run_cli("run-op Neg --in x=" + npy("f.npy", x) + " --dtype half --out " + out);
  REQUIRE(r.status == 0);
  Tensor h = read_npy(out);
  REQUIRE(h.dtype() == DType::Half);
  for (int i = 0; i < 4; ++i) CHECK(h.data<half>()[i] == -narrow<half>(static_cast<double>(x.data<float>()[i])));
  // bfloat16 outputs are widened to float32 in the file; int inputs (axis) are left alone.
  r = run_cli("run-op Sum --in input=" + npy("f.npy", x) + " --in axis=" + npy("axis.npy", axis) +
              " --dtype bfloat16 --backend reference --out " + out);
  INFO(r.err);
  REQUIRE(r.status == 0);
  Tensor b = read_npy(out);
  REQUIRE(b.dtype() == DType::Float32);
  REQUIRE(b.shape() == Shape{});
  double exact = 0;
  for (int i = 0; i < 4; ++i) exact += static_cast<float>(narrow<bfloat16>(x.data<float>()[i]));
  CHECK(b.data<float>()[0] == static_cast<float>(narrow<bfloat16>(exact)));
  r = run_cli("run-op AddV2 --in x=" + npy("f.npy", x) +
              " --in y=random:4:3 --dtype double --threads 1 --backend reference --out " + out);
  REQUIRE(r.status == 0);
  CHECK(read_npy(out).dtype() == DType::Float64);
}

TEST_CASE("cli: dagrad ops lists every registered op", "[cli]") {
  Result r = run_cli("ops");
  REQUIRE(r.status == 0);
  for (const OpDef* def : op_registry().list()) CHECK_THAT(r.out, Contains(def->signature()));
  CHECK_THAT(r.out, Contains("AddV2(x: T, y: T) -> (z: T)"));
  CHECK_THAT(r.out, Contains("x + y with broadcasting."));
  CHECK_THAT(r.out, !Contains("kernels:"));
  r = run_cli("ops --kernels");
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("kernels:"));
  CHECK_THAT(r.out, Contains("      cpu float: "));
  CHECK_THAT(r.out, Contains("reference"));
  r = run_cli("ops AddN --kernels");
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, StartsWith("AddN(inputs: N * T) -> (sum: T)"));
  CHECK_THAT(r.out, !Contains("AddV2"));
  CHECK(run_cli("--help").status == 0);
  CHECK(run_cli("run-op --help").status == 0);
}

TEST_CASE("cli: dagrad errors exit with 1 and one stderr line", "[cli]") {
  const std::string f = npy("ef.npy", Tensor::zeros(DType::Float32, Shape{2}));
  const std::string d = npy("ed.npy", Tensor::zeros(DType::Float64, Shape{2}));
  check_error(run_cli("run-op NoSuchOp"), "Op type not registered 'NoSuchOp'");
  check_error(run_cli("ops NoSuchOp"), "Op type not registered 'NoSuchOp'");
  check_error(run_cli("run-op AddV2 --in x=" + f + " --in y=" + d),
              "Input 'y' of 'AddV2' Op has type double that does not match type float of argument 'x'.");
  check_error(run_cli("run-op AddV2 --in x=" + f), "AddV2: missing input 'y'");
  check_error(run_cli("run-op AddV2 --in x=" + f + " --in y=" + f + " --in w=" + f), "AddV2: no input named 'w'");
  check_error(run_cli("run-op AddV2 --in x=" + f + " --in x=" + f + " --in y=" + f), "given more than once");
  check_error(run_cli("run-op AddV2 --in x=" + f + " --in y=zeros:3"), "Incompatible shapes: [2] vs. [3]");
  check_error(run_cli("run-op Sum --in input=" + f + " --in axis=ints:0 --attr keep_dims=maybe"),
              "Sum: attribute 'keep_dims' (bool): expected true or false, got 'maybe'");
  check_error(run_cli("run-op Sum --in input=" + f + " --in axis=ints:0 --attr keepdims=true"),
              "unknown attribute 'keepdims'");
  check_error(run_cli("run-op Cast --in x=" + f + " --attr DstT=float128"), "unknown dtype 'float128'");
  check_error(run_cli("run-op Cast --in x=" + f), "missing required attribute 'DstT'");
  const std::string missing = path_in_dir("missing.npy");
  fs::remove(missing);
  check_error(run_cli("run-op Neg --in x=" + missing), missing);
  check_error(run_cli("run-op Neg --in x=random:2,x"), "dimension 'x' is not an integer");
  check_error(run_cli("run-op Neg --in x=" + f + " --backend nosuch"), "no kernel from backend 'nosuch'");
  check_error(run_cli("run-op AddV2 --in x=" + f + " --in y=" + f + " --out w=" + path_in_dir("w.npy")),
              "no output named 'w'");
  check_error(run_cli("run-op VariableV2 --attr shape=2 --attr dtype=float"), "stateful");
  if (!device_available(Device::cuda())) check_error(run_cli("run-op Neg --in x=" + f + " --device cuda"), "CUDA");
}

TEST_CASE("cli: usage errors exit with 2 and a usage line", "[cli]") {
  check_usage(run_cli(""), "subcommand");
  check_usage(run_cli("frobnicate"), "frobnicate");
  check_usage(run_cli("run-op"), "OP");
  check_usage(run_cli("run-op Neg --bogus"), "--bogus");
  check_usage(run_cli("run-op Neg --in x"), "--in expects NAME=VALUE");
  check_usage(run_cli("run-op Neg --in x=zeros:2 --attr T"), "--attr expects NAME=VALUE");
  check_usage(run_cli("run-op Neg --in x=zeros:2 --dtype int32"), "int32");
  check_usage(run_cli("run-op Neg --in x=zeros:2 --threads=-1"), "--threads");
  check_usage(run_cli("run-op Neg --in x=zeros:2 --device tpu"), "tpu");
  CHECK_THAT(run_cli("run-op Neg --bogus").err, Contains("usage: dagrad run-op OP"));
}

TEST_CASE("cli: --path forces a cpu conv path; ops --paths lists them", "[cli]") {
  const std::string conv =
      "run-op Conv2D --in input=random:1,6,6,4:1 --in filter=random:3,3,4,8:2 "
      "--attr strides=1,1,1,1 --attr padding=SAME";
  const Result fast = run_cli(conv + " --path nhwc_fast"), generic = run_cli(conv + " --path generic");
  INFO(fast.err << generic.err);
  REQUIRE(fast.status == 0);
  REQUIRE(generic.status == 0);
  check_error(run_cli(conv + " --path bogus"),
              "Conv2D: unknown kernel path 'bogus'; the paths of Conv2D are depthwise, amx, bf16_native, strips, "
              "nhwc_fast, nchw_fast, generic");
  check_error(run_cli(conv + " --path nchw_fast"), "Conv2D: kernel path 'nchw_fast' does not apply to this call");
  check_error(run_cli("bench-op" + conv.substr(6) + " --repeat 1 --warmup 0 --path nchw_fast"), "does not apply");
  check_usage(run_cli(conv + " --path generic --backend reference"), "--path");
  const Result bench = run_cli("bench-op" + conv.substr(6) + " --repeat 1 --warmup 0 --path generic");
  REQUIRE(bench.status == 0);
  CHECK_THAT(bench.out, Contains("\"path\":\"generic\""));
  CHECK(run_cli("run-op Neg --in x=zeros:2 --path bogus").status == 0);  // no path table: ignored
  const Result ops = run_cli("ops Conv2DBackpropFilterV2 --paths");
  REQUIRE(ops.status == 0);
  CHECK_THAT(ops.out, Contains("    cpu paths: depthwise, amx, bf16_native, strips, nhwc_fast, nchw_slabs, generic\n"));
  CHECK_THAT(run_cli("ops Neg --paths").out, !Contains("cpu paths"));
}
