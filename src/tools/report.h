// Small pieces shared by `kiln bench` and `kiln profile`: latency statistics and JSON strings.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kiln::tools {

struct LatencyStats {
  double min = 0, median = 0, p90 = 0, max = 0, mean = 0;
};

// Median of an even count is the mean of the two middle values; p90 is the nearest rank
// (ceil(0.9 n)-th smallest), as onnxruntime_perf_test reports it. Empty input gives zeros.
LatencyStats ComputeStats(std::vector<double> ms);

// `s` as a JSON string literal, quotes included.
std::string JsonString(std::string_view s);

// Dims as "1x3x224x224" ("scalar" for rank 0, '?' for an unknown dim).
std::string DimsString(const std::vector<int64_t>& dims);

}  // namespace kiln::tools
