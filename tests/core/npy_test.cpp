// .npy files: round trips for every dtype, big-endian and Fortran-order files written by hand,
// errors that name the file, and reads bounded by the header (pipes, endless devices).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include <dagrad/dagrad.hpp>

using namespace dagrad;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::path(DAGRAD_TEST_DATA_DIR) / "npy_test";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

// A version 1.0 .npy file from a header dict and raw data, built independently of write_npy.
std::string npy_bytes(const std::string& dict, const std::string& data) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

template <class T>
std::string raw(std::initializer_list<T> values, bool big_endian = false) {
  std::string bytes;
  for (T v : values) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    if (big_endian) std::reverse(b, b + sizeof(T));
    bytes.append(b, sizeof(T));
  }
  return bytes;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void require_same(const Tensor& a, const Tensor& b) {
  REQUIRE(a.dtype() == b.dtype());
  REQUIRE(a.shape() == b.shape());
  if (a.nbytes() > 0) REQUIRE(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0);
}

}  // namespace

TEST_CASE("npy round trips every dtype and shape", "[npy]") {
  const std::vector<Tensor> tensors = {
      Tensor::from_values<half>(Shape{2, 2}, {half(0.1f), half(-2.f), half(65504.f), half(6e-8f)}),
      Tensor::from_values<float>(Shape{3}, {1.5f, -0.0f, 3.4e38f}),
      Tensor::from_values<double>(Shape{1, 2, 1}, {1e-300, -7.25}),
      Tensor::from_values<std::int32_t>(Shape{2}, {std::numeric_limits<std::int32_t>::min(), 42}),
      Tensor::from_values<std::int64_t>(Shape{2}, {-(std::int64_t{1} << 40), 1}),
      Tensor::from_values<bool>(Shape{3}, {true, false, true}),
      Tensor::scalar(3.25f),
      Tensor::zeros(DType::Float64, Shape{0, 4}),
  };
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    INFO("tensor " << i << ": " << tensors[i]);
    const std::string path = temp_path("round_trip_" + std::to_string(i) + ".npy");
    write_npy(path, tensors[i]);
    require_same(read_npy(path), tensors[i]);
  }
}

TEST_CASE("bfloat16 is written widened to float32", "[npy]") {
  Tensor bf = Tensor::from_values<bfloat16>(Shape{3}, {bfloat16(1.0f), bfloat16(-3.140625f), bfloat16(1e30f)});
  const std::string path = temp_path("bfloat16.npy");
  write_npy(path, bf);
  Tensor back = read_npy(path);
  REQUIRE(back.dtype() == DType::Float32);
  REQUIRE(back.shape() == Shape{3});
  for (int i = 0; i < 3; ++i) CHECK(back.data<float>()[i] == static_cast<float>(bf.data<bfloat16>()[i]));
}

TEST_CASE("written files follow the .npy 1.0 layout", "[npy]") {
  const std::string bytes = serialize_npy(Tensor::from_values<std::int32_t>(Shape{2, 3}, {1, 2, 3, 4, 5, 6}));
  REQUIRE(bytes.compare(0, 8, std::string("\x93NUMPY\x01\x00", 8)) == 0);
  const std::size_t header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  CHECK((10 + header_len) % 64 == 0);
  const std::string header = bytes.substr(10, header_len);
  CHECK_THAT(header, Contains("'descr': '<i4'"));
  CHECK_THAT(header, Contains("'fortran_order': False"));
  CHECK_THAT(header, Contains("'shape': (2, 3)"));
  CHECK(header.back() == '\n');
  CHECK(bytes.substr(10 + header_len) == raw<std::int32_t>({1, 2, 3, 4, 5, 6}));
  CHECK_THAT(serialize_npy(Tensor::from_values<float>(Shape{4}, {1, 2, 3, 4})), Contains("'shape': (4,)"));
  CHECK_THAT(serialize_npy(Tensor::scalar(1.0)), Contains("'shape': ()"));
}

