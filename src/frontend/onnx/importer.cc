#include "frontend/onnx/importer.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "frontend/onnx/normalize.h"
#include "frontend/onnx/tensor_proto.h"
#include "onnx.pb.h"
#ifdef KILN_HAVE_ONNX_DATA
#include "onnx-data.pb.h"
#endif
#include "ops/shape_inference.h"

namespace kiln::onnx {
namespace {

// Nested subgraphs deeper than this are refused: recursion must be bounded by kiln, not the file.
constexpr int kMaxGraphDepth = 32;

// Sequence/optional types nest; a file may not nest them deeper than this.
constexpr int kMaxTypeNesting = 8;

Expected<ir::ValueType> TypeFromProto(const ::onnx::TypeProto& tp, const std::string& what,
                                      int depth = 0) {
  if (tp.value_case() == ::onnx::TypeProto::VALUE_NOT_SET) return ir::ValueType{};
  if (tp.has_sequence_type() || tp.has_optional_type()) {
    if (depth >= kMaxTypeNesting)
      return Status::Error("'", what, "': sequence/optional types nest deeper than ",
                           kMaxTypeNesting);
    const bool seq = tp.has_sequence_type();
    const ::onnx::TypeProto& item =
        seq ? tp.sequence_type().elem_type() : tp.optional_type().elem_type();
    KILN_ASSIGN_OR_RETURN(ir::ValueType it, TypeFromProto(item, what, depth + 1));
    return seq ? ir::ValueType::Sequence(std::move(it)) : ir::ValueType::Optional(std::move(it));
  }
  if (!tp.has_tensor_type())
    return Status::Error("unsupported type for '", what,
                         "': kiln supports tensors, sequences and optionals, not maps or sparse "
                         "tensors");
  ir::ValueType vt;
  const auto& tt = tp.tensor_type();
  if (tt.elem_type() != 0) {
    if (!IsKnownDType(tt.elem_type()))
      return Status::Error("unsupported element type ", tt.elem_type(), " for '", what, "'");
    vt.dtype = static_cast<DType>(tt.elem_type());
  }
  if (tt.has_shape()) {
    vt.shape.emplace();
    int64_t numel = 1;  // of the static dims: a shape no tensor can have is refused here
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value()) {
        if (d.dim_value() < 0)
          return Status::Error("'", what, "' has a negative dimension ", d.dim_value());
        if (d.dim_value() != 0 && numel > std::numeric_limits<int64_t>::max() / d.dim_value())
          return Status::Error("'", what, "' has dims whose element count overflows int64");
        numel *= d.dim_value();
        vt.shape->push_back(ir::Dim::Static(d.dim_value()));
      } else if (d.has_dim_param() && !d.dim_param().empty()) {
        vt.shape->push_back(ir::Dim::Symbol(d.dim_param()));
      } else {
        vt.shape->push_back(ir::Dim::Unknown());
      }
    }
  }
  return vt;
}

// Names the ops that touch a value of a type kiln lacks, so the error says which ops need it.
std::string OpsTouching(const ::onnx::GraphProto& gp, const std::string& value) {
  std::string ops;
  for (const auto& n : gp.node()) {
    bool touches = false;
    for (const auto& i : n.input()) touches = touches || i == value;
    for (const auto& o : n.output()) touches = touches || o == value;
    if (touches && ops.find(n.op_type()) == std::string::npos)
      ops += StrCat(ops.empty() ? "" : ", ", n.op_type());
  }
  return ops.empty() ? "" : StrCat(" (used by ", ops, ")");
}

Expected<ir::ValueType> GraphValueType(const ::onnx::GraphProto& gp,
                                       const ::onnx::ValueInfoProto& vi) {
  auto vt = TypeFromProto(vi.type(), vi.name());
  if (!vt.ok()) return Status::Error(vt.status().message(), OpsTouching(gp, vi.name()));
  return vt;
}

class GraphImporter {
 public:
  GraphImporter(std::string base_dir, std::map<std::string, int> opsets)
      : base_dir_(std::move(base_dir)), opsets_(std::move(opsets)) {}

  Expected<std::unique_ptr<ir::Graph>> Import(const ::onnx::GraphProto& gp, const ir::Graph* parent,
                                              int depth);

