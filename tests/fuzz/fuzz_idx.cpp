// Fuzzes the IDX loader: plain and gzip-compressed bytes (magic 1f 8b) through parse_idx.
#include <dagrad/core/idx.hpp>

#include "fuzz_support.hpp"

using namespace dagrad;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  IdxArray array;
  const bool ok = fuzz::accepted([&] { array = parse_idx(fuzz::as_string(data, size), "fuzz.idx"); });
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
