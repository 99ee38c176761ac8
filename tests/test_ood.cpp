// Out-of-distribution sets (data/ood.h) and the detection metrics (metrics/predictive_metrics.h).
#include <gtest/gtest.h>

#include <cmath>

#include "data/ood.h"
#include "error_of.h"
#include "metrics/predictive_metrics.h"

using namespace sgmcmc;

// Hand-computed: positives {0.9, 0.4}, negatives {0.1, 0.4, 0.3}. Pairs (p > n) + ½ (p = n):
// 0.9 beats all 3; 0.4 beats 0.1 and 0.3 and ties 0.4: (3 + 2.5) / 6.
// Average precision, thresholds descending: 0.9 → R 1/2, P 1; 0.4 (one of each) → R 1, P 2/3;
// AP = ½·1 + ½·⅔ = 5/6.
TEST(Ood, AurocAndAveragePrecisionByHand) {
  auto pos = torch::tensor({0.9, 0.4}), neg = torch::tensor({0.1, 0.4, 0.3});
  EXPECT_NEAR(auroc(pos, neg), 5.5 / 6, 1e-12);
  EXPECT_NEAR(average_precision(pos, neg), 5.0 / 6, 1e-12);
  // Perfect separation and its reverse.
  EXPECT_DOUBLE_EQ(auroc(torch::tensor({2.0, 3.0}), torch::tensor({0.0, 1.0})), 1.0);
  EXPECT_DOUBLE_EQ(auroc(torch::tensor({0.0, 1.0}), torch::tensor({2.0, 3.0})), 0.0);
  EXPECT_DOUBLE_EQ(average_precision(torch::tensor({2.0, 3.0}), torch::tensor({0.0, 1.0})), 1.0);
  EXPECT_TRUE(std::isnan(auroc(torch::tensor({1.0}), torch::empty({0}))));
}

// The test set scored against itself: every score tied with its copy, AUROC exactly ½ (and AP ½).
TEST(Ood, DuplicatedTestSetGivesHalf) {
  auto probs = torch::softmax(torch::randn({200, 10}, torch::kFloat64), 1);
  PredictiveSummary in{probs, entropy_of(probs) * 0.7, {}}, ood = in;
  auto m = ood_metrics(in, ood);
  EXPECT_DOUBLE_EQ(m.at("ood_auroc_entropy"), 0.5);
  EXPECT_DOUBLE_EQ(m.at("ood_auroc_mi"), 0.5);
  EXPECT_NEAR(m.at("ood_aupr_entropy"), 0.5, 1e-12);
  // Uniform predictions on the OOD set: maximal entropy, detected perfectly.
  PredictiveSummary flat{torch::full({50, 10}, 0.1, torch::kFloat64), {}, {}};
  auto f = ood_metrics(in, flat);
  EXPECT_DOUBLE_EQ(f.at("ood_auroc_entropy"), 1.0);
  EXPECT_TRUE(std::isnan(f.at("ood_auroc_mi")));  // one member on the OOD side: no MI
}

Dataset labelled(int64_t n, int64_t classes) {
  Dataset d;
  d.task = Task::kClassification;
  d.num_classes = classes;
  auto y = torch::arange(n, torch::kInt64).remainder(classes);
  d.train = Batch{torch::rand({n, 1, 4, 4}), y};
  d.val = Batch{torch::rand({n / 2, 1, 4, 4}), y.slice(0, 0, n / 2)};
  d.test = Batch{torch::rand({n, 1, 4, 4}), y.clone()};
  return d;
}

TEST(Ood, HeldOutClassesLeaveEverySplitAndAreRenumbered) {
  Dataset d = labelled(40, 4);
  OodOptions o;
  o.kind = "classes";
  o.classes = {0, 2};
  apply_ood(d, o, 1);
  EXPECT_EQ(d.num_classes, 2);
  EXPECT_EQ(d.train.size(), 20);
  EXPECT_EQ(d.test.size(), 20);
  EXPECT_EQ(d.ood.size(), 20);
  // Classes 1 and 3 become 0 and 1.
  EXPECT_EQ(d.train.targets.max().item<int64_t>(), 1);
  EXPECT_EQ(d.train.targets[0].item<int64_t>(), 0);  // example 1 had class 1
  EXPECT_EQ(d.train.targets[1].item<int64_t>(), 1);  // example 3 had class 3
  o.classes = {0, 1, 4};
  Dataset e = labelled(40, 4);
  EXPECT_EQ(test_util::error_of([&] { apply_ood(e, o, 1); }), "data.ood_classes: class 4 is not in 0..3");
}

TEST(Ood, CorruptionsOfTheTestSet) {
  Dataset d = labelled(20, 4);
  OodOptions o;
  o.kind = "rotate";
  apply_ood(d, o, 1);
  EXPECT_TRUE(torch::equal(d.ood.inputs[3][0].select(1, 0), d.test.inputs[3][0].select(0, 0).flip(0)));
  Dataset e = labelled(20, 4);
  o.kind = "invert";
  apply_ood(e, o, 1);
  EXPECT_TRUE(torch::allclose(e.ood.inputs + e.test.inputs, torch::full_like(e.test.inputs, (e.train.inputs.min() + e.train.inputs.max()).item<float>())));
  Dataset r = labelled(20, 4);
  r.task = Task::kRegression;
  EXPECT_EQ(test_util::error_of([&] { apply_ood(r, o, 1); }), "data.ood: out-of-distribution sets are for classification data sets");
}
