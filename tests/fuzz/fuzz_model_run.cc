// libFuzzer target over RUNNING models: the fuzz bytes build a one-node ONNX model (an op from
// kiln's op table, 0-5 inputs of small random shapes and dtypes, some of them constants, and
// random attributes of plausible names and kinds), which is loaded and run by the reference
// interpreter. Any error is fine; a crash, a sanitizer report, a hang or a huge allocation is a
// bug in the op or its kernel. One input in 32 is instead read as a raw ModelProto and run with
// inputs made from its declared types.
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/onnx/importer.h"
#include "support/tensor.h"
#include "interp/interpreter.h"
#include "ir/printer.h"
#include "onnx.pb.h"
#include "ops/op_registry.h"

namespace {

using kiln::DType;
using kiln::Tensor;

// Small shapes keep every run fast; the cap bounds what an all-5s rank-4 shape costs.
constexpr int kMaxRank = 4;
constexpr int64_t kMaxDim = 5;
constexpr int64_t kMaxInputElements = 256;

enum Kind { kInt, kInts, kFloat, kFloats, kString, kStrings, kTensor };

// The attribute names kiln's ops read, each with the kind ONNX gives it. The fuzzer sometimes
// picks another kind, to check that a wrong kind is refused cleanly too.
struct AttrName {
  const char* name;
  Kind kind;
};
constexpr AttrName kAttrs[] = {
    {"axis", kInt}, {"axes", kInts}, {"perm", kInts}, {"kernel_shape", kInts},
    {"strides", kInts}, {"pads", kInts}, {"dilations", kInts}, {"group", kInt},
    {"keepdims", kInt}, {"mode", kString}, {"alpha", kFloat}, {"beta", kFloat},
    {"epsilon", kFloat}, {"value", kTensor}, {"k", kInt}, {"auto_pad", kString},
    {"ceil_mode", kInt}, {"count_include_pad", kInt}, {"storage_order", kInt}, {"p", kInt},
    {"gamma", kFloat}, {"momentum", kFloat}, {"transA", kInt}, {"transB", kInt}, {"to", kInt},
    {"blocksize", kInt}, {"block_size", kInt}, {"largest", kInt}, {"sorted", kInt},
    {"select_last_index", kInt}, {"exclusive", kInt}, {"reverse", kInt}, {"batch_dims", kInt},
    {"reduction", kString}, {"direction", kString}, {"hidden_size", kInt}, {"layout", kInt},
    {"coordinate_transformation_mode", kString}, {"cubic_coeff_a", kFloat},
    {"exclude_outside", kInt}, {"extrapolation_value", kFloat}, {"nearest_mode", kString},
    {"keep_aspect_ratio_policy", kString}, {"start", kInt}, {"end", kInt}, {"split", kInts},
    {"num_outputs", kInt}, {"noop_with_empty_axes", kInt}, {"output_padding", kInts},
    {"output_shape", kInts}, {"lambd", kFloat}, {"bias", kFloat}, {"size", kInt},
    {"detect_negative", kInt}, {"detect_positive", kInt}, {"fmod", kInt}, {"allowzero", kInt},
    {"equation", kString}, {"seed", kFloat}, {"dtype", kInt}, {"spatial", kInt},
    {"training_mode", kInt}, {"value_float", kFloat}, {"value_floats", kFloats},
    {"value_int", kInt}, {"value_ints", kInts}, {"value_string", kString},
    {"value_strings", kStrings}, {"min", kFloat}, {"max", kFloat}, {"clip", kFloat},
    {"upper", kInt}, {"time_axis", kInt}, {"batch_axis", kInt}, {"spatial_scale", kFloat},
    {"sampling_ratio", kInt}, {"output_height", kInt}, {"output_width", kInt},
    {"padding_mode", kString}, {"align_corners", kInt}, {"periodic", kInt}, {"onesided", kInt},
    {"inverse", kInt}, {"output_dtype", kInt}, {"output_datatype", kInt}, {"num_groups", kInt},
    {"ignore_index", kInt}, {"linear_before_reset", kInt}, {"input_forget", kInt},
    {"activations", kStrings}, {"activation_alpha", kFloats}, {"activation_beta", kFloats},
    {"center_point_box", kInt}, {"broadcast", kInt}, {"approximate", kString},
    {"antialias", kInt}, {"num_scan_inputs", kInt}, {"scan_input_axes", kInts},
    {"scan_output_axes", kInts}, {"scan_input_directions", kInts},
    {"scan_output_directions", kInts}, {"stash_type", kInt}, {"saturate", kInt},
};

constexpr const char* kStringValues[] = {
    "constant", "reflect", "edge", "wrap", "nearest", "linear", "cubic", "bilinear",
    "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", "DCR", "CRD", "none", "add", "mul", "max",
    "min", "forward", "reverse", "bidirectional", "half_pixel", "asymmetric", "align_corners",
    "pytorch_half_pixel", "tf_crop_and_resize", "round_prefer_floor", "round_prefer_ceil",
    "floor", "ceil", "stretch", "not_larger", "not_smaller", "Relu", "Tanh", "Sigmoid",
    "Affine", "LeakyRelu", "HardSigmoid", "Elu", "Softsign", "Softplus", "ScaledTanh",
    "ThresholdedRelu", "tanh", "zeros", "border", "reflection", "ij,jk->ik", "i,i", "...ii->...i",
    "bij,bjk->bik", "ii", "ab,ab->", "a...,a...->...", "i->ii", "", "x",
};

constexpr DType kDTypes[] = {DType::kFloat32, DType::kFloat32, DType::kFloat32, DType::kInt64,
                             DType::kInt64,   DType::kInt32,   DType::kBool,    DType::kUInt8,
                             DType::kInt8,    DType::kFloat16, DType::kFloat64, DType::kString,
                             DType::kBFloat16, DType::kUInt16, DType::kInt16,  DType::kUInt32,
                             DType::kUInt64};

// The extremes overflow sizes or are refused; none asks for a legitimate 2-16 GiB output (which
// kiln's 16 GiB tensor cap allows but -malloc_limit_mb reports), except int32 max as a count.
int64_t SmallInt(FuzzedDataProvider& fdp) {
  const uint8_t b = fdp.ConsumeIntegral<uint8_t>();
  if (b < 224) return static_cast<int64_t>(b % 10) - 3;  // -3..6: axes, sizes, flags
  constexpr int64_t kExtremes[] = {std::numeric_limits<int64_t>::min(),
                                   std::numeric_limits<int64_t>::max(),
                                   std::numeric_limits<int32_t>::min(),
                                   std::numeric_limits<int32_t>::max(),
                                   int64_t{1} << 40,
                                   1000,
                                   -1000,
                                   64,
                                   -64,
                                   100,
                                   17,
                                   int64_t{1} << 62,
                                   -(int64_t{1} << 62),
                                   255,
                                   256,
                                   -129};
  return kExtremes[b % 16];
}

float SmallFloat(FuzzedDataProvider& fdp) {
  constexpr float kValues[] = {0.f, 1.f, -1.f, 2.f, 0.5f, -3.f, 3.f, 1e-3f, 100.f, -0.f, 7.f,
                               0.25f, -0.5f, 1e30f, std::numeric_limits<float>::max(),
                               std::numeric_limits<float>::quiet_NaN(),
                               std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::denorm_min(), 1e-30f};
  const uint8_t b = fdp.ConsumeIntegral<uint8_t>();
  if (b < 200) return kValues[b % 13];
  return kValues[b % (sizeof(kValues) / sizeof(kValues[0]))];
}

// Tensor data: a count read from data (a Range limit, a window size) is the output's size, so
// values that wrap to 2^31..2^32 ask for legitimate 2-16 GiB outputs: negatives stay small in
// unsigned types and int32 max becomes int32 min.
int64_t DataInt(FuzzedDataProvider& fdp) {
  const int64_t v = SmallInt(fdp);
  return v == std::numeric_limits<int32_t>::max() ? std::numeric_limits<int32_t>::min() : v;
}
uint64_t SmallUnsigned(FuzzedDataProvider& fdp) {
  const int64_t v = DataInt(fdp);
  return static_cast<uint64_t>(v < 0 ? -(v % 1024) : v);
}

// Fills a tensor's elements from the fuzz bytes (zeros once they run out).
void Fill(FuzzedDataProvider& fdp, Tensor* t) {
  const int64_t n = t->numel();
  for (int64_t i = 0; i < n; ++i) {
    switch (t->dtype()) {
      case DType::kFloat32: t->data<float>()[i] = SmallFloat(fdp); break;
      case DType::kFloat64: t->data<double>()[i] = SmallFloat(fdp); break;
      case DType::kFloat16: t->data<uint16_t>()[i] = kiln::FloatToHalf(SmallFloat(fdp)); break;
      case DType::kBFloat16:
        t->data<uint16_t>()[i] = kiln::FloatToBFloat16(SmallFloat(fdp));
        break;
      case DType::kInt64: t->data<int64_t>()[i] = DataInt(fdp); break;
      case DType::kUInt64: t->data<uint64_t>()[i] = static_cast<uint64_t>(SmallUnsigned(fdp)); break;
      case DType::kInt32: t->data<int32_t>()[i] = static_cast<int32_t>(DataInt(fdp)); break;
      case DType::kUInt32: t->data<uint32_t>()[i] = static_cast<uint32_t>(SmallUnsigned(fdp)); break;
      case DType::kInt16: t->data<int16_t>()[i] = static_cast<int16_t>(DataInt(fdp)); break;
      case DType::kUInt16: t->data<uint16_t>()[i] = static_cast<uint16_t>(SmallUnsigned(fdp)); break;
      case DType::kInt8: t->data<int8_t>()[i] = static_cast<int8_t>(DataInt(fdp)); break;
      case DType::kUInt8: t->data<uint8_t>()[i] = static_cast<uint8_t>(SmallUnsigned(fdp)); break;
      case DType::kBool: t->data<uint8_t>()[i] = fdp.ConsumeBool() ? 1 : 0; break;
      case DType::kString:
        t->strings()[i] = kStringValues[fdp.ConsumeIntegralInRange<size_t>(
            0, sizeof(kStringValues) / sizeof(kStringValues[0]) - 1)];
        break;
      default: break;
    }
  }
}

void ToProto(const Tensor& t, const std::string& name, ::onnx::TensorProto* p) {
  p->set_name(name);
  p->set_data_type(static_cast<int32_t>(t.dtype()));
  for (int64_t d : t.dims()) p->add_dims(d);
  if (t.dtype() == DType::kString) {
    for (const auto& s : t.strings()) p->add_string_data(s);
  } else {
    p->set_raw_data(std::string(static_cast<const char*>(t.raw()), t.nbytes()));
  }
}

std::vector<int64_t> RandomShape(FuzzedDataProvider& fdp) {
  const int rank = fdp.ConsumeIntegralInRange<int>(0, kMaxRank);
  std::vector<int64_t> dims;
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) {
    int64_t d = fdp.ConsumeIntegralInRange<int64_t>(0, kMaxDim + 2);
    if (d > kMaxDim) d = 1;  // 1 is the common broadcast dim: give it more weight than 0
    if (n * d > kMaxInputElements) d = 1;
    n *= d;
    dims.push_back(d);
  }
  return dims;
}

