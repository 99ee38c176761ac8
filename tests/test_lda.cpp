// Topic models: the bag-of-words reader (data/bow.h) and semi-collapsed LDA (models/lda.h).
// - the tokenizer, the text and UCI docword layouts on small files and on the real corpus the docs use
//   (data/lee/lee_background.cor.gz, gensim's Lee background corpus), broken lines one line naming file:line;
// - document completion: held-out documents split into observed and predicted tokens, every token once;
// - perplexity worked by hand (one topic; two topics under a flat α), through the evaluator;
// - the model's own gradient pass against autograd of its surrogate, both parametrizations;
// - recovery of known topics from a corpus drawn from LDA's generative process, by SGRLD (expanded
//   mean, Patterson & Teh's sampler) and by mSGNHT-S (expanded natural, 002's), through the trainer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <random>

#include "config/experiment_config.h"
#include "core/remove_tree.h"
#include "data/bow.h"
#include "error_of.h"
#include "models/lda.h"
#include "tiny_idx.h"
#include "topic_match.h"
#include "train/evaluator.h"
#include "train/model_io.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using namespace sgmcmc;
using namespace sgmcmc::test_util;

namespace {

std::string write(const std::string& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir + "/" + name) << text;
  return dir + "/" + name;
}

std::map<int64_t, int64_t> counts(const std::vector<int64_t>& v) {
  std::map<int64_t, int64_t> c;
  for (auto x : v) ++c[x];
  return c;
}

}  // namespace

TEST(Bow, Tokenizer) {
  EXPECT_EQ(tokenize("Don't STOP the fire-fighters at 4:00pm near Hill Top!", 3, true),
                     (std::vector<std::string>{"don", "stop", "fighters", "near", "hill"}));  // "fire", "top": stop words
  EXPECT_EQ(tokenize("the cat sat on a mat", 2, false), (std::vector<std::string>{"the", "cat", "sat", "on", "mat"}));
  EXPECT_EQ(tokenize("caf\xc3\xa9 na\xc3\xafve", 3, true), (std::vector<std::string>{"caf"}));  // ASCII letters only
}

TEST(Bow, TextCorpusVocabularyAndDroppedDocuments) {
  const std::string dir = temp_dir("bow_text");
  const auto f = write(dir, "c.txt",
                       "Blaze crews fought the blaze near the town.\n"
                       "The town council met; blaze crews reported.\n"
                       "Cricket.\n"
                       "Crews of the council and the town\n");
  const BowCorpus c = read_text_corpus(f, {3, 2, true});
  // words in at least 2 documents: blaze, council, crews, town (sorted); "Cricket." alone is dropped
  EXPECT_EQ(c.vocab, (std::vector<std::string>{"blaze", "council", "crews", "town"}));
  ASSERT_EQ(c.docs.size(), 3u);
  EXPECT_EQ(c.dropped_docs, 1);
  EXPECT_EQ(c.docs[0], (std::vector<int64_t>{0, 2, 0, 3}));
  EXPECT_EQ(c.docs[1], (std::vector<int64_t>{3, 1, 0, 2}));
  EXPECT_NE(error_of([&] { read_text_corpus(write(dir, "e.txt", "a b\nthe of\n"), {3, 2, true}); })
                .find("no document keeps 2 tokens"),
            std::string::npos);
  EXPECT_NE(error_of([&] { read_text_corpus(dir + "/none.txt", {3, 2, true}); }).find("none.txt: no such file"),
            std::string::npos);
  remove_tree(dir);
}

