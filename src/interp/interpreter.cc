#include "interp/interpreter.h"

#include <chrono>
#include <exception>
#include <new>
#include <unordered_map>

#include "ops/op_registry.h"

namespace kiln::interp {
namespace {

// Values visible while running one graph; subgraphs chain to the scope that runs them so that
// outer-scope names resolve by name.
class Scope {
 public:
  explicit Scope(const Scope* parent) : parent_(parent) {}
  void Set(const ir::Value* v, Tensor t) {
    by_value_[v] = t;
    by_name_[v->name] = std::move(t);
  }
  const Tensor* Find(const ir::Value* v) const {
    auto it = by_value_.find(v);
    if (it != by_value_.end()) return &it->second;
    if (v->constant) return &*v->constant;
    return parent_ ? parent_->FindName(v->name) : nullptr;
  }

 private:
  const Tensor* FindName(const std::string& name) const {
    auto it = by_name_.find(name);
    if (it != by_name_.end()) return &it->second;
    return parent_ ? parent_->FindName(name) : nullptr;
  }
  const Scope* parent_;
  std::unordered_map<const ir::Value*, Tensor> by_value_;
  std::unordered_map<std::string, Tensor> by_name_;
};

bool IsHalf(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }

Tensor ConvertHalf(const Tensor& in, DType to) {
  Tensor out(to, in.dims());
  const int64_t n = in.numel();
  if (to == DType::kFloat32) {
    const uint16_t* s = in.data<uint16_t>();
    float* d = out.data<float>();
    for (int64_t i = 0; i < n; ++i)
      d[i] = in.dtype() == DType::kFloat16 ? HalfToFloat(s[i]) : BFloat16ToFloat(s[i]);
  } else {
    const float* s = in.data<float>();
    uint16_t* d = out.data<uint16_t>();
    for (int64_t i = 0; i < n; ++i)
      d[i] = to == DType::kFloat16 ? FloatToHalf(s[i]) : FloatToBFloat16(s[i]);
  }
  return out;
}

Status RunGraph(const ir::Graph& graph, const Scope* parent, const std::vector<Tensor>& inputs,
                std::vector<Tensor>* outputs, const RunOptions* options = nullptr);

Status RunNode(const ir::Node& node, Scope& scope) {
  const ops::OpDef* def = ops::FindOp(node.domain, node.op_type);
  if (def == nullptr) return Status::Error(node.Where(), "op is not supported");

  ops::RunContext ctx{node, {}, {}, {}};
  std::vector<Tensor> widened;  // keeps float32 copies of half inputs alive during the call
  widened.reserve(node.inputs.size());
  DType half_type = DType::kUndefined;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const ir::Value* v = node.inputs[i];
    if (v == nullptr) {
      ctx.inputs.push_back(nullptr);
      continue;
    }
    const Tensor* t = scope.Find(v);
    if (t == nullptr)
      return Status::Error(node.Where(), "input '", v->name, "' has no value when the node runs");
    if (def->promote_half && IsHalf(t->dtype())) {
      half_type = t->dtype();
      widened.push_back(ConvertHalf(*t, DType::kFloat32));
      t = &widened.back();
    }
    ctx.inputs.push_back(t);
  }
  ctx.outputs.resize(node.outputs.size());
  ctx.run_subgraph = [&scope](const ir::Graph& body, const std::vector<Tensor>& body_inputs,
                              std::vector<Tensor>* body_outputs) {
    return RunGraph(body, &scope, body_inputs, body_outputs);
  };

  // The safety net for allocation failure and any library exception: an error, never a crash.
  Status st;
  try {
    st = def->run(ctx);
  } catch (const std::bad_alloc&) {
    st = ctx.Error("out of memory");
  } catch (const std::exception& e) {
    st = ctx.Error("internal error: ", e.what());
  }
  if (!st.ok()) return st;

