// Checkpoints that know themselves (checkpoint.pt, train/checkpoint.cpp):
// - a CRC32 of every tensor's bytes (and every other value), under the key "checksum", verified on
//   load: a flipped bit is a one-line error naming the file, not a silently different chain;
// - the state checked on load (counters non-negative and consistent, precisions positive and
//   finite, the data order a permutation of the training set's indices);
// - the run's config (its to_yaml text, key "config"), compared on --resume with the config the run
//   goes on with: a change of a key that alters the chain is an error naming the first such key.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace sgmcmc {

constexpr const char* kChecksumKey = "checksum";
constexpr const char* kConfigKey = "config";

// CRC32 over the archive's keys (sorted), each tensor's dtype, shape and bytes and each other value's
// text, nested archives included; the top-level kChecksumKey is left out.
uint32_t archive_checksum(torch::serialize::InputArchive& ar);

// Adds kChecksumKey to a complete archive (it is serialized once in memory to be read back).
void add_checksum(torch::serialize::OutputArchive& ar);

// Throws std::invalid_argument naming `file` when the archive's checksum does not match its contents.
// Checkpoints without one (written by earlier versions) pass.
void verify_checksum(torch::serialize::InputArchive& ar, const std::string& file);

// The same CRC32 over a parameter file's dict (train/model_io.h): every entry but kChecksumKey, by key
// (sorted); a tensor's dtype, shape and bytes, a number's value.
uint32_t dict_checksum(const c10::impl::GenericDict& dict);

// Keys whose change on --resume does not alter the chain (always allowed): train.epochs / train.steps
// (extending the run), the evaluation cadence and threads, output.*, kernels.*, the run's name,
// distributed.init / backend / timeout_s (a new rendezvous for the resumed ranks).
bool resume_may_change(const std::string& key);
// Keys a --set on --resume may change deliberately (the dynamics from here on: a smaller step size
// after a divergence), beside resume_may_change: sampler.*, schedule.*, device and the step's
// implementation (train.fused / graph / tf32 / backward).
bool resume_may_set(const std::string& key);

// The first key (in `checkpoint_yaml`'s order, "block.key") whose value differs between the config the
// checkpoint was written with and `run_yaml`, leaving out the keys above (`set_keys`: the keys of this
// resume's --set assignments). "" when none. Values: "a -> b" in `what`.
std::string first_chain_difference(const std::string& checkpoint_yaml, const std::string& run_yaml,
                                   const std::vector<std::string>& set_keys, std::string* what = nullptr);

// The first key whose value differs between two configs' YAML (every key counts), "" when none.
std::string first_config_difference(const std::string& a_yaml, const std::string& b_yaml, std::string* what = nullptr);

// The counters [step, position in the epoch, samples, metrics rows, steps in the loss], the prior
// precisions and the data order (undefined when the checkpoint has none) against the run's sizes;
// std::invalid_argument naming `file` and what is wrong.
void check_checkpoint_state(const std::string& file, const torch::Tensor& counters, const std::vector<double>& lambda,
                            const torch::Tensor& perm, int64_t train_size, int64_t steps_per_epoch, int64_t chains);

}  // namespace sgmcmc
