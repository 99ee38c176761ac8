// Short texts for one-line error messages from LibTorch's errors and tensors.
#pragma once

#include <torch/torch.h>

#include <sstream>
#include <string>

namespace sgmcmc {

// The first line of an error's text (a c10::Error's rest is a C++ or TorchScript backtrace).
inline std::string first_line(const std::string& what) {
  std::istringstream in(what);
  std::string line;
  std::getline(in, line);
  return line;
}

// The last non-empty line, unindented (a TorchScript interpreter error ends with the Python-style line).
inline std::string last_line(const std::string& what) {
  std::istringstream in(what);
  std::string line, last;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t") != std::string::npos) last = line.substr(line.find_first_not_of(" \t"));
  return last;
}

// A number in a message: `digits` significant digits ("4.94e-07", "0.0312").
inline std::string number_text(double x, int digits = 4) {
  std::ostringstream s;
  s.precision(digits);
  s << x;
  return s.str();
}

// "[n, 1, 28, 28]".
inline std::string shape_text(const torch::Tensor& t) {
  std::ostringstream s;
  s << t.sizes();
  return s.str();
}

}  // namespace sgmcmc
