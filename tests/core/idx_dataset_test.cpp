// IDX/gzip loading (round trips through zlib, every error path, gzip bombs refused by the header's
// promise) and seeded mini-batch order.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include <zlib.h>

#include <dagrad/core/dataset.hpp>
#include <dagrad/core/idx.hpp>

#include "support/temp_dir.hpp"

using namespace dagrad;
namespace fs = std::filesystem;

namespace {

using dagrad::testing::TempDir;

// An IDX byte string: type 0x08 with the given dims and byte values.
std::string idx_bytes(std::vector<std::uint32_t> dims, const std::vector<unsigned char>& data) {
  std::string s = {0, 0, 0x08, static_cast<char>(dims.size())};
  for (auto d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) s.push_back(static_cast<char>((d >> shift) & 0xff));
  }
  s.append(data.begin(), data.end());
  return s;
}

void write_plain(const fs::path& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

void write_gz(const fs::path& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
  gzclose(f);
}

// gzip bytes of `bytes` in memory (one member).
std::string gzip(const std::string& bytes) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, static_cast<uLong>(bytes.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// 3 images of 2x2 and their labels.
void write_tiny_dataset(const fs::path& dir, bool gz) {
  const std::string images = idx_bytes({3, 2, 2}, {0, 255, 51, 102, 1, 2, 3, 4, 5, 6, 7, 8});
  const std::string labels = idx_bytes({3}, {7, 0, 9});
  if (gz) {
    write_gz(dir / "train-images-idx3-ubyte.gz", images);
    write_gz(dir / "train-labels-idx1-ubyte.gz", labels);
  } else {
    write_plain(dir / "train-images-idx3-ubyte", images);
    write_plain(dir / "train-labels-idx1-ubyte", labels);
  }
}

}  // namespace

TEST_CASE("IDX datasets load from gzipped and plain files", "[train]") {
  for (bool gz : {true, false}) {
    INFO("gzip " << gz);
    TempDir dir;
    write_tiny_dataset(dir.path, gz);
    ImageDataset data = load_idx_dataset(dir.path.string(), "train");
    REQUIRE(data.images.shape() == Shape{3, 2, 2, 1});
    REQUIRE(data.labels.shape() == Shape{3});
    CHECK(data.images.data<float>()[1] == 1.0f);
    CHECK(data.images.data<float>()[2] == Approx(0.2));
    CHECK(data.labels.data<std::int32_t>()[0] == 7);
    CHECK(data.labels.data<std::int32_t>()[2] == 9);
    ImageDataset picked = gather(data, {2, 0});
    CHECK(picked.labels.data<std::int32_t>()[0] == 9);
    CHECK(picked.images.data<float>()[4] == 0.0f);
    CHECK(slice(data, 1, 2).labels.data<std::int32_t>()[0] == 0);
  }
}

TEST_CASE("IDX loader errors name the file and the problem", "[train]") {
  TempDir dir;
  CHECK_THROWS_WITH(load_idx_dataset(dir.path.string(), "train"), Catch::Contains("dataset file not found"));
  CHECK_THROWS_WITH(read_idx((dir.path / "absent").string()), Catch::Contains("No such file or directory"));
  // Corrupt gzip: a valid header with the compressed body cut short and damaged.
  const std::string images = idx_bytes({3, 2, 2}, std::vector<unsigned char>(12, 9));
  write_gz(dir.path / "whole.gz", images);
  std::string gz = read_file(dir.path / "whole.gz");
  write_plain(dir.path / "cut.gz", gz.substr(0, gz.size() - 12));
  CHECK_THROWS_WITH(read_idx((dir.path / "cut.gz").string()), Catch::Contains("corrupt gzip data"));
  gz[12] = static_cast<char>(gz[12] ^ 0x5a);
  gz[13] = static_cast<char>(gz[13] ^ 0x33);
  write_plain(dir.path / "damaged.gz", gz);
  CHECK_THROWS_WITH(read_idx((dir.path / "damaged.gz").string()), Catch::Contains("damaged.gz"));
  write_plain(dir.path / "text", "hello, world");
  CHECK_THROWS_WITH(read_idx((dir.path / "text").string()), Catch::Contains("is not an IDX file"));
  write_plain(dir.path / "short", images.substr(0, images.size() - 3));
  CHECK_THROWS_WITH(read_idx((dir.path / "short").string()), Catch::Contains("is truncated"));
  write_plain(dir.path / "train-images-idx3-ubyte", images);
  write_plain(dir.path / "train-labels-idx1-ubyte", idx_bytes({2}, {1, 2}));
  CHECK_THROWS_WITH(load_idx_dataset(dir.path.string(), "train"), Catch::Contains("holds 2 labels but"));
}

TEST_CASE("BatchSampler: a seeded permutation per epoch", "[train]") {
  BatchSampler a(103, 10, 42), b(103, 10, 42), other(103, 10, 43);
  REQUIRE(a.num_batches() == 11);
  std::vector<std::int64_t> seen;
  for (std::int64_t i = 0; i < a.num_batches(); ++i) {
    const auto batch = a.batch(i);
    CHECK(batch == b.batch(i));
    seen.insert(seen.end(), batch.begin(), batch.end());
  }
  CHECK(a.batch(10).size() == 3);
  CHECK(std::set<std::int64_t>(seen.begin(), seen.end()).size() == 103);
  CHECK(a.batch(0) != other.batch(0));
  const auto first = a.batch(0);
  a.start_epoch(1);
  CHECK(a.batch(0) != first);
  BatchSampler in_order(5, 2, 1, false);
  CHECK(in_order.batch(2) == std::vector<std::int64_t>{4});
  CHECK_THROWS(BatchSampler(5, 0, 1));
}

TEST_CASE("Debian's Fashion-MNIST test split loads", "[train]") {
  if (!fs::exists(fs::path(kFashionMnistDir) / "t10k-images-idx3-ubyte.gz")) {
    WARN("Fashion-MNIST is not installed under " << kFashionMnistDir << "; skipped");
    return;
  }
  ImageDataset test = load_idx_dataset(kFashionMnistDir, "t10k");
  CHECK(test.images.shape() == Shape{10000, 28, 28, 1});
  std::set<std::int32_t> classes(test.labels.data<std::int32_t>(), test.labels.data<std::int32_t>() + 10000);
  CHECK(classes.size() == 10);
  CHECK(*classes.rbegin() == 9);
}

TEST_CASE("IDX: a gzip bomb is refused by its header's promise, not inflated", "[train]") {
  // A header promising 10 bytes, then 8 MiB of zeros: about 8 KB of gzip. The stream's tail is
  // then damaged: a reader that inflated it all would report corrupt data; one that stops
  // after the promised bytes reports the header's promise.
  const std::string bomb = gzip(idx_bytes({10}, std::vector<unsigned char>(std::size_t{8} << 20, 0)));
  REQUIRE(bomb.size() < 16 * 1024);
  const std::string damaged = bomb.substr(0, bomb.size() - 64);
  CHECK_THROWS_WITH(parse_idx(damaged, "bomb.gz"),
                    Catch::Contains("'bomb.gz' is too long") && Catch::Contains("promises 10 data bytes"));
  TempDir dir;
  write_plain(dir.path / "bomb.gz", damaged);
  CHECK_THROWS_WITH(read_idx((dir.path / "bomb.gz").string()),
                    Catch::Contains("is too long") && Catch::Contains("promises 10 data bytes"));

  // The same header and data, in memory and honest, gzipped or plain, with two gzip members.
  const std::string honest = idx_bytes({2, 2}, {1, 2, 3, 4});
  CHECK(parse_idx(gzip(honest), "honest.gz").bytes == "\x01\x02\x03\x04");
  CHECK(parse_idx(honest, "honest").dims == std::vector<std::int64_t>{2, 2});
  CHECK(parse_idx(gzip(honest.substr(0, 5)) + gzip(honest.substr(5)), "two_members.gz").bytes == "\x01\x02\x03\x04");
  CHECK_THROWS_WITH(parse_idx(gzip(honest) + "junk", "junk.gz"),
                    Catch::Contains("bytes after the end of the gzip data"));
}

TEST_CASE("IDX: hostile headers are refused by name", "[train]") {
  std::string overflow = {0, 0, 0x08, static_cast<char>(255)};
  overflow.append(4 * 255, static_cast<char>(0xff));
  CHECK_THROWS_WITH(parse_idx(overflow, "over"), Catch::Contains("'over' declares IDX dimensions too large"));
  CHECK_THROWS_WITH(parse_idx(gzip(overflow), "over.gz"),
                    Catch::Contains("'over.gz' declares IDX dimensions too large"));
  CHECK_THROWS_WITH(parse_idx(std::string{0, 0, 0x07, 1, 0, 0, 0, 1, 5}, "type"),
                    Catch::Contains("unknown IDX element type 0x7"));
  CHECK_THROWS_WITH(parse_idx(std::string{0, 0, 0x08, 3, 0, 0, 0, 1}, "cut"),
                    Catch::Contains("truncated inside its IDX header"));
  CHECK_THROWS_WITH(parse_idx(std::string{0, 0}, "two"), Catch::Contains("truncated inside its IDX header"));
  CHECK_THROWS_WITH(parse_idx("", "empty"), Catch::Contains("is not an IDX file"));
  CHECK_THROWS_WITH(parse_idx(idx_bytes({4}, {1, 2}), "short"),
                    Catch::Contains("'short' is truncated") && Catch::Contains("promises 4"));
  TempDir dir;
  fs::create_directories(dir.path / "train-images-idx3-ubyte");
  write_plain(dir.path / "train-labels-idx1-ubyte", idx_bytes({1}, {1}));
  CHECK_THROWS_WITH(load_idx_dataset(dir.path.string(), "train"), Catch::Contains("is a directory"));
}

TEST_CASE("IDX datasets compare both headers before reading either body", "[train]") {
  TempDir dir;
  // The images promise 3 images but hold one byte; the labels disagree on the count.
  write_plain(dir.path / "train-images-idx3-ubyte", idx_bytes({3, 2, 2}, {9}));
  write_plain(dir.path / "train-labels-idx1-ubyte", idx_bytes({2}, {1, 2}));
  CHECK_THROWS_WITH(load_idx_dataset(dir.path.string(), "train"), Catch::Contains("holds 2 labels but"));
  BatchSampler huge_batch(5, std::numeric_limits<std::int64_t>::max(), 1);
  CHECK(huge_batch.num_batches() == 1);
  CHECK(huge_batch.batch(0).size() == 5);
  ImageDataset none;
  CHECK_THROWS_WITH(slice(none, 1, std::numeric_limits<std::int64_t>::max()), Catch::Contains("out of range"));
}