TEST(Bow, UciDocwordAndItsErrors) {
  const std::string dir = temp_dir("bow_uci");
  const auto v = write(dir, "vocab.txt", "apple\nbanana\ncherry\n");
  const auto d = write(dir, "docword.txt", "3\n3\n4\n1 1 2\n1 3 1\n2 2 3\n3 1 1\n");
  const BowCorpus c = read_uci_bow(d, v);
  EXPECT_EQ(c.vocab, (std::vector<std::string>{"apple", "banana", "cherry"}));
  ASSERT_EQ(c.docs.size(), 2u);  // document 3 has one token
  EXPECT_EQ(c.dropped_docs, 1);
  EXPECT_EQ(c.docs[0], (std::vector<int64_t>{0, 0, 2}));
  EXPECT_EQ(c.docs[1], (std::vector<int64_t>{1, 1, 1}));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"3\n3\nx\n", ":3: expected the header's entry count NNZ"},
      {"2\n3\n1\n1 4 1\n", ":4: wordID 4 is outside 1..3"},
      {"2\n3\n1\n3 1 1\n", ":4: docID 3 is outside 1..2"},
      {"2\n3\n1\n1 1\n", ":4: expected 'docID wordID count'"},
      {"2\n3\n2\n1 1 1\n", ":3: the header says 2 entries, the file has 1"},
  };
  for (const auto& [text, want] : cases) {
    const auto f = write(dir, "bad.txt", text);
    const std::string m = error_of([&] { read_uci_bow(f, ""); });
    EXPECT_NE(m.find(f + want), std::string::npos) << text << " -> " << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  EXPECT_NE(error_of([&] { read_uci_bow(d, write(dir, "v2.txt", "a\nb\n")); }).find("2 words, but"), std::string::npos);
  remove_tree(dir);
}

// The real corpus of docs/topic_models.md: 300 news articles; the counts pin the tokenizer and stop list.
TEST(Bow, LeeBackgroundCorpus) {
  const std::string path = std::string(SGMCMC_SOURCE_DIR) + "/data/lee/lee_background.cor.gz";
  const BowCorpus c = read_text_corpus(path, {3, 2, true});
  int64_t tokens = 0;
  for (const auto& d : c.docs) tokens += static_cast<int64_t>(d.size());
  EXPECT_EQ(c.docs.size() + static_cast<size_t>(c.dropped_docs), 300u);
  EXPECT_EQ(c.vocab.size(), 3277u);
  EXPECT_EQ(tokens, 27181);
  EXPECT_TRUE(std::is_sorted(c.vocab.begin(), c.vocab.end()));
}

// Held-out documents: every token either observed (in every point's input row) or a point's target, once.
TEST(Bow, DocumentCompletionSplits) {
  BowCorpus c;
  for (int d = 0; d < 20; ++d) {
    std::vector<int64_t> doc;
    for (int i = 0; i < 4 + d; ++i) doc.push_back((d * 7 + i * 3) % 11);
    c.docs.push_back(doc);
  }
  for (int w = 0; w < 11; ++w) c.vocab.push_back("w" + std::to_string(w));
  BowOptions o;
  o.path("x").test_fraction(0.25).observed_fraction(0.5);
  const Dataset ds = bow_dataset(c, o, 3, 1, "toy");
  EXPECT_EQ(ds.train.size(), 12);
  EXPECT_EQ(ds.dims.at("documents"), 12);
  EXPECT_EQ(ds.dims.at("val_documents"), 3);
  EXPECT_EQ(ds.num_classes, 2);  // the token's word (class 0) or not
  EXPECT_EQ(ds.dims.at("words"), 11);
  // train rows: index, then the document's tokens padded with −1
  for (int64_t r = 0; r < ds.train.size(); ++r) EXPECT_EQ(ds.train.inputs[r][0].item<int64_t>(), r);
  // test: 5 documents; group the points by document and rebuild each document's multiset
  const auto& t = ds.test;
  std::map<int64_t, std::vector<int64_t>> predicted;
  std::map<int64_t, std::vector<int64_t>> observed;
  for (int64_t i = 0; i < t.size(); ++i) {
    const int64_t d = t.inputs[i][0].item<int64_t>();
    EXPECT_EQ(t.targets[i].item<int64_t>(), 0);
    predicted[d].push_back(t.inputs[i][1].item<int64_t>());
    std::vector<int64_t> obs;
    for (int64_t j = 2; j < t.inputs.size(1) && t.inputs[i][j].item<int64_t>() >= 0; ++j)
      obs.push_back(t.inputs[i][j].item<int64_t>());
    if (observed.count(d)) EXPECT_EQ(observed[d], obs);  // the same observed half on every point
    observed[d] = obs;
    if (i > 0 && t.inputs[i - 1][0].item<int64_t>() != d) EXPECT_EQ(predicted[d].size(), 1u) << "not consecutive";
  }
  EXPECT_EQ(predicted.size(), 5u);
  int64_t matched = 0;
  for (const auto& [d, pred] : predicted) {
    auto all = observed[d];
    all.insert(all.end(), pred.begin(), pred.end());
    const auto want = std::llround(0.5 * static_cast<double>(all.size()));
    EXPECT_EQ(static_cast<int64_t>(observed[d].size()), want);
    for (const auto& doc : c.docs)
      if (counts(doc) == counts(all)) ++matched;
  }
  EXPECT_GE(matched, 5);
}

