#include "ir/parser.h"

#include <cctype>
#include <charconv>
#include <limits>
#include <set>
#include <system_error>

#include "ir/printer.h"

namespace kiln::ir {
namespace {

// One line being read, with the position in it.
class Cursor {
 public:
  Cursor(std::string_view s, size_t at, int line) : s_(s), i_(at), line_(line) {}

  template <class... Args>
  Status Error(const Args&... args) const {
    return Status::Error("line ", line_, ", column ", i_ + 1, ": ", args...);
  }
  void SkipSpaces() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }
  bool AtEnd() {
    SkipSpaces();
    return i_ >= s_.size();
  }
  char Peek() {
    SkipSpaces();
    return i_ < s_.size() ? s_[i_] : '\0';
  }
  bool Eat(char c) {
    if (Peek() != c) return false;
    ++i_;
    return true;
  }
  Status Expect(char c) {
    if (Eat(c)) return Status::Ok();
    return Error("expected '", c, "'", AtEnd() ? " at the end of the line" : "");
  }
  // Consumes `w` if the next bare word is exactly it.
  bool EatWord(std::string_view w) {
    SkipSpaces();
    size_t j = i_;
    while (j < s_.size() && IsNameChar(s_[j])) ++j;
    if (s_.substr(i_, j - i_) != w) return false;
    i_ = j;
    return true;
  }
  bool StartsWith(std::string_view w) {
    SkipSpaces();
    return s_.substr(i_, w.size()) == w;
  }
  // A bare name (trailing ':' excluded) or a quoted one.
  Expected<std::string> Word() {
    if (Peek() == '"') return Quoted();
    size_t j = i_;
    while (j < s_.size() && IsNameChar(s_[j])) ++j;
    while (j > i_ && s_[j - 1] == ':') --j;
    if (j == i_) return Error("expected a name");
    std::string w(s_.substr(i_, j - i_));
    i_ = j;
    return w;
  }
  Expected<std::string> Quoted() {
    KILN_RETURN_IF_ERROR(Expect('"'));
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) break;
      char e = s_[i_++];
      switch (e) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'x': {
          unsigned v = 0;
          auto res =
              std::from_chars(s_.data() + i_, s_.data() + std::min(i_ + 2, s_.size()), v, 16);
          if (res.ptr != s_.data() + i_ + 2) return Error("bad \\x escape");
          out += static_cast<char>(v);
          i_ += 2;
          break;
        }
        default:
          out += e;
      }
    }
    if (i_ >= s_.size()) return Error("unterminated string");
    ++i_;
    return out;
  }
  // A number as printed: digits, sign, '.', exponent, inf, nan.
  std::string NumberToken() {
    SkipSpaces();
    size_t j = i_;
    while (j < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[j])) || s_[j] == '+' ||
                             s_[j] == '-' || s_[j] == '.'))
      ++j;
    std::string t(s_.substr(i_, j - i_));
    i_ = j;
    return t;
  }
  Expected<int64_t> Int() {
    std::string t = NumberToken();
    int64_t v = 0;
    auto res = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || res.ec != std::errc() || res.ptr != t.data() + t.size())
      return Error("expected an integer, got '", t, "'");
    return v;
  }
  // Consumes the rest of the line.
  std::string_view Rest() {
    SkipSpaces();
    std::string_view r = s_.substr(i_);
    i_ = s_.size();
    return r;
  }

 private:
  std::string_view s_;
  size_t i_;
  int line_;
};

bool LooksFloat(const std::string& t) { return t.find_first_of(".eEn") != std::string::npos; }

Expected<double> ToDouble(Cursor& c, const std::string& t) {
  double v = 0;
  auto res = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || res.ec != std::errc() || res.ptr != t.data() + t.size())
    return c.Error("expected a number, got '", t, "'");
  return v;
}

