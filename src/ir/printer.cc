#include "ir/printer.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace kiln::ir {
namespace {

// ---- the seeded fill ----------------------------------------------------------------------------

uint64_t Mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t Draw(uint32_t seed, int64_t i) { return Mix(Mix(seed) + static_cast<uint64_t>(i)); }

// The flag bit element i carries: bit i of the seed for the first 32, a random bit after.
bool FlagBit(uint32_t seed, int64_t i, uint64_t r) {
  return i < 32 ? ((seed >> i) & 1u) != 0 : (r >> 63) != 0;
}

bool ReadFlagBit(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat16:
    case DType::kBFloat16:
      return (t.data<uint16_t>()[i] & 0x8000u) != 0;
    case DType::kFloat32:
      return std::signbit(t.data<float>()[i]);
    case DType::kFloat64:
      return std::signbit(t.data<double>()[i]);
    case DType::kBool:
      return t.data<bool>()[i];
    case DType::kString:
      return !t.strings()[i].empty() && t.strings()[i][0] == '1';
    default:
      break;
  }
  if (IsSigned(t.dtype())) return t.AsInt64(i) < 0;
  return (t.AsInt64(i) & 1) != 0;
}

// Writes fill element i of `seed` into slot `at` of t.
void SetFillElement(Tensor& t, int64_t at, uint32_t seed, int64_t i) {
  const uint64_t r = Draw(seed, i);
  const bool bit = FlagBit(seed, i, r);
  const double mag = static_cast<double>((r >> 40) + 1) / 16777216.0;  // (0, 1]
  const double f = bit ? -mag : mag;
  const int64_t s = (bit ? -1 : 1) * static_cast<int64_t>(r % 8 + 1);
  const uint64_t u = ((r >> 1) % 8) * 2 + (bit ? 1 : 0);
  switch (t.dtype()) {
    case DType::kFloat32:
      t.data<float>()[at] = static_cast<float>(f);
      return;
    case DType::kFloat64:
      t.data<double>()[at] = f;
      return;
    case DType::kFloat16:
      t.data<uint16_t>()[at] = FloatToHalf(static_cast<float>(f));
      return;
    case DType::kBFloat16:
      t.data<uint16_t>()[at] = FloatToBFloat16(static_cast<float>(f));
      return;
    case DType::kBool:
      t.data<bool>()[at] = bit;
      return;
    case DType::kString: {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "%04x", static_cast<unsigned>(r & 0xffff));
      t.strings()[at] = std::string(bit ? "1" : "0") + hex;
      return;
    }
    default:
      break;
  }
  KILN_DISPATCH_INTEGER(
      t.dtype(), T, return,
      t.data<T>()[at] = IsSigned(t.dtype()) ? static_cast<T>(s) : static_cast<T>(u));
}

bool SameElement(const Tensor& a, int64_t ia, const Tensor& b, int64_t ib) {
  if (a.dtype() == DType::kString) return a.strings()[ia] == b.strings()[ib];
  const size_t size = DTypeSize(a.dtype());
  return std::memcmp(static_cast<const char*>(a.raw()) + ia * size,
                     static_cast<const char*>(b.raw()) + ib * size, size) == 0;
}

uint32_t ContentHash(const Tensor& t) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  auto add = [&h](const void* p, size_t n) {
    const unsigned char* b = static_cast<const unsigned char*>(p);
    for (size_t k = 0; k < n; ++k) h = (h ^ b[k]) * 0x100000001b3ull;
  };
  if (t.dtype() == DType::kString) {
    for (const std::string& s : t.strings()) add(s.data(), s.size() + 1);
  } else {
    add(t.raw(), t.nbytes());
  }
  return static_cast<uint32_t>(h ^ (h >> 32));
}

// ---- numbers, strings and names -----------------------------------------------------------------

template <class F>
std::string Shortest(F v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, res.ptr);
}

