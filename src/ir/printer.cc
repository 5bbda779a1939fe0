#include "ir/printer.h"

#include <sstream>

namespace kiln::ir {
namespace {

template <class T>
std::string List(const std::vector<T>& v, size_t max_items = 16) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < v.size() && i < max_items; ++i) os << (i ? "," : "") << v[i];
  if (v.size() > max_items) os << ",...(" << v.size() << ")";
  os << ']';
  return os.str();
}

void PrintInto(const Graph& g, int indent, std::ostringstream& os);

std::string Ref(const Value* v) { return v ? "%" + v->name : "_"; }

}  // namespace

std::string PrintAttribute(const Attribute& a) {
  using K = Attribute::Kind;
  switch (a.kind) {
    case K::kFloat: return StrCat(a.f);
    case K::kInt: return StrCat(a.i);
    case K::kString: return StrCat('"', a.s, '"');
    case K::kTensor: {
      std::string s = DescribeTensor(a.t);
      if (a.t.numel() <= 8 && a.t.dtype() != DType::kString) {
        std::vector<double> vals;
        for (int64_t i = 0; i < a.t.numel(); ++i) vals.push_back(a.t.AsDouble(i));
        s += List(vals);
      }
      return s;
    }
    case K::kGraph: return StrCat("graph(", a.g ? a.g->name : "", ")");
    case K::kFloats: return List(a.floats);
    case K::kInts: return List(a.ints);
    case K::kStrings: {
      std::vector<std::string> q;
      for (const auto& s : a.strings) q.push_back('"' + s + '"');
      return List(q);
    }
    case K::kTensors: return StrCat("tensors(", a.tensors.size(), ")");
    case K::kGraphs: return StrCat("graphs(", a.graphs.size(), ")");
  }
  return "?";
}

namespace {

void PrintInto(const Graph& g, int indent, std::ostringstream& os) {
  const std::string pad(indent, ' ');
  os << pad << "graph " << g.name;
  if (!g.opset_imports.empty()) {
    os << " (opsets";
    for (const auto& [d, v] : g.opset_imports) os << ' ' << (d.empty() ? "ai.onnx" : d) << '=' << v;
    os << ')';
  }
  os << '\n';
  for (const Value* v : g.inputs) os << pad << "  input  " << Ref(v) << ": " << v->type.ToString() << '\n';
  for (const auto& v : g.values())
    if (v->constant) os << pad << "  const  " << Ref(v.get()) << ": " << v->type.ToString() << '\n';
  for (const auto& n : g.nodes()) {
    os << pad << "  ";
    for (size_t i = 0; i < n->outputs.size(); ++i) os << (i ? ", " : "") << Ref(n->outputs[i]);
    os << " = " << n->op_type;
    if (!n->domain.empty()) os << '@' << n->domain;
    os << '(';
    for (size_t i = 0; i < n->inputs.size(); ++i) os << (i ? ", " : "") << Ref(n->inputs[i]);
    os << ')';
    if (!n->attrs.empty()) {
      os << " {";
      bool first = true;
      for (const auto& [name, a] : n->attrs) {
        os << (first ? "" : ", ") << name << '=' << PrintAttribute(a);
        first = false;
      }
      os << '}';
    }
    os << " :";
    for (size_t i = 0; i < n->outputs.size(); ++i)
      os << (i ? ", " : " ") << (n->outputs[i] ? n->outputs[i]->type.ToString() : "_");
    os << "  # " << n->name << '\n';
    for (const auto& [name, a] : n->attrs) {
      if (a.g) PrintInto(*a.g, indent + 4, os);
      for (const auto& sub : a.graphs)
        if (sub) PrintInto(*sub, indent + 4, os);
    }
  }
  for (const Value* v : g.outputs) os << pad << "  output " << Ref(v) << ": " << v->type.ToString() << '\n';
}

}  // namespace

std::string PrintGraph(const Graph& graph) {
  std::ostringstream os;
  PrintInto(graph, 0, os);
  return os.str();
}

}  // namespace kiln::ir