void AddAttribute(FuzzedDataProvider& fdp, ::onnx::NodeProto* node) {
  const AttrName& an = kAttrs[fdp.ConsumeIntegralInRange<size_t>(0, std::size(kAttrs) - 1)];
  Kind kind = an.kind;
  if (fdp.ConsumeIntegralInRange<int>(0, 15) == 0)
    kind = static_cast<Kind>(fdp.ConsumeIntegralInRange<int>(kInt, kTensor));
  auto* a = node->add_attribute();
  a->set_name(an.name);
  const int count = fdp.ConsumeIntegralInRange<int>(0, 5);
  switch (kind) {
    case kInt:
      a->set_type(::onnx::AttributeProto::INT);
      a->set_i(SmallInt(fdp));
      break;
    case kInts:
      a->set_type(::onnx::AttributeProto::INTS);
      for (int i = 0; i < count; ++i) a->add_ints(SmallInt(fdp));
      break;
    case kFloat:
      a->set_type(::onnx::AttributeProto::FLOAT);
      a->set_f(SmallFloat(fdp));
      break;
    case kFloats:
      a->set_type(::onnx::AttributeProto::FLOATS);
      for (int i = 0; i < count; ++i) a->add_floats(SmallFloat(fdp));
      break;
    case kString:
      a->set_type(::onnx::AttributeProto::STRING);
      a->set_s(kStringValues[fdp.ConsumeIntegralInRange<size_t>(0, std::size(kStringValues) - 1)]);
      break;
    case kStrings:
      a->set_type(::onnx::AttributeProto::STRINGS);
      for (int i = 0; i < count; ++i)
        a->add_strings(
            kStringValues[fdp.ConsumeIntegralInRange<size_t>(0, std::size(kStringValues) - 1)]);
      break;
    case kTensor: {
      a->set_type(::onnx::AttributeProto::TENSOR);
      Tensor t(kDTypes[fdp.ConsumeIntegralInRange<size_t>(0, std::size(kDTypes) - 1)],
               fdp.ConsumeBool() ? std::vector<int64_t>{} : std::vector<int64_t>{1});
      Fill(fdp, &t);
      ToProto(t, "", a->mutable_t());
      break;
    }
  }
}

