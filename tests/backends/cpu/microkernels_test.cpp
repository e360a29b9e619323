// The micro-kernel set the CPU gets (microkernels.hpp) is whole: its table is filled by aggregate
// initialisation in isa/conv_microkernels.inc, where a member left out is silently null.
#include <catch2/catch.hpp>

#include "dagrad/backends/cpu/microkernels.hpp"

TEST_CASE("the chosen micro-kernel set has every kernel", "[cpu][isa]") {
  const dagrad::cpu::MicroKernels& mk = dagrad::cpu::micro_kernels();
  CHECK(mk.vector_width > 0);
  CHECK(mk.tile_rows > 0);
  CHECK(mk.rows != nullptr);
  CHECK(mk.rows_t != nullptr);
  CHECK(mk.pixels != nullptr);
  CHECK(mk.grid != nullptr);
  CHECK(mk.grid_max_rows != nullptr);
  CHECK(mk.transform != nullptr);
  CHECK(mk.winograd_input != nullptr);
  CHECK(mk.winograd_output != nullptr);
  CHECK(mk.winograd_dy != nullptr);
  CHECK(mk.epilogue != nullptr);
  // A member added to MicroKernels changes the size: this assertion then asks for its check above.
  static_assert(sizeof(dagrad::cpu::MicroKernels) == 2 * sizeof(int) + 10 * sizeof(void*));
}