Expected<DType> ParseDType(Cursor& c) {
  KILN_ASSIGN_OR_RETURN(std::string w, c.Word());
  if (w == "undefined") return DType::kUndefined;
  if (w == DTypeName(DType::kSequence)) return DType::kSequence;
  if (w == DTypeName(DType::kOptional)) return DType::kOptional;
  for (int32_t k = 1; k <= 16; ++k)
    if (IsKnownDType(k) && w == DTypeName(static_cast<DType>(k))) return static_cast<DType>(k);
  return c.Error("unknown element type '", w, "'");
}

// Container types nest ("optional(seq(float32[*]))"); deeper than this is refused so a hostile
// text cannot exhaust the stack.
constexpr int kMaxTypeNesting = 8;

Expected<ValueType> ParseType(Cursor& c, int depth = 0) {
  ValueType t;
  KILN_ASSIGN_OR_RETURN(t.dtype, ParseDType(c));
  if (IsContainer(t.dtype)) {
    if (depth >= kMaxTypeNesting)
      return c.Error("sequence/optional types nest deeper than ", kMaxTypeNesting);
    KILN_RETURN_IF_ERROR(c.Expect('('));
    KILN_ASSIGN_OR_RETURN(ValueType item, ParseType(c, depth + 1));
    KILN_RETURN_IF_ERROR(c.Expect(')'));
    if (item.dtype != DType::kUndefined || item.shape) t.elem = std::make_shared<ValueType>(item);
    return t;
  }
  KILN_RETURN_IF_ERROR(c.Expect('['));
  if (c.Eat('*')) {
    KILN_RETURN_IF_ERROR(c.Expect(']'));
    return t;
  }
  t.shape.emplace();
  while (!c.Eat(']')) {
    if (!t.shape->empty()) KILN_RETURN_IF_ERROR(c.Expect(','));
    const char p = c.Peek();
    if (c.Eat('?')) {
      t.shape->push_back(Dim::Unknown());
    } else if (p >= '0' && p <= '9') {
      KILN_ASSIGN_OR_RETURN(int64_t v, c.Int());
      t.shape->push_back(Dim::Static(v));
    } else {
      KILN_ASSIGN_OR_RETURN(std::string s, c.Word());
      t.shape->push_back(Dim::Symbol(s));
    }
  }
  return t;
}

template <class T>
Status StoreInt(Cursor& c, const std::string& tok, T* out) {
  T v{};
  auto res = std::from_chars(tok.data(), tok.data() + tok.size(), v);
  if (tok.empty() || res.ec != std::errc() || res.ptr != tok.data() + tok.size())
    return c.Error("expected an integer in range, got '", tok, "'");
  *out = v;
  return Status::Ok();
}

Status ParseElement(Cursor& c, Tensor& t, int64_t i) {
  if (t.dtype() == DType::kString) {
    KILN_ASSIGN_OR_RETURN(t.strings()[i], c.Quoted());
    return Status::Ok();
  }
  const std::string tok = c.NumberToken();
  switch (t.dtype()) {
    case DType::kFloat32: {
      float v = 0;
      auto res = std::from_chars(tok.data(), tok.data() + tok.size(), v);
      if (tok.empty() || res.ec != std::errc() || res.ptr != tok.data() + tok.size())
        return c.Error("expected a number, got '", tok, "'");
      t.data<float>()[i] = v;
      return Status::Ok();
    }
    case DType::kFloat64: {
      KILN_ASSIGN_OR_RETURN(t.data<double>()[i], ToDouble(c, tok));
      return Status::Ok();
    }
    case DType::kFloat16:
    case DType::kBFloat16: {
      KILN_ASSIGN_OR_RETURN(double v, ToDouble(c, tok));
      const float f = static_cast<float>(v);
      t.data<uint16_t>()[i] = t.dtype() == DType::kFloat16 ? FloatToHalf(f) : FloatToBFloat16(f);
      return Status::Ok();
    }
    case DType::kBool:
      if (tok != "0" && tok != "1") return c.Error("expected 0 or 1, got '", tok, "'");
      t.data<bool>()[i] = tok == "1";
      return Status::Ok();
    default:
      break;
  }
  KILN_DISPATCH_INTEGER(t.dtype(), T, return c.Error("cannot hold data of this type"),
                        return StoreInt<T>(c, tok, t.data<T>() + i));
  return Status::Ok();
}