void Run(const kiln::ir::Model& model, const kiln::interp::NamedTensors& inputs) {
  // KILN_FUZZ_PRINT=1 prints each model before it runs (to read a crash's input).
  static const bool print = std::getenv("KILN_FUZZ_PRINT") != nullptr;
  if (print) std::fprintf(stderr, "%s\n", kiln::ir::PrintGraph(*model.graph).c_str());
  std::vector<Tensor> outputs;
  kiln::Status st = kiln::interp::Run(*model.graph, inputs, &outputs);
  if (!st.ok() && st.message().empty()) __builtin_trap();  // an error must say something
}

// (a): one node of a table op with generated inputs and attributes.
void FuzzOneNode(FuzzedDataProvider& fdp) {
  const auto ops = kiln::ops::AllOps();
  const kiln::ops::OpDef& op = ops[fdp.ConsumeIntegralInRange<size_t>(0, ops.size() - 1)];

  ::onnx::ModelProto m;
  m.set_ir_version(8);
  const int min_opset = std::max(7, op.since_version);
  auto* imp = m.add_opset_import();
  imp->set_domain("");
  imp->set_version(fdp.ConsumeIntegralInRange<int>(min_opset, std::max(min_opset, 21)));
  if (!op.domain.empty()) {
    auto* dimp = m.add_opset_import();
    dimp->set_domain(std::string(op.domain));
    dimp->set_version(1);
  }
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto* node = g->add_node();
  node->set_name("n");
  node->set_op_type(std::string(op.op_type));
  node->set_domain(std::string(op.domain));

  kiln::interp::NamedTensors inputs;
  const int num_inputs = fdp.ConsumeIntegralInRange<int>(0, 5);
  std::vector<int64_t> prev_shape;
  DType prev_dtype = DType::kFloat32;
  for (int i = 0; i < num_inputs; ++i) {
    const std::string name = "x" + std::to_string(i);
    const uint8_t how = fdp.ConsumeIntegral<uint8_t>();
    if (i > 0 && how % 10 == 0) {  // an omitted optional input
      node->add_input("");
      continue;
    }
    const bool constant = i > 0 && how % 10 >= 6;
    // Shape/index inputs are mostly int64 vectors; data inputs mostly share the first's shape.
    DType dtype = kDTypes[fdp.ConsumeIntegralInRange<size_t>(0, std::size(kDTypes) - 1)];
    std::vector<int64_t> dims;
    const uint8_t shape_how = fdp.ConsumeIntegral<uint8_t>();
    if (constant && shape_how % 2 == 0) {
      dtype = DType::kInt64;
      dims = {fdp.ConsumeIntegralInRange<int64_t>(0, 5)};
    } else if (i > 0 && shape_how % 3 == 0) {
      dims = prev_shape;
      if (shape_how % 2) dtype = prev_dtype;
    } else {
      dims = RandomShape(fdp);
    }
    Tensor t(dtype, dims);
    Fill(fdp, &t);
    node->add_input(name);
    if (constant) {
      ToProto(t, name, g->add_initializer());
    } else {
      auto* vi = g->add_input();
      vi->set_name(name);
      auto* tt = vi->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(static_cast<int32_t>(dtype));
      auto* shape = tt->mutable_shape();
      for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
      inputs[name] = t;
    }
    if (i == 0) {
      prev_shape = dims;
      prev_dtype = dtype;
    }
  }
  const int num_attrs = fdp.ConsumeIntegralInRange<int>(0, 5);
  for (int i = 0; i < num_attrs; ++i) AddAttribute(fdp, node);
  const int num_outputs = fdp.ConsumeIntegralInRange<int>(1, 3);
  for (int i = 0; i < num_outputs; ++i) {
    const std::string name = "y" + std::to_string(i);
    node->add_output(name);
    g->add_output()->set_name(name);
  }

  std::string bytes;
  if (!m.SerializeToString(&bytes)) return;
  auto model = kiln::onnx::LoadModelFromBytes(bytes, "");
  if (!model.ok()) return;
  Run(*model, inputs);
}