// An attribute float always shows it is a float ("1.0", not "1") so ints and floats differ.
std::string AttrFloat(float v) {
  std::string s = Shortest(v);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string Escaped(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char hex[8];
          std::snprintf(hex, sizeof(hex), "\\x%02x", c);
          out += hex;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + '"';
}

std::string Element(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat32:
      return Shortest(t.data<float>()[i]);
    case DType::kFloat64:
      return Shortest(t.data<double>()[i]);
    case DType::kFloat16:
    case DType::kBFloat16:
      return Shortest(static_cast<float>(t.AsDouble(i)));
    case DType::kBool:
      return t.data<bool>()[i] ? "1" : "0";
    case DType::kUInt64:
      return std::to_string(t.data<uint64_t>()[i]);
    case DType::kString:
      return Escaped(t.strings()[i]);
    default:
      return std::to_string(t.AsInt64(i));
  }
}

// Set while PrintGraph runs with full_constants (thread-local: printers on other threads are
// unaffected), so every tensor below it, attributes and subgraphs included, prints in full.
thread_local bool t_full_constants = false;

// The data after a tensor's type: "[1,2,3]" or "random(seed=S)".
std::string TensorData(const Tensor& t) {
  if (t.numel() > kInlineElements && !t_full_constants)
    return StrCat("random(seed=", FillSeedFor(t), ")");
  std::string s = "[";
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (i) s += ',';
    s += Element(t, i);
  }
  return s + ']';
}

std::string TensorLiteral(const Tensor& t) {
  return StrCat(DTypeName(t.dtype()), DimsToString(t.dims()), ' ', TensorData(t));
}

std::string Ref(const Value* v) { return v ? StrCat('%', QuoteName(v->name, true)) : "_"; }

template <class T, class F>
std::string List(const std::vector<T>& v, F&& item) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += item(v[i]);
  }
  return s + ']';
}

// A node's name, after "# ": raw unless it could be misread (an empty name is omitted).
std::string NodeName(const std::string& n) {
  const bool plain = !n.empty() && n.front() != '"' && n.front() != ' ' && n.back() != ' ' &&
                     n.find_first_of("\n\r\t") == std::string::npos;
  return plain ? n : Escaped(n);
}

void PrintNode(const Node& n, const std::string& pad, std::ostringstream& os) {
  os << pad << "  ";
  for (size_t i = 0; i < n.outputs.size(); ++i) os << (i ? ", " : "") << Ref(n.outputs[i]);
  os << (n.outputs.empty() ? "= " : " = ") << QuoteName(n.op_type, false);
  if (!n.domain.empty()) os << '@' << QuoteName(n.domain, false);
  os << '(';
  for (size_t i = 0; i < n.inputs.size(); ++i) os << (i ? ", " : "") << Ref(n.inputs[i]);
  os << ')';
  if (!n.attrs.empty()) {
    os << " {";
    bool first = true;
    for (const auto& [name, a] : n.attrs) {
      os << (first ? "" : ", ") << QuoteName(name, false) << '=' << PrintAttribute(a);
      first = false;
    }
    os << '}';
  }
  os << " :";
  for (size_t i = 0; i < n.outputs.size(); ++i)
    os << (i ? ", " : " ") << (n.outputs[i] ? PrintType(n.outputs[i]->type) : "_");
  if (!n.name.empty()) os << "  # " << NodeName(n.name);
  os << '\n';
}

void PrintInto(const Graph& g, int indent, std::ostringstream& os) {
  const std::string pad(indent, ' ');
  os << pad << "graph " << QuoteName(g.name, false);
  if (!g.opset_imports.empty()) {
    os << " (opsets";
    for (const auto& [d, v] : g.opset_imports)
      os << ' ' << (d.empty() ? "ai.onnx" : QuoteName(d, false)) << '=' << v;
    os << ')';
  }
  os << '\n';
  for (const Value* v : g.inputs)
    os << pad << "  input  " << Ref(v) << ": " << PrintType(v->type) << '\n';
  for (const auto& v : g.values())
    if (v->constant)
      os << pad << "  const  " << Ref(v.get()) << ": " << DTypeName(v->constant->dtype())
         << DimsToString(v->constant->dims()) << " = " << TensorData(*v->constant) << '\n';
  for (const auto& n : g.nodes()) {
    PrintNode(*n, pad, os);
    for (const auto& [name, a] : n->attrs) {
      if (a.kind == Attribute::Kind::kGraph && a.g) PrintInto(*a.g, indent + 4, os);
      if (a.kind == Attribute::Kind::kGraphs)
        for (const auto& sub : a.graphs)
          if (sub) PrintInto(*sub, indent + 4, os);
    }
  }
  for (const Value* v : g.outputs)
    os << pad << "  output " << Ref(v) << ": " << PrintType(v->type) << '\n';
}

}  // namespace

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '/' || c == '-' || c == ':';
}

