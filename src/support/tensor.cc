#include "support/tensor.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <sstream>

namespace kiln {

namespace {
std::atomic<int64_t> g_tensor_byte_limit{int64_t{16} << 30};
}  // namespace

int64_t TensorByteLimit() { return g_tensor_byte_limit.load(std::memory_order_relaxed); }
void SetTensorByteLimit(int64_t bytes) {
  g_tensor_byte_limit.store(bytes, std::memory_order_relaxed);
}

Expected<int64_t> CheckedNumel(const std::vector<int64_t>& dims, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return Status::Error(what, ": negative dimension ", d, " in ", DimsToString(dims));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      return Status::Error(what, ": element count of ", DimsToString(dims), " overflows int64");
    n *= d;
  }
  return n;
}

namespace {
std::shared_ptr<void> AllocAligned(size_t bytes) {
  // One extra cache line keeps zero-size tensors valid and lets kernels over-read by a vector.
  size_t size = ((bytes + 63) / 64 + 1) * 64;
  void* p = std::aligned_alloc(64, size);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, size);
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}
}  // namespace

Tensor::Tensor(DType dtype, std::vector<int64_t> dims) : dtype_(dtype), dims_(std::move(dims)) {
  if (IsContainer(dtype_)) {  // an empty sequence / optional, never a buffer
    dims_ = {0};
    items_ = std::make_shared<const std::vector<Tensor>>();
    return;
  }
  numel_ = 1;
  for (int64_t d : dims_) numel_ *= d;
  if (dtype_ == DType::kString) {
    strings_.resize(numel_);
  } else {
    owner_ = AllocAligned(numel_ * DTypeSize(dtype_));
    data_ = owner_.get();
  }
}

Expected<Tensor> Tensor::Make(DType dtype, std::vector<int64_t> dims, const std::string& what) {
  KILN_ASSIGN_OR_RETURN(int64_t n, CheckedNumel(dims, what));
  const int64_t elem = static_cast<int64_t>(DTypeSize(dtype));
  if (elem == 0) return Status::Error(what, ": undefined element type");
  const int64_t limit = TensorByteLimit();
  if (n > limit / elem)
    return Status::Error(what, ": ", DimsToString(dims), " of ", DTypeName(dtype),
                         " is larger than kiln's limit of ", limit, " bytes");
  return Tensor(dtype, std::move(dims));
}

Tensor Tensor::Borrow(DType dtype, std::vector<int64_t> dims, void* data,
                      std::shared_ptr<void> owner) {
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.numel_ = 1;
  for (int64_t d : t.dims_) t.numel_ *= d;
  t.owner_ = std::move(owner);
  t.data_ = data;
  return t;
}

Tensor Tensor::Sequence(std::vector<Tensor> items, DType elem) {
  Tensor t;
  t.dtype_ = DType::kSequence;
  t.dims_ = {0};
  t.elem_ = elem;
  t.items_ = std::make_shared<const std::vector<Tensor>>(std::move(items));
  return t;
}

Tensor Tensor::Optional(const Tensor* value, DType elem) {
  Tensor t;
  t.dtype_ = DType::kOptional;
  t.dims_ = {0};
  t.elem_ = elem;
  std::vector<Tensor> items;
  if (value != nullptr) items.push_back(*value);
  t.items_ = std::make_shared<const std::vector<Tensor>>(std::move(items));
  return t;
}

const std::vector<Tensor>& Tensor::items() const {
  static const std::vector<Tensor> kNone;
  return items_ ? *items_ : kNone;
}

Tensor Tensor::Clone() const {
  if (IsContainer(dtype_)) return *this;  // items are immutable and shared
  Tensor t(dtype_, dims_);
  if (dtype_ == DType::kString) {
    t.strings_ = strings_;
  } else if (nbytes() > 0) {
    std::memcpy(t.data_, data_, nbytes());
  }
  return t;
}

Tensor Tensor::Reshaped(std::vector<int64_t> dims) const {
  Tensor t = *this;
  if (IsContainer(dtype_)) return t;  // no elements to view differently
  t.dims_ = std::move(dims);
  return t;
}

double Tensor::AsDouble(int64_t i) const {
  switch (dtype_) {
    case DType::kFloat16: return HalfToFloat(data<uint16_t>()[i]);
    case DType::kBFloat16: return BFloat16ToFloat(data<uint16_t>()[i]);
    case DType::kBool: return data<bool>()[i] ? 1.0 : 0.0;
    default: break;
  }
  double out = 0;
  KILN_DISPATCH_NUMERIC(dtype_, T, return 0, out = static_cast<double>(data<T>()[i]));
  return out;
}

int64_t Tensor::AsInt64(int64_t i) const {
  int64_t out = 0;
  switch (dtype_) {
    case DType::kFloat16: case DType::kBFloat16: case DType::kFloat32: case DType::kFloat64:
      return static_cast<int64_t>(AsDouble(i));
    case DType::kBool: return data<bool>()[i] ? 1 : 0;
    default: break;
  }
  KILN_DISPATCH_INTEGER(dtype_, T, return 0, out = static_cast<int64_t>(data<T>()[i]));
  return out;
}

Expected<std::vector<int64_t>> Tensor::ToInt64Vector(const std::string& what) const {
  if (dtype_ != DType::kInt64 && dtype_ != DType::kInt32)
    return Status::Error(what, " must be int32 or int64, got ", DTypeName(dtype_));
  std::vector<int64_t> v(numel_);
  for (int64_t i = 0; i < numel_; ++i) v[i] = AsInt64(i);
  return v;
}

std::vector<float> Tensor::ToFloatVector() const {
  std::vector<float> v(numel_);
  for (int64_t i = 0; i < numel_; ++i) v[i] = static_cast<float>(AsDouble(i));
  return v;
}

std::string DimsToString(const std::vector<int64_t>& dims) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < dims.size(); ++i) os << (i ? "," : "") << dims[i];
  os << ']';
  return os.str();
}

std::string DescribeTensor(const Tensor& t) {
  if (t.is_sequence()) {
    const auto& items = t.items();
    if (items.empty()) return StrCat("seq(empty of ", DTypeName(t.elem_dtype()), ")");
    return StrCat("seq(", items.size(), " x ", DescribeTensor(items[0]), ")");
  }
  if (t.is_optional())
    return t.items().empty() ? std::string("optional(empty)")
                             : StrCat("optional(", DescribeTensor(t.items()[0]), ")");
  return StrCat(DTypeName(t.dtype()), DimsToString(t.dims()));
}

}  // namespace kiln
