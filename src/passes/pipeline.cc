#include "passes/pipeline.h"

#include "passes/common_subexpression_elimination.h"
#include "passes/dead_code_elimination.h"
#include "passes/fold_batchnorm.h"
#include "passes/fold_constants.h"
#include "passes/fold_shape_computation.h"
#include "passes/fuse_conv_activation.h"
#include "passes/fuse_elementwise.h"
#include "passes/infer_shapes.h"
#include "passes/pool_before_conv1x1.h"
#include "passes/recognize_activations.h"
#include "passes/simplify_algebra.h"
#include "passes/simplify_channel_shuffle.h"

namespace kiln::passes {
namespace {

struct PassEntry {
  const char* name;
  std::unique_ptr<Pass> (*create)();
};

// Every pass, by name; explicit, no static self-registration.
constexpr PassEntry kPasses[] = {
    {"dead_code_elimination", CreateDeadCodeEliminationPass},
    {"common_subexpression_elimination", CreateCommonSubexpressionEliminationPass},
    {"fold_constants", CreateFoldConstantsPass},
    {"simplify_algebra", CreateSimplifyAlgebraPass},
    {"fold_shape_computation", CreateFoldShapeComputationPass},
    {"fold_batchnorm", CreateFoldBatchNormPass},
    {"recognize_activations", CreateRecognizeActivationsPass},
    {"fuse_conv_activation", CreateFuseConvActivationPass},
    {"fuse_elementwise", CreateFuseElementwisePass},
    {"simplify_channel_shuffle", CreateSimplifyChannelShufflePass},
    {"pool_before_conv1x1", CreatePoolBeforeConv1x1Pass},
    {"infer_shapes", CreateInferShapesPass},
};

void AddSimplification(std::vector<std::unique_ptr<Pass>>& p) {
  // First: Identity/Dropout/Cast removal lets the patterns below see producers directly.
  p.push_back(CreateSimplifyAlgebraPass());
  // Before fold_constants: Shape of a static value becomes the constant that starts a chain.
  p.push_back(CreateFoldShapeComputationPass());
  // After fold_shape_computation: folds Gather/Unsqueeze/Concat chains on the new constants.
  p.push_back(CreateFoldConstantsPass());
  // After fold_constants: Reshape/Expand targets are constants now, so their outputs (and
  // everything after them) get static dims, which simplify_algebra and lowering need.
  p.push_back(CreateInferShapesPass());
  // A second round on the dims inference just made static: Shape -> Gather -> Slice bounds
  // chains that read a Reshape's output (ShuffleNet's channel split) fold only now.
  p.push_back(CreateFoldShapeComputationPass());
  p.push_back(CreateFoldConstantsPass());
  p.push_back(CreateInferShapesPass());
  // Again after folding: Reshape targets are constant now, so same-shape Reshapes go.
  p.push_back(CreateSimplifyAlgebraPass());
  // After folding and simplification: equal constants and rewired inputs expose more matches.
  p.push_back(CreateCommonSubexpressionEliminationPass());
  // Last: collects what every pass above left unread.
  p.push_back(CreateDeadCodeEliminationPass());
}

}  // namespace

std::vector<std::unique_ptr<Pass>> BuildPipeline(int opt_level) {
  std::vector<std::unique_ptr<Pass>> p;
  if (opt_level <= 0) return p;  // -O0: the graph as imported, reference kernels only
  AddSimplification(p);
  if (opt_level == 1) return p;
  // -O2. After simplification: Identity/Dropout between Conv and BatchNormalization are gone
  // and weights computed by constant subgraphs are constants now.
  p.push_back(CreateFoldBatchNormPass());
  // After fold_batchnorm (a BN after the conv is in its weights, so the conv reads straight into
  // the pool) and before fuse_conv_activation: DenseNet's transitions pool before their 1x1s.
  p.push_back(CreatePoolBeforeConv1x1Pass());
  // After fold_batchnorm (BN gone, so the activation reads the Conv directly) and before
  // fuse_conv_activation: Sigmoid+Mul, HardSigmoid+Mul and erf GELU become the one-node
  // activations that fuse_conv_activation absorbs. After simplification: Identity and Cast
  // between the pieces of a GELU are gone.
  p.push_back(CreateRecognizeActivationsPass());
  // After fold_batchnorm and recognize_activations: Conv -> activation is adjacent and in one
  // piece. Before fuse_elementwise, so a chain never swallows an activation a Conv/Gemm takes.
  p.push_back(CreateFuseConvActivationPass());
  // Last fusion: merges what the Conv/Gemm epilogues did not take.
  p.push_back(CreateFuseElementwisePass());
  // After simplification (the shuffle's Reshape targets are constants, its dims static): one
  // copy per ShuffleNet block instead of a Concat and a Transpose.
  p.push_back(CreateSimplifyChannelShufflePass());
  // After the folding and fusions: the old weights, BatchNormalization parameters and GELU
  // constants are unread.
  p.push_back(CreateDeadCodeEliminationPass());
  // Last: the fused nodes' outputs get their dims from the fused ops' own inference, so every
  // value lowering sees is as static as the model allows.
  p.push_back(CreateInferShapesPass());
  // Then lowering: kernel choice, layout (blocked NCHWc), prepacking, memory plan. -O3 runs
  // these same passes; what it adds is measured algorithm choice during lowering.
  return p;
}

Expected<std::unique_ptr<Pass>> CreatePassByName(std::string_view name) {
  for (const PassEntry& e : kPasses)
    if (name == e.name) return e.create();
  std::string known;
  for (const PassEntry& e : kPasses) known += StrCat(known.empty() ? "" : ", ", e.name);
  return Status::Error("unknown pass '", name, "' (known: ", known, ")");
}

std::vector<std::string> PassNames() {
  std::vector<std::string> names;
  for (const PassEntry& e : kPasses) names.push_back(e.name);
  return names;
}

}  // namespace kiln::passes
