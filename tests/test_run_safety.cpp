// Nothing lost, nothing silently wrong: what `sgmcmc train` does with run directories and
// checkpoints it did not expect. Through the real binary on a tiny IDX data set (a few hundred steps
// of a small MLP, ~1 s a run), plus units of the checks themselves:
// - --overwrite replaces only a sgmcmc run directory; a regular file as --out is refused;
// - a run directory locked by another process (DIR/.lock) is refused naming the holder's PID;
// - a corrupt or inconsistent checkpoint, or one written with another chain config, is refused;
// - resuming a finished run changes nothing;
// - a failed atomic write leaves no .tmp; a full disk (RLIMIT_FSIZE) keeps the last checkpoint;
// - a LibTorch overflow is a divergence.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/atomic_file.h"
#include "data/csv.h"
#include "data/load.h"
#include "data/tensors.h"
#include "core/dir_lock.h"
#include "error_of.h"
#include "proc_util.h"
#include "tiny_idx.h"
#include "torchscript_fixtures.h"
#include "train/checkpoint_check.h"
#include "train/divergence_guard.h"
#include "train/metrics_log.h"

namespace fs = std::filesystem;
using namespace sgmcmc;
using namespace sgmcmc::test_util;

namespace {

std::string make_config(const std::string& dir, int steps = 60) {
  write_tiny_idx_dir(dir + "/data", 120, 40, 4, /*gzip=*/false);
  std::ofstream(dir + "/tiny.yaml") << "seed: 3\n"
                                       "data: {dir: " << dir << "/data, val_size: 0}\n"
                                       "model: {name: mlp, hidden: [8], activation: relu}\n"
                                       "sampler: {name: sghmc, lr: 1.0e-3, alpha: 0.1}\n"
                                       "train: {steps: " << steps << ", batch_size: 20, eval_every_steps: 10, threads: 1}\n"
                                       "output: {progress: false, checkpoint_every_seconds: 0}\n";
  return dir + "/tiny.yaml";
}

int run(const std::vector<std::string>& args, const std::string& log) { return wait_child(spawn_sgmcmc(args, log)); }

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

std::set<std::string> tree(const std::string& dir) {
  std::set<std::string> out;
  for (auto& e : fs::recursive_directory_iterator(dir)) out.insert(e.path().string());
  return out;
}

}  // namespace

TEST(RunSafety, OverwriteRefusesADirectoryThatIsNotARun) {
  const std::string dir = temp_dir("safety_notrun");
  const std::string cfg = make_config(dir);
  fs::create_directories(dir + "/U/thesis");
  std::ofstream(dir + "/U/thesis/ch1.tex") << "x\n";
  const auto before = tree(dir + "/U");
  EXPECT_EQ(run({"train", cfg, "--out", dir + "/U", "--overwrite", "--quiet"}, dir + "/a"), 2);
  const std::string err = read_text(dir + "/a.err");
  EXPECT_EQ(lines(err), 1) << err;
  EXPECT_NE(err.find(dir + "/U: not a sgmcmc run directory"), std::string::npos) << err;
  EXPECT_EQ(read_text(dir + "/U/thesis/ch1.tex"), "x\n");
  EXPECT_EQ(tree(dir + "/U"), before);
  // A regular file as --out: refused with or without --overwrite, and kept.
  std::ofstream(dir + "/file.txt") << "keep\n";
  for (const bool overwrite : {false, true}) {
    std::vector<std::string> args = {"train", cfg, "--out", dir + "/file.txt", "--quiet"};
    if (overwrite) args.push_back("--overwrite");
    EXPECT_EQ(run(args, dir + "/b"), 2);
    const std::string e = read_text(dir + "/b.err");
    EXPECT_EQ(lines(e), 1) << e;
    EXPECT_NE(e.find(dir + "/file.txt: exists and is not a directory"), std::string::npos) << e;
    EXPECT_EQ(read_text(dir + "/file.txt"), "keep\n");
  }
}

