#include "kernels/ref/strings.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace kiln::ref {

std::string AsciiLower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

std::string AsciiUpper(std::string s) {
  for (char& c : s)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return s;
}

Status StringNormalize(const Tensor& x, CaseChange action, bool case_sensitive,
                       const std::vector<std::string>& stopwords, Tensor* y) {
  if (x.dtype() != DType::kString)
    return Status::Error("StringNormalizer needs string input, got ", DescribeTensor(x));
  const bool two_d = x.rank() == 2;
  if (!(x.rank() == 1 || (two_d && x.dim(0) == 1)))
    return Status::Error("StringNormalizer input must be [C] or [1, C], got ", DescribeTensor(x));
  std::unordered_set<std::string> stops;
  for (const std::string& w : stopwords) stops.insert(case_sensitive ? w : AsciiLower(w));
  std::vector<std::string> kept;
  for (const std::string& s : x.strings()) {
    if (!stops.empty() && stops.count(case_sensitive ? s : AsciiLower(s))) continue;
    switch (action) {
      case CaseChange::kLower: kept.push_back(AsciiLower(s)); break;
      case CaseChange::kUpper: kept.push_back(AsciiUpper(s)); break;
      case CaseChange::kNone: kept.push_back(s); break;
    }
  }
  if (kept.empty()) kept.emplace_back();
  const int64_t c = static_cast<int64_t>(kept.size());
  *y = Tensor(DType::kString, two_d ? std::vector<int64_t>{1, c} : std::vector<int64_t>{c});
  y->strings() = std::move(kept);
  return Status::Ok();
}

Expected<int64_t> TfIdfOutputSize(const TfIdfConfig& cfg) {
  if (!cfg.pool_int64s.empty() && !cfg.pool_strings.empty())
    return Status::Error("TfIdfVectorizer has both pool_int64s and pool_strings");
  if (cfg.min_gram < 1 || cfg.max_gram < cfg.min_gram)
    return Status::Error("TfIdfVectorizer gram lengths [", cfg.min_gram, ", ", cfg.max_gram,
                         "] must satisfy 1 <= min_gram_length <= max_gram_length");
  if (cfg.max_skip < 0)
    return Status::Error("TfIdfVectorizer max_skip_count ", cfg.max_skip, " is negative");
  const int64_t pool = static_cast<int64_t>(
      cfg.pool_strings.empty() ? cfg.pool_int64s.size() : cfg.pool_strings.size());
  int64_t grams = 0;
  for (size_t i = 0; i < cfg.ngram_counts.size(); ++i) {
    const int64_t begin = cfg.ngram_counts[i];
    const int64_t end = i + 1 < cfg.ngram_counts.size() ? cfg.ngram_counts[i + 1] : pool;
    const int64_t size = static_cast<int64_t>(i) + 1;
    if (begin < 0 || end < begin || end > pool || (end - begin) % size != 0)
      return Status::Error("TfIdfVectorizer ngram_counts ", DimsToString(cfg.ngram_counts),
                           " do not split a pool of ", pool, " items into ", size, "-grams");
    grams += (end - begin) / size;
  }
  if (static_cast<int64_t>(cfg.ngram_indexes.size()) != grams)
    return Status::Error("TfIdfVectorizer has ", cfg.ngram_indexes.size(),
                         " ngram_indexes for ", grams, " n-grams in the pool");
  int64_t width = 0;
  for (int64_t idx : cfg.ngram_indexes) {
    if (idx < 0 || idx >= (int64_t{1} << 32))
      return Status::Error("TfIdfVectorizer ngram index ", idx, " is out of range");
    width = std::max(width, idx + 1);
  }
  if (!cfg.weights.empty() && static_cast<int64_t>(cfg.weights.size()) < width)
    return Status::Error("TfIdfVectorizer has ", cfg.weights.size(), " weights for ", width,
                         " output columns");
  return width;
}

