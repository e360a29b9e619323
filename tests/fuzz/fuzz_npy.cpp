// Fuzzes the .npy reader (parse_npy) on arbitrary bytes; whatever it accepts must round-trip.
#include <cstring>

#include <dagrad/core/npy.hpp>

#include "fuzz_support.hpp"

using namespace dagrad;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Tensor tensor;
  if (!fuzz::accepted([&] { tensor = parse_npy(fuzz::as_string(data, size), "fuzz.npy"); })) return 0;
  // The header's promise was kept: the buffer holds every element (ASan checks the reads).
  if (tensor.nbytes() > size) fuzz::finding("parse_npy returned more data bytes than the file holds");
  Tensor again;
  if (!fuzz::accepted([&] { again = parse_npy(serialize_npy(tensor), "round-trip.npy"); })) {
    fuzz::finding("parse_npy refused what serialize_npy wrote for an accepted tensor");
  }
  if (again.dtype() != tensor.dtype() || again.shape() != tensor.shape() ||
      (tensor.nbytes() > 0 && std::memcmp(again.raw_data(), tensor.raw_data(), tensor.nbytes()) != 0)) {
    fuzz::finding("serialize_npy(parse_npy(x)) changed dtype, shape or bits: " + tensor.shape().to_string() + " vs " +
                  again.shape().to_string());
  }
  return 0;
}
