#include "support/huge_pages.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <new>

namespace kiln {

void HugePageFree::operator()(std::byte* p) const {
  if (p == nullptr) return;
  if (map_bytes != 0) {
    ::munmap(map_base, map_bytes);
  } else {
    ::operator delete(p, std::align_val_t{align});
  }
}

HugePageBuffer AllocateHugePageBacked(size_t bytes, size_t align) {
  bytes = std::max<size_t>(bytes, 1);
  if (bytes >= kHugePageMinBytes) {
    constexpr size_t kHuge = size_t{2} << 20;
    const size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
    // One huge page of slack, to start on a 2 MiB boundary.
    const size_t map_bytes = rounded + kHuge;
    void* base = ::mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                        -1, 0);
    if (base != MAP_FAILED) {
      const auto b = reinterpret_cast<uintptr_t>(base);
      auto* start = reinterpret_cast<std::byte*>((b + kHuge - 1) / kHuge * kHuge);
      // Advice only: without THP the pages are ordinary ones.
      (void)::madvise(start, rounded, MADV_HUGEPAGE);
      return HugePageBuffer(start, HugePageFree{map_bytes, align, base});
    }
  }
  auto* p = static_cast<std::byte*>(::operator new(bytes, std::align_val_t{align}, std::nothrow));
  return HugePageBuffer(p, HugePageFree{0, align, nullptr});
}

}  // namespace kiln