  for (size_t i = 0; i < node.outputs.size(); ++i) {
    const ir::Value* v = node.outputs[i];
    if (v == nullptr) continue;
    Tensor& out = ctx.outputs[i];
    if (!out.defined()) return Status::Error(node.Where(), "produced no output '", v->name, "'");
    if (half_type != DType::kUndefined && out.dtype() == DType::kFloat32)
      out = ConvertHalf(out, half_type);
    scope.Set(v, std::move(out));
  }
  return Status::Ok();
}

Status RunGraph(const ir::Graph& graph, const Scope* parent, const std::vector<Tensor>& inputs,
                std::vector<Tensor>* outputs, const RunOptions* options) {
  Scope scope(parent);
  if (inputs.size() > graph.inputs.size())
    return Status::Error("graph '", graph.name, "' takes ", graph.inputs.size(),
                         " inputs, got ", inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) scope.Set(graph.inputs[i], inputs[i]);
  const bool timed = options != nullptr && options->on_node;
  for (const auto& node : graph.nodes()) {
    const auto start = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    KILN_RETURN_IF_ERROR(RunNode(*node, scope));
    if (timed)
      options->on_node(*node, std::chrono::duration<double, std::milli>(
                                  std::chrono::steady_clock::now() - start).count());
  }
  outputs->clear();
  for (const ir::Value* v : graph.outputs) {
    const Tensor* t = scope.Find(v);
    if (t == nullptr) return Status::Error("graph output '", v->name, "' was never produced");
    outputs->push_back(*t);
  }
  return Status::Ok();
}

// Checks one input against its declared type, binding symbolic dims consistently.
Status CheckInput(const ir::Value& v, const Tensor& t,
                  std::unordered_map<std::string, int64_t>* symbols) {
  if (t.dtype() != v.type.dtype)
    return Status::Error("input '", v.name, "' must be ", DTypeName(v.type.dtype), ", got ",
                         DTypeName(t.dtype()));
  if (!v.type.shape) return Status::Ok();
  const auto& shape = *v.type.shape;
  if (static_cast<int64_t>(shape.size()) != t.rank())
    return Status::Error("input '", v.name, "' must have shape ", v.type.ToString(), ", got ",
                         DescribeTensor(t));
  for (size_t i = 0; i < shape.size(); ++i) {
    const ir::Dim& d = shape[i];
    if (d.is_static() && d.value != t.dim(i))
      return Status::Error("input '", v.name, "' must have shape ", v.type.ToString(), ", got ",
                           DescribeTensor(t));
    if (!d.is_static() && !d.symbol.empty()) {
      auto [it, inserted] = symbols->emplace(d.symbol, t.dim(i));
      if (!inserted && it->second != t.dim(i))
        return Status::Error("input '", v.name, "' dim ", i, " ('", d.symbol, "') is ", t.dim(i),
                             " but another input bound '", d.symbol, "' to ", it->second);
    }
  }
  return Status::Ok();
}

}  // namespace

Status Run(const ir::Graph& graph, const NamedTensors& inputs, std::vector<Tensor>* outputs,
           const RunOptions& options) {
  KILN_RETURN_IF_ERROR(ops::CheckSupported(graph));
  std::unordered_map<std::string, int64_t> symbols;
  std::vector<Tensor> ordered;
  for (const ir::Value* v : graph.inputs) {
    auto it = inputs.find(v->name);
    if (it == inputs.end()) {
      if (v->constant) {  // an input with an initializer default (IR < 4 style)
        ordered.push_back(*v->constant);
        continue;
      }
      return Status::Error("missing input '", v->name, "' (", v->type.ToString(), ")");
    }
    if (options.check_input_shapes) {
      KILN_RETURN_IF_ERROR(CheckInput(*v, it->second, &symbols));
    } else if (it->second.dtype() != v->type.dtype) {
      return Status::Error("input '", v->name, "' must be ", DTypeName(v->type.dtype), ", got ",
                           DTypeName(it->second.dtype()));
    }
    ordered.push_back(it->second);
  }
  for (const auto& [name, t] : inputs) {
    bool known = false;
    for (const ir::Value* v : graph.inputs) known = known || v->name == name;
    if (!known) return Status::Error("'", name, "' is not an input of the model");
  }
  return RunGraph(graph, nullptr, ordered, outputs, &options);
}

}  // namespace kiln::interp
