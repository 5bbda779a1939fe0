#include "kernels/ref/broadcast.h"

#include <algorithm>

namespace kiln::ref {

Expected<std::vector<int64_t>> BroadcastDims(const std::vector<std::vector<int64_t>>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto& s : shapes) {
    for (size_t k = 0; k < s.size(); ++k) {
      int64_t& o = out[rank - s.size() + k];
      int64_t d = s[k];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      std::string msg = "shapes";
      for (const auto& t : shapes) msg += StrCat(" [", [&] {
          std::string r;
          for (size_t i = 0; i < t.size(); ++i) r += StrCat(i ? "," : "", t[i]);
          return r;
        }(), "]");
      return Status::Error(msg, " do not broadcast");
    }
  }
  return out;
}

std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& in,
                                      const std::vector<int64_t>& out) {
  std::vector<int64_t> s(out.size(), 0);
  std::vector<int64_t> is = Strides(in);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) s[off + i] = in[i] == 1 ? 0 : is[i];
  return s;
}

BroadcastIter::BroadcastIter(const std::vector<int64_t>& dims,
                             std::vector<std::vector<int64_t>> strides)
    : dims_(dims), pos_(dims.size(), 0), strides_(std::move(strides)),
      offsets_(strides_.size(), 0) {
  for (int64_t d : dims_)
    if (d == 0) done_ = true;
}

void BroadcastIter::next() {
  ++index_;
  for (size_t k = dims_.size(); k-- > 0;) {
    ++pos_[k];
    for (size_t o = 0; o < strides_.size(); ++o) offsets_[o] += strides_[o][k];
    if (pos_[k] < dims_[k]) return;
    for (size_t o = 0; o < strides_.size(); ++o) offsets_[o] -= strides_[o][k] * dims_[k];
    pos_[k] = 0;
  }
  done_ = true;
}

}  // namespace kiln::ref
