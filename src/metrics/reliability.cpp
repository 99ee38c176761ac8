#include "metrics/reliability.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace sgmcmc {
namespace {

// Plot geometry (SVG user units): the reliability panel above, the histogram below, shared x.
constexpr double kLeft = 52, kWidth = 300, kTop = 40, kPanel = 300, kGap = 28, kHist = 90;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
  return out;
}

std::string rect(double x, double y, double w, double h, const std::string& style) {
  return "<rect x='" + fmt("%.2f", x) + "' y='" + fmt("%.2f", y) + "' width='" + fmt("%.2f", w) + "' height='" +
         fmt("%.2f", h) + "' style='" + style + "'/>\n";
}

std::string text(double x, double y, const std::string& s, const std::string& anchor = "middle") {
  return "<text x='" + fmt("%.1f", x) + "' y='" + fmt("%.1f", y) + "' text-anchor='" + anchor + "'>" + escape(s) +
         "</text>\n";
}

// Axes, ticks at 0, 0.5, 1 and the diagonal of the reliability panel.
std::string axes() {
  std::string s;
  const double bottom = kTop + kPanel, hist_top = bottom + kGap;
  s += rect(kLeft, kTop, kWidth, kPanel, "fill:none;stroke:#333");
  s += rect(kLeft, hist_top, kWidth, kHist, "fill:none;stroke:#333");
  s += "<line x1='" + fmt("%.1f", kLeft) + "' y1='" + fmt("%.1f", bottom) + "' x2='" + fmt("%.1f", kLeft + kWidth) +
       "' y2='" + fmt("%.1f", kTop) + "' style='stroke:#888;stroke-dasharray:4 3'/>\n";
  for (double t : {0.0, 0.5, 1.0}) {
    s += text(kLeft + t * kWidth, hist_top + kHist + 16, fmt("%.1f", t));
    s += text(kLeft - 6, bottom - t * kPanel + 4, fmt("%.1f", t), "end");
  }
  s += text(kLeft + kWidth / 2, hist_top + kHist + 34, "confidence (max class probability)");
  s += "<text x='14' y='" + fmt("%.1f", kTop + kPanel / 2) + "' transform='rotate(-90 14 " +
       fmt("%.1f", kTop + kPanel / 2) + ")' text-anchor='middle'>accuracy</text>\n";
  s += text(kLeft - 6, hist_top + kHist / 2 + 4, "share", "end");
  return s;
}

}  // namespace

std::string reliability_svg(const CalibrationBins& bins, const std::string& title) {
  auto count = bins.count.to(torch::kFloat64).cpu(), correct = bins.correct.to(torch::kFloat64).cpu(),
       confidence = bins.confidence.to(torch::kFloat64).cpu();
  const int64_t nb = count.size(0);
  const double n = count.sum().item<double>();
  const double ece = n > 0 ? (correct - confidence).abs().sum().item<double>() / n : 0.0;
  const double max_share = n > 0 ? count.max().item<double>() / n : 1.0;
  const double w = kWidth / static_cast<double>(nb), hist_top = kTop + kPanel + kGap;
  std::ostringstream s;
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='380' height='" << fmt("%.0f", hist_top + kHist + 44)
    << "' font-family='sans-serif' font-size='11'>\n"
    << "<rect width='100%' height='100%' fill='white'/>\n"
    << text(kLeft + kWidth / 2, 18, title) << text(kLeft + kWidth / 2, 32, "ECE " + fmt("%.4f", ece) +
                                                                              " (" + std::to_string(nb) + " bins, n = " +
                                                                              fmt("%.0f", n) + ")");
  for (int64_t b = 0; b < nb; ++b) {
    const double c = count[b].item<double>();
    if (c <= 0) continue;
    const double acc = correct[b].item<double>() / c, conf = confidence[b].item<double>() / c;
    const double x = kLeft + b * w, bottom = kTop + kPanel;
    s << rect(x + 1, bottom - acc * kPanel, w - 2, acc * kPanel, "fill:#4878cf;stroke:#2a4d8f");
    const double lo = std::min(acc, conf), hi = std::max(acc, conf);  // the gap to the bin's mean confidence
    s << rect(x + 1, bottom - hi * kPanel, w - 2, (hi - lo) * kPanel, "fill:#e24a33;fill-opacity:0.35");
    const double share = c / n / max_share;
    s << rect(x + 1, hist_top + kHist * (1 - share), w - 2, kHist * share, "fill:#777");
  }
  s << axes() << "</svg>\n";
  return s.str();
}

void write_reliability_svg(const std::string& path, const torch::Tensor& probs, const torch::Tensor& targets,
                           const std::string& title) {
  std::ofstream out(path);
  out << reliability_svg(calibration_bins(probs, targets), title);
  if (!out) throw std::runtime_error(path + ": cannot write the reliability diagram");
}

}  // namespace sgmcmc
