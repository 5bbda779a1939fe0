#include "lower/fuse_residual.h"

#include <string>
#include <vector>

#include "kernels/conv/conv.h"
#include "support/status.h"
#include "lower/switches.h"

namespace kiln::lower {
namespace {

using runtime::Module;
using runtime::Step;
using runtime::ValueInfo;

bool HasString(const Step& s, const char* key, const std::string& want) {
  const auto it = s.params.strings.find(key);
  return it != s.params.strings.end() && it->second == want;
}

// A conv step that can take the add: no activation of its own yet (it would come before the
// sum), one input, and an algorithm whose epilogue reads its output first.
bool AccumulatingConv(const Step& s) {
  if (s.kernel != "conv2d" || s.inputs.size() != 1 || s.outputs.size() != 1 ||
      s.params.ints.count("residual") ||
      !HasString(s, "activation", gemm::ActivationName(gemm::Activation::kNone)))
    return false;
  const auto it = s.params.strings.find("algorithm");
  if (it == s.params.strings.end()) return false;
  const std::optional<conv::Algorithm> a = conv::AlgorithmFromName(it->second);
  return a && conv::SupportsAccumulate(*a);
}

// A float tensor of known dims computed or bound at run time (a constant Z would be an add of a
// bias: not a residual).
bool StaticFloatDims(const ValueInfo& v) {
  if (v.dtype != DType::kFloat32 || !v.rank_known || v.kind == runtime::ValueKind::kConstant)
    return false;
  for (int64_t d : v.dims)
    if (d < 0) return false;
  return true;
}

}  // namespace

void DropStepsAndValues(Module& m, const std::vector<bool>& dead_step,
                        const std::vector<bool>& dead) {
  std::vector<Step> steps;
  steps.reserve(m.steps.size());
  for (size_t s = 0; s < m.steps.size(); ++s)
    if (!dead_step[s]) steps.push_back(std::move(m.steps[s]));
  m.steps = std::move(steps);
  std::vector<int32_t> new_id(m.values.size(), -1);
  std::vector<ValueInfo> kept;
  kept.reserve(m.values.size());
  for (size_t i = 0; i < m.values.size(); ++i) {
    if (dead[i]) continue;
    new_id[i] = static_cast<int32_t>(kept.size());
    kept.push_back(std::move(m.values[i]));
  }
  m.values = std::move(kept);
  auto remap = [&](std::vector<int32_t>& ids) {
    for (int32_t& id : ids)
      if (id >= 0) id = new_id[id];
  };
  remap(m.inputs);
  remap(m.outputs);
  for (Step& s : m.steps) {
    remap(s.inputs);
    remap(s.outputs);
  }
}

bool ResidualFusionEnabled() {
  return SwitchOn("KILN_FUSE_RESIDUAL");
}

Expected<size_t> FuseResidualAdds(Module& m) {
  const size_t nv = m.values.size();
  std::vector<int> readers(nv, 0);
  std::vector<int32_t> producer(nv, -1), reader(nv, -1);  // reader: the last step reading it
  std::vector<bool> is_output(nv, false);
  for (int32_t id : m.outputs)
    if (id >= 0 && static_cast<size_t>(id) < nv) is_output[id] = true;
  for (size_t s = 0; s < m.steps.size(); ++s) {
    for (int32_t id : m.steps[s].inputs) {
      if (id < 0 || static_cast<size_t>(id) >= nv) continue;
      ++readers[id];
      reader[id] = static_cast<int32_t>(s);
    }
    for (int32_t id : m.steps[s].outputs)
      if (id >= 0 && static_cast<size_t>(id) < nv) producer[id] = static_cast<int32_t>(s);
  }
  // A value that one step alone reads and that the caller never sees.
  auto private_to = [&](int32_t id, int32_t step) {
    return readers[id] == 1 && reader[id] == step && !is_output[id];
  };

  std::vector<bool> dead_step(m.steps.size(), false), dead_value(nv, false);
  size_t folded = 0;
  for (size_t a = 0; a < m.steps.size(); ++a) {
    const Step& add = m.steps[a];
    if (add.kernel != "eltwise_binary" || !HasString(add, "op", "add") ||
        add.inputs.size() != 2 || add.outputs.size() != 1 || add.outputs[0] < 0)
      continue;
    const auto ai = static_cast<int32_t>(a);
    for (size_t k = 0; k < 2; ++k) {
      const int32_t v = add.inputs[k], z = add.inputs[1 - k];
      if (v < 0 || z < 0 || v == z || producer[v] < 0 || dead_step[producer[v]]) continue;
      const Step& conv = m.steps[producer[v]];
      if (!AccumulatingConv(conv) || !private_to(v, ai)) continue;
      if (!StaticFloatDims(m.values[v]) || !StaticFloatDims(m.values[z]) ||
          m.values[v].dims != m.values[z].dims)
        continue;
      // A Relu that alone reads the sum becomes the fused step's activation.
      const int32_t sum = add.outputs[0];
      int32_t relu = -1;
      if (private_to(sum, reader[sum])) {
        const Step& r = m.steps[reader[sum]];
        if (r.kernel == "eltwise_unary" && HasString(r, "ops", "relu") && r.inputs.size() == 1 &&
            r.outputs.size() == 1 && r.outputs[0] >= 0)
          relu = reader[sum];
      }
      Step fused = m.steps[producer[v]];
      dead_step[producer[v]] = true;
      fused.inputs.push_back(z);
      fused.params.ints["residual"] = 1;
      fused.op = StrCat(fused.op, "+Add", relu >= 0 ? "+Relu" : "");
      fused.name = StrCat(fused.name, "+", add.name);
      dead_value[v] = true;
      if (relu >= 0) {
        fused.params.strings["activation"] = gemm::ActivationName(gemm::Activation::kRelu);
        fused.outputs = {m.steps[relu].outputs[0]};
        dead_value[sum] = true;
        dead_step[relu] = true;
        producer[fused.outputs[0]] = ai;
      } else {
        fused.outputs = {sum};
      }
      // The add's place: X and Z are both ready there, and nothing before it read V.
      m.steps[a] = std::move(fused);
      ++folded;
      break;
    }
  }
  if (folded == 0) return folded;
  DropStepsAndValues(m, dead_step, dead_value);
  return folded;
}

}  // namespace kiln::lower
