#include "lower/fuse_bn_pool.h"

#include <string>
#include <vector>

#include "kernels/gemm/gemm.h"
#include "lower/fuse_residual.h"
#include "lower/switches.h"

namespace kiln::lower {
namespace {

using runtime::Module;
using runtime::Step;
using runtime::ValueInfo;

bool ListIs(const Step& s, const char* key, const std::vector<int64_t>& want) {
  const auto it = s.params.int_lists.find(key);
  return it != s.params.int_lists.end() && it->second == want;
}

bool PoolableBatchNorm(const Step& s) {
  if (s.kernel != "batchnorm" || s.inputs.size() != 1 || s.outputs.size() != 1 ||
      s.params.ints.count("avgpool2x2"))
    return false;
  const auto it = s.params.strings.find("activation");
  return it == s.params.strings.end() ||
         it->second == gemm::ActivationName(gemm::Activation::kNone) ||
         it->second == gemm::ActivationName(gemm::Activation::kRelu);
}

bool Pool2x2(const Step& s) {
  return s.kernel == "avgpool2d" && s.inputs.size() == 1 && s.outputs.size() == 1 &&
         ListIs(s, "kernel", {2, 2}) && ListIs(s, "strides", {2, 2}) &&
         ListIs(s, "dilations", {1, 1}) && ListIs(s, "pads", {0, 0, 0, 0}) &&
         s.params.IntOr("ceil_mode", -1) == 0;
}

bool StaticNchw(const ValueInfo& v) {
  if (v.dtype != DType::kFloat32 || !v.rank_known || v.dims.size() != 4) return false;
  for (int64_t d : v.dims)
    if (d < 0) return false;
  return v.dims[2] >= 2 && v.dims[3] >= 2;
}

}  // namespace

bool BnPoolFusionEnabled() {
  return SwitchOn("KILN_FUSE_BN_POOL");
}

Expected<size_t> FuseBatchNormPool(Module& m) {
  const size_t nv = m.values.size();
  std::vector<int> readers(nv, 0);
  std::vector<int32_t> reader(nv, -1);
  std::vector<bool> is_output(nv, false);
  for (int32_t id : m.outputs)
    if (id >= 0 && static_cast<size_t>(id) < nv) is_output[id] = true;
  for (size_t s = 0; s < m.steps.size(); ++s) {
    for (int32_t id : m.steps[s].inputs) {
      if (id < 0 || static_cast<size_t>(id) >= nv) continue;
      ++readers[id];
      reader[id] = static_cast<int32_t>(s);
    }
  }
  std::vector<bool> dead_step(m.steps.size(), false), dead_value(nv, false);
  size_t folded = 0;
  for (size_t b = 0; b < m.steps.size(); ++b) {
    Step& bn = m.steps[b];
    if (!PoolableBatchNorm(bn)) continue;
    const int32_t x = bn.inputs[0], v = bn.outputs[0];
    if (x < 0 || v < 0 || static_cast<size_t>(x) >= nv || static_cast<size_t>(v) >= nv ||
        readers[v] != 1 || is_output[v] || !StaticNchw(m.values[x]))
      continue;
    const auto p = static_cast<size_t>(reader[v]);
    const Step& pool = m.steps[p];
    if (!Pool2x2(pool) || pool.inputs[0] != v || pool.outputs[0] < 0) continue;
    bn.outputs = pool.outputs;
    bn.params.ints["avgpool2x2"] = 1;
    bn.op = StrCat(bn.op, "+AveragePool");
    bn.name = StrCat(bn.name, "+", pool.name);
    dead_step[p] = true;
    dead_value[v] = true;
    ++folded;
  }
  if (folded == 0) return folded;
  DropStepsAndValues(m, dead_step, dead_value);
  return folded;
}

}  // namespace kiln::lower
