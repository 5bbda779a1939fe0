// Tensor: an element type, dims and a shared, 64-byte-aligned buffer. Copies share the buffer;
// Clone() copies the bytes. Kernels treat inputs as immutable and write fresh outputs.
// A Tensor of dtype kSequence or kOptional holds ONNX's non-tensor values instead: a shared,
// immutable list of items (a sequence's values in order; an optional's zero or one value). Such
// a Tensor has no elements (dims [0], numel 0, nbytes 0, data null), so a tensor kernel handed
// one by mistake reads nothing and fails on its type.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "support/dtype.h"
#include "support/status.h"

namespace kiln {

// Tensors above this many bytes are refused: a hostile shape must become an error, not an OOM
// kill. 16 GiB by default; a process may lower it once at start-up (the fuzzers do, to stay
// inside libFuzzer's memory limit). Not meant to change while models run.
int64_t TensorByteLimit();
void SetTensorByteLimit(int64_t bytes);

// Product of dims, or an error naming `what` if a dim is negative or the product overflows.
Expected<int64_t> CheckedNumel(const std::vector<int64_t>& dims, const std::string& what);

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled. Dims must already be validated (non-negative, no overflow); use Make otherwise.
  Tensor(DType dtype, std::vector<int64_t> dims);
  // Validating constructor for dims that come from data (a model file, an input, a shape tensor).
  static Expected<Tensor> Make(DType dtype, std::vector<int64_t> dims,
                               const std::string& what = "tensor");
  // A view of memory owned by `owner` (an mmap, a protobuf string); no copy is made.
  static Tensor Borrow(DType dtype, std::vector<int64_t> dims, void* data,
                       std::shared_ptr<void> owner);
  template <class T>
  static Tensor Scalar(T v) {
    Tensor t(DTypeOf<T>::value, {});
    *t.data<T>() = v;
    return t;
  }
  template <class T>
  static Tensor FromVector(const std::vector<T>& v, std::vector<int64_t> dims) {
    Tensor t(DTypeOf<T>::value, std::move(dims));
    for (size_t i = 0; i < v.size() && static_cast<int64_t>(i) < t.numel(); ++i) t.data<T>()[i] = v[i];
    return t;
  }

  // A sequence of `items` (each a tensor, or a sequence/optional in turn). `elem` is the element
  // type the sequence was declared with, kept so an empty sequence still knows it.
  static Tensor Sequence(std::vector<Tensor> items, DType elem = DType::kUndefined);
  // An optional holding `value`, or an empty optional when `value` is null.
  static Tensor Optional(const Tensor* value, DType elem = DType::kUndefined);

  bool defined() const { return dtype_ != DType::kUndefined; }
  bool is_sequence() const { return dtype_ == DType::kSequence; }
  bool is_optional() const { return dtype_ == DType::kOptional; }
  // A sequence's values, an optional's zero or one value; empty for a plain tensor.
  const std::vector<Tensor>& items() const;
  // The element type recorded for a sequence/optional (kUndefined when unknown).
  DType elem_dtype() const { return elem_; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t dim(size_t i) const { return dims_[i]; }
  int64_t rank() const { return static_cast<int64_t>(dims_.size()); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return dtype_ == DType::kString ? 0 : numel_ * DTypeSize(dtype_); }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  template <class T>
  T* data() { return static_cast<T*>(data_); }
  template <class T>
  const T* data() const { return static_cast<const T*>(data_); }
  // String tensors keep their elements here (numel() of them).
  std::vector<std::string>& strings() { return strings_; }
  const std::vector<std::string>& strings() const { return strings_; }

  Tensor Clone() const;
  // Same buffer, new dims with the same element count (Reshape, Flatten, Squeeze...).
  Tensor Reshaped(std::vector<int64_t> dims) const;
  // Reads element i of a numeric tensor as double / int64 (shape inputs, scalars).
  double AsDouble(int64_t i) const;
  int64_t AsInt64(int64_t i) const;
  // Reads an int32/int64 tensor into a vector (axes, pads, shapes, sizes).
  Expected<std::vector<int64_t>> ToInt64Vector(const std::string& what) const;
  // Reads a float tensor (any float type) into a vector of float.
  std::vector<float> ToFloatVector() const;

 private:
  DType dtype_ = DType::kUndefined;
  std::vector<int64_t> dims_;
  int64_t numel_ = 0;
  std::shared_ptr<void> owner_;
  void* data_ = nullptr;
  std::vector<std::string> strings_;
  std::shared_ptr<const std::vector<Tensor>> items_;  // sequences and optionals only
  DType elem_ = DType::kUndefined;                    // sequences and optionals only
};

// "float32[1,3,224,224]"; "seq(2 x float32[3])", "optional(empty)" for the other kinds.
std::string DescribeTensor(const Tensor& t);
std::string DimsToString(const std::vector<int64_t>& dims);

}  // namespace kiln