TEST(RunSafety, OverwriteReplacesARunDirectoryOnlyAfterTheInputsAreChecked) {
  const std::string dir = temp_dir("safety_overwrite");
  const std::string cfg = make_config(dir, 20);
  const std::string out = dir + "/run";
  ASSERT_EQ(run({"train", cfg, "--out", out, "--quiet"}, dir + "/a"), 0) << read_text(dir + "/a.err");
  EXPECT_TRUE(fs::exists(out + "/.sgmcmc-run"));
  std::ofstream(out + "/notes.txt") << "old run\n";
  // A bad input (the data directory is missing): the old run is untouched.
  const auto before = tree(out);
  EXPECT_EQ(run({"train", cfg, "--out", out, "--overwrite", "--quiet", "--set", "data.dir=" + dir + "/nope"}, dir + "/b"), 2);
  EXPECT_EQ(tree(out), before);
  // A good one: replaced.
  ASSERT_EQ(run({"train", cfg, "--out", out, "--overwrite", "--quiet"}, dir + "/c"), 0) << read_text(dir + "/c.err");
  EXPECT_FALSE(fs::exists(out + "/notes.txt"));
  EXPECT_TRUE(fs::exists(out + "/summary.json"));
  // Without the marker (a directory of an earlier version, or a user's folder with files named config.yaml and
  // metrics.csv) it is refused, one line naming the marker, and nothing in it is removed.
  fs::remove(out + "/.sgmcmc-run");
  std::ofstream(out + "/thesis.tex") << "x\n";
  const auto unmarked = tree(out);
  EXPECT_EQ(run({"train", cfg, "--out", out, "--overwrite", "--quiet"}, dir + "/d"), 2);
  const std::string err = read_text(dir + "/d.err");
  EXPECT_EQ(lines(err), 1) << err;
  EXPECT_NE(err.find("no .sgmcmc-run marker"), std::string::npos) << err;
  EXPECT_EQ(tree(out), unmarked);
}

TEST(RunSafety, ALockedRunDirectoryIsRefusedNamingTheHolder) {
  const std::string dir = temp_dir("safety_lock");
  const std::string cfg = make_config(dir);
  const std::string out = dir + "/run";
  ASSERT_EQ(run({"train", cfg, "--out", out, "--quiet", "--stop-after", "20"}, dir + "/a"), 0) << read_text(dir + "/a.err");
  const std::string checkpoint = read_text(out + "/checkpoint.pt");
  {
    auto lock = DirLock::acquire(out);  // this process plays the running run
    EXPECT_EQ(DirLock::holder(out), ::getpid());
    const std::string pid = "(pid " + std::to_string(::getpid()) + ")";
    const std::vector<std::vector<std::string>> attempts = {{"train", "--resume", out, "--quiet"},
                                                            {"train", cfg, "--out", out, "--overwrite", "--quiet"}};
    for (const auto& args : attempts) {
      EXPECT_EQ(run(args, dir + "/b"), 2);
      const std::string err = read_text(dir + "/b.err");
      EXPECT_EQ(lines(err), 1) << err;
      EXPECT_NE(err.find(out + ": in use by another sgmcmc process " + pid), std::string::npos) << err;
      EXPECT_EQ(read_text(out + "/checkpoint.pt"), checkpoint);
    }
  }
  EXPECT_EQ(DirLock::holder(out), 0);
  EXPECT_EQ(run({"train", "--resume", out, "--quiet"}, dir + "/c"), 0) << read_text(dir + "/c.err");
}

// A full disk while writing: the resumed run's files may grow to 2 KB each (RLIMIT_FSIZE; write()
// then fails with EFBIG as with ENOSPC). Without samples to save, the first file it writes beyond
// that is its checkpoint: one line naming the file and the reason, exit 1, no temporary file left,
// the previous checkpoint byte for byte intact; resumed with room, the run then finishes.
TEST(RunSafety, AFullDiskStopsTheRunAndKeepsTheLastCheckpoint) {
  const std::string dir = temp_dir("safety_full");
  const std::string cfg = make_config(dir);
  const std::string out = dir + "/run";
  ASSERT_EQ(run({"train", cfg, "--out", out, "--quiet", "--stop-after", "20"}, dir + "/a"), 0) << read_text(dir + "/a.err");
  const std::string checkpoint = read_text(out + "/checkpoint.pt");
  ASSERT_GT(checkpoint.size(), 2048u);  // so that writing it must fail
  const int rc = wait_child(spawn_sgmcmc({"train", "--resume", out, "--quiet", "--set", "output.save_samples=false"},
                                               dir + "/b", 2048));
  const std::string err = read_text(dir + "/b.err");
  EXPECT_EQ(rc, 1) << err;
  EXPECT_EQ(lines(err), 1) << err;
  EXPECT_NE(err.find(out + "/checkpoint.pt.tmp: write failed (File too large)"), std::string::npos) << err;
  for (const auto& f : tree(out)) EXPECT_EQ(f.find(".tmp"), std::string::npos) << f;
  EXPECT_EQ(read_text(out + "/checkpoint.pt"), checkpoint);
  EXPECT_EQ(run({"train", "--resume", out, "--quiet"}, dir + "/c"), 0) << read_text(dir + "/c.err");
  EXPECT_NE(read_text(out + "/summary.json").find("\"finished\": true"), std::string::npos);
}

