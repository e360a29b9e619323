// The `dagrad` CLI against a hostile user: writes that fail (a full device, a missing directory,
// a full stdout), malformed and endless input files, strict input SPECs, out-of-range options,
// and outputs printed exactly.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <dagrad/dagrad.hpp>

#include "cli_runner.hpp"

using namespace dagrad;
using namespace dagrad::cli_testing;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

std::string file_with(const std::string& name, const std::string& bytes) {
  const std::string path = path_in_dir(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

}  // namespace

TEST_CASE("cli: a failed write exits 1, never 0", "[cli]") {
  if (fs::exists("/dev/full")) {
    check_error(run_cli("run-op Identity --in x=zeros:3 --out /dev/full"), "No space left on device");
    for (const char* args : {"ops", "run-op Identity --in x=zeros:3", "--help"}) {
      INFO(args);
      const Result r = run_cli(args, "/dev/full");
      CHECK(r.status == 1);
      CHECK_THAT(r.err, Contains("error: cannot write to standard output"));
    }
  }
  const std::string nowhere = path_in_dir("no_such_dir/out.npy");
  check_error(run_cli("run-op Identity --in x=zeros:3 --out " + nowhere),
              "'" + nowhere + "': No such file or directory");
  check_error(run_cli("run-op Identity --in x=zeros:3 --out " + path_in_dir("")), "Is a directory");
}

TEST_CASE("cli: integers print exactly and floats with the digits that read back", "[cli]") {
  Result r = run_cli("run-op Identity --in x=ints:2147483647,-2147483648,0");
  REQUIRE(r.status == 0);
  CHECK(r.out == "y: Tensor<int32, [3]> [2147483647, -2147483648, 0]\n");
  const std::string big = path_in_dir("int64.npy");
  write_npy(big, Tensor::from_values<std::int64_t>(Shape{2}, {9007199254740993, -9223372036854775807 - 1}));
  r = run_cli("run-op Identity --in x=" + big);
  REQUIRE(r.status == 0);
  CHECK(r.out == "y: Tensor<int64, [2]> [9007199254740993, -9223372036854775808]\n");
  const std::string floats = path_in_dir("floats.npy");
  write_npy(floats, Tensor::from_values<float>(Shape{2, 2}, {0.1f, 1.f / 3.f, 16777216.f, -2.5e-38f}));
  r = run_cli("run-op Identity --in x=" + floats);
  REQUIRE(r.status == 0);
  CHECK(r.out == "y: Tensor<float, [2,2]> [[0.1, 0.33333334], [16777216, -2.5e-38]]\n");
  const std::string bools = path_in_dir("bools.npy");
  write_npy(bools, Tensor::from_values<bool>(Shape{2}, {true, false}));
  r = run_cli("run-op Identity --in x=" + bools);
  REQUIRE(r.status == 0);
  CHECK(r.out == "y: Tensor<bool, [2]> [true, false]\n");
}

TEST_CASE("cli: empty outputs with huge dimensions print at once", "[cli]") {
  Result r = run_cli("run-op Identity --in x=zeros:1000000000000000000,0");
  CHECK(r.status == 0);
  CHECK(r.out == "y: Tensor<float, [1000000000000000000,0]> []\n");
  r = run_cli("run-op Identity --in x=zeros:0,4611686018427387904,4");
  CHECK(r.status == 0);
  CHECK(r.out == "y: Tensor<float, [0,4611686018427387904,4]> []\n");
}

TEST_CASE("cli: input SPECs are parsed strictly", "[cli]") {
  const std::pair<const char*, const char*> cases[] = {
      {"zeros:-1", "dimension -1 is negative"},
      {"zeros:2,,3", "dimension '' is not an integer"},
      {"zeros:2,", "dimension '' is not an integer"},
      {"zeros:+2", "dimension '+2' is not an integer"},
      {"zeros:2x", "dimension '2x' is not an integer"},
      {"random:99999999999999999999", "dimension '99999999999999999999' is out of range"},
      {"zeros:4611686018427387904,4", "is too large"},
      {"random:3037000500,3037000500", "is too large"},
      {"random:2:-1", "seed '-1' is not an integer"},
      {"random:2:18446744073709551616", "seed '18446744073709551616' is out of range"},
      {"random:2:1:2", "expected random:D0,D1,...[:SEED]"},
      {"ints:2147483648", "int32 value '2147483648' is out of range"},
      {"ints:1,,2", "int32 value '' is not an integer"},
      {"scalar:1e39", "out of the range of float32"},
      {"scalar:", "'' is not a number"},
      {"scalar: 1", "' 1' is not a number"},
      {"scalar:1.5x", "'1.5x' is not a number"},
  };
  for (const auto& [spec, fragment] : cases) {
    INFO(spec);
    check_error(run_cli(std::string("run-op Neg --in 'x=") + spec + "'"), fragment);
  }
  const std::string long_spec = "zeros:" + std::string(300, '9');
  const Result r = run_cli("run-op Neg --in x=" + long_spec);
  check_error(r, "(306 characters)");
  CHECK(r.err.size() < 300);
  CHECK(run_cli("run-op Neg --in x=scalar:nan").status == 0);
  CHECK(run_cli("run-op Neg --in x=random:2:18446744073709551615").status == 0);
}

TEST_CASE("cli: out-of-range options are usage errors with short messages", "[cli]") {
  const std::string huge(300, '9');
  Result r = run_cli("run-op Neg --in x=zeros:2 --threads " + huge);
  check_usage(r, "--threads: '999999999999999999999999...' (300 characters) is not an integer in [0, 65536]");
  CHECK(r.err.size() < 400);
  check_usage(run_cli("bench-op Neg --in x=zeros:2 --repeat 0"), "--repeat: '0' is not an integer in [1, 1000000]");
  check_usage(run_cli("bench-op Neg --in x=zeros:2 --warmup -1"), "--warmup");
  check_usage(run_cli("gradcheck Neg --in x=zeros:2 --step nan"), "--step: 'nan' is not a finite number above 0");
  check_usage(run_cli("gradcheck Neg --in x=zeros:2 --atol 0"), "--atol");
  check_usage(run_cli("gradcheck Neg --in x=zeros:2 --order 3"), "--order: '3' is not an integer in [1, 2]");
  check_usage(run_cli("gradcheck Neg --in x=zeros:2 --seed=-1"), "--seed");
  check_usage(run_cli("gradcheck Neg --in x=zeros:2 --directions 0"), "--directions");
  r = run_cli("run-op Neg --in x=zeros:2 --dtype " + huge);
  check_usage(r, "(300 characters)");
  CHECK(r.err.size() < 400);
}

TEST_CASE("cli: hostile .npy inputs are refused by name, without hanging", "[cli]") {
  const std::string good = serialize_npy(Tensor::from_values<float>(Shape{4}, {1, 2, 3, 4}));
  if (fs::exists("/dev/zero"))
    check_error(run_cli("run-op Neg --in x=/dev/zero"), "/dev/zero: not a .npy file (bad magic)");
  check_error(run_cli("run-op Neg --in x=" + path_in_dir("")), "is a directory");
  const std::string fifo = path_in_dir("no_writer.fifo");
  fs::remove(fifo);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  check_error(run_cli("run-op Neg --in x=" + fifo), fifo + ": not a .npy file");
  const std::string truncated = file_with("truncated.npy", good.substr(0, good.size() - 2));
  check_error(run_cli("run-op Neg --in x=" + truncated), "data is 14 bytes but shape [4] of float needs 16");
  const std::string v2 = file_with("v2_huge.npy", std::string("\x93NUMPY\x02\x00\xff\xff\xff\x7f", 12));
  check_error(run_cli("run-op Neg --in x=" + v2), "header length 2147483647 is over the limit");
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (3037000500, 3037000500), }";
  header.append(64 - (10 + header.size()) % 64 - 1, ' ');
  const std::string overflow =
      file_with("overflow.npy",
                std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size() + 1) + '\0' + header + "\n");
  check_error(run_cli("run-op Neg --in x=" + overflow), "is too large");
}
