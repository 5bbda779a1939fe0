#include "kernels/ref/einsum.h"

#include <algorithm>
#include <cctype>
#include <type_traits>

#include "kernels/ref/broadcast.h"
#include "support/tensor.h"

namespace kiln::ref {
namespace {

// Labels: 'A'-'Z' are 0-25 and 'a'-'z' 26-51 (so sorting ids sorts as ASCII does, which is the
// implicit output's order); ellipsis dims are 52 + j, right-aligned across operands.
constexpr int kEllipsisBase = 52;
constexpr int kEllipsisMarker = -1;
// The reference loops over every label combination; beyond this it would not finish.
constexpr int64_t kMaxIterations = int64_t{1} << 34;

Expected<std::vector<int>> ParseTerm(const std::string& term) {
  std::vector<int> labels;
  bool seen_ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    const char c = term[i];
    if (c >= 'A' && c <= 'Z') {
      labels.push_back(c - 'A');
    } else if (c >= 'a' && c <= 'z') {
      labels.push_back(26 + c - 'a');
    } else if (c == '.' && term.compare(i, 3, "...") == 0 && !seen_ellipsis) {
      seen_ellipsis = true;
      labels.push_back(kEllipsisMarker);
      i += 2;
    } else {
      return Status::Error("Einsum term '", term, "' has an unexpected '", c, "'");
    }
  }
  return labels;
}

}  // namespace

Expected<EinsumPlan> PlanEinsum(const std::string& equation,
                                const std::vector<std::vector<int64_t>>& shapes) {
  std::string eq;
  for (char c : equation)
    if (!std::isspace(static_cast<unsigned char>(c))) eq += c;
  const size_t arrow = eq.find("->");
  const bool explicit_out = arrow != std::string::npos;
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms(1);
  for (char c : lhs) {
    if (c == ',')
      terms.emplace_back();
    else
      terms.back() += c;
  }
  if (terms.size() != shapes.size())
    return Status::Error("equation '", equation, "' has ", terms.size(), " operand terms but ",
                         shapes.size(), " inputs were given");

  // Expand each term to one label per dim.
  std::vector<std::vector<int>> labels(shapes.size());
  int64_t ellipsis_rank = 0;
  std::vector<std::vector<int>> parsed;
  for (size_t i = 0; i < terms.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(std::vector<int> t, ParseTerm(terms[i]));
    const bool has_ell = std::count(t.begin(), t.end(), kEllipsisMarker) > 0;
    const int64_t letters = static_cast<int64_t>(t.size()) - (has_ell ? 1 : 0);
    const int64_t rank = static_cast<int64_t>(shapes[i].size());
    if (has_ell ? rank < letters : rank != letters)
      return Status::Error("Einsum term '", terms[i], "' does not fit input ", i, " of shape ",
                           DimsToString(shapes[i]));
    if (has_ell) ellipsis_rank = std::max(ellipsis_rank, rank - letters);
    parsed.push_back(std::move(t));
  }
  std::vector<int64_t> size(kEllipsisBase + ellipsis_rank, -1);
  std::vector<int> count(size.size(), 0);
  for (size_t i = 0; i < parsed.size(); ++i) {
    const int64_t rank = static_cast<int64_t>(shapes[i].size());
    const int64_t e = rank - (static_cast<int64_t>(parsed[i].size()) -
                              (std::count(parsed[i].begin(), parsed[i].end(), kEllipsisMarker)));
    for (int l : parsed[i]) {
      if (l != kEllipsisMarker) {
        labels[i].push_back(l);
        continue;
      }
      for (int64_t t = 0; t < e; ++t)
        labels[i].push_back(kEllipsisBase + static_cast<int>(ellipsis_rank - e + t));
    }
    for (int64_t d = 0; d < rank; ++d) {
      const int l = labels[i][d];
      const int64_t dim = shapes[i][d];
      ++count[l];
      if (size[l] < 0 || size[l] == dim) {
        size[l] = dim;
      } else if (l >= kEllipsisBase && (size[l] == 1 || dim == 1)) {
        size[l] = std::max(size[l], dim);
      } else {
        return Status::Error("Einsum label sizes disagree: ", size[l], " vs ", dim, " in input ", i,
                             " of shape ", DimsToString(shapes[i]));
      }
    }
  }

  std::vector<int> out_labels;
  if (explicit_out) {
    KILN_ASSIGN_OR_RETURN(std::vector<int> rhs, ParseTerm(eq.substr(arrow + 2)));
    for (int l : rhs) {
      if (l == kEllipsisMarker) {
        for (int64_t t = 0; t < ellipsis_rank; ++t)
          out_labels.push_back(kEllipsisBase + static_cast<int>(t));
        continue;
      }
      if (count[l] == 0)
        return Status::Error("Einsum output label '", eq.substr(arrow + 2),
                             "' uses a label no input has");
      if (std::find(out_labels.begin(), out_labels.end(), l) != out_labels.end())
        return Status::Error("Einsum output '", eq.substr(arrow + 2), "' repeats a label");
      out_labels.push_back(l);
    }
  } else {
    for (int64_t t = 0; t < ellipsis_rank; ++t)
      out_labels.push_back(kEllipsisBase + static_cast<int>(t));
    for (int l = 0; l < kEllipsisBase; ++l)
      if (count[l] == 1) out_labels.push_back(l);
  }

  EinsumPlan plan;
  std::vector<int> loop_labels = out_labels;
  for (int l = 0; l < static_cast<int>(size.size()); ++l)
    if (count[l] > 0 && std::find(out_labels.begin(), out_labels.end(), l) == out_labels.end())
      loop_labels.push_back(l);
  plan.num_out_loops = out_labels.size();
  int64_t work = 1;
  for (int l : loop_labels) {
    const int64_t s = std::max<int64_t>(size[l], 0);
    plan.loop_sizes.push_back(s);
    if (s != 0 && work > kMaxIterations / s)
      work = kMaxIterations + 1;
    else
      work *= s;
  }
  bool empty = std::count(plan.loop_sizes.begin(), plan.loop_sizes.end(), 0) > 0;
  if (!empty && work > kMaxIterations)
    return Status::Error("equation '", equation, "' needs more than ", kMaxIterations,
                         " multiply-adds, too many for the reference Einsum");
  for (size_t i = 0; i < out_labels.size(); ++i) plan.out_dims.push_back(plan.loop_sizes[i]);
  for (size_t i = 0; i < shapes.size(); ++i) {
    std::vector<int64_t> st(loop_labels.size(), 0);
    const std::vector<int64_t> dim_strides = Strides(shapes[i]);
    for (size_t d = 0; d < shapes[i].size(); ++d) {
      const int l = labels[i][d];
      if (shapes[i][d] == 1 && size[l] != 1) continue;  // broadcast along an ellipsis dim
      const size_t loop =
          std::find(loop_labels.begin(), loop_labels.end(), l) - loop_labels.begin();
      st[loop] += dim_strides[d];
    }
    plan.strides.push_back(std::move(st));
  }
  return plan;
}

