#include "data/bow.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "data/kfold.h"
#include "data/splits.h"

namespace sgmcmc {
namespace {

[[noreturn]] void fail_at(const std::string& path, int64_t line, const std::string& what) {
  throw std::invalid_argument(path + ":" + std::to_string(line) + ": " + what);
}

// A whole file, inflated when gzip-compressed (zlib reads plain files as they are).
std::string read_all(const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) throw std::invalid_argument(path + ": no such file");
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::invalid_argument(path + ": cannot open the file");
  std::string out;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  int err = 0;
  const char* msg = gzerror(f, &err);
  const bool failed = n < 0 || (err != Z_OK && err != Z_STREAM_END);
  const std::string what = failed ? std::string(msg ? msg : "read error") : "";
  gzclose(f);
  if (failed) throw std::invalid_argument(path + ": cannot read the file (" + what + ")");
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

// A whole token as a non-negative integer.
bool whole_number(const std::string& token, int64_t& out) {
  if (token.empty() || token.size() > 18) return false;
  for (char c : token)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  out = std::stoll(token);
  return true;
}

// scikit-learn's ENGLISH_STOP_WORDS (sklearn/feature_extraction/_stop_words.py), sorted.
const std::unordered_set<std::string>& english_stop_words() {
  static const std::unordered_set<std::string> words = {
    "a", "about", "above", "across", "after", "afterwards", "again", "against", "all", "almost", "alone",
    "along", "already", "also", "although", "always", "am", "among", "amongst", "amoungst", "amount", "an",
    "and", "another", "any", "anyhow", "anyone", "anything", "anyway", "anywhere", "are", "around", "as", "at",
    "back", "be", "became", "because", "become", "becomes", "becoming", "been", "before", "beforehand",
    "behind", "being", "below", "beside", "besides", "between", "beyond", "bill", "both", "bottom", "but",
    "by", "call", "can", "cannot", "cant", "co", "con", "could", "couldnt", "cry", "de", "describe", "detail",
    "do", "done", "down", "due", "during", "each", "eg", "eight", "either", "eleven", "else", "elsewhere",
    "empty", "enough", "etc", "even", "ever", "every", "everyone", "everything", "everywhere", "except", "few",
    "fifteen", "fifty", "fill", "find", "fire", "first", "five", "for", "former", "formerly", "forty", "found",
    "four", "from", "front", "full", "further", "get", "give", "go", "had", "has", "hasnt", "have", "he",
    "hence", "her", "here", "hereafter", "hereby", "herein", "hereupon", "hers", "herself", "him", "himself",
    "his", "how", "however", "hundred", "i", "ie", "if", "in", "inc", "indeed", "interest", "into", "is", "it",
    "its", "itself", "keep", "last", "latter", "latterly", "least", "less", "ltd", "made", "many", "may", "me",
    "meanwhile", "might", "mill", "mine", "more", "moreover", "most", "mostly", "move", "much", "must", "my",
    "myself", "name", "namely", "neither", "never", "nevertheless", "next", "nine", "no", "nobody", "none",
    "noone", "nor", "not", "nothing", "now", "nowhere", "of", "off", "often", "on", "once", "one", "only",
    "onto", "or", "other", "others", "otherwise", "our", "ours", "ourselves", "out", "over", "own", "part",
    "per", "perhaps", "please", "put", "rather", "re", "same", "see", "seem", "seemed", "seeming", "seems",
    "serious", "several", "she", "should", "show", "side", "since", "sincere", "six", "sixty", "so", "some",
    "somehow", "someone", "something", "sometime", "sometimes", "somewhere", "still", "such", "system", "take",
    "ten", "than", "that", "the", "their", "them", "themselves", "then", "thence", "there", "thereafter",
    "thereby", "therefore", "therein", "thereupon", "these", "they", "thick", "thin", "third", "this", "those",
    "though", "three", "through", "throughout", "thru", "thus", "to", "together", "too", "top", "toward",
    "towards", "twelve", "twenty", "two", "un", "under", "until", "up", "upon", "us", "very", "via", "was",
    "we", "well", "were", "what", "whatever", "when", "whence", "whenever", "where", "whereafter", "whereas",
    "whereby", "wherein", "whereupon", "wherever", "whether", "which", "while", "whither", "who", "whoever",
    "whole", "whom", "whose", "why", "will", "with", "within", "without", "would", "yet", "you", "your",
    "yours", "yourself", "yourselves"
  };
  return words;
}

std::string real_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// `n` ids of `docs` chosen by a permutation seeded by `seed`: {chosen, rest}, each in reading order.
std::pair<std::vector<int64_t>, std::vector<int64_t>> choose(int64_t total, int64_t n, uint64_t seed) {
  const auto perm = seeded_permutation(total, seed);
  std::vector<int64_t> chosen(perm.begin(), perm.begin() + n), rest(perm.begin() + n, perm.end());
  std::sort(chosen.begin(), chosen.end());
  std::sort(rest.begin(), rest.end());
  return {chosen, rest};
}

// Rows of (index, tokens padded with −1) as an int64 tensor [rows, 1 + width].
torch::Tensor padded_rows(const std::vector<std::pair<int64_t, const std::vector<int64_t>*>>& rows) {
  size_t width = 0;
  for (const auto& r : rows) width = std::max(width, r.second->size());
  auto out = torch::full({static_cast<int64_t>(rows.size()), static_cast<int64_t>(width) + 1}, -1, torch::kInt64);
  auto a = out.accessor<int64_t, 2>();
  for (size_t i = 0; i < rows.size(); ++i) {
    a[i][0] = rows[i].first;
    for (size_t j = 0; j < rows[i].second->size(); ++j) a[i][j + 1] = (*rows[i].second)[j];
  }
  return out;
}

// Document completion points of the held-out documents `ids` (the header's val/test tensors).
Batch completion_points(const BowCorpus& corpus, const std::vector<int64_t>& ids, double observed_fraction,
                        uint64_t seed, int64_t& predicted_tokens) {
  std::vector<std::vector<int64_t>> observed(ids.size()), points;
  std::vector<int64_t> point_doc;
  for (size_t d = 0; d < ids.size(); ++d) {
    const auto& tokens = corpus.docs[static_cast<size_t>(ids[d])];
    const auto n = static_cast<int64_t>(tokens.size());
    const auto perm = seeded_permutation(n, seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(ids[d]));
    const int64_t seen = std::clamp<int64_t>(std::llround(observed_fraction * static_cast<double>(n)), 1, n - 1);
    for (int64_t i = 0; i < seen; ++i) observed[d].push_back(tokens[static_cast<size_t>(perm[i])]);
    std::sort(observed[d].begin(), observed[d].end());
    for (int64_t i = seen; i < n; ++i) {  // the word to predict, then the observed half
      points.push_back({tokens[static_cast<size_t>(perm[i])]});
      points.back().insert(points.back().end(), observed[d].begin(), observed[d].end());
      point_doc.push_back(static_cast<int64_t>(d));
    }
  }
  predicted_tokens = static_cast<int64_t>(points.size());
  if (points.empty()) return Batch{};
  std::vector<std::pair<int64_t, const std::vector<int64_t>*>> rows;
  for (size_t i = 0; i < points.size(); ++i) rows.emplace_back(point_doc[i], &points[i]);
  return Batch{padded_rows(rows), torch::zeros({predicted_tokens}, torch::kInt64)};
}

}  // namespace

BowCorpus read_uci_bow(const std::string& docword_path, const std::string& vocab_path) {
  const auto lines = lines_of(read_all(docword_path));
  int64_t header[3] = {0, 0, 0};
  size_t at = 0;
  for (int h = 0; h < 3; ++h) {
    while (at < lines.size() && lines[at].find_first_not_of(" \t") == std::string::npos) ++at;
    std::istringstream in(at < lines.size() ? lines[at] : "");
    std::string token, extra;
    if (!(in >> token) || !whole_number(token, header[h]) || (in >> extra))
      fail_at(docword_path, static_cast<int64_t>(at + 1),
              std::string("expected the header's ") + (h == 0 ? "document count D" : h == 1 ? "vocabulary size W" : "entry count NNZ") +
                  " (a docword file starts with D, W and NNZ, one a line)");
    ++at;
  }
  const int64_t D = header[0], W = header[1];
  if (D < 1 || W < 1) fail_at(docword_path, 1, "D and W must be >= 1");
  std::vector<std::vector<int64_t>> docs(static_cast<size_t>(D));
  int64_t entries = 0;
  for (; at < lines.size(); ++at) {
    std::istringstream in(lines[at]);
    std::string t[4];
    if (!(in >> t[0])) continue;
    int64_t v[3];
    const auto lineno = static_cast<int64_t>(at + 1);
    if (!(in >> t[1] >> t[2]) || (in >> t[3]) || !whole_number(t[0], v[0]) || !whole_number(t[1], v[1]) ||
        !whole_number(t[2], v[2]))
      fail_at(docword_path, lineno, "expected 'docID wordID count' (three whole numbers), got '" + lines[at] + "'");
    if (v[0] < 1 || v[0] > D) fail_at(docword_path, lineno, "docID " + t[0] + " is outside 1.." + std::to_string(D));
    if (v[1] < 1 || v[1] > W) fail_at(docword_path, lineno, "wordID " + t[1] + " is outside 1.." + std::to_string(W));
    if (v[2] < 1 || v[2] > 1000000) fail_at(docword_path, lineno, "count " + t[2] + " is outside 1..1000000");
    auto& doc = docs[static_cast<size_t>(v[0] - 1)];
    doc.insert(doc.end(), static_cast<size_t>(v[2]), v[1] - 1);
    ++entries;
  }
  if (entries != header[2])
    fail_at(docword_path, 3, "the header says " + std::to_string(header[2]) + " entries, the file has " +
                                 std::to_string(entries));
  BowCorpus c;
  if (!vocab_path.empty()) {
    for (auto& w : lines_of(read_all(vocab_path))) {
      const auto b = w.find_first_not_of(" \t"), e = w.find_last_not_of(" \t");
      if (b != std::string::npos) c.vocab.push_back(w.substr(b, e - b + 1));
    }
    if (static_cast<int64_t>(c.vocab.size()) != W)
      throw std::invalid_argument(vocab_path + ": " + std::to_string(c.vocab.size()) + " words, but " + docword_path +
                                  " declares W = " + std::to_string(W));
  } else {
    for (int64_t w = 1; w <= W; ++w) c.vocab.push_back("w" + std::to_string(w));
  }
  for (auto& d : docs) {
    if (d.size() < 2) ++c.dropped_docs;
    else c.docs.push_back(std::move(d));
  }
  return c;
}

std::vector<std::string> tokenize(const std::string& line, int64_t min_length, bool drop_stop_words) {
  std::vector<std::string> out;
  std::string word;
  auto flush = [&] {
    if (static_cast<int64_t>(word.size()) >= min_length && !(drop_stop_words && english_stop_words().count(word)))
      out.push_back(word);
    word.clear();
  };
  for (char ch : line) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalpha(c) && c < 128) word += static_cast<char>(std::tolower(c));
    else flush();
  }
  flush();
  return out;
}

