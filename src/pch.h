// Precompiled header: the expensive torch include, shared by every translation unit.
#pragma once
#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>