 private:
  Status ImportAttribute(const ::onnx::AttributeProto& ap, const ir::Graph& owner, int depth,
                         const std::string& where, ir::Attribute* out);
  // Finds a value by name here or in an enclosing graph (creating an outer-scope reference).
  Expected<ir::Value*> Resolve(ir::Graph& g, const std::string& name, const std::string& user);

  std::string base_dir_;
  std::map<std::string, int> opsets_;
};

Expected<ir::Value*> GraphImporter::Resolve(ir::Graph& g, const std::string& name,
                                            const std::string& user) {
  if (ir::Value* v = g.FindValue(name)) return v;
  for (const ir::Graph* p = g.parent; p != nullptr; p = p->parent) {
    if (const ir::Value* outer = p->FindValue(name)) {
      KILN_ASSIGN_OR_RETURN(ir::Value * v, g.AddValue(name, outer->type));
      v->is_outer = true;
      return v;
    }
  }
  return Status::Error(user, "'", name,
                       "' is not produced by any node, initializer or graph input");
}

Status GraphImporter::ImportAttribute(const ::onnx::AttributeProto& ap, const ir::Graph& owner,
                                      int depth, const std::string& where, ir::Attribute* out) {
  using K = ir::Attribute::Kind;
  using AP = ::onnx::AttributeProto;
  int type = ap.type();
  if (type == AP::UNDEFINED) {  // files from IR < 2 may leave the type out: infer it from the data
    if (ap.has_f()) type = AP::FLOAT;
    else if (ap.has_i()) type = AP::INT;
    else if (ap.has_s()) type = AP::STRING;
    else if (ap.has_t()) type = AP::TENSOR;
    else if (ap.has_g()) type = AP::GRAPH;
    else if (ap.floats_size()) type = AP::FLOATS;
    else if (ap.ints_size()) type = AP::INTS;
    else if (ap.strings_size()) type = AP::STRINGS;
    else if (ap.tensors_size()) type = AP::TENSORS;
    else if (ap.graphs_size()) type = AP::GRAPHS;
    else type = AP::INTS;  // an empty list
  }
  if (!ap.ref_attr_name().empty())
    return Status::Error("unsupported: ", where, "attribute '", ap.name(),
                         "' refers to a function attribute");
  switch (type) {
    case AP::FLOAT: out->kind = K::kFloat; out->f = ap.f(); break;
    case AP::INT: out->kind = K::kInt; out->i = ap.i(); break;
    case AP::STRING: out->kind = K::kString; out->s = ap.s(); break;
    case AP::TYPE_PROTO: {
      // Only Optional's 'type' (the element type of an empty optional) uses this; kiln keeps it
      // as the type's text, which the IR printer and parser carry as a string.
      auto vt = TypeFromProto(ap.tp(), ap.name());
      if (!vt.ok()) return vt.status().WithContext(StrCat(where, "attribute '", ap.name(), "': "));
      out->kind = K::kString;
      out->s = vt->ToString();
      break;
    }
    case AP::FLOATS:
      out->kind = K::kFloats;
      out->floats.assign(ap.floats().begin(), ap.floats().end());
      break;
    case AP::INTS:
      out->kind = K::kInts;
      out->ints.assign(ap.ints().begin(), ap.ints().end());
      break;
    case AP::STRINGS:
      out->kind = K::kStrings;
      out->strings.assign(ap.strings().begin(), ap.strings().end());
      break;
    case AP::TENSOR: {
      out->kind = K::kTensor;
      auto t = TensorFromProto(ap.t(), base_dir_);
      if (!t.ok()) return t.status().WithContext(StrCat(where, "attribute '", ap.name(), "': "));
      out->t = std::move(t).value();
      break;
    }
    case AP::TENSORS:
      out->kind = K::kTensors;
      for (const auto& tp : ap.tensors()) {
        auto t = TensorFromProto(tp, base_dir_);
        if (!t.ok()) return t.status().WithContext(StrCat(where, "attribute '", ap.name(), "': "));
        out->tensors.push_back(std::move(t).value());
      }
      break;
    case AP::GRAPH: {
      out->kind = K::kGraph;
      auto g = Import(ap.g(), &owner, depth + 1);
      if (!g.ok()) return g.status().WithContext(StrCat(where, "attribute '", ap.name(), "': "));
      out->g = std::move(g).value();
      break;
    }
    case AP::GRAPHS:
      out->kind = K::kGraphs;
      for (const auto& gp : ap.graphs()) {
        auto g = Import(gp, &owner, depth + 1);
        if (!g.ok()) return g.status().WithContext(StrCat(where, "attribute '", ap.name(), "': "));
        out->graphs.push_back(std::move(g).value());
      }
      break;
    default:
      return Status::Error("unsupported: ", where, "attribute '", ap.name(), "' has type ", type,
                           " (sparse tensors and type protos are not supported)");
  }
  return Status::Ok();
}