namespace {

using Gram = std::vector<int64_t>;

// The pool's n-grams of lengths in [min_gram, max_gram] -> output column. String pools are
// mapped to their item's first position so input and pool compare as integers.
std::map<Gram, int64_t> PoolGrams(const TfIdfConfig& cfg,
                                  const std::unordered_map<std::string, int64_t>& ids) {
  std::map<Gram, int64_t> out;
  const bool strings = !cfg.pool_strings.empty();
  int64_t k = 0;
  for (size_t i = 0; i < cfg.ngram_counts.size(); ++i) {
    const int64_t size = static_cast<int64_t>(i) + 1;
    const int64_t pool = static_cast<int64_t>(strings ? cfg.pool_strings.size()
                                                      : cfg.pool_int64s.size());
    const int64_t end = i + 1 < cfg.ngram_counts.size() ? cfg.ngram_counts[i + 1] : pool;
    for (int64_t p = cfg.ngram_counts[i]; p + size <= end; p += size, ++k) {
      if (size < cfg.min_gram || size > cfg.max_gram) continue;
      Gram g;
      for (int64_t j = 0; j < size; ++j)
        g.push_back(strings ? ids.at(cfg.pool_strings[p + j]) : cfg.pool_int64s[p + j]);
      out.emplace(std::move(g), cfg.ngram_indexes[k]);
    }
  }
  return out;
}

}  // namespace

Status TfIdfVectorize(const Tensor& x, const TfIdfConfig& cfg, Tensor* y) {
  KILN_ASSIGN_OR_RETURN(const int64_t width, TfIdfOutputSize(cfg));
  const DType t = x.dtype();
  const bool is_string = t == DType::kString;
  if (!is_string && t != DType::kInt32 && t != DType::kInt64)
    return Status::Error("TfIdfVectorizer needs int32, int64 or string input, got ",
                         DescribeTensor(x));
  if ((is_string && !cfg.pool_int64s.empty()) || (!is_string && !cfg.pool_strings.empty()))
    return Status::Error("TfIdfVectorizer input ", DescribeTensor(x),
                         " does not match the kind of its pool");
  if (x.rank() != 1 && x.rank() != 2)
    return Status::Error("TfIdfVectorizer input must be [C] or [N, C], got ", DescribeTensor(x));
  const int64_t rows = x.rank() == 2 ? x.dim(0) : 1;
  const int64_t cols = x.rank() == 2 ? x.dim(1) : x.dim(0);
  std::vector<int64_t> out_dims = x.rank() == 2 ? std::vector<int64_t>{rows, width}
                                                : std::vector<int64_t>{width};
  KILN_ASSIGN_OR_RETURN(*y, Tensor::Make(DType::kFloat32, out_dims, "TfIdfVectorizer output"));

  std::unordered_map<std::string, int64_t> ids;
  for (size_t i = 0; i < cfg.pool_strings.size(); ++i)
    ids.emplace(cfg.pool_strings[i], static_cast<int64_t>(i));
  const std::map<Gram, int64_t> grams = PoolGrams(cfg, ids);
  // Longer grams than the pool holds can never match: this bounds the work on hostile lengths.
  int64_t longest = 0;
  for (const auto& [g, col] : grams) longest = std::max<int64_t>(longest, g.size());
  const int64_t max_gram = std::min(cfg.max_gram, longest);

  std::vector<int64_t> keys(cols), counts(width);
  float* out = y->data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t i = r * cols + c;
      if (is_string) {
        auto it = ids.find(x.strings()[i]);
        keys[c] = it == ids.end() ? -1 : it->second;
      } else {
        keys[c] = x.AsInt64(i);
      }
    }
    std::fill(counts.begin(), counts.end(), 0);
    // A skip distance of cols or more leaves room for unigrams only, which count once.
    const int64_t max_dist = std::min(cfg.max_skip + 1, std::max<int64_t>(cols, 1));
    int64_t min_size = cfg.min_gram;
    for (int64_t dist = 1; dist <= max_dist && min_size <= max_gram; ++dist) {
      for (int64_t start = 0; start < cols; ++start) {
        Gram g;
        for (int64_t n = 1; n <= max_gram; ++n) {
          const int64_t at = start + dist * (n - 1);
          if (at >= cols) break;
          g.push_back(keys[at]);
          if (n < min_size) continue;
          auto it = grams.find(g);
          if (it != grams.end()) ++counts[it->second];
        }
      }
      if (min_size == 1) min_size = 2;
    }
    for (int64_t col = 0; col < width; ++col) {
      const float w = cfg.weights.empty() ? 1.0f : cfg.weights[col];
      const int64_t n = counts[col];
      float v = static_cast<float>(n);
      if (cfg.mode == TfIdfMode::kIdf) v = n > 0 ? w : 0.0f;
      if (cfg.mode == TfIdfMode::kTfIdf) v = w * static_cast<float>(n);
      out[r * width + col] = v;
    }
  }
  return Status::Ok();
}

}  // namespace kiln::ref
