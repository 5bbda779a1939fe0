#include "tools/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace kiln::tools {

LatencyStats ComputeStats(std::vector<double> ms) {
  LatencyStats s;
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  s.min = ms.front();
  s.max = ms.back();
  s.median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  const size_t rank = static_cast<size_t>(std::ceil(0.9 * static_cast<double>(n)));
  s.p90 = ms[std::max<size_t>(rank, 1) - 1];
  s.mean = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(n);
  return s;
}

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string DimsString(const std::vector<int64_t>& dims) {
  if (dims.empty()) return "scalar";
  std::string out;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out += 'x';
    out += dims[i] < 0 ? std::string("?") : std::to_string(dims[i]);
  }
  return out;
}

}  // namespace kiln::tools
