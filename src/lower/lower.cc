#include "lower/lower.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "ir/printer.h"
#include "lower/fuse_bn_pool.h"
#include "lower/fuse_residual.h"
#include "lower/layout.h"
#include "lower/native.h"
#include "lower/op_flops.h"
#include "passes/graph_edit.h"
#include "runtime/kernel_registry.h"

namespace kiln::lower {

std::optional<std::vector<int64_t>> StaticFloatDims(const ir::Value* v) {
  if (v == nullptr || v->type.dtype != DType::kFloat32 || !v->type.has_static_shape())
    return std::nullopt;
  return v->type.static_dims();
}

std::optional<std::vector<int64_t>> BatchFreeFloatDims(const ir::Value* v) {
  if (v == nullptr || v->type.dtype != DType::kFloat32 || !v->type.shape ||
      v->type.shape->empty())
    return std::nullopt;
  std::vector<int64_t> dims;
  for (size_t i = 0; i < v->type.shape->size(); ++i) {
    const ir::Dim& d = (*v->type.shape)[i];
    if (!d.is_static() && i != 0) return std::nullopt;
    dims.push_back(d.is_static() ? d.value : -1);
  }
  return dims;
}

namespace {

using runtime::Module;
using runtime::Step;
using runtime::ValueInfo;
using runtime::ValueKind;

constexpr std::span<const NativeLowering> (*kFamilies[])() = {
    ConvLowerings, GemmLowerings, EltwiseLowerings, PoolLowerings, TensorLowerings};

// Values a node reads: its inputs, and the names its subgraphs read from the enclosing scope.
std::vector<const ir::Value*> NodeReads(const ir::Graph& g, const ir::Node& n) {
  std::vector<const ir::Value*> reads;
  for (const ir::Value* in : n.inputs)
    if (in) reads.push_back(in);
  for (const std::string& name : passes::NamesReadBySubgraphs(n))
    if (const ir::Value* v = g.FindValue(name)) reads.push_back(v);
  return reads;
}

// Sequences and optionals have no native kernel or planned buffer: a node that reads or
// writes one always runs in a reference partition, on the interpreter.
bool TouchesContainer(const ir::Node& n) {
  for (const ir::Value* v : n.inputs)
    if (v && v->type.is_container()) return true;
  for (const ir::Value* v : n.outputs)
    if (v && v->type.is_container()) return true;
  return false;
}

class Lowerer final : public LowerContext {
 public:
  Lowerer(const ir::Graph& graph, const LowerOptions& options)
      : graph_(graph), options_(options) {}

  IsaLevel isa() const override { return options_.isa; }
  bool measure_algorithms() const override { return options_.measure_algorithms; }
  bool PreferBlocked(const ir::Node& node) const override { return blocked_convs_.count(&node); }

  Expected<int32_t> ValueId(const ir::Value* v) override {
    if (v == nullptr) return -1;
    if (auto it = ids_.find(v); it != ids_.end()) return it->second;
    ValueInfo info;
    info.name = v->name;
    info.dtype = v->type.dtype;
    info.rank_known = v->type.shape.has_value();
    if (v->constant) {
      const Tensor& t = *v->constant;
      if (t.dtype() == DType::kString)
        return Status::Error("constant '", v->name, "' is a string tensor, which a compiled "
                             "module cannot hold outside a reference partition");
      if (IsContainer(t.dtype()))
        return Status::Error("constant '", v->name, "' is a ", DTypeName(t.dtype()),
                             ", which a compiled module cannot hold");
      info.dtype = t.dtype();
      info.rank_known = true;
      info.dims = t.dims();
      info.dim_params.assign(t.dims().size(), "");
      info.kind = ValueKind::kConstant;
      info.blob = AddBlob({static_cast<const std::byte*>(t.raw()), t.nbytes()});
    } else {
      if (info.dtype == DType::kUndefined)
        return Status::Error("value '", v->name, "' has no known element type");
      if (info.rank_known)
        for (const ir::Dim& d : *v->type.shape) {
          info.dims.push_back(d.is_static() ? d.value : -1);
          info.dim_params.push_back(d.is_static() ? "" : d.symbol);
        }
      info.kind = v->is_graph_input ? ValueKind::kInput : ValueKind::kActivation;
    }
    module_.values.push_back(std::move(info));
    const auto id = static_cast<int32_t>(module_.values.size() - 1);
    ids_[v] = id;
    return id;
  }

  int32_t AddBlob(std::span<const std::byte> bytes) override {
    return weights_.Add(module_, bytes);
  }

