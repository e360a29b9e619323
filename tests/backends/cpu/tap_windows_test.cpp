// The conv fast paths' pixel decoding: a run of consecutive pixels located at once (locate_run,
// which steps along rows without dividing) gives every pixel the window that locating it alone
// gives, and so the same rows through every tap; checked on strides, paddings and dilations that
// put phase, row and image boundaries inside runs.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <dagrad/dagrad.hpp>
#include <dagrad/ops/conv_geometry.hpp>

#include "dagrad/backends/cpu/conv2d/tap_windows.hpp"

using namespace dagrad;
using i64 = std::int64_t;

namespace {

ops::Conv2DGeometry geometry(std::vector<i64> strides, std::string padding, std::vector<i64> dilations,
                             std::vector<i64> explicit_paddings, Shape input, Shape filter) {
  const AttrMap attrs{{"strides", strides},
                      {"padding", padding},
                      {"data_format", std::string("NHWC")},
                      {"dilations", dilations},
                      {"explicit_paddings", explicit_paddings}};
  return ops::conv2d_geometry("Conv2D", ops::parse_conv2d_attrs("Conv2D", attrs), input, filter);
}

template <class Windows>
void check_runs(const Windows& windows, i64 pixels) {
  for (i64 count = 1; count <= 8; ++count)
    for (i64 p0 = 0; p0 + count <= pixels; ++p0) {
      cpu::Window run[8];
      windows.locate_run(p0, count, run);
      for (i64 r = 0; r < count; ++r) {
        const cpu::Window one = windows.locate(p0 + r);
        INFO("run from " << p0 << " of " << count << ", pixel " << r);
        REQUIRE(run[r].pixel == one.pixel);
        REQUIRE(run[r].image_row == one.image_row);
        REQUIRE(run[r].row == one.row);
        REQUIRE(run[r].col == one.col);
        REQUIRE(run[r].row_phase == one.row_phase);
        REQUIRE(run[r].col_phase == one.col_phase);
        for (i64 t = 0; t < windows.taps(); ++t) REQUIRE(windows.source(run[r], t) == windows.source(one, t));
      }
    }
}

}  // namespace

TEST_CASE("tap windows located in runs match those located one by one", "[cpu][conv]") {
  const std::vector<float> data(1 << 16);
  const auto g = GENERATE(values<ops::Conv2DGeometry>({
      geometry({1, 1, 1, 1}, "SAME", {1, 1, 1, 1}, {}, Shape{2, 5, 7, 3}, Shape{3, 3, 3, 4}),
      geometry({1, 2, 2, 1}, "SAME", {1, 1, 1, 1}, {}, Shape{2, 7, 9, 3}, Shape{3, 3, 3, 4}),
      geometry({1, 3, 2, 1}, "VALID", {1, 1, 1, 1}, {}, Shape{3, 8, 7, 2}, Shape{2, 3, 2, 5}),
      geometry({1, 2, 3, 1}, "EXPLICIT", {1, 2, 1, 1}, {0, 0, 3, 1, 2, 4, 0, 0}, Shape{2, 6, 11, 2}, Shape{3, 2, 2, 3}),
      geometry({1, 5, 4, 1}, "SAME", {1, 1, 1, 1}, {}, Shape{2, 3, 3, 1}, Shape{1, 1, 1, 2}),
  }));
  check_runs(cpu::ForwardWindows<float>(g, data.data(), 0), g.batch * g.out_rows * g.out_cols);
  check_runs(cpu::InputWindows<float>(g, data.data(), 0), g.batch * g.in_rows * g.in_cols);
}
