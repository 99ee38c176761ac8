#include <iostream>
#include "samplers/registry.h"
int main() { for (auto& e : sgmcmc::sampler_registry()) std::cout << e.name << "\n"; }