Expected<std::unique_ptr<ir::Graph>> GraphImporter::Import(const ::onnx::GraphProto& gp,
                                                           const ir::Graph* parent, int depth) {
  if (depth > kMaxGraphDepth)
    return Status::Error("subgraphs are nested more than ", kMaxGraphDepth, " deep");
  auto g = std::make_unique<ir::Graph>();
  g->name = gp.name().empty() ? "graph" : gp.name();
  g->parent = parent;
  if (parent == nullptr) g->opset_imports = opsets_;

  if (gp.sparse_initializer_size() > 0)
    return Status::Error("unsupported: graph '", g->name, "' has sparse initializers");
  for (const auto& init : gp.initializer()) {
    if (init.name().empty()) return Status::Error("graph '", g->name, "' has an unnamed initializer");
    KILN_ASSIGN_OR_RETURN(Tensor t, TensorFromProto(init, base_dir_));
    KILN_ASSIGN_OR_RETURN(ir::Value * v,
                          g->AddValue(init.name(), ir::ValueType::Of(t.dtype(), t.dims())));
    v->constant = std::move(t);
  }
  for (const auto& in : gp.input()) {
    if (in.name().empty()) return Status::Error("graph '", g->name, "' has an unnamed input");
    KILN_ASSIGN_OR_RETURN(ir::ValueType vt, GraphValueType(gp, in));
    if (ir::Value* init = g->FindValue(in.name())) {
      // IR < 4: initializers are listed as inputs too; kiln treats them as constants. Any other
      // repeat is two inputs with one name.
      if (!init->constant)
        return Status::Error("graph '", g->name, "': two values are named '", in.name(), "'");
      continue;
    }
    if (vt.dtype == DType::kUndefined && parent == nullptr)
      return Status::Error("graph input '", in.name(), "' has no element type");
    KILN_ASSIGN_OR_RETURN(ir::Value * v, g->AddValue(in.name(), vt));
    v->is_graph_input = true;
    g->inputs.push_back(v);
  }

  // Outputs of every node first, so that a file listing nodes out of order still imports; the
  // topological sort below restores the order and finds cycles.
  std::vector<std::unique_ptr<ir::Node>> nodes;
  for (int ni = 0; ni < gp.node_size(); ++ni) {
    const auto& np = gp.node(ni);
    auto node = std::make_unique<ir::Node>();
    node->op_type = np.op_type();
    node->domain = np.domain() == "ai.onnx" ? "" : np.domain();
    node->name = np.name().empty() ? StrCat(np.op_type(), "_", ni) : np.name();
    node->opset = g->opset(node->domain);
    if (node->op_type.empty()) return Status::Error("node ", ni, " has no op_type");
    for (const auto& out : np.output()) {
      if (out.empty()) {
        node->outputs.push_back(nullptr);
        continue;
      }
      auto v = g->AddValue(out, ir::ValueType{});
      if (!v.ok()) return v.status().WithContext(node->Where());
      (*v)->producer = node.get();
      node->outputs.push_back(*v);
    }
    nodes.push_back(std::move(node));
  }
  for (int ni = 0; ni < gp.node_size(); ++ni) {
    const auto& np = gp.node(ni);
    ir::Node& node = *nodes[ni];
    for (const auto& in : np.input()) {
      if (in.empty()) {
        node.inputs.push_back(nullptr);
        continue;
      }
      KILN_ASSIGN_OR_RETURN(ir::Value * v, Resolve(*g, in, node.Where() + "input "));
      node.inputs.push_back(v);
    }
    for (const auto& ap : np.attribute()) {
      ir::Attribute attr;
      KILN_RETURN_IF_ERROR(ImportAttribute(ap, *g, depth, node.Where(), &attr));
      if (!node.attrs.emplace(ap.name(), std::move(attr)).second)
        return Status::Error(node.Where(), "attribute '", ap.name(), "' appears twice");
    }
  }
  for (auto& node : nodes) g->AddNode(std::move(node));
  KILN_RETURN_IF_ERROR(g->TopologicalSort());

  // Declared types of intermediate values help inference and printing.
  for (const auto& vi : gp.value_info()) {
    ir::Value* v = g->FindValue(vi.name());
    if (v == nullptr || v->constant) continue;
    auto vt = TypeFromProto(vi.type(), vi.name());
    if (vt.ok()) v->type = std::move(vt).value();
  }
  for (const auto& out : gp.output()) {
    KILN_ASSIGN_OR_RETURN(ir::Value * v, Resolve(*g, out.name(), "graph output "));
    KILN_ASSIGN_OR_RETURN(ir::ValueType vt, GraphValueType(gp, out));
    if (vt.dtype != DType::kUndefined && !v->constant && !v->is_graph_input) v->type = vt;
    g->outputs.push_back(v);
  }
  KILN_RETURN_IF_ERROR(NormalizeOpsets(*g));
  return g;
}

