// Random ops: RandomUniform and RandomNormal, numpy-compatible when seeded (kernels/ref/random).
//
// Bernoulli, RandomUniformLike and RandomNormalLike are left out on purpose. The kernels exist
// (ref::Bernoulli reproduces numpy's binomial(1, p) draw for draw), but the ONNX backend cases
// for them were generated from numpy's global stream after the inputs had been drawn from it,
// not from RandomState(seed): even test_bernoulli_seed's expected output differs from what seed 0
// gives. Listing those ops would turn their cases into failures that no correct implementation
// can fix; with them absent, the cases report UNSUPPORTED. Adding them back is three table rows
// once the conformance runner can mark those cases as nondeterministic.
#include <cmath>

#include "kernels/ref/random.h"
#include "ops/families.h"
#include "ops/infer_util.h"

namespace kiln::ops {
namespace {

// The generator for a node: seeded from the `seed` attribute (numpy's RandomState(int(seed)),
// so only seeds in [0, 2^32) are accepted), else from the OS.
Expected<ref::NumpyRandom> MakeRng(const ir::Node& node) {
  ir::AttrReader reader(node);
  const float seed = reader.Float("seed", 0.0f);
  KILN_RETURN_IF_ERROR(reader.status());
  if (!reader.Has("seed")) return ref::NumpyRandom(std::random_device{}());
  if (!(seed >= 0.0f && seed < 4294967296.0f))
    return Status::Error(node.Where(), "seed ", seed, " must be in [0, 2^32)");
  return ref::NumpyRandom(static_cast<uint32_t>(std::trunc(seed)));
}

struct GeneratorAttrs {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  double a = 0, b = 1;  // low/high or mean/scale
};

Expected<GeneratorAttrs> ReadGenerator(const ir::Node& node, const char* a_name, float a_def,
                                       const char* b_name, float b_def) {
  ir::AttrReader reader(node);
  GeneratorAttrs g;
  g.dtype = static_cast<DType>(reader.Int("dtype", static_cast<int64_t>(DType::kFloat32)));
  g.shape = reader.Ints("shape");
  g.a = reader.Float(a_name, a_def);
  g.b = reader.Float(b_name, b_def);
  KILN_RETURN_IF_ERROR(reader.status());
  if (!reader.Has("shape")) return Status::Error(node.Where(), "attribute 'shape' is required");
  if (g.dtype != DType::kFloat32 && g.dtype != DType::kFloat64 && g.dtype != DType::kFloat16)
    return Status::Error(node.Where(), "dtype ", static_cast<int>(g.dtype),
                         " must be float16, float or double");
  if (auto n = CheckedNumel(g.shape, "shape"); !n.ok()) return n.status().WithContext(node.Where());
  return g;
}

Status InferGenerator(ir::Node& node, const char* a_name, float a_def, const char* b_name,
                      float b_def) {
  KILN_ASSIGN_OR_RETURN(GeneratorAttrs g, ReadGenerator(node, a_name, a_def, b_name, b_def));
  SetOutputType(node, 0, ValueType::Of(g.dtype, g.shape));
  return Status::Ok();
}

Status InferRandomUniform(ir::Node& node) {
  return InferGenerator(node, "low", 0.0f, "high", 1.0f);
}
Status InferRandomNormal(ir::Node& node) {
  return InferGenerator(node, "mean", 0.0f, "scale", 1.0f);
}

Status RunRandomUniform(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(GeneratorAttrs g, ReadGenerator(ctx.node, "low", 0.0f, "high", 1.0f));
  KILN_ASSIGN_OR_RETURN(ref::NumpyRandom rng, MakeRng(ctx.node));
  KILN_ASSIGN_OR_RETURN(ctx.outputs[0], Tensor::Make(g.dtype, g.shape, "RandomUniform output"));
  Status st = ref::FillUniform(rng, g.a, g.b, &ctx.outputs[0]);
  return st.ok() ? st : ctx.Error(st.message());
}

Status RunRandomNormal(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(GeneratorAttrs g, ReadGenerator(ctx.node, "mean", 0.0f, "scale", 1.0f));
  KILN_ASSIGN_OR_RETURN(ref::NumpyRandom rng, MakeRng(ctx.node));
  KILN_ASSIGN_OR_RETURN(ctx.outputs[0], Tensor::Make(g.dtype, g.shape, "RandomNormal output"));
  Status st = ref::FillNormal(rng, g.a, g.b, &ctx.outputs[0]);
  return st.ok() ? st : ctx.Error(st.message());
}

const OpDef kRandomOps[] = {
    {"", "RandomUniform", InferRandomUniform, RunRandomUniform, 1},
    {"", "RandomNormal", InferRandomNormal, RunRandomNormal, 1},
};

}  // namespace

std::span<const OpDef> RandomOps() { return kRandomOps; }

}  // namespace kiln::ops