TEST_CASE("big-endian files are read", "[npy]") {
  Tensor f = parse_npy(
      npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", raw<float>({1.5f, -2.f}, true)), "be");
  REQUIRE(f.dtype() == DType::Float32);
  CHECK(f.data<float>()[0] == 1.5f);
  CHECK(f.data<float>()[1] == -2.f);
  Tensor i = parse_npy(npy_bytes("{'descr': '>i8', 'fortran_order': False, 'shape': (2,), }",
                                 raw<std::int64_t>({-3, std::int64_t{1} << 40}, true)),
                       "be");
  CHECK(i.to_int64_vector() == std::vector<std::int64_t>{-3, std::int64_t{1} << 40});
  Tensor h = parse_npy(
      npy_bytes("{'descr': '>f2', 'fortran_order': False, 'shape': (1,), }", std::string("\x3C\x00", 2)), "be");
  CHECK(h.data<half>()[0] == half(1.f));
}

TEST_CASE("Fortran-order files are reordered to row-major", "[npy]") {
  // The 2x3 matrix [[0, 1, 2], [10, 11, 12]] stored column by column.
  Tensor m = parse_npy(
      npy_bytes("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", raw<double>({0, 10, 1, 11, 2, 12})),
      "fortran");
  REQUIRE(m.shape() == Shape{2, 3});
  const double expected[] = {0, 1, 2, 10, 11, 12};
  for (int k = 0; k < 6; ++k) CHECK(m.data<double>()[k] == expected[k]);
  // 3-D: element (i, j, k) = 100 i + 10 j + k, stored with i varying fastest.
  std::string data;
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 2; ++i) data += raw<std::int32_t>({100 * i + 10 * j + k});
  Tensor t = parse_npy(npy_bytes("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3, 4), }", data), "fortran3");
  int mismatches = 0;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) mismatches += t.data<std::int32_t>()[(i * 3 + j) * 4 + k] != 100 * i + 10 * j + k;
  CHECK(mismatches == 0);
}

TEST_CASE("bad .npy files raise errors naming the file", "[npy]") {
  const std::string good = serialize_npy(Tensor::from_values<float>(Shape{4}, {1, 2, 3, 4}));

  const std::string missing = temp_path("does_not_exist.npy");
  std::filesystem::remove(missing);
  try {
    read_npy(missing);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == Code::NotFound);
    CHECK_THAT(e.what(), Contains(missing));
  }

  const std::string truncated = temp_path("truncated.npy");
  write_file(truncated, good.substr(0, good.size() - 1));
  CHECK_THROWS_WITH(read_npy(truncated), StartsWith(truncated) && Contains("15 bytes") && Contains("needs 16"));

  const std::string too_long = temp_path("too_long.npy");
  write_file(too_long, good + "x");
  CHECK_THROWS_WITH(read_npy(too_long), StartsWith(too_long));

  const std::string header_cut = temp_path("header_cut.npy");
  write_file(header_cut, good.substr(0, 30));
  CHECK_THROWS_WITH(read_npy(header_cut), StartsWith(header_cut) && Contains("truncated"));

  const std::string not_npy = temp_path("not_npy.npy");
  write_file(not_npy, "hello, this is not numpy data at all");
  CHECK_THROWS_WITH(read_npy(not_npy), StartsWith(not_npy) && Contains("bad magic"));

  const std::string empty = temp_path("empty.npy");
  write_file(empty, "");
  CHECK_THROWS_WITH(read_npy(empty), StartsWith(empty));

  CHECK_THROWS_WITH(
      parse_npy(npy_bytes("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", std::string(8, '\0')),
                "complex.npy"),
      StartsWith("complex.npy") && Contains("'<c8'"));
  CHECK_THROWS_WITH(parse_npy(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", ""), "neg.npy"),
                    StartsWith("neg.npy"));
  CHECK_THROWS_WITH(
      parse_npy(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", ""),
                "huge.npy"),
      StartsWith("huge.npy"));
  CHECK_THROWS_WITH(parse_npy(npy_bytes("{'fortran_order': False, 'shape': (1,), }", raw<float>({1.f})), "nodescr.npy"),
                    StartsWith("nodescr.npy") && Contains("descr"));
  CHECK_THROWS_WITH(
      parse_npy(npy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (1,), }", "\x07"), "bool.npy"),
      StartsWith("bool.npy"));
}