BowCorpus read_text_corpus(const std::string& path, const TextCorpusOptions& o) {
  std::vector<std::vector<std::string>> docs;
  std::map<std::string, int64_t> doc_freq;
  for (const auto& line : lines_of(read_all(path))) {
    docs.push_back(tokenize(line, o.min_length, o.stop_words));
    for (const auto& w : std::set<std::string>(docs.back().begin(), docs.back().end())) ++doc_freq[w];
  }
  BowCorpus c;
  std::unordered_map<std::string, int64_t> id;
  for (const auto& [w, n] : doc_freq)  // std::map: the vocabulary comes out sorted
    if (n >= o.min_docs) {
      id[w] = static_cast<int64_t>(c.vocab.size());
      c.vocab.push_back(w);
    }
  for (const auto& d : docs) {
    std::vector<int64_t> tokens;
    for (const auto& w : d)
      if (auto it = id.find(w); it != id.end()) tokens.push_back(it->second);
    if (tokens.size() < 2) ++c.dropped_docs;
    else c.docs.push_back(std::move(tokens));
  }
  if (c.docs.empty())
    throw std::invalid_argument(path + ": no document keeps 2 tokens after tokenizing (" + std::to_string(docs.size()) +
                                " lines read)");
  return c;
}

void cap_vocabulary(BowCorpus& c, int64_t max_words) {
  const auto W = static_cast<int64_t>(c.vocab.size());
  if (max_words <= 0 || max_words >= W) return;
  std::vector<int64_t> freq(static_cast<size_t>(W), 0), order(static_cast<size_t>(W));
  for (const auto& d : c.docs)
    for (auto w : d) ++freq[static_cast<size_t>(w)];
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return freq[a] > freq[b]; });
  std::vector<char> keep(static_cast<size_t>(W), 0);
  for (int64_t i = 0; i < max_words; ++i) keep[static_cast<size_t>(order[i])] = 1;
  std::vector<int64_t> id(static_cast<size_t>(W), -1);
  std::vector<std::string> vocab;
  for (int64_t w = 0; w < W; ++w)
    if (keep[w]) id[w] = static_cast<int64_t>(vocab.size()), vocab.push_back(c.vocab[w]);
  std::vector<std::vector<int64_t>> docs;
  for (const auto& d : c.docs) {
    std::vector<int64_t> t;
    for (auto w : d)
      if (id[w] >= 0) t.push_back(id[w]);
    if (t.size() < 2) ++c.dropped_docs;
    else docs.push_back(std::move(t));
  }
  c.vocab = std::move(vocab);
  c.docs = std::move(docs);
}

