#include "ir/graph.h"

#include <set>
#include <sstream>

namespace kiln::ir {

ValueType ValueType::Of(DType t, const std::vector<int64_t>& dims) {
  ValueType vt;
  vt.dtype = t;
  vt.shape.emplace();
  for (int64_t d : dims) vt.shape->push_back(Dim::Static(d));
  return vt;
}

ValueType ValueType::Sequence(ValueType elem) {
  ValueType vt;
  vt.dtype = DType::kSequence;
  vt.elem = std::make_shared<const ValueType>(std::move(elem));
  return vt;
}

ValueType ValueType::Optional(ValueType elem) {
  ValueType vt;
  vt.dtype = DType::kOptional;
  vt.elem = std::make_shared<const ValueType>(std::move(elem));
  return vt;
}

const ValueType& ValueType::item() const {
  static const ValueType kUnknown;
  return elem ? *elem : kUnknown;
}

bool ValueType::has_static_shape() const {
  if (!shape) return false;
  for (const Dim& d : *shape)
    if (!d.is_static()) return false;
  return true;
}

std::vector<int64_t> ValueType::static_dims() const {
  std::vector<int64_t> out;
  if (shape)
    for (const Dim& d : *shape) out.push_back(d.value);
  return out;
}

std::string ValueType::ToString() const {
  if (is_container()) return StrCat(DTypeName(dtype), '(', item().ToString(), ')');
  std::ostringstream os;
  os << DTypeName(dtype);
  if (!shape) {
    os << "[*]";
    return os.str();
  }
  os << '[';
  for (size_t i = 0; i < shape->size(); ++i) {
    const Dim& d = (*shape)[i];
    if (i) os << ',';
    if (d.is_static()) os << d.value;
    else if (!d.symbol.empty()) os << d.symbol;
    else os << '?';
  }
  os << ']';
  return os.str();
}

const char* AttrKindName(Attribute::Kind k) {
  switch (k) {
    case Attribute::Kind::kFloat: return "float";
    case Attribute::Kind::kInt: return "int";
    case Attribute::Kind::kString: return "string";
    case Attribute::Kind::kTensor: return "tensor";
    case Attribute::Kind::kGraph: return "graph";
    case Attribute::Kind::kFloats: return "floats";
    case Attribute::Kind::kInts: return "ints";
    case Attribute::Kind::kStrings: return "strings";
    case Attribute::Kind::kTensors: return "tensors";
    case Attribute::Kind::kGraphs: return "graphs";
  }
  return "?";
}

const Attribute* Node::attr(const std::string& n) const {
  auto it = attrs.find(n);
  return it == attrs.end() ? nullptr : &it->second;
}

std::string Node::Where() const {
  return StrCat("node '", name, "' (", op_type, domain.empty() ? "" : "@", domain, ", opset ",
                opset, "): ");
}

const Attribute* AttrReader::Get(const std::string& n, Attribute::Kind kind) {
  const Attribute* a = node_.attr(n);
  if (a == nullptr) return nullptr;
  if (a->kind != kind) {
    if (status_.ok())
      status_ = Status::Error(node_.Where(), "attribute '", n, "' must be ", AttrKindName(kind),
                              ", got ", AttrKindName(a->kind));
    return nullptr;
  }
  return a;
}

int64_t AttrReader::Int(const std::string& n, int64_t def) {
  const Attribute* a = Get(n, Attribute::Kind::kInt);
  return a ? a->i : def;
}
float AttrReader::Float(const std::string& n, float def) {
  const Attribute* a = Get(n, Attribute::Kind::kFloat);
  return a ? a->f : def;
}
std::string AttrReader::String(const std::string& n, const std::string& def) {
  const Attribute* a = Get(n, Attribute::Kind::kString);
  return a ? a->s : def;
}
std::vector<int64_t> AttrReader::Ints(const std::string& n, std::vector<int64_t> def) {
  const Attribute* a = Get(n, Attribute::Kind::kInts);
  return a ? a->ints : def;
}
std::vector<float> AttrReader::Floats(const std::string& n, std::vector<float> def) {
  const Attribute* a = Get(n, Attribute::Kind::kFloats);
  return a ? a->floats : def;
}
std::vector<std::string> AttrReader::Strings(const std::string& n, std::vector<std::string> def) {
  const Attribute* a = Get(n, Attribute::Kind::kStrings);
  return a ? a->strings : def;
}
const Tensor* AttrReader::TensorAttr(const std::string& n) {
  const Attribute* a = Get(n, Attribute::Kind::kTensor);
  return a ? &a->t : nullptr;
}
const Graph* AttrReader::GraphAttr(const std::string& n) {
  const Attribute* a = Get(n, Attribute::Kind::kGraph);
  return a ? a->g.get() : nullptr;
}

Expected<Value*> Graph::AddValue(const std::string& name, ValueType type) {
  if (by_name_.count(name))
    return Status::Error("graph '", this->name, "': two values are named '", name, "'");
  auto v = std::make_unique<Value>();
  v->name = name;
  v->type = std::move(type);
  Value* raw = v.get();
  values_.push_back(std::move(v));
  by_name_[name] = raw;
  return raw;
}

Value* Graph::FindValue(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

Node* Graph::AddNode(std::unique_ptr<Node> node) {
  nodes_.push_back(std::move(node));
  return nodes_.back().get();
}

int Graph::opset(const std::string& domain) const {
  auto it = opset_imports.find(domain);
  if (it != opset_imports.end()) return it->second;
  return parent ? parent->opset(domain) : 0;
}

Status Graph::TopologicalSort() {
  // Kahn's algorithm over producer edges inside this graph. Iterative: no recursion depth
  // for a hostile file to exhaust.
  std::unordered_map<const Node*, size_t> index;
  for (size_t i = 0; i < nodes_.size(); ++i) index[nodes_[i].get()] = i;
  std::vector<int> pending(nodes_.size(), 0);
  std::vector<std::vector<size_t>> users(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    for (const Value* in : nodes_[i]->inputs) {
      if (in == nullptr || in->producer == nullptr) continue;
      auto it = index.find(in->producer);
      if (it == index.end()) continue;
      ++pending[i];
      users[it->second].push_back(i);
    }
  }
  // Always take the earliest ready node, so a file already in order keeps its order.
  std::vector<size_t> order;
  std::set<size_t> ready;
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (pending[i] == 0) ready.insert(i);
  while (!ready.empty()) {
    size_t i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(i);
    for (size_t u : users[i])
      if (--pending[u] == 0) ready.insert(u);
  }
  if (order.size() != nodes_.size()) {
    for (size_t i = 0; i < nodes_.size(); ++i)
      if (pending[i] > 0)
        return Status::Error("graph '", name, "' has a cycle through node '", nodes_[i]->name,
                             "' (", nodes_[i]->op_type, ")");
  }
  std::vector<std::unique_ptr<Node>> sorted;
  sorted.reserve(nodes_.size());
  for (size_t i : order) sorted.push_back(std::move(nodes_[i]));
  nodes_ = std::move(sorted);
  return Status::Ok();
}

}  // namespace kiln::ir