namespace {

// Feeds `bytes` into a new FIFO at `path`, then filler up to `cap` bytes in all, from a thread;
// finish() returns how many bytes went in before the reader closed its end (the pipe's buffer of
// 64 KiB counts as taken). A second read end, held until finish(), lets the writer open first:
// a reader that finds no writer reads an empty file rather than waiting for one.
class FifoWriter {
 public:
  FifoWriter(const std::string& path, std::string bytes, std::size_t cap) {
    std::filesystem::remove(path);
    REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
    keeper_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK);
    REQUIRE(keeper_ >= 0);
    old_handler_ = std::signal(SIGPIPE, SIG_IGN);  // a closed reader is an EPIPE, not a signal
    std::promise<void> opened;
    auto is_open = opened.get_future();
    thread_ = std::thread([this, path, bytes = std::move(bytes), cap, opened = std::move(opened)]() mutable {
      const int fd = ::open(path.c_str(), O_WRONLY);
      opened.set_value();
      if (fd < 0) return;
      const std::string filler(1 << 16, '\x07');
      while (written_ < cap) {
        const std::string_view chunk = written_ < bytes.size() ? std::string_view(bytes).substr(written_) : filler;
        const ssize_t n = ::write(fd, chunk.data(), std::min(chunk.size(), cap - written_));
        if (n <= 0) break;
        written_ += static_cast<std::size_t>(n);
      }
      ::close(fd);
    });
    is_open.wait();
  }
  std::size_t finish() {
    ::close(keeper_);  // the last read end: a writer still writing gets EPIPE
    thread_.join();
    std::signal(SIGPIPE, old_handler_);
    return written_;
  }

 private:
  int keeper_ = -1;
  std::thread thread_;
  std::size_t written_ = 0;
  void (*old_handler_)(int) = nullptr;
};

constexpr std::size_t kFifoCap = std::size_t{64} << 20;

}  // namespace

TEST_CASE("npy: readers take no more than the header promises", "[npy]") {
  // Garbage from an endless stream is refused after the magic, not after reading it all.
  const std::string fifo = temp_path("stream.npy");
  FifoWriter garbage(fifo, "garbage", kFifoCap);
  CHECK_THROWS_WITH(read_npy(fifo), StartsWith(fifo) && Contains("bad magic"));
  CHECK(garbage.finish() < (std::size_t{2} << 20));

  // A valid header promising 16 bytes, then endless data: refused after 17 bytes.
  const std::string good = serialize_npy(Tensor::from_values<float>(Shape{4}, {1, 2, 3, 4}));
  FifoWriter trailing(fifo, good, kFifoCap);
  CHECK_THROWS_WITH(read_npy(fifo), Contains("more than 16 bytes") && Contains("needs 16"));
  CHECK(trailing.finish() < (std::size_t{2} << 20));

  // A pipe holding exactly the file reads like the file; one that ends early is truncated.
  FifoWriter exact(fifo, good, good.size());
  require_same(read_npy(fifo), parse_npy(good, "good"));
  exact.finish();
  FifoWriter cut(fifo, good, good.size() - 3);
  CHECK_THROWS_WITH(read_npy(fifo), Contains("data is 13 bytes") && Contains("needs 16"));
  cut.finish();

  // A header that promises 2^62 elements from a tiny file is refused before any allocation.
  CHECK_THROWS_WITH(
      parse_npy(npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904,), }", "x"),
                "big.npy"),
      StartsWith("big.npy") && Contains("too large"));
  write_file(temp_path("promise.npy"),
             npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000,), }", "xyz"));
  CHECK_THROWS_WITH(read_npy(temp_path("promise.npy")), Contains("data is 3 bytes") && Contains("needs 4000000000"));
  if (std::filesystem::exists("/dev/zero")) CHECK_THROWS_WITH(read_npy("/dev/zero"), Contains("bad magic"));
}

