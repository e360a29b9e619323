// Fuzzes the IDX loader: raw bytes through parse_idx, gzip data (magic 1f 8b) through read_idx.
#include <unistd.h>

#include <cstdio>

#include <dagrad/core/idx.hpp>

#include "fuzz_support.hpp"

using namespace dagrad;

namespace {

// read_idx takes a path: gzip inputs go through one temporary file per process.
const std::string& scratch_path() {
  static const std::string path = [] {
    char name[] = "/tmp/dagrad_fuzz_idx_XXXXXX";
    const int fd = mkstemp(name);
    if (fd < 0) fuzz::finding("cannot create a temporary file");
    close(fd);
    return std::string(name);
  }();
  return path;
}

void write_scratch(const std::uint8_t* data, std::size_t size) {
  std::FILE* file = std::fopen(scratch_path().c_str(), "wb");
  if (file == nullptr || std::fwrite(data, 1, size, file) != size || std::fclose(file) != 0) {
    fuzz::finding("cannot write the temporary file " + scratch_path());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const bool gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  IdxArray array;
  const bool ok = fuzz::accepted([&] {
    if (!gzip) {
      array = parse_idx(fuzz::as_string(data, size), "fuzz.idx");
      return;
    }
    write_scratch(data, size);
    array = read_idx(scratch_path());
  });
  if (!ok) return 0;
  // What was accepted is consistent: the body holds exactly the elements the dims promise.
  std::int64_t count = 1;
  for (auto d : array.dims) {
    if (d < 0 || __builtin_mul_overflow(count, d, &count)) fuzz::finding("accepted IDX dims that overflow");
  }
  if (count != array.num_elements()) fuzz::finding("IdxArray::num_elements disagrees with its dims");
  double sum = 0;
  for (std::int64_t i = 0; i < count; ++i) sum += array.value(i);  // ASan checks every read
  (void)sum;
  return 0;
}
