// core/file_io: checked writes (a full device fails, a failed write leaves the old file and no
// temporary), and sources that read no more than asked (FIFOs do not block, directories refused).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>

#include <dagrad/core/error.hpp>
#include <dagrad/core/file_io.hpp>

using namespace dagrad;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

// A fresh, empty directory for one test case.
fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(DAGRAD_TEST_DATA_DIR) / "file_io_test" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string contents(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::size_t entries(const fs::path& dir) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

void fill_with(const std::string& text, OutputFile& out) { out.write(text); }

}  // namespace

TEST_CASE("write_file: a full device is an error, not a silent loss", "[file_io]") {
  if (!fs::exists("/dev/full")) {
    WARN("/dev/full is missing; skipped");
    return;
  }
  try {
    write_file("/dev/full", [](OutputFile& out) { fill_with("some bytes", out); });
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == Code::ResourceExhausted);
    CHECK_THAT(e.what(), Contains("/dev/full") && Contains("No space left on device"));
  }
  OutputFile out("/dev/full");
  out.write(std::string(100, 'x'));  // buffered: the failure shows at close
  CHECK_THROWS_WITH(out.close(), Contains("No space left on device"));
}

TEST_CASE("write_file: the old file survives a failed write, and no temporary is left", "[file_io]") {
  const fs::path dir = fresh_dir("atomic");
  const std::string path = (dir / "data.bin").string();
  write_file(path, [](OutputFile& out) { fill_with("old contents", out); });
  REQUIRE(contents(path) == "old contents");
  CHECK_THROWS_WITH(write_file(path,
                               [](OutputFile& out) {
                                 out.write("half of the new");
                                 invalid_argument("the producer failed");
                               }),
                    Contains("the producer failed"));
  CHECK(contents(path) == "old contents");
  CHECK(entries(dir) == 1);

  // A successful write replaces the file and keeps its permissions.
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
  write_file(path, [](OutputFile& out) { fill_with("new contents", out); });
  CHECK(contents(path) == "new contents");
  CHECK(fs::status(path).permissions() == (fs::perms::owner_read | fs::perms::owner_write));
  CHECK(entries(dir) == 1);
}

TEST_CASE("write_file: links are followed, bad targets are named", "[file_io]") {
  const fs::path dir = fresh_dir("targets");
  const fs::path target = dir / "target.bin", link = dir / "link.bin";
  write_file(target.string(), [](OutputFile& out) { fill_with("one", out); });
  fs::create_symlink(target, link);
  write_file(link.string(), [](OutputFile& out) { fill_with("two", out); });
  CHECK(fs::is_symlink(link));
  CHECK(contents(target) == "two");

  const std::string missing_dir = (dir / "no_such_dir" / "x.bin").string();
  try {
    write_file(missing_dir, [](OutputFile& out) { fill_with("x", out); });
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == Code::NotFound);
    CHECK_THAT(e.what(), Contains("'" + missing_dir + "'"));  // the path given, not the temporary's
  }
  CHECK_THROWS_WITH(write_file(dir.string(), [](OutputFile& out) { fill_with("x", out); }), Contains("Is a directory"));
  OutputFile closed((dir / "closed.bin").string());
  closed.close();
  CHECK_THROWS_WITH(closed.write("late"), Contains("already closed"));
}

TEST_CASE("ByteSource: reads, peeks and knows what is left", "[file_io]") {
  const std::string bytes = "0123456789";
  MemorySource in(bytes, "digits");
  CHECK(in.remaining() == 10u);
  CHECK(in.peek(3) == "012");
  CHECK(in.remaining() == 10u);
  CHECK(in.read_up_to(4) == "0123");
  CHECK(in.read_up_to(100) == "456789");
  CHECK(in.at_end());
  CHECK(in.read_up_to(5).empty());
}

TEST_CASE("InputFile: a FIFO without a writer does not block, a directory is refused", "[file_io]") {
  const fs::path dir = fresh_dir("input");
  CHECK_THROWS_WITH(InputFile(dir.string()), Contains("is a directory"));
  try {
    InputFile missing((dir / "missing").string());
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == Code::NotFound);
  }

  const fs::path fifo = dir / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto reading = std::async(std::launch::async, [&] {
    InputFile in(fifo.string());
    return in.read_up_to(16);
  });
  if (reading.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    const int unblock = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // let the stuck reader go
    reading.wait();
    ::close(unblock);
    FAIL("opening a FIFO without a writer blocked");
  }
  CHECK(reading.get().empty());

  InputFile again(fifo.string());  // a FIFO's size is unknown: readers must bound what they take
  CHECK_FALSE(again.remaining().has_value());
}

TEST_CASE("read_file_limited stops at the limit on an endless device", "[file_io]") {
  if (!fs::exists("/dev/zero")) return;
  CHECK_THROWS_WITH(read_file_limited("/dev/zero", 4096, "config"), Contains("larger than 4096 bytes"));
  const fs::path dir = fresh_dir("limited");
  write_file((dir / "small").string(), [](OutputFile& out) { fill_with("abc", out); });
  CHECK(read_file_limited((dir / "small").string(), 3, "config") == "abc");
  InputFile small((dir / "small").string());
  CHECK(small.remaining() == 3u);
}
