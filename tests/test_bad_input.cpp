// Bad-input corpus: every malformed input must give ONE line on stderr naming the file / line / key
// and what is wrong, a non-zero exit status, and must leave the user's files alone.
//
// Each row of kCases runs the real binary in a fresh directory holding
//   c.yaml       a valid tiny config (unless the row replaces it),
//   data/        a valid tiny IDX data set (plain files; rows may replace or add files),
//   ratings.dat  a valid tiny ratings file,
//   out/         a pre-existing run directory (out/.sgmcmc-run) with out/marker.txt,
// after writing the row's files. The command runs with that directory as its working directory;
// most train rows pass `--out out --overwrite`, so a binary that removed or wrote the run directory
// before validating its inputs fails the "untouched" check. Checked per row: the exit status, that
// stderr is exactly one non-empty line containing the expected text, that out/ still holds only
// marker.txt with its content, and that no other file or directory appeared.
//
// Adding a case = adding a row: {description, {{file, content}...}, argv, exit status, expected text}.
// Contents are written verbatim (binary allowed); an empty content for a file that exists removes it.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tiny_idx.h"
#include "torchscript_fixtures.h"

namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const std::string& p, const std::string& text) {
  fs::create_directories(fs::path(p).parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

// --- builders for file contents -------------------------------------------------------------

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

// An IDX file: magic {0, 0, type, dims.size()}, the dimensions, then `data_bytes` bytes.
std::string idx(std::vector<uint32_t> dims, size_t data_bytes, uint8_t type = 0x08, uint8_t m0 = 0) {
  std::string s = {static_cast<char>(m0), 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (auto d : dims) s += be32(d);
  s += std::string(data_bytes, '\x07');
  return s;
}

std::string gzip(const std::string& raw) {
  z_stream zs{};
  deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, raw.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  zs.avail_in = static_cast<uInt>(raw.size());
  zs.next_out = reinterpret_cast<Bytef*>(&out[0]);
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

const char* kTrainImages = "data/train-images-idx3-ubyte";
const char* kTrainLabels = "data/train-labels-idx1-ubyte";
const char* kTestImages = "data/t10k-images-idx3-ubyte";

// The valid tiny config every row starts from (60 training images of 16x16, 4 classes).
const char* kGoodConfig =
    "seed: 1\n"
    "data: {dir: data, val_size: 10}\n"
    "model: {name: mlp, hidden: [4]}\n"
    "sampler: {name: sgld, lr: 1.0e-3}\n"
    "train: {epochs: 2, batch_size: 10}\n";

std::string config_with(const std::string& block_line) {
  // Replaces the line of kGoodConfig that starts like `block_line` (same first word), or appends it.
  std::stringstream in(kGoodConfig);
  std::string out, line;
  const std::string word = block_line.substr(0, block_line.find(':'));
  bool replaced = false;
  while (std::getline(in, line)) {
    if (!replaced && line.substr(0, line.find(':')) == word) {
      out += block_line + "\n";
      replaced = true;
    } else {
      out += line + "\n";
    }
  }
  if (!replaced) out += block_line + "\n";
  return out;
}

const char* kRatingsConfig =
    "data: {format: ratings, path: ratings.dat, folds: 2, fold: 0}\n"
    "model: {name: bpmf, dim: 2}\n"
    "prior: {groups: model}\n"
    "sampler: {name: sgld, lr: 1.0e-4}\n"
    "train: {steps: 4, batch_size: 4, eval_every_steps: 2}\n";

std::string good_ratings() {
  std::string s;
  for (int u = 1; u <= 6; ++u)
    for (int i = 1; i <= 4; ++i) s += std::to_string(u) + "::" + std::to_string(10 + i) + "::" + std::to_string(1 + (u + i) % 5) + "::97830\n";
  return s;
}

struct Case {
  std::string description;
  std::vector<std::pair<std::string, std::string>> files;  // written (verbatim) before the run
  std::string args;                                         // after the binary; cwd = the case directory
  int exit_code;
  std::string expect;                                       // stderr must contain this
};

const std::string kTrain = "train c.yaml --out out --overwrite --quiet";
const std::string kTrainR = "train r.yaml --out out --overwrite --quiet";

std::vector<Case> cases() {
  const std::string img = idx({60, 16, 16}, 60 * 256);  // a valid image file (all pixels 7)
  const std::string img_gz = gzip(img);
  std::string corrupt_gz = img_gz;
  for (size_t i = 12; i < corrupt_gz.size() - 8; i += 7) corrupt_gz[i] = static_cast<char>(corrupt_gz[i] ^ 0x5a);
  const std::string R = "ratings.dat";
  // TorchScript modules and tensors files (torchscript_fixtures.h).
  using sgmcmc::test_util::module_bytes;
  using sgmcmc::test_util::random_scripted_mlp;
  using sgmcmc::test_util::tensor_dict_bytes;
  const std::string ts_model = "model: {name: torchscript, path: net.pt}";
  const auto tx = torch::rand({20, 1, 16, 16});
  const auto ty = torch::randint(0, 4, {20}, torch::kInt64);
  const std::string ts_data = "data: {format: tensors, path: d.pt, val_size: 5}";
  return {
      // --- TorchScript models and tensors files ----------------------------------------------------
      {"torchscript: missing model file", {{"c.yaml", config_with("model: {name: torchscript, path: nope.pt}")}}, kTrain, 2,
       "c.yaml: model.path: 'nope.pt': no such file"},
      {"torchscript: not a TorchScript archive", {{"c.yaml", config_with(ts_model)}, {"net.pt", "PK not really"}}, kTrain, 2,
       "c.yaml: model.path: 'net.pt': not a TorchScript archive"},
      {"torchscript: forward returns the wrong shape",
       {{"c.yaml", config_with(ts_model)}, {"net.pt", module_bytes(random_scripted_mlp({256, 5, 3}))}}, kTrain, 2,
       "c.yaml: model: forward returned shape [2, 3] for 2 inputs, expected [2, 4] logits"},
      {"torchscript: forward returns integers",
       {{"c.yaml", config_with(ts_model)}, {"net.pt", module_bytes(random_scripted_mlp({256, 5, 4}, "h.long()"))}}, kTrain, 2,
       "c.yaml: model: forward returned dtype Long, expected a floating-point tensor"},
      {"prior group pattern that matches nothing", {{"c.yaml", config_with("prior: {groups: {conv: '*conv*', rest: '*'}}")}},
       kTrain, 2, "c.yaml: prior.groups.conv: pattern '*conv*' matches no parameter"},
      {"tensors: missing file", {{"c.yaml", config_with(ts_data)}}, kTrain, 2, "c.yaml: data.path: 'd.pt': no such file"},
      {"tensors: missing key",
       {{"c.yaml", config_with(ts_data)}, {"d.pt", tensor_dict_bytes({{"x_train", tx}, {"y_train", ty}, {"x_test", tx}})}},
       kTrain, 2, "d.pt: y_test: missing"},
      {"tensors: lengths differ",
       {{"c.yaml", config_with(ts_data)},
        {"d.pt", tensor_dict_bytes({{"x_train", tx}, {"y_train", ty.slice(0, 0, 19)}, {"x_test", tx}, {"y_test", ty}})}},
       kTrain, 2, "d.pt: y_train: 19 targets for 20 inputs in x_train"},
      // --- unknown keys, with the nearest valid key suggested ------------------------------------
      {"unknown top-level block", {{"c.yaml", config_with("sampeler: {name: sgld}")}}, kTrain, 2,
       "c.yaml: sampeler: unknown key (did you mean 'sampler'?)"},
      {"unknown train key", {{"c.yaml", config_with("train: {epoch: 2, batch_size: 10}")}}, kTrain, 2,
       "train.epoch: unknown key (did you mean 'epochs'?)"},
      {"unknown sampler key", {{"c.yaml", config_with("sampler: {name: sghmc, lr: 1.0e-3, alhpa: 0.1}")}}, kTrain, 2,
       "alhpa: unknown key (did you mean 'alpha'?)"},
      {"unknown model key", {{"c.yaml", config_with("model: {name: mlp, hiden: [4]}")}}, kTrain, 2,
       "hiden: unknown key (did you mean 'hidden'?)"},
      {"unknown data key", {{"c.yaml", config_with("data: {dir: data, val_sise: 10}")}}, kTrain, 2,
       "val_sise: unknown key (did you mean 'val_size'?)"},
      {"unknown prior key", {{"c.yaml", config_with("prior: {precison: 2}")}}, kTrain, 2,
       "precison: unknown key (did you mean 'precision'?)"},
      {"unknown schedule key", {{"c.yaml", config_with("schedule: {type: constant, gama: 2}")}}, kTrain, 2,
       "gama: unknown key"},
      {"--set unknown block", {}, kTrain + " --set trian.epochs=3", 2, "unknown block 'trian' (did you mean 'train'?)"},
      {"--set unknown key", {}, kTrain + " --set train.batchsize=3", 2, "train.batchsize: unknown key (did you mean 'batch_size'?)"},
      {"--set without =", {}, kTrain + " --set train.epochs", 2, "--set train.epochs: expected key=value"},
      // --- the order of the checks: every key, then every value, then the data ----------------------
      {"typo'd train key, burn-in >= the default epochs", {{"c.yaml", config_with("train: {epohcs: 100, burn_in: 50, batch_size: 10}")}},
       kTrain, 2, "c.yaml: train.epohcs: unknown key (did you mean 'epochs'?)"},
      {"bad lr and a missing data dir", {}, kTrain + " --set data.dir=nowhere --set sampler.lr=-1", 2,
       "c.yaml: sgld.lr: must be a finite number > 0, got -1"},
      {"unknown sampler key and a bad train value", {}, kTrain + " --set train.epochs=abc --set sampler.lrr=1", 2,
       "c.yaml: sampler.lrr: unknown key (did you mean 'lr'?)"},
      {"unknown model key and a bad data value", {}, kTrain + " --set data.val_size=-1 --set model.hiden=4", 2,
       "c.yaml: model.hiden: unknown key (did you mean 'hidden'?)"},
      {"bad schedule value and a missing data dir", {}, kTrain + " --set data.dir=nowhere --set schedule.type=cyclical --set schedule.cycles=0", 2,
       "c.yaml: schedule.cycles: must be > 0, got 0"},
      // --- wrong types -----------------------------------------------------------------------------
      {"epochs not an integer", {}, kTrain + " --set train.epochs=abc", 2, "train.epochs: expected an integer, got 'abc'"},
      {"lr not a number", {}, kTrain + " --set sampler.lr=fast", 2, "sampler.lr: expected a finite number, got 'fast'"},
      {"bool not a bool", {}, kTrain + " --set output.checkpoint=maybe", 2, "output.checkpoint"},
      {"hidden not a list of integers", {{"c.yaml", config_with("model: {name: mlp, hidden: [a, b]}")}}, kTrain, 2,
       "hidden"},
      {"block given a list", {{"c.yaml", config_with("train: [1, 2]")}}, kTrain, 2, "c.yaml: train: expected a mapping"},
      {"non-scalar top-level key", {{"c.yaml", std::string(kGoodConfig) + "? [a, b]\n: 1\n"}}, kTrain, 2,
       "c.yaml: keys must be plain names"},
      {"non-scalar key inside a block", {{"c.yaml", config_with("train: {[1]: 2}")}}, kTrain, 2,
       "c.yaml: train: keys must be plain names"},
      {"nested too deep", {{"c.yaml", config_with("train: {epochs: {a: 1}}")}}, kTrain, 2, "c.yaml: train.epochs"},
      // --- out-of-range values ---------------------------------------------------------------------
      {"negative step size", {}, kTrain + " --set sampler.lr=-0.01", 2, "sgld.lr: must be a finite number > 0, got -0.01"},
      {"NaN step size", {}, kTrain + " --set sampler.lr=nan", 2, "sampler.lr: expected a finite number"},
      {"friction above 1", {{"c.yaml", config_with("sampler: {name: sghmc, lr: 1.0e-3, alpha: 1.5}")}}, kTrain, 2,
       "c.yaml: sghmc.alpha: must be in (0, 1], got 1.5"},
      {"friction zero", {{"c.yaml", config_with("sampler: {name: sghmc, lr: 1.0e-3, alpha: 0}")}}, kTrain, 2,
       "sghmc.alpha: must be in (0, 1], got 0"},
      {"burn-in >= run length (epochs)", {}, kTrain + " --set train.burn_in=2", 2, "train.burn_in: burn-in"},
      {"burn-in >= run length (steps)", {}, kTrain + " --set train.steps=5 --set train.burn_in_steps=5", 2,
       "must be shorter than the run (5 steps)"},
      {"zero batch size", {}, kTrain + " --set train.batch_size=0", 2, "train.batch_size: must be > 0, got 0"},
      {"batch larger than the data", {}, kTrain + " --set train.batch_size=1000", 2, "train.batch_size 1000 exceeds"},
      {"zero epochs", {}, kTrain + " --set train.epochs=0", 2, "train.epochs: must be > 0"},
      {"negative prior precision", {}, kTrain + " --set prior.precision=-1", 2, "prior.precision: must be > 0"},
      {"pSGLD alpha outside (0,1]", {}, kTrain + " --set sampler.name=psgld --set sampler.alpha=2", 2,
       "psgld.alpha: must be in (0, 1], got 2"},
      {"momentum = 1", {}, kTrain + " --set sampler.name=sgd-momentum --set sampler.momentum=1", 2,
       "sgd-momentum.momentum: must be in [0, 1)"},
      {"negative seed", {}, kTrain + " --set seed=-3", 2, "seed: must be >= 0"},
      {"threads beyond any machine", {}, kTrain + " --set train.threads=100000", 2,
       "train.threads: 100000 is more than 1024"},
      {"a directory as the config file", {}, "train out --out run --quiet", 2, "out: is a directory, not a config file"},
      {"an empty --out", {}, "train c.yaml --out '' --quiet", 2, "--out: an empty path"},
      {"a top-level key's message names the file as every other does", {}, kTrain + " --set seed=abc", 2,
       "c.yaml: seed: expected an integer, got 'abc'"},
      {"an unknown top-level key", {{"c.yaml", std::string(kGoodConfig) + "sede: 3\n"}}, kTrain, 2,
       "c.yaml: sede: unknown key (did you mean 'seed'?)"},
      // --- unknown names ---------------------------------------------------------------------------
      {"unknown sampler", {}, kTrain + " --set sampler.name=sghcm", 2, "unknown sampler 'sghcm'"},
      {"unknown model", {}, kTrain + " --set model.name=mpl", 2, "c.yaml: model.name: 'mpl' is not one of {mlp, cnn, bpmf, torchscript, logistic, lda, dpfa} (did you mean 'mlp'?)"},
      {"unknown data format", {}, kTrain + " --set data.format=idxx", 2, "data.format"},
      {"unknown device", {}, kTrain + " --set device=gpu", 2, "device: must be cpu, cuda or cuda:N, got 'gpu'"},
      {"unknown schedule type", {}, kTrain + " --set schedule.type=cosine", 2, "schedule.type"},
      {"missing sampler name", {{"c.yaml", config_with("sampler: {lr: 0.1}")}}, kTrain, 2, "c.yaml: sampler.name: missing"},
      // --- missing or unreadable data --------------------------------------------------------------
      {"data dir missing", {}, kTrain + " --set data.dir=nowhere", 2, "data.dir: 'nowhere' is not a directory"},
      {"IDX file missing", {}, kTrain + " --set data.dir=out", 2, "-idx1-ubyte: no such file (nor train-"},
      {"IDX path is a directory", {{kTrainImages, ""}, {std::string(kTrainImages) + "/x", "x"}}, kTrain, 2,
       "train-images-idx3-ubyte: is a directory"},
      {"missing config file", {}, "train nope.yaml --out out --overwrite", 2, "nope.yaml: cannot open config file"},
      {"YAML syntax error", {{"c.yaml", "data: {dir: data\nsampler: [\n"}}, kTrain, 2, "c.yaml: YAML syntax error at line"},
      // --- IDX files ---------------------------------------------------------------------------------
      {"IDX bad magic", {{kTrainImages, idx({60, 16, 16}, 60 * 256, 0x08, 0x12)}}, kTrain, 2,
       "train-images-idx3-ubyte: bad magic number"},
      {"IDX float type", {{kTrainImages, idx({60, 16, 16}, 60 * 256 * 4, 0x0D)}}, kTrain, 2,
       "train-images-idx3-ubyte: bad magic number: unsupported IDX data type 0x0d"},
      {"IDX zero dimensions", {{kTrainImages, idx({}, 10)}}, kTrain, 2, "train-images-idx3-ubyte: bad magic number: 0 dimensions"},
      {"IDX truncated data", {{kTrainImages, idx({60, 16, 16}, 60 * 256 - 100)}}, kTrain, 2,
       "train-images-idx3-ubyte: truncated: dimensions 60x16x16 need 15360 data bytes, the file has 15260"},
      {"IDX truncated header", {{kTrainImages, idx({60, 16, 16}, 0).substr(0, 10)}}, kTrain, 2,
       "train-images-idx3-ubyte: truncated header"},
      {"IDX count disagrees with file size", {{kTrainImages, idx({50, 16, 16}, 60 * 256)}}, kTrain, 2,
       "train-images-idx3-ubyte: count mismatch: dimensions 50x16x16"},
      {"IDX absurd dimensions", {{kTrainImages, idx({4000000000u, 60000, 60000}, 16)}}, kTrain, 2,
       "train-images-idx3-ubyte: absurd dimensions 4000000000x60000"},
      {"IDX gzip declaring 63 GB (no huge allocation)",
       {{kTrainImages, ""}, {std::string(kTrainImages) + ".gz", gzip(idx({60000, 65536, 16}, 1000))}}, kTrain, 2,
       "need 62914560000 data bytes, the decompressed file has 1000"},
      {"truncated gzip", {{kTrainImages, ""}, {std::string(kTrainImages) + ".gz", img_gz.substr(0, img_gz.size() / 2)}},
       kTrain, 2, "train-images-idx3-ubyte.gz: truncated gzip stream"},
      {"corrupt gzip", {{kTrainImages, ""}, {std::string(kTrainImages) + ".gz", corrupt_gz}}, kTrain, 2,
       "train-images-idx3-ubyte.gz: corrupt gzip data"},
      {"labels disagree with images", {{kTrainLabels, idx({59}, 59)}}, kTrain, 2,
       "train-labels-idx1-ubyte: count mismatch: 59 labels but 60 images"},
      {"labels with 3 dimensions", {{kTrainLabels, idx({60, 1, 1}, 60)}}, kTrain, 2,
       "train-labels-idx1-ubyte: expected 1 dimension for labels, got 3"},
      {"test label beyond the training labels' classes", {{"data/t10k-labels-idx1-ubyte", idx({20}, 20)}}, kTrain, 2,
       "t10k-labels-idx1-ubyte: label 7 is outside the training labels' classes 0..3"},
      {"training labels that skip most classes", {{kTrainLabels, idx({60}, 60)}}, kTrain, 2,
       "train-labels-idx1-ubyte: label 7 would make 8 classes, of which only 1 occur"},
      {"test images of another size", {{kTestImages, idx({20, 8, 8}, 20 * 64)}}, kTrain, 2,
       "train images are 16x16 but test images are 8x8"},
      // --- ratings files -----------------------------------------------------------------------------
      {"ratings line missing a field", {{R, good_ratings() + "7::11\n"}}, kTrainR, 2,
       "ratings.dat:25: missing field"},
      {"ratings non-numeric rating", {{R, "1::2::abc::0\n" + good_ratings()}}, kTrainR, 2,
       "ratings.dat:1: rating 'abc' is not a number"},
      {"ratings non-integer user", {{R, good_ratings() + "x7::11::3::0\n"}}, kTrainR, 2,
       "ratings.dat:25: user id 'x7' is not an integer"},
      {"ratings rating out of range", {{R, good_ratings() + "7::11::9::0\n"}}, kTrainR, 2,
       "ratings.dat:25: rating 9 is outside [0, 5]"},
      {"ratings too many fields", {{R, good_ratings() + "7::11::3::0::1\n"}}, kTrainR, 2, "ratings.dat:25: too many fields"},
      {"ratings file empty", {{R, "\n\n"}}, kTrainR, 2, "ratings.dat:1: empty file"},
      {"ratings file missing", {}, kTrainR + " --set data.path=none.dat", 2, "none.dat: cannot open ratings file"},
      {"ratings bad timestamp", {{R, good_ratings() + "7::11::3::yesterday\n"}}, kTrainR, 2,
       "ratings.dat:25: timestamp 'yesterday' is not an integer"},
      // --- command line ------------------------------------------------------------------------------
      {"unknown option", {}, kTrain + " --bogus", 2, "bogus"},
      {"option missing its value", {}, "train c.yaml --out", 2, "out"},
      {"non-numeric --stop-after", {}, kTrain + " --stop-after soon", 2, "soon"},
      {"unknown command", {}, "frobnicate", 2, "unknown command 'frobnicate'"},
      {"no config", {}, "train --quiet", 2, "missing CONFIG.yaml"},
      {"config and --resume", {}, "train c.yaml --resume out", 2, "give either CONFIG or --resume DIR"},
      {"--resume a non-run directory", {}, "train --resume out", 2, "out: not a run directory (no config.yaml)"},
      {"--resume with a corrupt checkpoint", {{"out/config.yaml", kGoodConfig}, {"out/checkpoint.pt", "not a zip archive"}},
       "train --resume out --quiet", 2, "out/checkpoint.pt: not a readable checkpoint"},
      {"run directory exists", {}, "train c.yaml --out out --quiet", 2, "out: run directory exists"},
      {"--overwrite of a directory that is not a run", {{"thesis/ch1.tex", "x\n"}},
       "train c.yaml --out thesis --overwrite --quiet", 2, "thesis: not a sgmcmc run directory"},
      {"--out is a regular file", {{"notes.txt", "x\n"}}, "train c.yaml --out notes.txt --overwrite --quiet", 2,
       "notes.txt: exists and is not a directory"},
      {"extra positional argument", {}, kTrain + " extra.yaml", 2, "unexpected argument 'extra.yaml'"},
      // --- sweep (today's CLI; more rows for sweep files go here) ------------------------------------
      {"sweep: --grid without values", {}, "sweep c.yaml --out out --grid sampler.lr", 2, "sampler.lr"},
      {"sweep: missing config", {}, "sweep nope.yaml --out out", 2, "nope.yaml"},
  };
}

}  // namespace

TEST(BadInput, CorpusGivesOneLineErrorsAndTouchesNothing) {
  const auto all = cases();
  ASSERT_GE(all.size(), 40u);
  const std::string root = sgmcmc::test_util::temp_dir("bad_input");
  // The valid data set, written once and copied into every case directory.
  sgmcmc::test_util::write_tiny_idx_dir(root + "/data", 60, 20, 4, /*gzip=*/false);
  const size_t n = all.size();
  std::vector<std::string> dirs(n);
  std::vector<std::set<std::string>> before(n);
  for (size_t i = 0; i < n; ++i) {
    const auto& c = all[i];
    const std::string dir = dirs[i] = root + "/case" + std::to_string(i);
    fs::create_directories(dir);
    fs::copy(root + "/data", dir + "/data");
    spit(dir + "/c.yaml", kGoodConfig);
    spit(dir + "/r.yaml", kRatingsConfig);
    spit(dir + "/ratings.dat", good_ratings());
    spit(dir + "/out/marker.txt", "precious results\n");
    spit(dir + "/out/.sgmcmc-run", "sgmcmc run directory\n");  // a run directory: --overwrite may replace it
    for (const auto& [file, content] : c.files) {
      // An empty content for an existing file means "remove it" (so a .gz variant is found instead).
      if (content.empty() && fs::exists(dir + "/" + file) && !fs::is_directory(dir + "/" + file)) {
        fs::remove(dir + "/" + file);
        continue;
      }
      spit(dir + "/" + file, content);
    }
    for (auto& e : fs::recursive_directory_iterator(dir)) before[i].insert(e.path().string());
  }
  // The cases are independent: run up to 3 at a time (process start-up, mostly loading LibTorch,
  // dominates each case).
  std::vector<int> status(n, -1);
  std::map<pid_t, size_t> running;
  size_t next = 0;
  while (next < n || !running.empty()) {
    while (next < n && running.size() < 3) {
      const std::string cmd = "cd " + dirs[next] + " && exec " + SGMCMC_BINARY + " " + all[next].args + " >" +
                              dirs[next] + ".out 2>" + dirs[next] + ".err";
      pid_t pid = fork();
      if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
        _exit(127);
      }
      ASSERT_GT(pid, 0);
      running[pid] = next++;
    }
    int st = 0;
    pid_t done = waitpid(-1, &st, 0);
    if (done < 0) continue;
    auto it = running.find(done);
    if (it == running.end()) continue;
    status[it->second] = st;
    running.erase(it);
  }
  for (size_t i = 0; i < n; ++i) {
    const auto& c = all[i];
    SCOPED_TRACE("case " + std::to_string(i) + ": " + c.description + "  [sgmcmc " + c.args + "]");
    const int rc = status[i];
    ASSERT_TRUE(WIFEXITED(rc)) << "killed by a signal";
    const std::string err = slurp(dirs[i] + ".err");
    EXPECT_NE(WEXITSTATUS(rc), 0);
    EXPECT_EQ(WEXITSTATUS(rc), c.exit_code) << err;
    // Exactly one line (a trailing newline, no other).
    ASSERT_FALSE(err.empty());
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_EQ(err.back(), '\n') << err;
    EXPECT_NE(err.find(c.expect), std::string::npos) << "expected '" << c.expect << "' in: " << err;
    // Nothing of the user's touched: same files, marker intact, nothing new.
    EXPECT_EQ(slurp(dirs[i] + "/out/marker.txt"), "precious results\n");
    std::set<std::string> after;
    for (auto& e : fs::recursive_directory_iterator(dirs[i])) after.insert(e.path().string());
    EXPECT_EQ(before[i], after);
  }
}