// "[1,2,3]" or "random(seed=S)" for a tensor of the given type.
Expected<Tensor> ParseData(Cursor& c, DType dtype, const std::vector<int64_t>& dims) {
  if (dtype == DType::kUndefined) return c.Error("a constant needs an element type");
  if (IsContainer(dtype)) return c.Error("a constant cannot be a sequence or an optional");
  auto made = Tensor::Make(dtype, dims, "constant");
  if (!made.ok()) return c.Error(made.status().message());
  Tensor t = std::move(made).value();
  if (c.EatWord("random")) {
    KILN_RETURN_IF_ERROR(c.Expect('('));
    if (!c.EatWord("seed")) return c.Error("expected 'seed'");
    KILN_RETURN_IF_ERROR(c.Expect('='));
    KILN_ASSIGN_OR_RETURN(int64_t seed, c.Int());
    KILN_RETURN_IF_ERROR(c.Expect(')'));
    if (seed < 0 || seed > std::numeric_limits<uint32_t>::max())
      return c.Error("seed must fit in 32 bits");
    return RandomFill(dtype, dims, static_cast<uint32_t>(seed));
  }
  KILN_RETURN_IF_ERROR(c.Expect('['));
  int64_t n = 0;
  while (!c.Eat(']')) {
    if (n > 0) KILN_RETURN_IF_ERROR(c.Expect(','));
    if (n >= t.numel()) return c.Error("more than ", t.numel(), " elements");
    KILN_RETURN_IF_ERROR(ParseElement(c, t, n++));
  }
  if (n != t.numel()) return c.Error("expected ", t.numel(), " elements, got ", n);
  return t;
}

// "float32[2,2] [1,2,3,4]" (an attribute's tensor).
Expected<Tensor> ParseTensorLiteral(Cursor& c) {
  KILN_ASSIGN_OR_RETURN(ValueType type, ParseType(c));
  if (!type.has_static_shape()) return c.Error("a tensor needs a static shape");
  return ParseData(c, type.dtype, type.static_dims());
}

template <class T, class F>
Status ParseList(Cursor& c, std::vector<T>* out, F&& item) {
  KILN_RETURN_IF_ERROR(c.Expect('['));
  while (!c.Eat(']')) {
    if (!out->empty()) KILN_RETURN_IF_ERROR(c.Expect(','));
    KILN_ASSIGN_OR_RETURN(T v, item());
    out->push_back(std::move(v));
  }
  return Status::Ok();
}