  void AddStep(Step step) override { pending_native_.push_back(std::move(step)); }

  Expected<Module> Run(LowerReport* report) {
    module_.isa = options_.isa;
    module_.producer = options_.producer;
    for (const ir::Value* in : graph_.inputs) {
      KILN_ASSIGN_OR_RETURN(int32_t id, ValueId(in));
      module_.inputs.push_back(id);
    }
    CountReaders();
    if (options_.native && LayoutPlanningEnabled())
      blocked_convs_ = ChooseBlockedConvs(graph_, options_.isa);
    std::unordered_set<const ir::Value*> defined;
    for (const auto& v : graph_.values())
      if (v->constant || v->is_graph_input) defined.insert(v.get());
    for (size_t i = 0; i < graph_.nodes().size(); ++i) {
      const ir::Node& node = *graph_.nodes()[i];
      for (const ir::Value* in : NodeReads(graph_, node))
        if (!defined.count(in))
          return Status::Error(node.Where(), "reads '", in->name,
                               "' before it is computed (the graph is not topologically sorted)");
      for (const ir::Value* out : node.outputs)
        if (out) defined.insert(out);
      bool claimed = false;
      if (options_.native && !TouchesContainer(node)) {
        for (auto family : kFamilies) {
          for (NativeLowering lower : family()) {
            auto r = lower(node, *this);
            if (!r.ok()) return r.status().WithContext(node.Where());
            if (*r) {
              claimed = true;
              break;
            }
            pending_native_.clear();  // a lowering that declined must not leave steps behind
          }
          if (claimed) break;
        }
      }
      if (claimed) {
        // The profiler's GFLOP/s: the node's work, counted once on its (first) step.
        if (!pending_native_.empty() && !pending_native_[0].params.floats.count("flops"))
          pending_native_[0].params.floats["flops"] = NodeFlops(node);
        KILN_RETURN_IF_ERROR(FlushPartition());
        for (Step& s : pending_native_) module_.steps.push_back(std::move(s));
        if (report) report->native_steps += pending_native_.size();
        pending_native_.clear();
        done_.insert(&node);
      } else {
        partition_.push_back(&node);
      }
    }
    KILN_RETURN_IF_ERROR(FlushPartition());
    if (report) {
      report->reference_steps = partition_steps_;
      report->reference_nodes = partition_nodes_;
    }
    for (const ir::Value* out : graph_.outputs) {
      KILN_ASSIGN_OR_RETURN(int32_t id, ValueId(out));
      module_.outputs.push_back(id);
    }
    // Keeps chains of NCHWc convs blocked; it follows the algorithms the lowerings chose
    // (blocked_convs_ among them).
    if (options_.native && LayoutPlanningEnabled()) {
      LayoutReport layout;
      KILN_RETURN_IF_ERROR(PlanBlockedLayout(module_, &layout));
      if (report) report->native_steps += layout.reorders;
    }
    // On final layouts: an Add's operands then share the conv output's dims and layout.
    if (options_.native && ResidualFusionEnabled()) {
      const size_t before = module_.steps.size();
      KILN_RETURN_IF_ERROR(FuseResidualAdds(module_).status());
      if (report) report->native_steps -= before - module_.steps.size();
    }
    // DenseNet's transitions: BN -> ReLU -> 2x2 average pool in one pass.
    if (options_.native && BnPoolFusionEnabled()) {
      const size_t before = module_.steps.size();
      KILN_RETURN_IF_ERROR(FuseBatchNormPool(module_).status());
      if (report) report->native_steps -= before - module_.steps.size();
    }
    weights_.Finish(module_);
    KILN_RETURN_IF_ERROR(module_.Validate().WithContext("lowering produced a bad module: "));
    return std::move(module_);
  }

 private:
  // How many nodes read each value (subgraph reads included), and which values are outputs.
  void CountReaders() {
    for (const auto& n : graph_.nodes())
      for (const ir::Value* v : NodeReads(graph_, *n)) readers_[v].push_back(n.get());
    for (const ir::Value* v : graph_.outputs) graph_outputs_.insert(v);
  }