TEST(RunSafety, ResumeRefusesACorruptCheckpoint) {
  const std::string dir = temp_dir("safety_corrupt");
  const std::string cfg = make_config(dir);
  const std::string out = dir + "/run";
  ASSERT_EQ(run({"train", cfg, "--out", out, "--quiet", "--stop-after", "20"}, dir + "/a"), 0) << read_text(dir + "/a.err");
  std::string bytes = read_text(out + "/checkpoint.pt");
  ASSERT_GT(bytes.size(), 1000u);
  // Flip one bit of the model's first weight matrix (a stored tensor's bytes: found by its name
  // in the zip's local headers, "data/<n>" records follow; flip the middle of the file instead,
  // which lands in the tensors' data either way).
  bytes[bytes.size() / 2] ^= 0x10;
  std::ofstream(out + "/checkpoint.pt", std::ios::binary) << bytes;
  EXPECT_EQ(run({"train", "--resume", out, "--quiet"}, dir + "/b"), 2);
  const std::string err = read_text(dir + "/b.err");
  EXPECT_EQ(lines(err), 1) << err;
  EXPECT_NE(err.find(out + "/checkpoint.pt: "), std::string::npos) << err;
}

TEST(RunSafety, ResumeRefusesAChangedChainKeyAndAllowsLongerRuns) {
  const std::string dir = temp_dir("safety_config");
  const std::string cfg = make_config(dir);
  const std::string out = dir + "/run";
  ASSERT_EQ(run({"train", cfg, "--out", out, "--quiet", "--stop-after", "20"}, dir + "/a"), 0) << read_text(dir + "/a.err");
  const std::string yaml = read_text(out + "/config.yaml");
  // config.yaml edited by hand between the sessions
  const std::string edited = std::regex_replace(yaml, std::regex("batch_size: 20"), "batch_size: 10");
  ASSERT_NE(edited, yaml);
  std::ofstream(out + "/config.yaml") << edited;
  EXPECT_EQ(run({"train", "--resume", out, "--quiet"}, dir + "/b"), 2);
  std::string err = read_text(dir + "/b.err");
  EXPECT_EQ(lines(err), 1) << err;
  EXPECT_NE(err.find("checkpoint.pt: train.batch_size differs from the config the checkpoint was written with (20 -> 10)"),
            std::string::npos) << err;
  std::ofstream(out + "/config.yaml") << yaml;
  // ... or with --set (a data or model key as much as the batch)
  EXPECT_EQ(run({"train", "--resume", out, "--quiet", "--set", "seed=4"}, dir + "/c"), 2);
  err = read_text(dir + "/c.err");
  EXPECT_NE(err.find(": seed differs"), std::string::npos) << err;
  // Longer is fine (and so is a new step size, set deliberately).
  EXPECT_EQ(run({"train", "--resume", out, "--quiet", "--set", "train.steps=80", "--set", "sampler.lr=5e-4"}, dir + "/d"), 0)
      << read_text(dir + "/d.err");
  EXPECT_NE(read_text(out + "/summary.json").find("\"steps\": 80"), std::string::npos);
}

TEST(RunSafety, ResumingAFinishedRunChangesNothing) {
  const std::string dir = temp_dir("safety_finished");
  const std::string cfg = make_config(dir, 40);
  const std::string out = dir + "/run";
  ASSERT_EQ(run({"train", cfg, "--out", out, "--quiet"}, dir + "/a"), 0) << read_text(dir + "/a.err");
  const std::string summary = read_text(out + "/summary.json"), metrics = read_text(out + "/metrics.csv"),
                    config = read_text(out + "/config.yaml"), checkpoint = read_text(out + "/checkpoint.pt");
  EXPECT_EQ(run({"train", "--resume", out, "--quiet"}, dir + "/b"), 0) << read_text(dir + "/b.err");
  EXPECT_NE(read_text(dir + "/b.out").find("already finished at step 40"), std::string::npos) << read_text(dir + "/b.out");
  EXPECT_EQ(read_text(out + "/summary.json"), summary);
  EXPECT_EQ(read_text(out + "/metrics.csv"), metrics);
  EXPECT_EQ(read_text(out + "/config.yaml"), config);
  EXPECT_EQ(read_text(out + "/checkpoint.pt"), checkpoint);
}

