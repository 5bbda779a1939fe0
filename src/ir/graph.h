// kiln's graph IR: typed values (dtype + static or symbolic dims), nodes with attributes, and
// graphs that own both. Subgraphs (If/Loop/Scan bodies) are Graphs held by attributes; a name a
// subgraph uses but does not define is an outer-scope Value (is_outer), resolved by name.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "support/status.h"
#include "support/tensor.h"

namespace kiln::ir {

// A dimension: a known size, a named symbol ("batch"), or unknown (neither).
struct Dim {
  int64_t value = -1;
  std::string symbol;
  static Dim Static(int64_t v) { return Dim{v, {}}; }
  static Dim Symbol(std::string s) { return Dim{-1, std::move(s)}; }
  static Dim Unknown() { return Dim{}; }
  bool is_static() const { return value >= 0; }
  bool operator==(const Dim& o) const { return value == o.value && symbol == o.symbol; }
};

// Element type and shape; shape == nullopt means the rank itself is unknown.
// A sequence or optional value has dtype kSequence / kOptional, no shape, and `elem`: the type
// of its items (null when the model does not say).
struct ValueType {
  DType dtype = DType::kUndefined;
  std::optional<std::vector<Dim>> shape;
  std::shared_ptr<const ValueType> elem;

  static ValueType Of(DType t, const std::vector<int64_t>& dims);
  static ValueType Sequence(ValueType elem);
  static ValueType Optional(ValueType elem);
  bool is_container() const { return IsContainer(dtype); }
  // The item type of a sequence/optional; an unknown type when elem is null.
  const ValueType& item() const;
  bool has_static_shape() const;
  std::vector<int64_t> static_dims() const;  // requires has_static_shape()
  // "float32[1,3,N,224]", "int64[?]", "float32[*]", "seq(float32[?,3])", "optional(int64[2])"
  std::string ToString() const;
};

class Graph;
class Node;

struct Value {
  std::string name;
  ValueType type;
  Node* producer = nullptr;
  std::optional<Tensor> constant;  // initializers, and values that passes fold
  bool is_graph_input = false;
  bool is_outer = false;  // defined by an enclosing graph
};

struct Attribute {
  enum class Kind { kFloat, kInt, kString, kTensor, kGraph, kFloats, kInts, kStrings, kTensors,
                    kGraphs };
  Kind kind = Kind::kInt;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::shared_ptr<Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Graph>> graphs;
};
const char* AttrKindName(Attribute::Kind k);

class Node {
 public:
  std::string op_type;
  std::string domain;  // "" is the default ONNX domain
  std::string name;
  int opset = 0;  // the version of `domain` the model imports
  std::vector<Value*> inputs;  // nullptr: an omitted optional input
  std::vector<Value*> outputs;  // nullptr: an omitted optional output
  std::map<std::string, Attribute> attrs;

  const Attribute* attr(const std::string& n) const;
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  bool has_output(size_t i) const { return i < outputs.size() && outputs[i] != nullptr; }
  // "node 'conv1' (Conv, opset 13): " -- the prefix of every error about this node.
  std::string Where() const;
};

// Reads attributes with their ONNX defaults. A present attribute of the wrong kind records an
// error (status()) and yields the default, so a hostile file cannot pass silently.
class AttrReader {
 public:
  explicit AttrReader(const Node& node) : node_(node) {}
  int64_t Int(const std::string& n, int64_t def);
  float Float(const std::string& n, float def);
  std::string String(const std::string& n, const std::string& def);
  std::vector<int64_t> Ints(const std::string& n, std::vector<int64_t> def = {});
  std::vector<float> Floats(const std::string& n, std::vector<float> def = {});
  std::vector<std::string> Strings(const std::string& n, std::vector<std::string> def = {});
  const Tensor* TensorAttr(const std::string& n);
  const Graph* GraphAttr(const std::string& n);
  bool Has(const std::string& n) const { return node_.attr(n) != nullptr; }
  Status status() const { return status_; }

 private:
  const Attribute* Get(const std::string& n, Attribute::Kind kind);
  const Node& node_;
  Status status_;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  std::string name;
  const Graph* parent = nullptr;
  std::map<std::string, int> opset_imports;  // domain -> version ("" for ONNX)
  std::vector<Value*> inputs;   // graph inputs in order (initializers excluded)
  std::vector<Value*> outputs;  // graph outputs in order

  // Fails if the name is taken in this graph.
  Expected<Value*> AddValue(const std::string& name, ValueType type);
  Value* FindValue(const std::string& name) const;
  Node* AddNode(std::unique_ptr<Node> node);

  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  std::vector<std::unique_ptr<Node>>& mutable_nodes() { return nodes_; }
  const std::vector<std::unique_ptr<Value>>& values() const { return values_; }
  // Orders nodes so each comes after the producers of its inputs; fails on a cycle, naming a
  // node on it.
  Status TopologicalSort();
  int opset(const std::string& domain) const;

 private:
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Value>> values_;
  std::unordered_map<std::string, Value*> by_name_;
};

}  // namespace kiln::ir

namespace kiln::ir {

// A loaded model: the main graph plus the file's metadata.
struct Model {
  int64_t ir_version = 0;
  std::string producer;
  std::unique_ptr<Graph> graph;
};

}  // namespace kiln::ir
