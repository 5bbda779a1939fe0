#include "tools/inputs.h"

#include "tools/npy.h"

namespace kiln::tools {
namespace {

// Random inputs are a convenience; a declared shape above this is refused rather than filled.
constexpr int64_t kMaxRandomInputBytes = int64_t{1} << 30;

}  // namespace

Expected<Tensor> RandomInput(const ir::Value& v, std::mt19937& rng) {
  std::vector<int64_t> dims;
  if (v.type.shape)
    for (const ir::Dim& d : *v.type.shape) dims.push_back(d.is_static() ? d.value : -1);
  return RandomInput(v.name, v.type.dtype, dims, rng);
}

Expected<Tensor> RandomInput(const std::string& name, DType dtype, std::vector<int64_t> dims,
                             std::mt19937& rng) {
  for (int64_t& d : dims) d = d < 0 ? 1 : d;
  const std::string what = StrCat("random input '", name, "'");
  if (dtype == DType::kString || dtype == DType::kUndefined || IsContainer(dtype))
    return Status::Error(what, ": cannot make random ", DTypeName(dtype), " data; pass --input");
  KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Make(dtype, dims, what));
  if (static_cast<int64_t>(t.nbytes()) > kMaxRandomInputBytes)
    return Status::Error(what, ": ", DescribeTensor(t), " is too large to fill; pass --input");
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_int_distribution<int> small(0, 2);
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (t.dtype()) {
      case DType::kFloat32: t.data<float>()[i] = normal(rng); break;
      case DType::kFloat64: t.data<double>()[i] = normal(rng); break;
      case DType::kFloat16: t.data<uint16_t>()[i] = FloatToHalf(normal(rng)); break;
      case DType::kBool: t.data<bool>()[i] = small(rng) != 0; break;
      default:
        KILN_DISPATCH_INTEGER(t.dtype(), T, break, t.data<T>()[i] = static_cast<T>(small(rng)));
    }
  }
  return t;
}

Expected<interp::NamedTensors> MakeInputs(const ir::Graph& graph,
                                          const std::vector<std::string>& specs) {
  std::vector<InputInfo> infos;
  for (const ir::Value* v : graph.inputs) {
    InputInfo info{v->name, v->type.dtype, v->type.shape.has_value(), {}};
    if (v->type.shape)
      for (const ir::Dim& d : *v->type.shape) info.dims.push_back(d.is_static() ? d.value : -1);
    infos.push_back(std::move(info));
  }
  return MakeInputs(infos, specs);
}

Expected<interp::NamedTensors> MakeInputs(const std::vector<InputInfo>& model_inputs,
                                          const std::vector<std::string>& specs) {
  interp::NamedTensors inputs;
  for (const std::string& spec : specs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      return Status::Error("--input must be NAME=FILE.npy, got '", spec, "'");
    KILN_ASSIGN_OR_RETURN(Tensor t, ReadNpy(spec.substr(eq + 1)));
    inputs[spec.substr(0, eq)] = std::move(t);
  }
  if (specs.empty()) {
    std::mt19937 rng(42);
    for (const InputInfo& v : model_inputs) {
      KILN_ASSIGN_OR_RETURN(Tensor t, RandomInput(v.name, v.dtype, v.dims, rng));
      inputs[v.name] = std::move(t);
    }
  }
  return inputs;
}

}  // namespace kiln::tools
