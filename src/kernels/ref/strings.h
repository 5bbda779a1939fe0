// String kernels: StringNormalizer and TfIdfVectorizer (n-gram counting over ints or strings).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/status.h"
#include "support/tensor.h"

namespace kiln::ref {

enum class CaseChange { kNone, kLower, kUpper };

// Drops the elements of x ([C] or [1, C] strings) that equal a stopword (ASCII case folded when
// !case_sensitive), then changes case. Case mapping is ASCII only: bytes >= 0x80 (the rest of
// UTF-8) pass through unchanged. An empty result is one empty string ([1] or [1, 1]), as ONNX
// specifies.
Status StringNormalize(const Tensor& x, CaseChange action, bool case_sensitive,
                       const std::vector<std::string>& stopwords, Tensor* y);

// ASCII case mapping of one string (exposed for tests and for the stopword comparison).
std::string AsciiLower(std::string s);
std::string AsciiUpper(std::string s);

enum class TfIdfMode { kTf, kIdf, kTfIdf };

struct TfIdfConfig {
  TfIdfMode mode = TfIdfMode::kTf;
  int64_t min_gram = 1, max_gram = 1, max_skip = 0;
  // ngram_counts[i]: where the (i+1)-grams start in the pool; ngram_indexes[k]: the output column
  // of the k-th n-gram of the pool (in pool order).
  std::vector<int64_t> ngram_counts, ngram_indexes;
  std::vector<int64_t> pool_int64s;       // used when pool_strings is empty
  std::vector<std::string> pool_strings;  // for string input
  std::vector<float> weights;             // one per output column, or empty (all 1)
};

// Checks the config (pool layout, indexes, gram lengths) and returns the output row width:
// max(ngram_indexes) + 1.
Expected<int64_t> TfIdfOutputSize(const TfIdfConfig& cfg);

// x: int32, int64 or string, [C] or [N, C]; y: float32 [W] or [N, W]. Counts, per row, every
// pool n-gram of length in [min_gram, max_gram] made of items `skip + 1` apart, for each skip in
// [0, max_skip]; unigrams count once whatever the skip. The mode then weighs the counts.
Status TfIdfVectorize(const Tensor& x, const TfIdfConfig& cfg, Tensor* y);

}  // namespace kiln::ref
