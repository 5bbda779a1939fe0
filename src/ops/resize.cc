// Resize, Upsample, GridSample, RoiAlign: attributes, checks, shape inference, and the binding
// to the reference kernels in kernels/ref/resize.h.
#include <algorithm>
#include <cmath>
#include <map>

#include "kernels/ref/resize.h"
#include "ops/families.h"
#include "ops/infer_util.h"

namespace kiln::ops {
namespace {

using ref::NearestRound;
using ref::ResizeAxis;
using ref::ResizeCoord;
using ref::ResizeMode;
using ref::ResizeOptions;

// Looks `key` up in `table`, or errors naming the attribute and the accepted values.
template <class E>
Expected<E> Choose(const ir::Node& node, const std::string& attr, const std::string& key,
                   const std::map<std::string, E>& table) {
  auto it = table.find(key);
  if (it != table.end()) return it->second;
  std::string accepted;
  for (const auto& [name, value] : table) accepted += StrCat(accepted.empty() ? "" : ", ", name);
  return Status::Error(node.Where(), "attribute ", attr, "='", key, "' is not one of ", accepted);
}

// Everything Resize (any opset) and Upsample need besides the tensors.
struct ResizeConfig {
  ResizeOptions options;
  std::vector<int64_t> axes;  // empty: every axis
  std::string aspect_policy = "stretch";
  bool is_upsample_form = false;  // Upsample / Resize-10: inputs are X, scales
};

Expected<ResizeConfig> ReadResizeConfig(const ir::Node& node) {
  ir::AttrReader r(node);
  ResizeConfig c;
  const bool legacy = node.op_type == "Upsample" || node.opset < 11;
  c.is_upsample_form = legacy;
  ResizeOptions& o = c.options;
  const std::string mode = r.String("mode", "nearest");
  // Upsample-7 spells linear "bilinear" in some exporters.
  KILN_ASSIGN_OR_RETURN(o.mode, Choose<ResizeMode>(node, "mode", mode,
                                                   {{"nearest", ResizeMode::kNearest},
                                                    {"linear", ResizeMode::kLinear},
                                                    {"bilinear", ResizeMode::kLinear},
                                                    {"cubic", ResizeMode::kCubic}}));
  if (legacy) {
    if (o.mode == ResizeMode::kCubic)
      return Status::Error(node.Where(), "mode 'cubic' needs Resize opset 11 or newer");
    o.coord = ResizeCoord::kAsymmetric;
    o.nearest = NearestRound::kSimple;
  } else {
    KILN_ASSIGN_OR_RETURN(
        o.coord, Choose<ResizeCoord>(node, "coordinate_transformation_mode",
                                     r.String("coordinate_transformation_mode", "half_pixel"),
                                     {{"half_pixel", ResizeCoord::kHalfPixel},
                                      {"half_pixel_symmetric", ResizeCoord::kHalfPixelSymmetric},
                                      {"pytorch_half_pixel", ResizeCoord::kPytorchHalfPixel},
                                      {"align_corners", ResizeCoord::kAlignCorners},
                                      {"asymmetric", ResizeCoord::kAsymmetric},
                                      {"tf_half_pixel_for_nn", ResizeCoord::kTfHalfPixelForNn},
                                      {"tf_crop_and_resize", ResizeCoord::kTfCropAndResize}}));
    KILN_ASSIGN_OR_RETURN(
        o.nearest, Choose<NearestRound>(node, "nearest_mode",
                                        r.String("nearest_mode", "round_prefer_floor"),
                                        {{"round_prefer_floor", NearestRound::kRoundPreferFloor},
                                         {"round_prefer_ceil", NearestRound::kRoundPreferCeil},
                                         {"floor", NearestRound::kFloor},
                                         {"ceil", NearestRound::kCeil}}));
    o.cubic_a = r.Float("cubic_coeff_a", -0.75f);
    o.exclude_outside = r.Int("exclude_outside", 0) != 0;
    o.extrapolation_value = r.Float("extrapolation_value", 0.0f);
    o.antialias = r.Int("antialias", 0) != 0;
    c.axes = r.Ints("axes");
    c.aspect_policy = r.String("keep_aspect_ratio_policy", "stretch");
    if (c.aspect_policy != "stretch" && c.aspect_policy != "not_larger" &&
        c.aspect_policy != "not_smaller")
      return Status::Error(node.Where(), "attribute keep_aspect_ratio_policy='", c.aspect_policy,
                           "' is not one of stretch, not_larger, not_smaller");
  }
  KILN_RETURN_IF_ERROR(r.status());
  return c;
}

// The scales / sizes / roi that decide the output, as vectors (empty when absent).
struct ResizeTargets {
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  std::vector<double> roi;
};

// Per-axis targets from the input dims (-1 where unknown, which inference passes). An unknown
// output size comes back as -1.
Expected<std::vector<ResizeAxis>> PlanAxes(const ir::Node& node, const ResizeConfig& c,
                                           const std::vector<int64_t>& in_dims,
                                           const ResizeTargets& t) {
  const int64_t rank = static_cast<int64_t>(in_dims.size());
  std::vector<int64_t> axes = c.axes;
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  std::vector<bool> seen(rank, false);
  for (int64_t& a : axes) {
    KILN_ASSIGN_OR_RETURN(a, NormalizeAxis(node, a, rank));
    if (seen[a]) return Status::Error(node.Where(), "axis ", a, " appears twice in axes");
    seen[a] = true;
  }
  const size_t n = axes.size();
  const bool by_scales = !t.scales.empty();
  if (by_scales == !t.sizes.empty())
    return Status::Error(node.Where(), "exactly one of 'scales' and 'sizes' must be given");
  if (by_scales && t.scales.size() != n)
    return Status::Error(node.Where(), "'scales' has ", t.scales.size(), " values for ", n,
                         " axes");
  if (!by_scales && t.sizes.size() != n)
    return Status::Error(node.Where(), "'sizes' has ", t.sizes.size(), " values for ", n,
                         " axes");
  const bool crop = c.options.coord == ResizeCoord::kTfCropAndResize;
  if (crop && t.roi.size() != 2 * n)
    return Status::Error(node.Where(), "tf_crop_and_resize needs 'roi' with ", 2 * n,
                         " values, got ", t.roi.size());

  std::vector<ResizeAxis> plan(rank);
  for (int64_t i = 0; i < rank; ++i) plan[i] = ResizeAxis{in_dims[i], 1.0, 0.0, 1.0};
  for (size_t k = 0; k < n; ++k) {
    ResizeAxis& p = plan[axes[k]];
    const int64_t in = in_dims[axes[k]];
    if (crop) {
      p.roi_start = t.roi[k];
      p.roi_end = t.roi[n + k];
      if (!std::isfinite(p.roi_start) || !std::isfinite(p.roi_end))
        return Status::Error(node.Where(), "'roi' holds a non-finite value");
    }
    if (by_scales) {
      const double s = t.scales[k];
      if (!(s > 0) || !std::isfinite(s))
        return Status::Error(node.Where(), "scale ", s, " of axis ", axes[k], " must be positive");
      if (c.is_upsample_form && node.op_type == "Upsample" && s < 1)
        return Status::Error(node.Where(), "Upsample scale ", s, " must be >= 1");
      p.scale = s;
      // ONNX's reference truncates scale * in (in float64), ignoring roi even for
      // tf_crop_and_resize; ONNX Runtime agrees.
      const double out = s * static_cast<double>(in);
      if (in >= 0 && out >= 9.0e15)
        return Status::Error(node.Where(), "output size ", out, " of axis ", axes[k],
                             " is too large");
      p.out_size = in < 0 ? -1 : static_cast<int64_t>(std::floor(out));
    } else {
      if (t.sizes[k] < 0)
        return Status::Error(node.Where(), "size ", t.sizes[k], " of axis ", axes[k],
                             " is negative");
      p.out_size = t.sizes[k];
      p.scale = in > 0 ? static_cast<double>(t.sizes[k]) / static_cast<double>(in) : 1.0;
    }
  }
  if (!by_scales && c.aspect_policy != "stretch") {
    double scale = c.aspect_policy == "not_larger" ? 1e300 : 0.0;
    for (int64_t a : axes) {
      if (in_dims[a] < 0) return std::vector<ResizeAxis>(rank, ResizeAxis{-1, 1.0, 0.0, 1.0});
      scale = c.aspect_policy == "not_larger" ? std::min(scale, plan[a].scale)
                                              : std::max(scale, plan[a].scale);
    }
    for (int64_t a : axes) {
      plan[a].scale = scale;
      plan[a].out_size = static_cast<int64_t>(scale * static_cast<double>(in_dims[a]) + 0.5);
    }
  }
  return plan;
}

// Reads a present, non-empty input as doubles / int64s; an empty tensor counts as absent.
Expected<std::vector<double>> FloatValues(const RunContext& ctx, size_t i, const char* what) {
  const Tensor* t = ctx.input(i);
  if (t == nullptr || t->numel() == 0) return std::vector<double>{};
  if (!IsFloat(t->dtype()))
    return ctx.Error("'", what, "' must be a float tensor, got ", DescribeTensor(*t));
  if (t->rank() != 1) return ctx.Error("'", what, "' must be 1-D, got ", DescribeTensor(*t));
  std::vector<double> v;
  for (int64_t k = 0; k < t->numel(); ++k) v.push_back(t->AsDouble(k));
  return v;
}

Expected<ResizeTargets> ReadTargets(const RunContext& ctx, const ResizeConfig& c) {
  ResizeTargets t;
  if (c.is_upsample_form) {
    KILN_ASSIGN_OR_RETURN(t.scales, FloatValues(ctx, 1, "scales"));
    if (t.scales.empty()) return ctx.Error("'scales' is missing or empty");
    return t;
  }
  KILN_ASSIGN_OR_RETURN(t.roi, FloatValues(ctx, 1, "roi"));
  KILN_ASSIGN_OR_RETURN(t.scales, FloatValues(ctx, 2, "scales"));
  const Tensor* sizes = ctx.input(3);
  if (sizes != nullptr && sizes->numel() > 0) {
    if (sizes->rank() != 1) return ctx.Error("'sizes' must be 1-D, got ", DescribeTensor(*sizes));
    KILN_ASSIGN_OR_RETURN(t.sizes, sizes->ToInt64Vector("Resize sizes"));
  }
  return t;
}

Status RunResize(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(ResizeConfig c, ReadResizeConfig(ctx.node));
  const Tensor* x = ctx.input(0);
  if (x == nullptr) return ctx.Error("input 'X' is missing");
  if (x->rank() == 0) return ctx.Error("input 'X' must have rank >= 1, got a scalar");
  if (c.options.mode != ResizeMode::kNearest && !IsFloat(x->dtype()) && c.is_upsample_form)
    return ctx.Error("linear Upsample needs a float input, got ", DescribeTensor(*x));
  KILN_ASSIGN_OR_RETURN(ResizeTargets t, ReadTargets(ctx, c));
  KILN_ASSIGN_OR_RETURN(std::vector<ResizeAxis> plan, PlanAxes(ctx.node, c, x->dims(), t));
  return ref::Resize(*x, plan, c.options, &ctx.outputs[0]).WithContext(ctx.node.Where());
}

// Constant scales/sizes/roi as targets; nullopt when any needed one is not constant.
std::optional<ResizeTargets> ConstantTargets(const ir::Node& node, const ResizeConfig& c) {
  ResizeTargets t;
  auto floats = [&](size_t i, std::vector<double>* out) {
    if (!node.has_input(i)) return true;
    const Tensor* k = ConstantInput(node, i);
    if (k == nullptr || !IsFloat(k->dtype())) return false;
    for (int64_t j = 0; j < k->numel(); ++j) out->push_back(k->AsDouble(j));
    return true;
  };
  if (c.is_upsample_form) return floats(1, &t.scales) ? std::optional(t) : std::nullopt;
  if (!floats(1, &t.roi) || !floats(2, &t.scales)) return std::nullopt;
  if (node.has_input(3)) {
    const Tensor* k = ConstantInput(node, 3);
    if (k == nullptr) return std::nullopt;
    auto v = k->ToInt64Vector("Resize sizes");
    if (!v.ok()) return std::nullopt;
    t.sizes = *v;
  }
  return t;
}

Status InferResize(ir::Node& node) {
  if (!node.has_input(0)) return Status::Error(node.Where(), "input 'X' is missing");
  KILN_ASSIGN_OR_RETURN(ResizeConfig c, ReadResizeConfig(node));
  const ValueType& in = node.inputs[0]->type;
  ValueType out;
  out.dtype = in.dtype;
  if (in.shape) {
    out.shape = std::vector<Dim>(in.shape->size(), Dim::Unknown());
    std::optional<ResizeTargets> t = ConstantTargets(node, c);
    if (t) {
      std::vector<int64_t> dims;
      for (const Dim& d : *in.shape) dims.push_back(d.is_static() ? d.value : -1);
      auto plan = PlanAxes(node, c, dims, *t);
      // A bad constant is reported when the node runs, with the input's real shape.
      if (plan.ok()) {
        for (size_t i = 0; i < dims.size(); ++i) {
          const ResizeAxis& a = (*plan)[i];
          if (a.out_size >= 0) (*out.shape)[i] = Dim::Static(a.out_size);
          else if (a.scale == 1.0) (*out.shape)[i] = (*in.shape)[i];
        }
      }
    }
  }
  SetOutputType(node, 0, out);
  return Status::Ok();
}

// GridSample --------------------------------------------------------------------------------

struct GridConfig {
  ref::GridSampleMode mode;
  ref::GridSamplePadding padding;
  bool align_corners;
};

Expected<GridConfig> ReadGridConfig(const ir::Node& node) {
  ir::AttrReader r(node);
  GridConfig g;
  // Opset 16 names the modes bilinear/bicubic, opset 20 linear/cubic.
  KILN_ASSIGN_OR_RETURN(
      g.mode, Choose<ref::GridSampleMode>(node, "mode",
                                          r.String("mode", node.opset >= 20 ? "linear" : "bilinear"),
                                          {{"bilinear", ref::GridSampleMode::kBilinear},
                                           {"linear", ref::GridSampleMode::kBilinear},
                                           {"nearest", ref::GridSampleMode::kNearest},
                                           {"bicubic", ref::GridSampleMode::kBicubic},
                                           {"cubic", ref::GridSampleMode::kBicubic}}));
  KILN_ASSIGN_OR_RETURN(
      g.padding, Choose<ref::GridSamplePadding>(node, "padding_mode",
                                                r.String("padding_mode", "zeros"),
                                                {{"zeros", ref::GridSamplePadding::kZeros},
                                                 {"border", ref::GridSamplePadding::kBorder},
                                                 {"reflection",
                                                  ref::GridSamplePadding::kReflection}}));
  g.align_corners = r.Int("align_corners", 0) != 0;
  KILN_RETURN_IF_ERROR(r.status());
  return g;
}

Status InferGridSample(ir::Node& node) {
  if (!node.has_input(0) || !node.has_input(1))
    return Status::Error(node.Where(), "needs inputs 'X' and 'grid'");
  KILN_RETURN_IF_ERROR(ReadGridConfig(node).status());
  const ValueType& x = node.inputs[0]->type;
  const ValueType& grid = node.inputs[1]->type;
  ValueType out;
  out.dtype = x.dtype;
  if (x.shape && grid.shape && x.shape->size() >= 3 && grid.shape->size() == x.shape->size()) {
    out.shape = std::vector<Dim>{(*x.shape)[0], (*x.shape)[1]};
    for (size_t i = 1; i + 1 < grid.shape->size(); ++i) out.shape->push_back((*grid.shape)[i]);
  }
  SetOutputType(node, 0, out);
  return Status::Ok();
}

Status RunGridSample(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(GridConfig g, ReadGridConfig(ctx.node));
  const Tensor* x = ctx.input(0);
  const Tensor* grid = ctx.input(1);
  if (x == nullptr || grid == nullptr) return ctx.Error("needs inputs 'X' and 'grid'");
  if (grid->dtype() != x->dtype())
    return ctx.Error("'grid' ", DescribeTensor(*grid), " must have the type of 'X' ",
                     DescribeTensor(*x));
  if (ctx.node.opset < 20 && x->rank() != 4)
    return ctx.Error("'X' must be 4-D before opset 20, got ", DescribeTensor(*x));
  return ref::GridSample(*x, *grid, g.mode, g.padding, g.align_corners, &ctx.outputs[0])
      .WithContext(ctx.node.Where());
}

// RoiAlign ----------------------------------------------------------------------------------

Expected<ref::RoiAlignOptions> ReadRoiAlignOptions(const ir::Node& node) {
  ir::AttrReader r(node);
  ref::RoiAlignOptions o;
  KILN_ASSIGN_OR_RETURN(o.pool, Choose<ref::RoiAlignPool>(node, "mode", r.String("mode", "avg"),
                                                          {{"avg", ref::RoiAlignPool::kAvg},
                                                           {"max", ref::RoiAlignPool::kMax}}));
  o.output_height = r.Int("output_height", 1);
  o.output_width = r.Int("output_width", 1);
  o.sampling_ratio = r.Int("sampling_ratio", 0);
  o.spatial_scale = r.Float("spatial_scale", 1.0f);
  // Opset 10 had no attribute and behaved like "output_half_pixel".
  const std::string coord = r.String("coordinate_transformation_mode",
                                     node.opset >= 16 ? "half_pixel" : "output_half_pixel");
  KILN_ASSIGN_OR_RETURN(o.half_pixel,
                        Choose<bool>(node, "coordinate_transformation_mode", coord,
                                     {{"half_pixel", true}, {"output_half_pixel", false}}));
  KILN_RETURN_IF_ERROR(r.status());
  if (o.output_height <= 0 || o.output_width <= 0 || o.output_height > (int64_t{1} << 20) ||
      o.output_width > (int64_t{1} << 20))
    return Status::Error(node.Where(), "output_height and output_width must be in [1, 2^20], got ",
                         o.output_height, " and ", o.output_width);
  if (o.sampling_ratio < 0)
    return Status::Error(node.Where(), "sampling_ratio must be >= 0, got ", o.sampling_ratio);
  return o;
}

Status InferRoiAlign(ir::Node& node) {
  if (!node.has_input(0) || !node.has_input(1) || !node.has_input(2))
    return Status::Error(node.Where(), "needs inputs 'X', 'rois' and 'batch_indices'");
  KILN_ASSIGN_OR_RETURN(ref::RoiAlignOptions o, ReadRoiAlignOptions(node));
  const ValueType& x = node.inputs[0]->type;
  const ValueType& rois = node.inputs[1]->type;
  ValueType out;
  out.dtype = x.dtype;
  Dim r = rois.shape && rois.shape->size() == 2 ? (*rois.shape)[0] : Dim::Unknown();
  Dim c = x.shape && x.shape->size() == 4 ? (*x.shape)[1] : Dim::Unknown();
  out.shape = std::vector<Dim>{r, c, Dim::Static(o.output_height), Dim::Static(o.output_width)};
  SetOutputType(node, 0, out);
  return Status::Ok();
}

Status RunRoiAlign(RunContext& ctx) {
  KILN_ASSIGN_OR_RETURN(ref::RoiAlignOptions o, ReadRoiAlignOptions(ctx.node));
  const Tensor* x = ctx.input(0);
  const Tensor* rois = ctx.input(1);
  const Tensor* idx = ctx.input(2);
  if (x == nullptr || rois == nullptr || idx == nullptr)
    return ctx.Error("needs inputs 'X', 'rois' and 'batch_indices'");
  if (rois->dtype() != x->dtype())
    return ctx.Error("'rois' ", DescribeTensor(*rois), " must have the type of 'X' ",
                     DescribeTensor(*x));
  if (idx->rank() != 1)
    return ctx.Error("'batch_indices' must be 1-D, got ", DescribeTensor(*idx));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> batch, idx->ToInt64Vector("batch_indices"));
  return ref::RoiAlign(*x, *rois, batch, o, &ctx.outputs[0]).WithContext(ctx.node.Where());
}

constexpr OpDef kResizeOps[] = {
    {"", "Resize", InferResize, RunResize, 10, true},
    {"", "Upsample", InferResize, RunResize, 7, true},
    {"", "GridSample", InferGridSample, RunGridSample, 16, true},
    {"", "RoiAlign", InferRoiAlign, RunRoiAlign, 10, true},
};

}  // namespace

std::span<const OpDef> ResizeOps() { return kResizeOps; }

}  // namespace kiln::ops