template <class T>
void Einsum(const EinsumPlan& plan, const std::vector<const T*>& operands, T* y) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;
  auto widen = [](T v) -> Acc {
    if constexpr (std::is_floating_point_v<T>)
      return static_cast<Acc>(v);
    else
      return static_cast<Acc>(static_cast<int64_t>(v));
  };
  const size_t n_ops = operands.size(), n_out = plan.num_out_loops;
  const size_t n_loops = plan.loop_sizes.size();
  std::vector<int64_t> out_sizes(plan.loop_sizes.begin(), plan.loop_sizes.begin() + n_out);
  std::vector<int64_t> sum_sizes(plan.loop_sizes.begin() + n_out, plan.loop_sizes.end());
  std::vector<std::vector<int64_t>> out_strides(n_ops), sum_strides(n_ops);
  for (size_t i = 0; i < n_ops; ++i) {
    out_strides[i].assign(plan.strides[i].begin(), plan.strides[i].begin() + n_out);
    sum_strides[i].assign(plan.strides[i].begin() + n_out, plan.strides[i].begin() + n_loops);
  }
  int64_t out_numel = 1;
  for (int64_t s : out_sizes) out_numel *= s;
  if (out_numel == 0) return;
  const bool sum_empty = std::count(sum_sizes.begin(), sum_sizes.end(), 0) > 0;
  std::vector<int64_t> base(n_ops);
  for (BroadcastIter out_it(out_sizes, out_strides); !out_it.done(); out_it.next()) {
    Acc acc = 0;
    if (!sum_empty) {
      for (size_t i = 0; i < n_ops; ++i) base[i] = out_it.offset(i);
      for (BroadcastIter s(sum_sizes, sum_strides); !s.done(); s.next()) {
        Acc p = 1;
        for (size_t i = 0; i < n_ops; ++i) p *= widen(operands[i][base[i] + s.offset(i)]);
        acc += p;
      }
    }
    y[out_it.index()] = static_cast<T>(acc);
  }
}

template void Einsum<float>(const EinsumPlan&, const std::vector<const float*>&, float*);
template void Einsum<double>(const EinsumPlan&, const std::vector<const double*>&, double*);
template void Einsum<int32_t>(const EinsumPlan&, const std::vector<const int32_t*>&, int32_t*);
template void Einsum<int64_t>(const EinsumPlan&, const std::vector<const int64_t*>&, int64_t*);
template void Einsum<uint32_t>(const EinsumPlan&, const std::vector<const uint32_t*>&, uint32_t*);
template void Einsum<uint64_t>(const EinsumPlan&, const std::vector<const uint64_t*>&, uint64_t*);

}  // namespace kiln::ref
