// Parameter files written on the run directory's writer thread (train/parameter_file_writer.h): a snapshot
// holds the model as it was when taken, files land in order and whole, flush() reports a failed write
// with its file named (and so does every later write), and the destructor writes what is still queued.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "core/option_map.h"
#include "data/dataset.h"
#include "data/tensors.h"
#include "models/factory.h"
#include "train/parameter_file_writer.h"

using namespace sgmcmc;
namespace fs = std::filesystem;

namespace {

ModelPtr small_mlp() {
  Dataset d;
  d.task = Task::kClassification;
  d.num_classes = 3;
  d.dims = {{"features", 5}};
  d.train = Batch{torch::rand({4, 5}), torch::tensor({0, 1, 2, 0}, torch::kInt64)};
  OptionMap o("model");
  o.set("name", "mlp");
  o.set("hidden", "4");
  return make_model(o, d, 3);
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("sgmcmc_writer_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

torch::Tensor first_parameter(Model& m) { return m.named_parameters()[0].value(); }

}  // namespace

// Each file holds the parameters as they were at its write() call, not as later steps left them, and its
// scalars; flush() returns with every file on disk.
TEST(ParameterFileWriter, SnapshotsTheModelAtTheCall) {
  const auto dir = fresh_dir("snapshot");
  auto m = small_mlp();
  const std::string name = m->named_parameters()[0].key();
  std::vector<torch::Tensor> want;
  ParameterFileWriter w;
  for (int i = 0; i < 20; ++i) {
    want.push_back(first_parameter(*m).detach().clone());
    w.write((dir / ("s" + std::to_string(i) + ".pt")).string(), ParameterSnapshot(*m, {{"step", 10.0 * i}}));
    torch::NoGradGuard no_grad;
    first_parameter(*m).add_(1.0);  // the next step, while the file may still be queued
  }
  w.flush();
  EXPECT_EQ(w.written(), 20);
  for (int i = 0; i < 20; ++i) {
    const auto d = read_tensor_dict((dir / ("s" + std::to_string(i) + ".pt")).string());
    ASSERT_TRUE(d.count(name)) << i;
    EXPECT_TRUE(torch::equal(d.at(name), want[i])) << "file " << i;
    EXPECT_FALSE(fs::exists(dir / ("s" + std::to_string(i) + ".pt.tmp")));
  }
  fs::remove_all(dir);
}

// A write that fails (its directory is gone) is thrown by flush() with the file named, and by every
// write() after it; nothing queued behind it is written.
TEST(ParameterFileWriter, ReportsAFailedWriteWithItsFile) {
  const auto dir = fresh_dir("error");
  auto m = small_mlp();
  ParameterFileWriter w;
  const std::string bad = (dir / "missing" / "s1.pt").string();
  w.write(bad, ParameterSnapshot(*m, {}));
  try {
    w.flush();
    ADD_FAILURE() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
  }
  EXPECT_THROW(w.write((dir / "s2.pt").string(), ParameterSnapshot(*m, {})), std::exception);
  EXPECT_THROW(w.flush(), std::exception);
  EXPECT_FALSE(fs::exists(dir / "s2.pt"));
  fs::remove_all(dir);
}

// The destructor writes what is queued before it returns.
TEST(ParameterFileWriter, DestructorWritesWhatIsQueued) {
  const auto dir = fresh_dir("drain");
  auto m = small_mlp();
  {
    ParameterFileWriter w;
    for (int i = 0; i < 10; ++i) w.write((dir / ("s" + std::to_string(i) + ".pt")).string(), ParameterSnapshot(*m, {}));
  }
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(fs::exists(dir / ("s" + std::to_string(i) + ".pt"))) << i;
  fs::remove_all(dir);
}