TEST_CASE("npy: hostile headers and paths are refused by name", "[npy]") {
  const std::string v2_huge = std::string("\x93NUMPY\x02\x00\xf0\xff\xff\xff", 12);
  CHECK_THROWS_WITH(parse_npy(v2_huge, "v2.npy"), StartsWith("v2.npy") && Contains("header length 4294967280"));
  CHECK_THROWS_WITH(parse_npy(std::string("\x93NUMPY\x01", 7), "short.npy"),
                    StartsWith("short.npy") && Contains("truncated"));
  CHECK_THROWS_WITH(parse_npy(std::string("\x93NUMPY\x07\x00\x10\x00", 10), "v7.npy"), Contains("version 7"));
  for (const char* descr : {"<f4 ", "f4", "<u1", "<f16", "", "<c8"}) {
    INFO(descr);
    CHECK_THROWS_WITH(
        parse_npy(npy_bytes(std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (1,), }",
                            raw<float>({1.f})),
                  "d.npy"),
        StartsWith("d.npy"));
  }
  for (const char* shape : {"(1,,2)", "(+1,)", "(1.5,)", "(99999999999999999999,)", "(0x10,)", "(2 3)"}) {
    INFO(shape);
    CHECK_THROWS_WITH(
        parse_npy(npy_bytes(std::string("{'descr': '<f4', 'fortran_order': False, 'shape': ") + shape + ", }", ""),
                  "s.npy"),
        StartsWith("s.npy") && Contains("bad dimension"));
  }
  std::string rank65 = "(";
  for (int i = 0; i < 65; ++i) rank65 += "1, ";
  CHECK_THROWS_WITH(
      parse_npy(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': " + rank65 + "), }", raw<float>({1.f})),
                "r.npy"),
      Contains("more than 64 dimensions"));
  CHECK_THROWS_WITH(
      parse_npy(npy_bytes("{'descr': '<f4', 'fortran_order': maybe, 'shape': (1,), }", raw<float>({1.f})), "f.npy"),
      Contains("bad fortran_order"));
  // Fortran order with the wrong amount of data.
  CHECK_THROWS_WITH(
      parse_npy(npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", raw<float>({1.f})), "fo.npy"),
      Contains("data is 4 bytes"));
  const std::string dir = temp_path("a_directory.npy");
  std::filesystem::create_directories(dir);
  CHECK_THROWS_WITH(read_npy(dir), Contains("is a directory"));
}

TEST_CASE("npy: write_npy reports a failed write and replaces files whole", "[npy]") {
  if (std::filesystem::exists("/dev/full")) {
    CHECK_THROWS_WITH(write_npy("/dev/full", Tensor::zeros(DType::Float32, Shape{4})),
                      Contains("No space left on device"));
  }
  const std::string path = temp_path("replaced.npy");
  write_npy(path, Tensor::from_values<float>(Shape{2}, {1, 2}));
  // A tensor .npy cannot hold fails before the file is touched.
  std::vector<std::int64_t> dims(65, 1);
  CHECK_THROWS_WITH(write_npy(path, Tensor::zeros(DType::Float32, Shape(dims))), Contains("65"));
  CHECK(read_npy(path).data<float>()[1] == 2.f);
  CHECK_THROWS(write_npy(temp_path("no_dir/x.npy"), Tensor::zeros(DType::Float32, Shape{1})));
}