// metrics.csv cut mid-row, or overwritten, between a stop and its resume: the resumed run restores the rows
// its checkpoint knows (the checkpoint keeps their text) instead of appending after a torn row or to garbage.
TEST(RunSafety, ResumeRestoresATornOrOverwrittenMetricsFile) {
  const std::string dir = temp_dir("safety_metrics");
  const std::string cfg = make_config(dir, 60);
  for (const std::string damage : {"torn", "garbage"}) {
    const std::string out = dir + "/" + damage;
    ASSERT_EQ(run({"train", cfg, "--out", out, "--quiet", "--stop-after", "30"}, dir + "/a"), 0)
        << read_text(dir + "/a.err");
    const std::string kept = read_text(out + "/metrics.csv");
    ASSERT_EQ(lines(kept), 4) << kept;  // the header and the evaluations at steps 10, 20, 30
    if (damage == "torn")
      std::ofstream(out + "/metrics.csv", std::ios::trunc) << kept.substr(0, kept.size() - 7);
    else
      std::ofstream(out + "/metrics.csv", std::ios::trunc) << "garbage\n";
    ASSERT_EQ(run({"train", "--resume", out, "--quiet"}, dir + "/b"), 0) << read_text(dir + "/b.err");
    const std::string after = read_text(out + "/metrics.csv");
    EXPECT_EQ(after.substr(0, kept.size()), kept) << damage;
    EXPECT_EQ(lines(after), 7) << after;  // and steps 40, 50, 60
    const auto fields = [](const std::string& line) { return std::count(line.begin(), line.end(), ','); };
    std::istringstream rows(after);
    std::string header, row;
    std::getline(rows, header);
    while (std::getline(rows, row)) EXPECT_EQ(fields(row), fields(header)) << damage << ": " << row;
  }
}

// A checkpoint of an earlier version keeps no text: the file's own rows are used, each checked whole.
TEST(RunSafety, MetricsRowsWithoutTheCheckpointsTextAreChecked) {
  const std::string dir = temp_dir("safety_metrics_units");
  const std::string file = dir + "/metrics.csv";
  const std::string good = "epoch,step,test_error\n1,10,0.5\n2,20,\n3,30,0.25\n";
  std::ofstream(file) << good;
  EXPECT_NO_THROW(MetricsLog(file, "error", 2));
  EXPECT_EQ(read_text(file), "epoch,step,test_error\n1,10,0.5\n2,20,\n");
  std::ofstream(file, std::ios::trunc) << "epoch,step,test_error\n1,10,0.5\n2,2";
  EXPECT_NE(error_of([&] { MetricsLog(file, "error", 2); }).find(file + ":3: row cut short"), std::string::npos);
  std::ofstream(file, std::ios::trunc) << "garbage\n";
  EXPECT_NE(error_of([&] { MetricsLog(file, "error", 2); }).find(file + ":1: not a metrics.csv header"), std::string::npos);
  std::ofstream(file, std::ios::trunc) << "epoch,step,test_error\n1,10\n";
  EXPECT_NE(error_of([&] { MetricsLog(file, "error", 1); }).find(file + ":2: 2 fields where the header has 3"),
            std::string::npos);
  std::ofstream(file, std::ios::trunc) << "epoch,step,test_error\n1,x,2\n";
  EXPECT_NE(error_of([&] { MetricsLog(file, "error", 1); }).find("'x' is not a number"), std::string::npos);
  std::ofstream(file, std::ios::trunc) << "epoch,step,test_error\n";
  EXPECT_NE(error_of([&] { MetricsLog(file, "error", 1); }).find(file + ":2: missing"), std::string::npos);
}

static std::vector<int64_t> sample_indices(const std::string& run) {
  std::vector<int64_t> out;
  if (!fs::is_directory(run + "/samples")) return out;
  for (auto& e : fs::directory_iterator(run + "/samples")) out.push_back(std::stoll(e.path().filename().string().substr(7, 6)));
  std::sort(out.begin(), out.end());
  return out;
}