Expected<Attribute> ParseAttribute(Cursor& c) {
  using K = Attribute::Kind;
  Attribute a;
  auto float_item = [&c]() -> Expected<float> {
    KILN_ASSIGN_OR_RETURN(double v, ToDouble(c, c.NumberToken()));
    return static_cast<float>(v);
  };
  const char p = c.Peek();
  if (p == '"') {
    a.kind = K::kString;
    KILN_ASSIGN_OR_RETURN(a.s, c.Quoted());
  } else if (p == '[') {
    // ints unless an element is quoted (strings) or shows a float.
    Cursor probe = c;
    probe.Expect('[').ok();
    const char first = probe.Peek();
    const bool is_float = first != '"' && first != ']' && LooksFloat(probe.NumberToken());
    if (first == '"') {
      a.kind = K::kStrings;
      KILN_RETURN_IF_ERROR(ParseList(c, &a.strings, [&c] { return c.Quoted(); }));
    } else if (is_float) {
      a.kind = K::kFloats;
      KILN_RETURN_IF_ERROR(ParseList(c, &a.floats, float_item));
    } else {
      a.kind = K::kInts;
      KILN_RETURN_IF_ERROR(ParseList(c, &a.ints, [&c] { return c.Int(); }));
    }
  } else if (c.EatWord("floats")) {
    a.kind = K::kFloats;
    KILN_RETURN_IF_ERROR(ParseList(c, &a.floats, float_item));
  } else if (c.EatWord("strings")) {
    a.kind = K::kStrings;
    KILN_RETURN_IF_ERROR(ParseList(c, &a.strings, [&c] { return c.Quoted(); }));
  } else if (c.EatWord("tensors")) {
    a.kind = K::kTensors;
    KILN_RETURN_IF_ERROR(ParseList(c, &a.tensors, [&c] { return ParseTensorLiteral(c); }));
  } else if (c.EatWord("graphs")) {
    a.kind = K::kGraphs;
    KILN_RETURN_IF_ERROR(c.Expect('('));
    KILN_ASSIGN_OR_RETURN(int64_t n, c.Int());
    KILN_RETURN_IF_ERROR(c.Expect(')'));
    if (n < 0 || n > 1 << 20) return c.Error("bad subgraph count ", n);
    a.graphs.resize(n);
  } else if (c.EatWord("graph")) {
    a.kind = K::kGraph;
    KILN_RETURN_IF_ERROR(c.Expect('('));
    KILN_ASSIGN_OR_RETURN(a.s, c.Word());  // the subgraph's name, checked when it is read
    KILN_RETURN_IF_ERROR(c.Expect(')'));
  } else if ((p >= '0' && p <= '9') || p == '-' || p == '+' || p == '.' || c.StartsWith("inf") ||
             c.StartsWith("nan")) {
    const std::string tok = c.NumberToken();
    if (LooksFloat(tok)) {
      a.kind = K::kFloat;
      KILN_ASSIGN_OR_RETURN(double v, ToDouble(c, tok));
      a.f = static_cast<float>(v);
    } else {
      a.kind = K::kInt;
      KILN_RETURN_IF_ERROR(StoreInt<int64_t>(c, tok, &a.i));
    }
  } else {
    a.kind = K::kTensor;
    KILN_ASSIGN_OR_RETURN(a.t, ParseTensorLiteral(c));
  }
  return a;
}

// ---- graphs ---------------------------------------------------------------------------------

class Parser {
 public:
  explicit Parser(std::string_view text) {
    size_t start = 0;
    while (start <= text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      lines_.push_back(text.substr(start, end - start));
      start = end + 1;
    }
  }

  Expected<std::unique_ptr<Graph>> ParseMain() {
    SkipBlank();
    if (pos_ >= lines_.size()) return Status::Error("empty IR text: expected 'graph'");
    KILN_ASSIGN_OR_RETURN(auto g, ParseGraphAt(Indent(lines_[pos_]), nullptr));
    SkipBlank();
    if (pos_ < lines_.size())
      return Status::Error("line ", pos_ + 1, ": text after the end of the main graph");
    return g;
  }

 private:
  static size_t Indent(std::string_view l) {
    size_t i = 0;
    while (i < l.size() && l[i] == ' ') ++i;
    return i;
  }
  void SkipBlank() {
    while (pos_ < lines_.size()) {
      std::string_view l = lines_[pos_];
      size_t i = Indent(l);
      if (i < l.size() && l[i] != '#' &&
          l.substr(i).find_first_not_of(" \t\r") != std::string_view::npos)
        return;
      ++pos_;
    }
  }
  Cursor At(size_t indent) { return Cursor(lines_[pos_], indent, static_cast<int>(pos_ + 1)); }

  Expected<std::unique_ptr<Graph>> ParseGraphAt(size_t indent, const Graph* parent);
  Status ParseLine(Graph& g, Cursor& c, std::vector<Attribute*>* slots);
  Status ParseNode(Graph& g, Cursor& c, std::vector<Attribute*>* slots);
  Expected<Value*> Use(Graph& g, Cursor& c);
  Status Define(Graph& g, Value* v, Cursor& c);

  std::vector<std::string_view> lines_;
  size_t pos_ = 0;
  std::set<Value*> undefined_;  // referenced, not (yet) defined
};

Expected<Value*> Parser::Use(Graph& g, Cursor& c) {
  if (c.Eat('_')) return static_cast<Value*>(nullptr);
  KILN_RETURN_IF_ERROR(c.Expect('%'));
  KILN_ASSIGN_OR_RETURN(std::string name, c.Word());
  if (Value* v = g.FindValue(name)) return v;
  KILN_ASSIGN_OR_RETURN(Value * v, g.AddValue(name, ValueType{}));
  undefined_.insert(v);
  return v;
}