void chunk_documents(BowCorpus& c, int64_t tokens) {
  if (tokens <= 0) return;
  std::vector<std::vector<int64_t>> docs;
  for (const auto& d : c.docs)
    for (size_t begin = 0; begin < d.size(); begin += static_cast<size_t>(tokens)) {
      const size_t end = std::min(d.size(), begin + static_cast<size_t>(tokens));
      if (end - begin < 2) ++c.dropped_docs;
      else docs.emplace_back(d.begin() + static_cast<std::ptrdiff_t>(begin), d.begin() + static_cast<std::ptrdiff_t>(end));
    }
  c.docs = std::move(docs);
}

void BowOptions::validate(const std::string& where) const {
  if (path_.empty()) throw std::invalid_argument(where + ".path: required for data.format: bow (a corpus file)");
  if (layout_ != "text" && layout_ != "docword")
    throw std::invalid_argument(where + ".layout: must be text or docword, got '" + layout_ + "'");
  if (!vocab_.empty() && layout_ != "docword")
    throw std::invalid_argument(where + ".vocab: only for layout: docword (a text corpus makes its own vocabulary)");
  if (!(test_fraction_ > 0 && test_fraction_ < 1))
    throw std::invalid_argument(where + ".test_fraction: must be in (0, 1), got " + real_text(test_fraction_));
  if (!(observed_fraction_ > 0 && observed_fraction_ < 1))
    throw std::invalid_argument(where + ".observed_fraction: must be in (0, 1), got " + real_text(observed_fraction_));
  if (split_seed_ < 0) throw std::invalid_argument(where + ".split_seed: must be >= 0, got " + std::to_string(split_seed_));
  if (min_length_ < 1) throw std::invalid_argument(where + ".min_length: must be >= 1, got " + std::to_string(min_length_));
  if (min_docs_ < 1) throw std::invalid_argument(where + ".min_docs: must be >= 1, got " + std::to_string(min_docs_));
  if (stop_words_ != "english" && stop_words_ != "none")
    throw std::invalid_argument(where + ".stop_words: must be english or none, got '" + stop_words_ + "'");
  if (max_words_ < 0) throw std::invalid_argument(where + ".max_words: must be >= 0, got " + std::to_string(max_words_));
  if (chunk_tokens_ < 0 || chunk_tokens_ == 1)
    throw std::invalid_argument(where + ".chunk_tokens: must be 0 or >= 2, got " + std::to_string(chunk_tokens_));
  if (chunk_tokens_ > 0 && layout_ != "text")
    throw std::invalid_argument(where + ".chunk_tokens: only for layout: text (a docword file has no token order)");
}

