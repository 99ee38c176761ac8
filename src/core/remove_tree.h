// Removes a file or a directory tree, like std::filesystem::remove_all, through POSIX nftw().
//
// Why not remove_all: PyTorch's libtorch.so (2.x wheels, the CUDA builds' LibTorch) exports its own
// copy of std::filesystem::remove_all, and a program linked against it binds to that copy (libtorch
// comes before libstdc++ in the lookup order), which jumps to address 0 on an H100 machine (every
// test and `train --overwrite` that removes a directory crashes there). Other std::filesystem calls
// run fine there.
#pragma once

#include <filesystem>

namespace sgmcmc {

// Removes `path` and everything under it (symbolic links are removed, not followed). A missing path
// is not an error. Throws std::runtime_error naming the entry that could not be removed.
void remove_tree(const std::filesystem::path& path);

}  // namespace sgmcmc
