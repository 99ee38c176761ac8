// Bag-of-words corpora for topic models, the `bow` data format.
//
// Two layouts (data.layout):
//   docword  the UCI bag-of-words interchange format (archive.ics.uci.edu "Bag of Words": KOS, NIPS,
//            Enron, NYTimes, PubMed): docword.*.txt is three header lines D, W, NNZ, then NNZ lines
//            "docID wordID count" (1-based ids); vocab.*.txt (data.vocab, optional) one word a line,
//            line w naming word w. Plain or gzip-compressed.
//   text     one document a line, plain or gzip (the gensim test corpora's .cor files). Tokens:
//            lower-cased maximal runs of ASCII letters (so "don't" is "don" + "t", digits and
//            punctuation split words), kept when at least data.min_length letters long and not an
//            English stop word (data.stop_words: english, the 318 words of scikit-learn's
//            ENGLISH_STOP_WORDS list, which is Glasgow's SMART-derived list; none), then words in
//            fewer than data.min_docs documents dropped. The vocabulary is sorted.
// Documents left with fewer than 2 tokens are dropped (and counted in the description). Then, in this
// order: data.max_words caps the vocabulary at its most frequent words (0: no cap; 002's Wikipedia runs
// keep 7,702), and data.chunk_tokens (layout text) cuts each document into consecutive pieces of that
// many tokens (0: whole documents), so that a corpus of long articles streams as many short documents.
//
// Splits, by documents: data.test_fraction (0.2, as 002 §5.1's 80/20) held out after a permutation
// seeded by data.split_seed; data.val_size documents of the rest (auto: a sixth) for validation.
// Held-out documents are scored by document completion (Wallach et al. 2009, "Evaluation methods for
// topic models", §4.2; Patterson & Teh 2013 §5): each held-out document's tokens are shuffled (seeded)
// and the first data.observed_fraction (0.5) of them are observed, the rest are to be predicted.
//
// Tensors (task: classification, so that the posterior predictive, its NLL and every trainer path
// apply unchanged; the NLL per held-out word is log perplexity):
//   train  inputs [D, 1 + L] int64: column 0 the document's index in the training split, then its
//          word ids padded with −1 (L: the longest document); targets [D] zeros (unused).
//   val/test  one point per to-be-predicted token: inputs [T, 2 + L'] int64, column 0 the held-out
//          document's index, column 1 the token's word, then the document's observed word ids padded
//          with −1; targets [T] zeros. A model predicts two classes, [p(word | observed), 1 − p]: the
//          target is class 0, so the NLL is −log p(word | d) while the predictive (and its running sums
//          over samples, and checkpoints) hold 2 numbers a token, not W. Points of one document are
//          consecutive (a model infers its proportions once a document).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/arg.h>

#include "core/option_map.h"
#include "core/option_table.h"
#include "data/dataset.h"

namespace sgmcmc {

struct BowCorpus {
  std::vector<std::string> vocab;          // word id -> word
  std::vector<std::vector<int64_t>> docs;  // token word ids per document, in reading order
  int64_t dropped_docs = 0;                // documents with fewer than 2 tokens, not kept
};

// Reads a UCI docword file (and its vocab file, when `vocab_path` is not empty). Errors name file:line.
BowCorpus read_uci_bow(const std::string& docword_path, const std::string& vocab_path);

struct TextCorpusOptions {
  int64_t min_length = 3;
  int64_t min_docs = 2;
  bool stop_words = true;
};
// Reads a plain-text corpus, one document a line (tokenized as the header states).
BowCorpus read_text_corpus(const std::string& path, const TextCorpusOptions& options);
// The vocabulary cut to its `max_words` most frequent words (ties: the lower id), ids renumbered in the
// old order, documents left under 2 tokens dropped (and counted).
void cap_vocabulary(BowCorpus& corpus, int64_t max_words);
// Every document cut into consecutive pieces of `tokens` tokens (the last piece shorter; one under 2 tokens
// dropped and counted): long articles as many documents, as streaming topic models read them.
void chunk_documents(BowCorpus& corpus, int64_t tokens);
// Splits a line into tokens (lower-cased letter runs of at least `min_length`, stop words dropped).
std::vector<std::string> tokenize(const std::string& line, int64_t min_length, bool drop_stop_words);

struct BowOptions {
  BowOptions() = default;
  void validate(const std::string& where = "data") const;
  TORCH_ARG(std::string, path);
  TORCH_ARG(std::string, layout) = "text";    // text | docword
  TORCH_ARG(std::string, vocab);              // docword: the vocab file (optional)
  TORCH_ARG(double, test_fraction) = 0.2;     // in (0, 1)
  TORCH_ARG(int64_t, split_seed) = 0;         // >= 0
  TORCH_ARG(double, observed_fraction) = 0.5; // in (0, 1)
  TORCH_ARG(int64_t, min_length) = 3;         // text: >= 1
  TORCH_ARG(int64_t, min_docs) = 2;           // text: >= 1
  TORCH_ARG(std::string, stop_words) = "english";  // text: english | none
  TORCH_ARG(int64_t, max_words) = 0;          // >= 0: the vocabulary capped at the most frequent words (0: all)
  TORCH_ARG(int64_t, chunk_tokens) = 0;       // text, >= 0: documents cut into pieces of this many tokens (0: whole)
};

std::vector<OptionDoc> bow_option_docs();
BowOptions parse_bow_options(const OptionMap& options);

// The corpus as a Dataset (the header's tensors and splits); `val_size` −1: a sixth of the training documents.
Dataset bow_dataset(const BowCorpus& corpus, const BowOptions& options, int64_t val_size, uint64_t seed,
                    const std::string& name, const std::string& where = "data");
Dataset load_bow_dataset(const BowOptions& options, int64_t val_size, uint64_t seed, const std::string& where = "data");

}  // namespace sgmcmc
