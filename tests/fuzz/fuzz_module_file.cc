// libFuzzer target over the `.kiln` module parser (runtime/module_file.h): any bytes must parse
// into a valid module or fail with a message, never crash, hang or trip a sanitizer.
//
// The checksum is off (a mutated file would almost never get past it). Two shapes of input:
//   - starting with "KILNMOD\0": a whole file, header included;
//   - anything else: a plan section only, wrapped here in a well-formed header and followed by
//     a small weights section, so that mutations land on the FlatBuffers plan rather than on
//     the page of padding in front of the weights.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "runtime/module_file.h"

namespace {

constexpr size_t kHeaderSize = 64;
constexpr size_t kWeightsSize = 512;  // the seed module's weights fit in this

// The header as module_file.cc lays it out (little-endian); checksum and reserved stay zero.
size_t WrapPlan(const uint8_t* plan, size_t plan_size, std::byte* out) {
  const uint64_t weights_at = (kHeaderSize + plan_size + 4095) / 4096 * 4096;
  const uint32_t version = kiln::runtime::kModuleFormatVersion;
  const uint32_t header_size = kHeaderSize;
  const uint64_t fields[4] = {kHeaderSize, plan_size, weights_at, kWeightsSize};
  std::memset(out, 0, weights_at);
  std::memcpy(out, "KILNMOD\0", 8);
  std::memcpy(out + 8, &version, 4);
  std::memcpy(out + 12, &header_size, 4);
  std::memcpy(out + 16, fields, sizeof(fields));
  if (plan_size) std::memcpy(out + kHeaderSize, plan, plan_size);
  for (size_t i = 0; i < kWeightsSize; ++i) out[weights_at + i] = static_cast<std::byte>(i * 7);
  return weights_at + kWeightsSize;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const bool whole_file = size >= 8 && std::memcmp(data, "KILNMOD\0", 8) == 0;
  const size_t capacity = whole_file ? size : kHeaderSize + size + 4096 + kWeightsSize;
  // The parsed module points into these bytes (its weights), so they are copied into a buffer
  // the module owns, 64-byte aligned as a mapping would be.
  auto* buf = static_cast<std::byte*>(::operator new(capacity + 1, std::align_val_t{64}));
  std::shared_ptr<const void> owner(
      buf, [](const void* p) { ::operator delete(const_cast<void*>(p), std::align_val_t{64}); });
  size_t n = size;
  if (whole_file) {
    std::memcpy(buf, data, size);
  } else {
    n = WrapPlan(data, size, buf);
  }

  auto parsed = kiln::runtime::ParseModule({buf, n}, std::move(owner), {.verify_checksum = false});
  if (!parsed.ok()) {
    if (parsed.status().message().empty()) __builtin_trap();  // an error must say something
    return 0;
  }
  const kiln::runtime::Module& m = **parsed;
  // Accepted means valid: every blob readable in place (ASan checks each byte read stays inside
  // the buffer) and aligned for the kernels.
  if (!m.Validate().ok()) __builtin_trap();
  unsigned sum = 0;
  for (size_t b = 0; b < m.blobs.size(); ++b) {
    auto bytes = m.BlobBytes(static_cast<int32_t>(b));
    if (reinterpret_cast<uintptr_t>(bytes.data()) % kiln::runtime::kBlobAlignment != 0)
      __builtin_trap();
    for (std::byte x : bytes) sum += static_cast<unsigned>(x);
  }
  (void)kiln::runtime::CheckIsaSupported(m);
  if (std::getenv("KILN_FUZZ_PRINT"))
    std::fprintf(stderr, "accepted: %zu values, %zu steps, %zu blobs (byte sum %u)\n",
                 m.values.size(), m.steps.size(), m.blobs.size(), sum);
  return 0;
}
