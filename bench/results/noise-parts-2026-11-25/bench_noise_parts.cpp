#include "kernels/philox_fill.h"
#include "kernels/philox.h"
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>
#include <algorithm>
using namespace sgmcmc::kernels;
int main(int argc, char** argv) {
  const int64_t n = 1280000, chunk = 1024;  // normals; tiles of 1024 like the fused update? 
  std::vector<float> z(chunk);
  double best = 1e9; double sum=0;
  for (int rep = 0; rep < 60; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < n; i += chunk) philox_fill(z.data(), chunk / 4, i / 4, 1234, 7 + rep);
    auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::micro>(t1 - t0).count());
    sum += z[rep % chunk];
  }
  // accuracy of log variant
  double max_rel = 0;
  for (double t = -33; t <= 0; t += 1e-4) {
    const float x = static_cast<float>(std::exp2(t));
    const double exact = std::log(static_cast<double>(x));
    if (exact == 0) { if (LOGF(x) != 0.0f) max_rel = 1; continue; }
    max_rel = std::max(max_rel, std::fabs(LOGF(x) - exact) / std::fabs(exact));
  }
  // moments
  std::vector<float> big(1<<22); philox_fill(big.data(), big.size()/4, 0, 99, 3);
  double m1=0,m2=0,m4=0; for (float v: big){m1+=v;m2+=v*v;m4+=double(v)*v*v*v;} m1/=big.size();m2/=big.size();m4/=big.size();
  printf("%s: best %.1f us (%.3f ns/normal)  log max rel %.3g  mean %.2e var %.5f kurt %.4f %g\n", argv[0], best, best*1e3/n, max_rel, m1, m2, m4, sum);
}
