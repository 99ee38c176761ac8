// Crash-safe file replacement: write `path.tmp`, fsync it, rename it over `path`, fsync the
// directory. A reader (or a resumed run after SIGKILL or a power cut) sees either the old or the
// new complete file, never a torn one.
#pragma once

#include <functional>
#include <string>

namespace sgmcmc {

// Flushes a file's data to disk (std::runtime_error naming the file on failure).
void fsync_path(const std::string& path);
// Flushes a directory entry table (after a rename); failures are ignored (not every file system
// supports it).
void fsync_dir(const std::string& dir);

// Writes `bytes` to `file` (created or truncated) with write(2); std::runtime_error "<file>: write failed
// (<reason>)" on any failure (a full disk: ENOSPC, a file-size limit: EFBIG).
void write_bytes(const std::string& file, const std::string& bytes);

// Writes `text` to `path` atomically (tmp + fsync + rename + fsync dir).
void write_file_atomic(const std::string& path, const std::string& text);

// Atomic replacement where a callback writes the temporary file (e.g. torch's archive save_to):
// `write(tmp_path)`, then fsync, rename, fsync dir.
void replace_file_atomic(const std::string& path, const std::function<void(const std::string& tmp)>& write);

}  // namespace sgmcmc