std::vector<OptionDoc> bow_option_docs() {
  const BowOptions d;
  return {
      {"path", "text", "(required)", "the corpus: a text file, one document a line, or a UCI docword file", {}, ""},
      {"layout", "choice", d.layout(), "text | docword (UCI bag-of-words: D, W, NNZ, then docID wordID count)",
       {"text", "docword"}, ""},
      {"vocab", "text", "(none)", "layout docword: the vocab file, one word a line", {}, ""},
      {"test_fraction", "real", real_text(d.test_fraction()), "the share of documents held out for testing", {},
       "in (0, 1)"},
      {"split_seed", "integer", std::to_string(d.split_seed()), "seeds the document split and the completion halves", {},
       ">= 0"},
      {"observed_fraction", "real", real_text(d.observed_fraction()),
       "the share of a held-out document's tokens observed (document completion); the rest are predicted", {},
       "in (0, 1)"},
      {"min_length", "integer", std::to_string(d.min_length()), "layout text: the shortest token kept (letters)", {},
       ">= 1"},
      {"min_docs", "integer", std::to_string(d.min_docs()), "layout text: keep words in at least this many documents",
       {}, ">= 1"},
      {"stop_words", "choice", d.stop_words(), "layout text: english (scikit-learn's 318 words) | none",
       {"english", "none"}, ""},
      {"max_words", "integer", std::to_string(d.max_words()), "the vocabulary capped at its most frequent words (0: all)",
       {}, ">= 0"},
      {"chunk_tokens", "integer", std::to_string(d.chunk_tokens()),
       "layout text: each document cut into consecutive pieces of this many tokens (0: whole documents)", {},
       "0 or >= 2"},
  };
}

