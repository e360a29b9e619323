// Training curves as a self-contained SVG image (no plotting dependency): loss on the left,
// accuracy on the right, one point per epoch.
#pragma once

#include <string>
#include <vector>

namespace train_cnn {

struct Curve {
  std::string label;
  std::string color;           // any SVG colour, e.g. "#1f77b4"
  std::vector<double> values;  // one per epoch
};

// Writes the SVG to `path` (whole or not at all); throws dagrad::Error if it cannot be written.
void write_svg_plot(const std::string& path, const std::vector<Curve>& loss, const std::vector<Curve>& accuracy);

}  // namespace train_cnn