// Perplexity by hand. One topic: p(w | d) = π_w whatever the document, so the NLL per predicted token is
// −mean log π(y). Two topics under α = 10⁶: η̂ = (n + α)/(L + 2α) = ½ to 10⁻⁵, p(w | d) = (π₁ + π₂)/2.
TEST(Lda, PerplexityByHand) {
  Dataset ds;
  ds.task = Task::kClassification;
  ds.num_classes = 2;
  ds.dims = {{"words", 3}, {"classes", 2}};
  // Document 0 observes words 0 and 1 and predicts 0, 1, 2; document 1 observes 2, 2, 2 and predicts 0.
  const auto inputs =
      torch::tensor({{0, 0, 0, 1, -1}, {0, 1, 0, 1, -1}, {0, 2, 0, 1, -1}, {1, 0, 2, 2, 2}}, torch::kInt64);
  ds.test = Batch{inputs, torch::zeros({4}, torch::kInt64)};
  Evaluator eval(ds, 1000);
  EXPECT_EQ(eval.headline(), "perplexity");
  LdaOptions o;
  o.words = 3;
  o.documents = 10;
  o.topics = 1;
  Lda one(o, 1);
  {
    torch::NoGradGuard g;
    one.parameters()[0].copy_(torch::tensor({{0.5, 0.3, 0.2}}).log());
  }
  const double want1 = -(2 * std::log(0.5) + std::log(0.3) + std::log(0.2)) / 4;
  auto m = eval.metrics(eval.predict(one, ds.test), ds.test, 1.0);
  EXPECT_NEAR(m.at("nll"), want1, 1e-6);
  EXPECT_NEAR(m.at("perplexity"), std::exp(want1), 1e-5 * std::exp(want1));
  o.topics = 2;
  o.alpha = 1e6;
  for (const std::string param : {"natural", "mean"}) {
    o.parametrization = param;
    Lda two(o, 2);
    {
      torch::NoGradGuard g;
      const auto pi = torch::tensor({{0.8, 0.1, 0.1}, {0.1, 0.1, 0.8}});
      two.parameters()[0].copy_(param == "natural" ? pi.log() : pi * 3);
    }
    const double want2 = -(std::log(0.45) + std::log(0.1) + std::log(0.45) + std::log(0.45)) / 4;
    m = eval.metrics(eval.predict(two, ds.test), ds.test, 1.0);
    EXPECT_NEAR(m.at("nll"), want2, 1e-4) << param;
  }
}

// ∇ of scale·nll by the model's pass equals autograd's on its surrogate (the same counts: the local step's
// draws are a function of θ and the documents), for both parametrizations; the prior enters once.
TEST(Lda, OwnBackwardEqualsAutograd) {
  for (const std::string param : {"natural", "mean"}) {
    LdaOptions o;
    o.words = 7;
    o.documents = 40;
    o.topics = 3;
    o.parametrization = param;
    Lda m(o, 5);
    const Batch b{torch::tensor({{3, 0, 1, 1, 6, -1}, {9, 2, 2, 5, 4, 4}}, torch::kInt64), torch::zeros({2}, torch::kInt64)};
    const double scale = 20.0;  // N/n
    auto theta = m.parameters()[0];
    theta.mutable_grad() = torch::Tensor();
    (scale * m.nll(b)).backward();
    const auto want = theta.grad().clone();
    const auto value = m.nll_backward_overwrite(b, scale);
    EXPECT_TRUE(torch::allclose(theta.grad(), want, 1e-4, 1e-4)) << param << "\n" << theta.grad() - want;
    EXPECT_GT(value.item<double>(), 0) << param;
    theta.mutable_grad() = torch::ones_like(theta);
    m.nll_backward(b, scale);
    EXPECT_TRUE(torch::allclose(theta.grad() - 1, want, 1e-4, 1e-4)) << param;
  }
}