// A sample file changed after it was written (a flipped bit, a weight turned into -8.9e37) is one line naming
// it and exit 2, nothing averaged; samples/ deleted is named as such, not blamed on output.save_samples.
TEST(RunSafety, PredictRefusesACorruptOrMissingSampleFile) {
  const std::string dir = temp_dir("safety_samples");
  const std::string cfg = make_config(dir, 60);
  const std::string out = dir + "/run";
  ASSERT_EQ(run({"train", cfg, "--out", out, "--quiet"}, dir + "/a"), 0) << read_text(dir + "/a.err");
  const auto indices = sample_indices(out);
  ASSERT_GE(indices.size(), 2u);
  ASSERT_EQ(run({"predict", out, "--quiet"}, dir + "/b"), 0) << read_text(dir + "/b.err");
  char name[64];
  std::snprintf(name, sizeof name, "/samples/sample_%06lld.pt", static_cast<long long>(indices[1]));
  const std::string file = out + name;
  auto dict = read_pickle_file(file).toGenericDict();
  for (const auto& item : dict)
    if (item.value().isTensor()) {
      auto t = item.value().toTensor().clone();
      t.view(-1)[0] = -8.9e37;
      dict.insert_or_assign(item.key(), t);
      break;
    }
  write_pickle_file(file, c10::IValue(dict));
  fs::remove(out + "/predict.json");
  EXPECT_EQ(run({"predict", out, "--quiet"}, dir + "/c"), 2);
  const std::string err = read_text(dir + "/c.err");
  EXPECT_EQ(lines(err), 1) << err;
  EXPECT_NE(err.find(file + ": corrupt parameter file: checksum mismatch"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(out + "/predict.json"));
  fs::remove_all(out + "/samples");
  EXPECT_EQ(run({"predict", out, "--quiet"}, dir + "/d"), 2);
  const std::string gone = read_text(dir + "/d.err");
  EXPECT_NE(gone.find("no sample files in samples/, though the run writes them"), std::string::npos) << gone;
  EXPECT_EQ(gone.find("save_samples: false"), std::string::npos) << gone;
}

// Extending a finished run keeps samples/ within output.max_samples and evenly spread: the resumed run's
// stride is a multiple of the first one's and the files off it go.
TEST(RunSafety, ExtendingARunKeepsItsSamplesWithinMaxSamples) {
  const std::string dir = temp_dir("safety_extend");
  const std::string cfg = make_config(dir, 60);
  const std::string out = dir + "/run";
  ASSERT_EQ(run({"train", cfg, "--out", out, "--quiet", "--set", "output.max_samples=4"}, dir + "/a"), 0)
      << read_text(dir + "/a.err");
  ASSERT_GE(sample_indices(out).size(), 3u);
  ASSERT_EQ(run({"train", "--resume", out, "--quiet", "--set", "train.steps=240"}, dir + "/b"), 0)
      << read_text(dir + "/b.err");
  const auto after = sample_indices(out);
  ASSERT_GE(after.size(), 2u);
  EXPECT_LE(after.size(), 4u);
  for (size_t i = 0; i < after.size(); ++i) EXPECT_EQ(after[i], after[0] * static_cast<int64_t>(i + 1)) << i;
}

// A chain that never moves (sampler.lr 1e-30) ends unhealthy: exit 4 and one line on stderr pointing to a
// larger step, never "a smaller sampler.lr".
TEST(RunSafety, AStalledChainExitsUnhealthyPointingToALargerStep) {
  const std::string dir = temp_dir("safety_stalled");
  const std::string cfg = make_config(dir, 200);
  EXPECT_EQ(run({"train", cfg, "--out", dir + "/run", "--quiet", "--set", "sampler.lr=1e-30"}, dir + "/a"), 4)
      << read_text(dir + "/a.err");
  // the error, after any warning the health check gave on the way (each pointing the same way)
  const std::string err = read_text(dir + "/a.err");
  EXPECT_NE(err.find("error: the run finished, but the chain has stalled"), std::string::npos) << err;
  EXPECT_NE(err.find("give a larger one"), std::string::npos) << err;
  EXPECT_EQ(err.find("smaller"), std::string::npos) << err;
  EXPECT_NE(read_text(dir + "/a.out").find("convergence: the chain has stalled"), std::string::npos)
      << read_text(dir + "/a.out");
}

// What a run prints: with output.progress an estimate after the first epoch and an ETA on each evaluation line;
// with output.progress: false only the results (no evaluation lines), the summary still whole.
TEST(RunSafety, ProgressFalseIsQuietAndProgressGivesAnEstimate) {
  const std::string dir = temp_dir("safety_quiet");
  const std::string cfg = make_config(dir, 60);
  ASSERT_EQ(run({"train", cfg, "--out", dir + "/loud", "--set", "output.progress=true"}, dir + "/a"), 0)
      << read_text(dir + "/a.err");
  const std::string loud = read_text(dir + "/a.out");
  EXPECT_NE(loud.find(": first epoch "), std::string::npos) << loud;
  EXPECT_NE(loud.find(" to go"), std::string::npos) << loud;
  EXPECT_NE(loud.find("| ETA "), std::string::npos) << loud;
  ASSERT_EQ(run({"train", cfg, "--out", dir + "/quiet"}, dir + "/b"), 0) << read_text(dir + "/b.err");
  const std::string quiet = read_text(dir + "/b.out");
  EXPECT_EQ(quiet.find("epoch "), std::string::npos) << quiet;
  EXPECT_NE(quiet.find("run directory: " + dir + "/quiet"), std::string::npos) << quiet;
  EXPECT_LT(lines(quiet), lines(loud) - 5) << quiet;
}

// --- units -----------------------------------------------------------------------------------------

TEST(RunSafety, ChecksumCoversEveryTensor) {
  auto archive = [](const torch::Tensor& w) {
    torch::serialize::OutputArchive ar, nested;
    ar.write("w", w, true);
    nested.write("m", torch::ones({3}), true);
    ar.write("sampler", nested);
    return ar;
  };
  auto reload = [](torch::serialize::OutputArchive& ar) {
    std::ostringstream s;
    ar.save_to(s);
    auto in = std::make_shared<torch::serialize::InputArchive>();
    const std::string bytes = s.str();
    in->load_from(bytes.data(), bytes.size());
    return in;
  };
  auto good = archive(torch::arange(6, torch::kFloat32));
  add_checksum(good);
  auto in = reload(good);
  EXPECT_NO_THROW(verify_checksum(*in, "ck.pt"));
  torch::Tensor sum;
  in->read(kChecksumKey, sum, true);
  // Same keys, one value changed, the good archive's checksum: caught.
  auto bad = archive(torch::arange(6, torch::kFloat32) + torch::tensor({1e-7f, 0.f, 0.f, 0.f, 0.f, 0.f}));
  bad.write(kChecksumKey, sum, true);
  const std::string err = error_of([&] { verify_checksum(*reload(bad), "ck.pt"); });
  EXPECT_NE(err.find("ck.pt: corrupt checkpoint: checksum mismatch"), std::string::npos) << err;
}

TEST(RunSafety, ChainConfigDifferences) {
  const std::string a = "seed: 1\ntrain:\n  epochs: 5\n  batch_size: 20\n  threads: 1\nsampler:\n  name: sghmc\n  lr: 0.1\n"
                        "output:\n  dir: x\nkernels:\n  noise: auto\n";
  std::string what;
  EXPECT_EQ(first_chain_difference(a, a, {}), "");
  // Longer runs, threads, output and kernels: not the chain.
  EXPECT_EQ(first_chain_difference(a, std::regex_replace(a, std::regex("epochs: 5"), "epochs: 50"), {}), "");
  EXPECT_EQ(first_chain_difference(a, std::regex_replace(a, std::regex("threads: 1"), "threads: 2"), {}), "");
  EXPECT_EQ(first_chain_difference(a, std::regex_replace(a, std::regex("dir: x"), "dir: y"), {}), "");
  EXPECT_EQ(first_chain_difference(a, std::regex_replace(a, std::regex("noise: auto"), "noise: portable"), {}), "");
  EXPECT_EQ(first_chain_difference(a, std::regex_replace(a, std::regex("batch_size: 20"), "batch_size: 10"), {}, &what),
            "train.batch_size");
  EXPECT_EQ(what, "20 -> 10");
  // The step size: only when set deliberately on this resume.
  const std::string lr = std::regex_replace(a, std::regex("lr: 0.1"), "lr: 0.01");
  EXPECT_EQ(first_chain_difference(a, lr, {}), "sampler.lr");
  EXPECT_EQ(first_chain_difference(a, lr, {"sampler.lr"}), "");
  EXPECT_EQ(first_chain_difference(a, std::regex_replace(a, std::regex("batch_size: 20"), "batch_size: 10"),
                                   {"train.batch_size"}),
            "train.batch_size");
  EXPECT_EQ(first_chain_difference(a, "seed: 2\n" + a.substr(a.find('\n') + 1), {"seed"}), "seed");
  EXPECT_EQ(first_chain_difference(a, a + "model:\n  name: mlp\n", {}, &what), "model.name");
  EXPECT_EQ(what, "(unset) -> mlp");
}

TEST(RunSafety, CheckpointStateIsChecked) {
  const auto counters = [](std::vector<int64_t> c) { return torch::tensor(c, torch::kInt64); };
  const torch::Tensor perm = torch::randperm(100, torch::kInt64);
  auto err = [&](const torch::Tensor& c, std::vector<double> lambda, const torch::Tensor& p) {
    return error_of([&] { check_checkpoint_state("ck.pt", c, lambda, p, 100, 5, 1); });
  };
  EXPECT_EQ(err(counters({20, 0, 3, 2, 20}), {1.0, 2.0}, perm), "");
  EXPECT_NE(err(counters({-1, 0, 0, 0, 0}), {1.0}, perm).find("ck.pt: inconsistent checkpoint: step is negative"),
            std::string::npos);
  EXPECT_NE(err(counters({20, 5, 0, 0, 0}), {1.0}, perm).find("position in the epoch 5"), std::string::npos);
  EXPECT_NE(err(counters({20, 0, 30, 0, 0}), {1.0}, perm).find("30 samples after 20 steps"), std::string::npos);
  EXPECT_NE(err(counters({20, 0, 3, 2, 20}), {0.0}, perm).find("prior precision 0"), std::string::npos);
  EXPECT_NE(err(counters({20, 0, 3, 2, 20}), {NAN}, perm).find("must be finite and > 0"), std::string::npos);
  torch::Tensor out_of_range = perm.clone();
  out_of_range[7] = 100;
  EXPECT_NE(err(counters({20, 0, 3, 2, 20}), {1.0}, out_of_range).find("index 100, outside"), std::string::npos);
  EXPECT_NE(err(counters({20, 0, 3, 2, 20}), {1.0}, perm.slice(0, 0, 50)).find("50 entries"), std::string::npos);
  EXPECT_EQ(err(counters({0, 0, 0, 0, 0}), {1.0}, torch::Tensor()), "");
}

TEST(RunSafety, AFailedAtomicWriteLeavesNoTemporaryFile) {
  const std::string dir = temp_dir("safety_atomic");
  const std::string target = dir + "/checkpoint.pt";
  std::ofstream(target) << "previous\n";
  try {
    replace_file_atomic(target, [](const std::string& tmp) {
      std::ofstream(tmp) << "partial";
      throw std::runtime_error(tmp + ": write failed (No space left on device)");
    });
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("checkpoint.pt.tmp: write failed (No space left on device)"), std::string::npos);
  }
  EXPECT_FALSE(fs::exists(target + ".tmp"));
  EXPECT_EQ(read_text(target), "previous\n");
  // An error that does not name the file gets the target's name.
  try {
    replace_file_atomic(target, [](const std::string&) { throw std::runtime_error("[enforce fail] PytorchStreamWriter failed"); });
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(target + ": cannot write (", 0), 0u) << e.what();
  }
  EXPECT_FALSE(fs::exists(target + ".tmp"));
}