  // Emits the nodes gathered so far as one reference-partition step: a graph whose inputs are
  // the values they read from outside (numeric constants included, so the module's weights hold
  // them once, in binary) and whose outputs are the values read after it or by the caller.
  Status FlushPartition() {
    if (partition_.empty()) return Status::Ok();
    std::unordered_set<const ir::Node*> members(partition_.begin(), partition_.end());
    ir::Graph part;
    part.name = "partition";
    part.opset_imports = graph_.opset_imports;
    std::unordered_map<const ir::Value*, ir::Value*> map;
    Step step;
    step.kernel = std::string(runtime::kReferencePartitionKernel);
    auto bind_input = [&](const ir::Value* v) -> Status {
      if (map.count(v)) return Status::Ok();
      if (v->constant && v->constant->dtype() == DType::kString) {
        KILN_ASSIGN_OR_RETURN(ir::Value * c, part.AddValue(v->name, v->type));
        c->constant = *v->constant;
        map[v] = c;
        return Status::Ok();
      }
      KILN_ASSIGN_OR_RETURN(ir::Value * in, part.AddValue(v->name, v->type));
      if (v->constant) in->type = ir::ValueType::Of(v->constant->dtype(), v->constant->dims());
      in->is_graph_input = true;
      part.inputs.push_back(in);
      map[v] = in;
      KILN_ASSIGN_OR_RETURN(int32_t id, ValueId(v));
      step.inputs.push_back(id);
      return Status::Ok();
    };
    for (const ir::Node* n : partition_) {
      for (const ir::Value* in : NodeReads(graph_, *n))
        if (!in->producer || !members.count(in->producer)) KILN_RETURN_IF_ERROR(bind_input(in));
      auto copy = std::make_unique<ir::Node>();
      copy->op_type = n->op_type;
      copy->domain = n->domain;
      copy->name = n->name;
      copy->opset = n->opset;
      copy->attrs = n->attrs;  // subgraphs are shared, not copied: printing only reads them
      for (const ir::Value* in : n->inputs) copy->inputs.push_back(in ? map.at(in) : nullptr);
      for (const ir::Value* out : n->outputs) {
        if (!out) {
          copy->outputs.push_back(nullptr);
          continue;
        }
        KILN_ASSIGN_OR_RETURN(ir::Value * o, part.AddValue(out->name, out->type));
        map[out] = o;
        copy->outputs.push_back(o);
      }
      ir::Node* added = part.AddNode(std::move(copy));
      for (ir::Value* o : added->outputs)
        if (o) o->producer = added;
    }
    for (const ir::Node* n : partition_)
      for (const ir::Value* out : n->outputs) {
        if (!out) continue;
        bool needed = graph_outputs_.count(out) > 0;
        for (const ir::Node* r : readers_[out]) needed = needed || !members.count(r);
        if (!needed) continue;
        part.outputs.push_back(map.at(out));
        KILN_ASSIGN_OR_RETURN(int32_t id, ValueId(out));
        step.outputs.push_back(id);
      }
    std::string names, ops;
    double flops = 0;
    for (const ir::Node* n : partition_) {
      const double f = NodeFlops(*n);
      flops = (flops < 0 || f < 0) ? -1 : flops + f;
      names += StrCat(names.empty() ? "" : ",", n->name);
      if (ops.find(n->op_type) == std::string::npos)
        ops += StrCat(ops.empty() ? "" : "+", n->op_type);
    }
    step.name = names;
    step.op = ops;
    ir::PrintOptions print;
    print.full_constants = true;
    step.params.strings["ir"] = ir::PrintGraph(part, print);
    step.params.floats["flops"] = flops;
    ++partition_steps_;
    partition_nodes_ += partition_.size();
    // A partition whose outputs nobody reads (dead nodes left by -O0) still runs, as the
    // reference interpreter would run it.
    module_.steps.push_back(std::move(step));
    for (const ir::Node* n : partition_) done_.insert(n);
    partition_.clear();
    return Status::Ok();
  }

  const ir::Graph& graph_;
  const LowerOptions& options_;
  Module module_;
  runtime::WeightWriter weights_;
  std::unordered_map<const ir::Value*, int32_t> ids_;
  std::unordered_map<const ir::Value*, std::vector<const ir::Node*>> readers_;
  std::unordered_set<const ir::Value*> graph_outputs_;
  std::unordered_set<const ir::Node*> blocked_convs_;  // ChooseBlockedConvs
  std::vector<Step> pending_native_;
  std::vector<const ir::Node*> partition_;
  std::unordered_set<const ir::Node*> done_;
  size_t partition_steps_ = 0;
  size_t partition_nodes_ = 0;
};

}  // namespace

Expected<Module> Lower(const ir::Graph& graph, const LowerOptions& options, LowerReport* report) {
  if (report) *report = {};
  Lowerer lowerer(graph, options);
  return lowerer.Run(report);
}

}  // namespace kiln::lower