// (b): raw bytes as a ModelProto; inputs from the declared types, symbolic dims 1..3.
void FuzzRawModel(FuzzedDataProvider& fdp) {
  const uint8_t sym_size = fdp.ConsumeIntegralInRange<uint8_t>(1, 3);
  const std::string bytes = fdp.ConsumeRemainingBytesAsString();
  auto model = kiln::onnx::LoadModelFromBytes(bytes, "");
  if (!model.ok()) return;
  kiln::interp::NamedTensors inputs;
  int64_t total = 0;
  for (const kiln::ir::Value* v : model->graph->inputs) {
    std::vector<int64_t> dims;
    if (v->type.shape) {
      for (const auto& d : *v->type.shape) dims.push_back(d.is_static() ? d.value : sym_size);
    }
    auto n = kiln::CheckedNumel(dims, v->name);
    if (!n.ok() || *n > kMaxInputElements * 16) return;
    total += *n;
    if (total > kMaxInputElements * 64) return;
    if (v->type.dtype == DType::kUndefined) return;
    Tensor t(v->type.dtype, dims);
    for (int64_t i = 0; i < t.numel() && t.dtype() == DType::kFloat32; ++i)
      t.data<float>()[i] = static_cast<float>(i % 7) - 3.f;
    inputs[v->name] = t;
  }
  Run(*model, inputs);
}

}  // namespace

// kiln's 16 GiB tensor cap is far above libFuzzer's -malloc_limit_mb: a model may legitimately
// ask for a multi-GiB output, which is a finding only for the limit, not for kiln. Lower the cap
// so such requests become kiln's own "larger than kiln's limit" errors.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  kiln::SetTensorByteLimit(int64_t{256} << 20);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  // FuzzedDataProvider takes integral values from the end: the last byte picks the mode.
  if (fdp.ConsumeIntegral<uint8_t>() % 32 == 31) {
    FuzzRawModel(fdp);
  } else {
    FuzzOneNode(fdp);
  }
  return 0;
}