Expected<ir::Model> ImportModel(const ::onnx::ModelProto& mp, const std::string& base_dir) {
  if (!mp.has_graph()) return Status::Error("the model has no graph");
  if (mp.ir_version() < 3 || mp.ir_version() > 10)
    return Status::Error("unsupported ONNX IR version ", mp.ir_version(),
                         " (kiln reads IR versions 3 to 10)");
  std::map<std::string, int> opsets;
  for (const auto& op : mp.opset_import()) {
    std::string domain = op.domain() == "ai.onnx" ? "" : op.domain();
    if (op.version() < 1 || op.version() > std::numeric_limits<int>::max())
      return Status::Error("opset import of domain '", domain, "' has version ", op.version());
    opsets[domain] = static_cast<int>(op.version());
  }
  if (!opsets.count("")) opsets[""] = 1;  // IR 3 files may leave the default domain out
  if (opsets[""] > 21)
    return Status::Error("unsupported default-domain opset ", opsets[""],
                         " (kiln reads opsets up to 21)");
  GraphImporter importer(base_dir, opsets);
  ir::Model model;
  model.ir_version = mp.ir_version();
  model.producer = mp.producer_name();
  KILN_ASSIGN_OR_RETURN(model.graph, importer.Import(mp.graph(), nullptr, 0));
  KILN_RETURN_IF_ERROR(ops::InferShapes(*model.graph));
  return model;
}

Expected<std::string> ReadFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return Status::Error("'", path, "' is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error("cannot open '", path, "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::Error("reading '", path, "' failed");
  return ss.str();
}

// Parses with protobuf's own limits raised to 2 GiB and recursion bounded.
template <class Proto>
bool ParseBytes(std::string_view bytes, Proto* proto) {
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) return false;
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetTotalBytesLimit(std::numeric_limits<int>::max());
  coded.SetRecursionLimit(100);
  return proto->ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
}

#ifdef KILN_HAVE_ONNX_DATA
// SequenceProto / OptionalProto -> a sequence / optional Tensor. Element kinds are ONNX's
// SequenceProto::DataType numbering (TENSOR 1, SEQUENCE 3, OPTIONAL 5); maps and sparse tensors
// have no kiln form.
Expected<Tensor> SequenceFromProto(const ::onnx::SequenceProto& sp, const ir::ValueType& type,
                                   const std::string& dir, int depth);
Expected<Tensor> OptionalFromProto(const ::onnx::OptionalProto& op, const ir::ValueType& type,
                                   const std::string& dir, int depth) {
  if (depth >= kMaxTypeNesting)
    return Status::Error("sequence/optional values nest deeper than ", kMaxTypeNesting);
  const DType elem = type.item().dtype;
  Tensor item;
  if (op.has_tensor_value()) {
    KILN_ASSIGN_OR_RETURN(item, TensorFromProto(op.tensor_value(), dir));
  } else if (op.has_sequence_value()) {
    KILN_ASSIGN_OR_RETURN(item, SequenceFromProto(op.sequence_value(), type.item(), dir, depth + 1));
  } else if (op.has_optional_value()) {
    KILN_ASSIGN_OR_RETURN(item, OptionalFromProto(op.optional_value(), type.item(), dir, depth + 1));
  } else if (op.has_map_value() || op.has_sparse_tensor_value()) {
    return Status::Error("unsupported optional element: kiln has no maps or sparse tensors");
  } else {
    return Tensor::Optional(nullptr, elem);
  }
  return Tensor::Optional(&item, elem);
}

