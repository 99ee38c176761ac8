// Subcommands of the sgmcmc binary; each returns the process exit status
// (0 success, 1 run-time failure, 2 usage/configuration error).
#pragma once

#include <ostream>

namespace sgmcmc {

int cmd_list(int argc, char** argv);
int cmd_train(int argc, char** argv);
// glog's and c10's log levels raised to FATAL (quiet_logs.cpp), unless GLOG_minloglevel / GLOG_v is set.
void quiet_library_logs();
int cmd_predict(int argc, char** argv);
int cmd_simulate(int argc, char** argv);  // src/cli/simulate.cpp
int cmd_sweep(int argc, char** argv);
// Every config key with its default and meaning (src/cli/help_keys.cpp).
void print_config_keys(std::ostream& out);

}  // namespace sgmcmc