BowOptions parse_bow_options(const OptionMap& o) {
  const std::string where = o.context().empty() ? "data" : o.context();
  BowOptions b;
  b.path(o.get_string("path", ""))
      .layout(o.get_choice("layout", b.layout(), {"text", "docword"}))
      .vocab(o.get_string("vocab", ""))
      .test_fraction(o.get_double("test_fraction", b.test_fraction()))
      .split_seed(o.get_int("split_seed", b.split_seed()))
      .observed_fraction(o.get_double("observed_fraction", b.observed_fraction()))
      .min_length(o.get_int("min_length", b.min_length()))
      .min_docs(o.get_int("min_docs", b.min_docs()))
      .stop_words(o.get_choice("stop_words", b.stop_words(), {"english", "none"}))
      .max_words(o.get_int("max_words", b.max_words()))
      .chunk_tokens(o.get_int("chunk_tokens", b.chunk_tokens()));
  b.validate(where);
  return b;
}

Dataset bow_dataset(const BowCorpus& corpus, const BowOptions& o, int64_t val_size, uint64_t seed,
                    const std::string& name, const std::string& where) {
  const auto D = static_cast<int64_t>(corpus.docs.size());
  const auto n_test = static_cast<int64_t>(std::llround(o.test_fraction() * static_cast<double>(D)));
  if (n_test < 1 || n_test >= D)
    throw std::invalid_argument(where + ".test_fraction: " + real_text(o.test_fraction()) + " of " + std::to_string(D) +
                                " documents leaves no test or no training document");
  auto [test_ids, rest] = choose(D, n_test, static_cast<uint64_t>(o.split_seed()));
  const int64_t n_val = val_size >= 0 ? val_size : static_cast<int64_t>(rest.size()) / 6;
  if (n_val >= static_cast<int64_t>(rest.size()))
    throw std::invalid_argument(where + ".val_size: " + std::to_string(n_val) + " of " + std::to_string(rest.size()) +
                                " training documents leaves none to train on");
  auto [val_pos, train_pos] = choose(static_cast<int64_t>(rest.size()), n_val, seed * 2654435761ULL + 17);
  std::vector<int64_t> val_ids, train_ids;
  for (auto p : val_pos) val_ids.push_back(rest[static_cast<size_t>(p)]);
  for (auto p : train_pos) train_ids.push_back(rest[static_cast<size_t>(p)]);

  Dataset ds;
  ds.task = Task::kClassification;
  std::vector<std::pair<int64_t, const std::vector<int64_t>*>> train_rows;
  int64_t train_tokens = 0;
  for (size_t i = 0; i < train_ids.size(); ++i) {
    train_rows.emplace_back(static_cast<int64_t>(i), &corpus.docs[static_cast<size_t>(train_ids[i])]);
    train_tokens += static_cast<int64_t>(train_rows.back().second->size());
  }
  ds.train = Batch{padded_rows(train_rows), torch::zeros({static_cast<int64_t>(train_rows.size())}, torch::kInt64)};
  int64_t val_tokens = 0, test_tokens = 0;
  const auto split_seed = static_cast<uint64_t>(o.split_seed());
  if (!val_ids.empty()) ds.val = completion_points(corpus, val_ids, o.observed_fraction(), split_seed, val_tokens);
  ds.test = completion_points(corpus, test_ids, o.observed_fraction(), split_seed, test_tokens);
  const auto W = static_cast<int64_t>(corpus.vocab.size());
  ds.num_classes = 2;  // a held-out token's point: its word (class 0) or not (data/bow.h)
  ds.dims = {{"words", W}, {"classes", 2}, {"documents", static_cast<int64_t>(train_ids.size())},
             {"val_documents", static_cast<int64_t>(val_ids.size())}};
  std::string vocab;
  for (const auto& w : corpus.vocab) vocab += w + "\n";
  ds.run_files["vocab.txt"] = vocab;
  ds.description = name + " (bow): " + std::to_string(train_ids.size()) + " train / " + std::to_string(val_ids.size()) +
                   " val / " + std::to_string(test_ids.size()) + " test documents, " + std::to_string(W) + " words, " +
                   std::to_string(train_tokens) + " training tokens, " + std::to_string(val_tokens) + " / " +
                   std::to_string(test_tokens) + " val / test tokens to predict" +
                   (corpus.dropped_docs > 0 ? ", " + std::to_string(corpus.dropped_docs) + " documents under 2 tokens dropped"
                                            : "");
  return ds;
}

Dataset load_bow_dataset(const BowOptions& o, int64_t val_size, uint64_t seed, const std::string& where) {
  BowCorpus corpus = o.layout() == "docword"
                         ? read_uci_bow(o.path(), o.vocab())
                         : read_text_corpus(o.path(), {o.min_length(), o.min_docs(), o.stop_words() == "english"});
  cap_vocabulary(corpus, o.max_words());
  chunk_documents(corpus, o.chunk_tokens());
  if (corpus.docs.size() < 2)
    throw std::invalid_argument(o.path() + ": fewer than 2 documents keep 2 tokens (after data.max_words, chunk_tokens)");
  return bow_dataset(corpus, o, val_size, seed, std::filesystem::path(o.path()).filename().string(), where);
}

}  // namespace sgmcmc