std::string QuoteName(const std::string& s, bool allow_leading_digit) {
  bool bare = !s.empty() && s.back() != ':';
  for (char c : s) bare = bare && IsNameChar(c);
  if (bare && !allow_leading_digit && ((s[0] >= '0' && s[0] <= '9') || s[0] == '-')) bare = false;
  return bare ? s : Escaped(s);
}

Tensor RandomFill(DType dtype, const std::vector<int64_t>& dims, uint32_t seed) {
  Tensor t(dtype, dims);
  for (int64_t i = 0; i < t.numel(); ++i) SetFillElement(t, i, seed, i);
  return t;
}

uint32_t FillSeedFor(const Tensor& t) {
  if (t.numel() >= 32 && t.dtype() != DType::kUndefined) {
    uint32_t seed = 0;
    for (int64_t i = 0; i < 32; ++i) seed |= static_cast<uint32_t>(ReadFlagBit(t, i)) << i;
    // Element by element against a one-element scratch tensor: no full-size copy.
    Tensor one(t.dtype(), {1});
    bool same = true;
    for (int64_t i = 0; i < t.numel() && same; ++i) {
      SetFillElement(one, 0, seed, i);
      same = SameElement(one, 0, t, i);
    }
    if (same) return seed;
  }
  return ContentHash(t);
}

std::string PrintGraph(const Graph& graph, const PrintOptions& options) {
  struct Restore {
    bool old = t_full_constants;
    ~Restore() { t_full_constants = old; }
  } restore;
  t_full_constants = options.full_constants;
  std::ostringstream os;
  PrintInto(graph, 0, os);
  return os.str();
}

std::string PrintType(const ValueType& type) {
  if (type.is_container()) return StrCat(DTypeName(type.dtype), '(', PrintType(type.item()), ')');
  std::string s = DTypeName(type.dtype);
  if (!type.shape) return s + "[*]";
  s += '[';
  for (size_t i = 0; i < type.shape->size(); ++i) {
    const Dim& d = (*type.shape)[i];
    if (i) s += ',';
    if (d.is_static())
      s += std::to_string(d.value);
    else if (!d.symbol.empty())
      s += QuoteName(d.symbol, false);
    else
      s += '?';
  }
  return s + ']';
}

std::string PrintAttribute(const Attribute& a) {
  using K = Attribute::Kind;
  switch (a.kind) {
    case K::kFloat:
      return AttrFloat(a.f);
    case K::kInt:
      return StrCat(a.i);
    case K::kString:
      return Escaped(a.s);
    case K::kTensor:
      return TensorLiteral(a.t);
    case K::kGraph:
      return StrCat("graph(", QuoteName(a.g ? a.g->name : "", false), ")");
    case K::kFloats:
      return StrCat(a.floats.empty() ? "floats" : "", List(a.floats, AttrFloat));
    case K::kInts:
      return List(a.ints, [](int64_t i) { return std::to_string(i); });
    case K::kStrings:
      return StrCat(a.strings.empty() ? "strings" : "", List(a.strings, Escaped));
    case K::kTensors:
      return StrCat("tensors", List(a.tensors, TensorLiteral));
    case K::kGraphs:
      return StrCat("graphs(", a.graphs.size(), ")");
  }
  return "?";
}

}  // namespace kiln::ir