Expected<Tensor> SequenceFromProto(const ::onnx::SequenceProto& sp, const ir::ValueType& type,
                                   const std::string& dir, int depth) {
  if (depth >= kMaxTypeNesting)
    return Status::Error("sequence/optional values nest deeper than ", kMaxTypeNesting);
  if (sp.map_values_size() > 0 || sp.sparse_tensor_values_size() > 0)
    return Status::Error("unsupported sequence element: kiln has no maps or sparse tensors");
  std::vector<Tensor> items;
  for (const auto& tp : sp.tensor_values()) {
    KILN_ASSIGN_OR_RETURN(Tensor t, TensorFromProto(tp, dir));
    items.push_back(std::move(t));
  }
  for (const auto& inner : sp.sequence_values()) {
    KILN_ASSIGN_OR_RETURN(Tensor t, SequenceFromProto(inner, type.item(), dir, depth + 1));
    items.push_back(std::move(t));
  }
  for (const auto& inner : sp.optional_values()) {
    KILN_ASSIGN_OR_RETURN(Tensor t, OptionalFromProto(inner, type.item(), dir, depth + 1));
    items.push_back(std::move(t));
  }
  DType elem = type.item().dtype;
  if (elem == DType::kUndefined && !items.empty()) elem = items[0].dtype();
  return Tensor::Sequence(std::move(items), elem);
}
#endif

}  // namespace

Expected<ir::Model> LoadModelFromBytes(std::string_view bytes, const std::string& base_dir) {
  if (bytes.empty()) return Status::Error("the model file is empty");
  ::onnx::ModelProto mp;
  if (!ParseBytes(bytes, &mp))
    return Status::Error("not a valid ONNX model: protobuf parsing failed (truncated or not an "
                         "ONNX file)");
  return ImportModel(mp, base_dir);
}

Expected<ir::Model> LoadModel(const std::string& path) {
  KILN_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  auto m = LoadModelFromBytes(bytes, dir);
  if (!m.ok()) return m.status().WithContext(StrCat(path, ": "));
  return m;
}

Expected<Tensor> LoadTensorFile(const std::string& path, std::string* name) {
  KILN_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  ::onnx::TensorProto tp;
  if (bytes.empty() || !ParseBytes(bytes, &tp))
    return Status::Error(path, ": not a valid TensorProto file");
  if (name) *name = tp.name();
  std::string dir = std::filesystem::path(path).parent_path().string();
  auto t = TensorFromProto(tp, dir.empty() ? "." : dir);
  if (!t.ok()) return t.status().WithContext(StrCat(path, ": "));
  return t;
}

Expected<Tensor> LoadValueFile(const std::string& path, const ir::ValueType& type) {
  if (!type.is_container()) return LoadTensorFile(path);
#ifdef KILN_HAVE_ONNX_DATA
  KILN_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  auto parsed = [&]() -> Expected<Tensor> {
    if (type.dtype == DType::kSequence) {
      ::onnx::SequenceProto sp;
      if (bytes.empty() || !ParseBytes(bytes, &sp))
        return Status::Error("not a valid SequenceProto file");
      return SequenceFromProto(sp, type, dir, 0);
    }
    ::onnx::OptionalProto op;
    if (bytes.empty() || !ParseBytes(bytes, &op))
      return Status::Error("not a valid OptionalProto file");
    return OptionalFromProto(op, type, dir, 0);
  };
  Expected<Tensor> t = parsed();
  if (!t.ok()) return t.status().WithContext(StrCat(path, ": "));
  return t;
#else
  return Status::Error(path, ": unsupported ", type.ToString(), " test data: kiln was built "
                       "without ONNX's onnx-data.proto (run scripts/setup.sh and reconfigure)");
#endif
}

}  // namespace kiln::onnx
