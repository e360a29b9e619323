// SVG line charts: axes with rounded tick labels, one polyline and dots per curve, a legend.
#include "plot.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include <dagrad/core/file_io.hpp>

namespace train_cnn {
namespace {

constexpr double kPanelWidth = 420, kPanelHeight = 300, kMargin = 50;

std::string fmt(double v, int digits = 3) {
  std::ostringstream out;
  out << std::setprecision(digits) << v;
  return out.str();
}

// One chart at horizontal offset x0 with its own y range.
void panel(std::ostringstream& svg, double x0, const std::string& title, const std::vector<Curve>& curves) {
  double lo = INFINITY, hi = -INFINITY;
  std::size_t points = 1;
  for (const auto& c : curves) {
    for (double v : c.values) {
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    }
    points = std::max(points, c.values.size());
  }
  if (!(lo <= hi)) lo = 0, hi = 1;
  if (hi - lo < 1e-9) lo -= 0.5, hi += 0.5;
  const double pad = (hi - lo) * 0.08;
  lo -= pad, hi += pad;
  const double left = x0 + kMargin, top = 40, width = kPanelWidth - kMargin - 15, height = kPanelHeight - 90;
  auto px = [&](std::size_t i) {
    return left + (points == 1 ? width / 2 : width * static_cast<double>(i) / static_cast<double>(points - 1));
  };
  auto py = [&](double v) { return top + height * (hi - v) / (hi - lo); };
  svg << "<text x='" << left + width / 2 << "' y='22' text-anchor='middle' font-size='15'>" << title << "</text>\n";
  svg << "<rect x='" << left << "' y='" << top << "' width='" << width << "' height='" << height
      << "' fill='none' stroke='#444'/>\n";
  for (int t = 0; t <= 4; ++t) {
    const double v = lo + (hi - lo) * t / 4.0;
    svg << "<line x1='" << left << "' x2='" << left + width << "' y1='" << py(v) << "' y2='" << py(v)
        << "' stroke='#ddd'/>\n<text x='" << left - 6 << "' y='" << py(v) + 4 << "' text-anchor='end' font-size='11'>"
        << fmt(v) << "</text>\n";
  }
  for (std::size_t i = 0; i < points; ++i) {
    svg << "<text x='" << px(i) << "' y='" << top + height + 16 << "' text-anchor='middle' font-size='11'>" << i + 1
        << "</text>\n";
  }
  svg << "<text x='" << left + width / 2 << "' y='" << top + height + 34
      << "' text-anchor='middle' font-size='12'>epoch</text>\n";
  double legend_y = top + height + 52;
  for (const auto& c : curves) {
    std::ostringstream line;
    for (std::size_t i = 0; i < c.values.size(); ++i) line << px(i) << "," << py(c.values[i]) << " ";
    svg << "<polyline fill='none' stroke='" << c.color << "' stroke-width='2' points='" << line.str() << "'/>\n";
    for (std::size_t i = 0; i < c.values.size(); ++i) {
      svg << "<circle cx='" << px(i) << "' cy='" << py(c.values[i]) << "' r='3' fill='" << c.color << "'><title>"
          << c.label << " " << fmt(c.values[i], 4) << "</title></circle>\n";
    }
    svg << "<rect x='" << left << "' y='" << legend_y - 9 << "' width='14' height='4' fill='" << c.color << "'/>"
        << "<text x='" << left + 20 << "' y='" << legend_y - 4 << "' font-size='12'>" << c.label << " (last "
        << fmt(c.values.empty() ? NAN : c.values.back(), 4) << ")</text>\n";
    legend_y += 16;
  }
}

}  // namespace

void write_svg_plot(const std::string& path, const std::vector<Curve>& loss, const std::vector<Curve>& accuracy) {
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << 2 * kPanelWidth << "' height='" << kPanelHeight + 20
      << "' font-family='sans-serif'>\n<rect width='100%' height='100%' fill='white'/>\n";
  panel(svg, 0, "loss", loss);
  panel(svg, kPanelWidth, "accuracy", accuracy);
  svg << "</svg>\n";
  dagrad::write_file(path, [&](dagrad::OutputFile& out) { out.write(svg.str()); });
}

}  // namespace train_cnn