TEST(RunSafety, LibTorchOverflowIsANumericError) {
  EXPECT_TRUE(DivergenceGuard::is_numeric_error("value cannot be converted to type float without overflow"));
  EXPECT_FALSE(DivergenceGuard::is_numeric_error("Expected all tensors to be on the same device"));
  EXPECT_FALSE(DivergenceGuard::is_numeric_error("PytorchStreamReader failed reading zip archive"));
}

// --- data: labels against the class count, constant CSV columns ------------------------------------

TEST(RunSafety, LabelsOutsideTheTrainingClassesAreErrorsNamingTheFile) {
  const std::string dir = temp_dir("safety_labels");
  write_tiny_idx_dir(dir, 120, 40, 4, /*gzip=*/false);
  auto cfg = [&] { return build_config(parse_raw_config("data: {dir: " + dir + ", val_size: 0}\nsampler: {name: sgld, lr: 0.1}\n", "l.yaml")).data; };
  EXPECT_EQ(load_dataset(cfg(), 1).num_classes, 4);
  // A test label of 200: not a 201-class model, an error naming the test labels' file.
  torch::Tensor labels = torch::zeros({40}, torch::kUInt8);
  labels[5] = 200;
  write_idx(dir + "/t10k-labels-idx1-ubyte", labels, false);
  std::string err = error_of([&] { load_dataset(cfg(), 1); });
  EXPECT_EQ(err, dir + "/t10k-labels-idx1-ubyte: label 200 is outside the training labels' classes 0..3");
  // ... nor a training label of 200 among 0..3.
  torch::Tensor images, train_labels;
  make_blobs(120, 4, 11, images, train_labels);
  train_labels[7] = 200;
  write_idx(dir + "/train-labels-idx1-ubyte", train_labels.to(torch::kUInt8), false);
  err = error_of([&] { load_dataset(cfg(), 1); });
  EXPECT_EQ(err, dir + "/train-labels-idx1-ubyte: label 200 would make 201 classes, of which only 5 occur in the "
                       "training labels (labels are 0..K-1)");
  // The tensors format: absurd or negative labels name the file and key.
  const std::string pt = dir + "/d.pt";
  auto tensors = [&](const torch::Tensor& ytr, const torch::Tensor& yte) {
    const std::string out = tensor_dict_bytes({{"x_train", torch::rand({30, 4})}, {"y_train", ytr},
                                               {"x_test", torch::rand({10, 4})}, {"y_test", yte}});
    std::ofstream(pt, std::ios::binary) << out;
    return error_of([&] {
      load_dataset(build_config(parse_raw_config("data: {format: tensors, path: " + pt + ", val_size: 0}\nsampler: {name: sgld, lr: 0.1}\n", "t.yaml")).data, 1);
    });
  };
  const torch::Tensor ytr = torch::arange(30, torch::kInt64) % 3;
  EXPECT_EQ(tensors(ytr, torch::arange(10, torch::kInt64) % 3), "");
  EXPECT_EQ(tensors(ytr, torch::full({10}, 1000000000, torch::kInt64)),
            pt + ": y_test: label 1000000000 is outside the training labels' classes 0..2");
  EXPECT_EQ(tensors(ytr, torch::full({10}, -1, torch::kInt64)), pt + ": y_test: has a negative label");  // the tensors format's own check
  EXPECT_EQ(tensors(torch::full({30}, 1000000000, torch::kInt64), torch::zeros({10}, torch::kInt64)),
            pt + ": y_train: label 1000000000 is not a class index (labels are 0..K-1, K <= 100000)");
}

