// String ops: StringNormalizer and TfIdfVectorizer. Attributes are read and checked here; the
// kernels live in kernels/ref/strings.
#include <optional>

#include "kernels/ref/strings.h"
#include "ops/families.h"
#include "ops/infer_util.h"

namespace kiln::ops {
namespace {

using Dims = std::vector<Dim>;

// ---- StringNormalizer ------------------------------------------------------------------------

struct NormalizerAttrs {
  ref::CaseChange action = ref::CaseChange::kNone;
  bool case_sensitive = false;
  std::vector<std::string> stopwords;
};

// Case mapping is ASCII, which is right for English locales and the C locale; any other locale
// would need tables kiln does not carry, so it is reported as unsupported rather than mis-cased.
bool LocaleSupported(const std::string& locale) {
  if (locale.empty() || locale == "C" || locale == "POSIX") return true;
  return locale.size() >= 2 && locale.compare(0, 2, "en") == 0 &&
         (locale.size() == 2 || locale[2] == '_' || locale[2] == '-' || locale[2] == '.');
}

Expected<NormalizerAttrs> ReadNormalizer(const ir::Node& node) {
  ir::AttrReader reader(node);
  NormalizerAttrs a;
  const std::string action = reader.String("case_change_action", "NONE");
  a.case_sensitive = reader.Int("is_case_sensitive", 0) != 0;
  a.stopwords = reader.Strings("stopwords");
  const std::string locale = reader.String("locale", "");
  KILN_RETURN_IF_ERROR(reader.status());
  if (action == "LOWER") {
    a.action = ref::CaseChange::kLower;
  } else if (action == "UPPER") {
    a.action = ref::CaseChange::kUpper;
  } else if (action != "NONE") {
    return Status::Error(node.Where(), "case_change_action '", action,
                         "' must be LOWER, UPPER or NONE");
  }
  if (!LocaleSupported(locale))
    return Status::Error(node.Where(), "unsupported locale '", locale,
                         "' (kiln maps case for English and C locales only)");
  return a;
}

Status InferStringNormalizer(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInput(node, 0, "X"));
  KILN_ASSIGN_OR_RETURN(NormalizerAttrs attrs, ReadNormalizer(node));
  const DType t = InputDType(node, 0);
  if (t != DType::kUndefined && t != DType::kString)
    return Status::Error(node.Where(), "X must be a string tensor, got ", DTypeName(t));
  const Dims* in = InputShape(node, 0);
  std::optional<Dims> out;
  if (in) {
    if (in->size() != 1 && in->size() != 2)
      return Status::Error(node.Where(), "X must be [C] or [1, C], got rank ", in->size());
    if (in->size() == 2 && (*in)[0].is_static() && (*in)[0].value != 1)
      return Status::Error(node.Where(), "X must be [C] or [1, C], got first dim ",
                           (*in)[0].value);
    // Without stopwords nothing is dropped, so a non-empty row keeps its length.
    const Dim& c = in->back();
    const bool same = attrs.stopwords.empty() && c.is_static() && c.value > 0;
    out = in->size() == 2 ? Dims{Dim::Static(1), same ? c : Dim::Unknown()}
                          : Dims{same ? c : Dim::Unknown()};
  }
  SetOutputType(node, 0, TypeOf(DType::kString, out));
  return Status::Ok();
}

Status RunStringNormalizer(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* x, Input(ctx, 0, "X"));
  KILN_ASSIGN_OR_RETURN(NormalizerAttrs a, ReadNormalizer(ctx.node));
  Status st = ref::StringNormalize(*x, a.action, a.case_sensitive, a.stopwords, &ctx.outputs[0]);
  if (!st.ok()) return ctx.Error(st.message());
  return Status::Ok();
}

// ---- TfIdfVectorizer -------------------------------------------------------------------------

Expected<ref::TfIdfConfig> ReadTfIdf(const ir::Node& node) {
  ir::AttrReader reader(node);
  ref::TfIdfConfig cfg;
  const std::string mode = reader.String("mode", "");
  cfg.min_gram = reader.Int("min_gram_length", 0);
  cfg.max_gram = reader.Int("max_gram_length", 0);
  cfg.max_skip = reader.Int("max_skip_count", 0);
  cfg.ngram_counts = reader.Ints("ngram_counts");
  cfg.ngram_indexes = reader.Ints("ngram_indexes");
  cfg.pool_int64s = reader.Ints("pool_int64s");
  cfg.pool_strings = reader.Strings("pool_strings");
  cfg.weights = reader.Floats("weights");
  KILN_RETURN_IF_ERROR(reader.status());
  if (mode == "TF") {
    cfg.mode = ref::TfIdfMode::kTf;
  } else if (mode == "IDF") {
    cfg.mode = ref::TfIdfMode::kIdf;
  } else if (mode == "TFIDF") {
    cfg.mode = ref::TfIdfMode::kTfIdf;
  } else {
    return Status::Error(node.Where(), "mode '", mode, "' must be TF, IDF or TFIDF");
  }
  if (auto width = ref::TfIdfOutputSize(cfg); !width.ok())
    return width.status().WithContext(node.Where());
  return cfg;
}

Status InferTfIdf(ir::Node& node) {
  KILN_RETURN_IF_ERROR(RequireInput(node, 0, "X"));
  KILN_ASSIGN_OR_RETURN(ref::TfIdfConfig cfg, ReadTfIdf(node));
  const int64_t width = *ref::TfIdfOutputSize(cfg);
  const DType t = InputDType(node, 0);
  if (t != DType::kUndefined && t != DType::kString && t != DType::kInt32 && t != DType::kInt64)
    return Status::Error(node.Where(), "X must be int32, int64 or string, got ", DTypeName(t));
  if (t == DType::kString && !cfg.pool_int64s.empty())
    return Status::Error(node.Where(), "string input needs pool_strings, not pool_int64s");
  if ((t == DType::kInt32 || t == DType::kInt64) && !cfg.pool_strings.empty())
    return Status::Error(node.Where(), "integer input needs pool_int64s, not pool_strings");
  const Dims* in = InputShape(node, 0);
  std::optional<Dims> out;
  if (in) {
    if (in->size() == 1) {
      out = Dims{Dim::Static(width)};
    } else if (in->size() == 2) {
      out = Dims{(*in)[0], Dim::Static(width)};
    } else {
      return Status::Error(node.Where(), "X must be [C] or [N, C], got rank ", in->size());
    }
  }
  SetOutputType(node, 0, TypeOf(DType::kFloat32, out));
  return Status::Ok();
}

Status RunTfIdf(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Tensor* x, Input(ctx, 0, "X"));
  KILN_ASSIGN_OR_RETURN(ref::TfIdfConfig cfg, ReadTfIdf(ctx.node));
  Status st = ref::TfIdfVectorize(*x, cfg, &ctx.outputs[0]);
  if (!st.ok()) return ctx.Error(st.message());
  return Status::Ok();
}

const OpDef kStringOps[] = {
    {"", "StringNormalizer", InferStringNormalizer, RunStringNormalizer, 10},
    {"", "TfIdfVectorizer", InferTfIdf, RunTfIdf, 9},
};

}  // namespace

std::span<const OpDef> StringOps() { return kStringOps; }

}  // namespace kiln::ops
