// LibTorch's and Gloo's own log lines (glog: "[W ProcessGroupGloo.cpp:...] Unable to resolve
// hostname...", c10d's "[E ...] Connection closed by peer" when a rank dies, TORCH_WARN through c10's
// default handler) are not the command's output: an error must reach the user as one line. glog's
// minimum level is raised to FATAL and c10's own to the same, unless the user asked for glog output
// (GLOG_minloglevel / GLOG_v in the environment).
//
// Debian's libtorch 1.13 logs through glog (with gflags): the flags are glog's and c10's globals,
// looked up at run time so that the binary needs no direct link to libglog.
#include <dlfcn.h>

#include <cstdlib>

#include "cli/commands.h"

namespace sgmcmc {

void quiet_library_logs() {
  if (std::getenv("GLOG_minloglevel") || std::getenv("GLOG_v")) return;
  constexpr int kFatal = 3;
  for (const char* symbol : {"_ZN3fLI17FLAGS_minloglevelE", "_ZN3fLI22FLAGS_caffe2_log_levelE"})
    if (auto* flag = static_cast<int*>(::dlsym(RTLD_DEFAULT, symbol))) *flag = kFatal;
}

}  // namespace sgmcmc