TEST(RunSafety, ConstantCsvColumnsAreDataErrors) {
  const std::string dir = temp_dir("safety_csv");
  std::string rows = "a,b,y\n";
  for (int i = 0; i < 40; ++i) rows += std::to_string(i) + ",5," + std::to_string(i % 7) + "\n";
  std::ofstream(dir + "/f.csv") << rows;
  OptionMap o("data");
  o.set("path", dir + "/f.csv");
  EXPECT_EQ(error_of([&] { load_csv_dataset(o); }),
            dir + "/f.csv: column 'b' is constant (every row is 5); drop it (it carries no information)");
  rows = "a,b,y\n";
  for (int i = 0; i < 40; ++i) rows += std::to_string(i) + "," + std::to_string(i % 3) + ",2.5\n";
  std::ofstream(dir + "/t.csv") << rows;
  o.set("path", dir + "/t.csv");
  EXPECT_EQ(error_of([&] { load_csv_dataset(o); }),
            dir + "/t.csv: column 'y' is constant (every row is 2.5); a constant target leaves nothing to learn");
}

// App. H.1's config with a step size 5·10^6 times too large: LibTorch's own "value cannot be converted
// to type float without overflow" inside the step is the divergence path (exit 3, summary.json), not
// a run-time failure without a summary.
TEST(RunSafety, HugeStepOnAppH1IsADivergence) {
  const std::string data = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(data + "/train-images-idx3-ubyte") && !fs::exists(data + "/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << data << " not here";
  const std::string dir = temp_dir("safety_huge_step");
  const std::string out = dir + "/run";
  EXPECT_EQ(run({"train", std::string(SGMCMC_SOURCE_DIR) + "/configs/mnist_bnn_sghmc.yaml", "--out", out, "--quiet",
                 "--set", "data.dir=" + data, "--set", "sampler.lr=10", "--set", "train.epochs=3", "--set",
                 "train.burn_in=1", "--set", "train.threads=1"},
                dir + "/a"),
            3);
  const std::string err = read_text(dir + "/a.err");
  EXPECT_EQ(lines(err), 1) << err;
  EXPECT_NE(err.find("run diverged at step "), std::string::npos) << err;
  EXPECT_NE(read_text(out + "/summary.json").find("\"diverged\": true"), std::string::npos);
}
