// A small seeded random generator (SplitMix64) whose streams are the same on every platform,
// unlike std:: distributions: initialisers and data shuffling use it for reproducible runs.
#pragma once

#include <cstdint>

namespace dagrad {

class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  // An independent stream for (seed, stream): e.g. one per variable or per epoch.
  SplitMix64(std::uint64_t seed, std::uint64_t stream)
      : state_(seed ^ (stream * 0xD1B54A32D192ED03ull + 0x9E3779B97F4A7C15ull)) {
    next();
  }

  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform in [0, bound) for bound > 0 (multiply-shift; the bias is below 2^-40 for our sizes).
  std::uint64_t below(std::uint64_t bound) {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * bound) >> 64);
  }

 private:
  std::uint64_t state_;
};

}  // namespace dagrad