// A corpus from LDA's generative process with 4 known topics over 24 words (each topic 0.9 of its mass on
// its own 6 words, the rest spread evenly: π = 0.154 or 0.0042), 500 documents of 50 tokens, proportions
// ~ Dirichlet(0.3). The topics, as the samples' mean π after burn-in and matched to the truth by the best
// permutation, within total variation 0.06 each (mean 0.04). The bound: a topic holds ≈ 5,000 training
// tokens, a word's share is known to sd √(p(1−p)/5000) (0.0051 for p = 0.154, 0.0009 for 0.0042), so the
// expected TV is ½ Σ_w E|err| ≈ ½ (6·0.0041 + 18·0.0007) ≈ 0.019; 0.06 is three times that, while two merged
// topics or a random start are at TV ≥ 0.4.
TEST(Lda, RecoversTheTopicsOfASyntheticCorpus) {
  const int64_t K = 4, W = 24, D = 500, L = 50;
  std::vector<std::vector<double>> truth(K, std::vector<double>(W, 0.1 / W));
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < 6; ++j) truth[k][k * 6 + j] += 0.9 / 6;
  std::mt19937_64 rng(42);
  std::gamma_distribution<double> gamma(0.3, 1.0);
  std::string docword;
  int64_t nnz = 0;
  for (int64_t d = 0; d < D; ++d) {
    std::vector<double> eta(K);
    for (auto& e : eta) e = gamma(rng) + 1e-12;
    std::discrete_distribution<int64_t> topic(eta.begin(), eta.end());
    std::map<int64_t, int64_t> c;
    for (int64_t i = 0; i < L; ++i) {
      const auto k = topic(rng);
      std::discrete_distribution<int64_t> word(truth[k].begin(), truth[k].end());
      ++c[word(rng)];
    }
    for (auto [w, n] : c) docword += std::to_string(d + 1) + " " + std::to_string(w + 1) + " " + std::to_string(n) + "\n", ++nnz;
  }
  const std::string dir = temp_dir("lda_recovery");
  write(dir, "docword.txt", std::to_string(D) + "\n" + std::to_string(W) + "\n" + std::to_string(nnz) + "\n" + docword);
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"sgrld", "model: {name: lda, topics: 4, parametrization: mean, beta: 0.1, alpha: 0.3}\n"
                "sampler: {name: sgrld, lr: 0.01}\n"},
      {"msgnht", "model: {name: lda, topics: 4, alpha: 0.3}\n"
                 "sampler: {name: msgnht, integrator: ssi, diffusion: 0.75, lr: 0.01}\n"},
  };
  for (const auto& [name, blocks] : runs) {
    std::ofstream(dir + "/" + name + ".yaml")
        << "name: " << name << "\nseed: 3\n"
        << "data: {format: bow, layout: docword, path: " << dir << "/docword.txt, val_size: 0}\n"
        << blocks << "train: {steps: 3000, batch_size: 10, burn_in_steps: 1500, thin: 30, eval_every_steps: 1500, threads: 1}\n"
        << "output: {progress: false}\n";
    RunOptions ro;
    ro.quiet = true;
    ro.out_dir = dir + "/" + name;
    const RunSummary s = run_training(load_config(dir + "/" + name + ".yaml", {}), ro);
    EXPECT_TRUE(std::isfinite(s.values.at("test_perplexity"))) << name;
    LdaOptions o;
    o.words = W;
    o.documents = 400;
    o.topics = K;
    o.alpha = 0.3;
    o.parametrization = name == "sgrld" ? "mean" : "natural";
    torch::Tensor pi_sum = torch::zeros({K, W}, torch::kFloat64);
    int64_t n = 0;
    for (const auto& e : fs::directory_iterator(ro.out_dir + "/samples")) {
      Lda m(o, 0);
      load_parameter_file(e.path().string(), m, torch::kCPU);
      pi_sum += m.topics();
      ++n;
    }
    ASSERT_GE(n, 40) << name;
    const auto pi = pi_sum / static_cast<double>(n);
    const auto [tv_mean, tv_max] = matched_topic_tv(pi, truth);
    EXPECT_LT(tv_max, 0.06) << name;
    EXPECT_LT(tv_mean, 0.04) << name;
    std::cout << name << ": matched topics' TV mean " << tv_mean << ", max " << tv_max << ", test perplexity "
              << s.values.at("test_perplexity") << "\n";
  }
  remove_tree(dir);
}
