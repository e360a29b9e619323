// The NCHW <-> NHWC transposes (backends/cpu/transpose.hpp): every block set this CPU runs against
// the definition on every block shape up to 20 x 20 (full 8 x 8 tiles, row and column edges) at
// strides wider than the block, and transpose_images on batches that span several 64 x 64 blocks.
#include <catch2/catch.hpp>

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "dagrad/backends/cpu/transpose.hpp"

namespace {

using namespace dagrad;
using i64 = std::int64_t;

std::vector<const cpu::TransposeKernels*> transpose_sets() {
  auto sets = cpu::usable_transpose_kernels();
  REQUIRE(std::string(sets.back()->name) == "scalar");
  if (sets.size() == 1) WARN("SKIPPED: no AVX2 here: only the scalar transposes were checked");
  return sets;
}

// A block of rows x cols from a matrix with row stride in_stride into one with row stride
// out_stride; every element outside the block must keep its sentinel.
template <class E, class Block>
void check_block(Block block, i64 rows, i64 cols) {
  const i64 in_stride = cols + 3, out_stride = rows + 5;
  std::vector<E> in(static_cast<std::size_t>(rows * in_stride)), out(static_cast<std::size_t>(cols * out_stride + 1));
  std::iota(in.begin(), in.end(), E{1});
  std::vector<E> want(out.size(), E{0});
  for (i64 j = 0; j < cols; ++j)
    for (i64 i = 0; i < rows; ++i)
      want[static_cast<std::size_t>(j * out_stride + i)] = in[static_cast<std::size_t>(i * in_stride + j)];
  block(in.data(), in_stride, out.data(), out_stride, rows, cols);
  INFO(rows << " x " << cols << ", " << sizeof(E) << "-byte elements");
  REQUIRE(out == want);
}

}  // namespace

TEST_CASE("cpu transpose blocks of every set match the definition on every shape up to 20 x 20", "[cpu][conv]") {
  for (const cpu::TransposeKernels* set : transpose_sets()) {
    INFO("transpose set " << set->name);
    for (i64 rows = 0; rows <= 20; ++rows)
      for (i64 cols = 0; cols <= 20; ++cols) {
        check_block<float>(set->block32, rows, cols);
        check_block<std::uint16_t>(set->block16, rows, cols);
      }
  }
}

TEST_CASE("cpu transpose_images swaps each image's two axes, bit for bit, in every dtype", "[cpu][conv]") {
  for (const auto [images, rows, cols] : {std::array<i64, 3>{3, 130, 67}, {1, 1, 200}, {2, 64, 64}, {5, 9, 1}}) {
    const i64 count = images * rows * cols;
    std::vector<float> in(static_cast<std::size_t>(count)), out(in.size(), -1.0f), want(in.size());
    std::iota(in.begin(), in.end(), 0.5f);
    for (i64 n = 0; n < images; ++n)
      for (i64 i = 0; i < rows; ++i)
        for (i64 j = 0; j < cols; ++j)
          want[static_cast<std::size_t>((n * cols + j) * rows + i)] =
              in[static_cast<std::size_t>((n * rows + i) * cols + j)];
    INFO(images << " images of " << rows << " x " << cols);
    cpu::transpose_images(in.data(), images, rows, cols, out.data());
    CHECK(out == want);
    // The 2-byte forms move the same patterns: the low halves of the float indices' bits.
    std::vector<bfloat16> bin(in.size()), bout(in.size());
    std::vector<half> hin(in.size()), hout(in.size());
    for (std::size_t e = 0; e < in.size(); ++e) {
      const auto bits = static_cast<std::uint16_t>(e * 40503u);
      std::memcpy(static_cast<void*>(&bin[e]), &bits, 2);
      std::memcpy(static_cast<void*>(&hin[e]), &bits, 2);
    }
    cpu::transpose_images(bin.data(), images, rows, cols, bout.data());
    cpu::transpose_images(hin.data(), images, rows, cols, hout.data());
    for (i64 n = 0; n < images; ++n)
      for (i64 i = 0; i < rows; ++i)
        for (i64 j = 0; j < cols; ++j) {
          const auto src = static_cast<std::size_t>((n * rows + i) * cols + j),
                     dst = static_cast<std::size_t>((n * cols + j) * rows + i);
          REQUIRE(std::memcmp(&bout[dst], &bin[src], 2) == 0);
          REQUIRE(std::memcmp(&hout[dst], &hin[src], 2) == 0);
        }
  }
}
