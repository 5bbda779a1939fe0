// Memory for a large, long-lived buffer that kernels stream through: the weights of a module
// compiled in this process. Anonymous pages aligned to 2 MiB with transparent huge pages
// requested (madvise), so that streaming them takes one TLB entry per 2 MiB, not per 4 KiB
// (the hardware prefetchers stop at 4 KiB page boundaries). On Zen 4 one core read a cold 5 MB
// matrix at ~34 GB/s from huge pages against ~20 GB/s from 4 KiB pages (150 us against
// 250 us). A .kiln file's mapping needs none of this: its page cache already streamed as fast
// (large folios). Without THP this is ordinary memory. Smaller buffers come from operator new
// (a huge page each would waste memory).
#pragma once

#include <cstddef>
#include <memory>

namespace kiln {

// Buffers below this take ordinary aligned memory.
inline constexpr size_t kHugePageMinBytes = size_t{2} << 20;

struct HugePageFree {
  size_t map_bytes = 0;  // 0: from operator new (aligned to `align`)
  size_t align = 64;
  void* map_base = nullptr;
  void operator()(std::byte* p) const;
};
using HugePageBuffer = std::unique_ptr<std::byte, HugePageFree>;

// `bytes` (at least 1) of uninitialized memory aligned to `align` (a power of two, at most
// 4096); null when out of memory.
HugePageBuffer AllocateHugePageBacked(size_t bytes, size_t align);

}  // namespace kiln