Status Parser::Define(Graph& g, Value* v, Cursor& c) {
  if (undefined_.erase(v) == 0 && (v->producer || v->is_graph_input || v->constant))
    return c.Error("value '", v->name, "' is defined twice");
  return Status::Ok();
}

Status Parser::ParseNode(Graph& g, Cursor& c, std::vector<Attribute*>* slots) {
  auto node = std::make_unique<Node>();
  std::vector<Value*> outs;
  while (!c.Eat('=')) {
    if (!outs.empty()) KILN_RETURN_IF_ERROR(c.Expect(','));
    KILN_ASSIGN_OR_RETURN(Value * v, Use(g, c));
    if (v) KILN_RETURN_IF_ERROR(Define(g, v, c));
    outs.push_back(v);
  }
  KILN_ASSIGN_OR_RETURN(node->op_type, c.Word());
  if (c.Eat('@')) {
    KILN_ASSIGN_OR_RETURN(node->domain, c.Word());
  }
  KILN_RETURN_IF_ERROR(c.Expect('('));
  while (!c.Eat(')')) {
    if (!node->inputs.empty()) KILN_RETURN_IF_ERROR(c.Expect(','));
    KILN_ASSIGN_OR_RETURN(Value * v, Use(g, c));
    node->inputs.push_back(v);
  }
  if (c.Eat('{')) {
    while (!c.Eat('}')) {
      if (!node->attrs.empty()) KILN_RETURN_IF_ERROR(c.Expect(','));
      KILN_ASSIGN_OR_RETURN(std::string name, c.Word());
      KILN_RETURN_IF_ERROR(c.Expect('='));
      KILN_ASSIGN_OR_RETURN(Attribute a, ParseAttribute(c));
      if (!node->attrs.emplace(name, std::move(a)).second)
        return c.Error("attribute '", name, "' appears twice");
    }
  }
  KILN_RETURN_IF_ERROR(c.Expect(':'));
  for (size_t i = 0; i < outs.size(); ++i) {
    if (i) KILN_RETURN_IF_ERROR(c.Expect(','));
    if (outs[i] == nullptr) {
      KILN_RETURN_IF_ERROR(c.Expect('_'));
      continue;
    }
    KILN_ASSIGN_OR_RETURN(outs[i]->type, ParseType(c));
  }
  if (c.Eat('#')) {
    if (c.Peek() == '"') {
      KILN_ASSIGN_OR_RETURN(node->name, c.Quoted());
    } else {
      node->name = std::string(c.Rest());
      while (!node->name.empty() && (node->name.back() == '\r' || node->name.back() == ' '))
        node->name.pop_back();
    }
  }
  if (!c.AtEnd()) return c.Error("unexpected text after the node");
  node->outputs = outs;
  node->opset = g.opset(node->domain);
  Node* n = g.AddNode(std::move(node));
  for (Value* v : outs)
    if (v) v->producer = n;
  for (auto& [name, a] : n->attrs) {
    if (a.kind == Attribute::Kind::kGraph) slots->push_back(&a);
    if (a.kind == Attribute::Kind::kGraphs)
      for (size_t k = 0; k < a.graphs.size(); ++k) slots->push_back(&a);
  }
  return Status::Ok();
}

Status Parser::ParseLine(Graph& g, Cursor& c, std::vector<Attribute*>* slots) {
  const bool is_input = c.EatWord("input");
  if (is_input || c.EatWord("output")) {
    KILN_ASSIGN_OR_RETURN(Value * v, Use(g, c));
    if (v == nullptr) return c.Error("expected a value");
    KILN_RETURN_IF_ERROR(c.Expect(':'));
    KILN_ASSIGN_OR_RETURN(ValueType type, ParseType(c));
    if (!c.AtEnd()) return c.Error("unexpected text after the type");
    if (is_input) {
      KILN_RETURN_IF_ERROR(Define(g, v, c));
      v->is_graph_input = true;
      v->type = std::move(type);
      g.inputs.push_back(v);
    } else {
      if (undefined_.count(v)) v->type = std::move(type);
      g.outputs.push_back(v);
    }
    return Status::Ok();
  }
  if (c.EatWord("const")) {
    KILN_ASSIGN_OR_RETURN(Value * v, Use(g, c));
    if (v == nullptr) return c.Error("expected a value");
    if (!v->is_graph_input || v->constant) KILN_RETURN_IF_ERROR(Define(g, v, c));
    KILN_RETURN_IF_ERROR(c.Expect(':'));
    KILN_ASSIGN_OR_RETURN(ValueType type, ParseType(c));
    if (!type.has_static_shape()) return c.Error("a constant needs a static shape");
    KILN_RETURN_IF_ERROR(c.Expect('='));
    KILN_ASSIGN_OR_RETURN(Tensor t, ParseData(c, type.dtype, type.static_dims()));
    if (!c.AtEnd()) return c.Error("unexpected text after the constant");
    if (!v->is_graph_input) v->type = std::move(type);
    v->constant = std::move(t);
    return Status::Ok();
  }
  return ParseNode(g, c, slots);
}

Expected<std::unique_ptr<Graph>> Parser::ParseGraphAt(size_t indent, const Graph* parent) {
  Cursor c = At(indent);
  if (!c.EatWord("graph")) return c.Error("expected 'graph'");
  auto g = std::make_unique<Graph>();
  g->parent = parent;
  KILN_ASSIGN_OR_RETURN(g->name, c.Word());
  if (c.Eat('(')) {
    if (!c.EatWord("opsets")) return c.Error("expected 'opsets'");
    while (!c.Eat(')')) {
      KILN_ASSIGN_OR_RETURN(std::string domain, c.Word());
      KILN_RETURN_IF_ERROR(c.Expect('='));
      KILN_ASSIGN_OR_RETURN(int64_t v, c.Int());
      g->opset_imports[domain == "ai.onnx" ? "" : domain] = static_cast<int>(v);
    }
  }
  if (!c.AtEnd()) return c.Error("unexpected text after the graph header");
  ++pos_;
  std::vector<Attribute*> slots;  // subgraph attributes of the last node, to be read in order
  size_t next_slot = 0;
  for (SkipBlank(); pos_ < lines_.size(); SkipBlank()) {
    const size_t ind = Indent(lines_[pos_]);
    if (ind <= indent) break;
    Cursor line = At(ind);
    if (ind == indent + 4 && line.StartsWith("graph")) {
      if (next_slot >= slots.size()) return line.Error("a subgraph no attribute of the node names");
      Attribute* a = slots[next_slot++];
      KILN_ASSIGN_OR_RETURN(std::shared_ptr<Graph> sub, ParseGraphAt(ind, g.get()));
      if (a->kind == Attribute::Kind::kGraph) {
        if (sub->name != a->s)
          return line.Error("expected subgraph '", a->s, "', got '", sub->name, "'");
        a->s.clear();
        a->g = std::move(sub);
      } else {
        for (auto& slot : a->graphs)
          if (!slot) {
            slot = std::move(sub);
            break;
          }
      }
      continue;
    }
    if (ind != indent + 2) return line.Error("unexpected indentation");
    if (next_slot < slots.size()) return line.Error("missing subgraph of the previous node");
    slots.clear();
    next_slot = 0;
    KILN_RETURN_IF_ERROR(ParseLine(*g, line, &slots));
    ++pos_;
  }
  if (next_slot < slots.size())
    return Status::Error("graph '", g->name, "': missing subgraph of its last node");
  for (const auto& v : g->values()) {
    if (!undefined_.count(v.get())) continue;
    if (parent == nullptr)
      return Status::Error("graph '", g->name, "': value '", v->name,
                           "' is used but never defined");
    v->is_outer = true;
    undefined_.erase(v.get());
  }
  return g;
}

}  // namespace

Expected<std::unique_ptr<Graph>> ParseGraph(std::string_view text) {
  Parser p(text);
  return p.ParseMain();
}

}  // namespace kiln::ir
