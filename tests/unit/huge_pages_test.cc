// AllocateHugePageBacked: small buffers from operator new, large ones from a 2 MiB-aligned
// anonymous mapping; both aligned as asked, writable end to end, and freed by the deleter
// (ASan reports a leak or a bad free otherwise).
#include "support/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace kiln {
namespace {

TEST(HugePages, SmallAndLargeBuffersAreAlignedAndWritable) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{4096}, kHugePageMinBytes - 1,
                       kHugePageMinBytes, kHugePageMinBytes * 3 + 5}) {
    for (size_t align : {size_t{64}, size_t{4096}}) {
      SCOPED_TRACE(testing::Message() << "bytes=" << bytes << " align=" << align);
      HugePageBuffer b = AllocateHugePageBacked(bytes, align);
      ASSERT_NE(b.get(), nullptr);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(b.get()) % align, 0u);
      if (bytes >= kHugePageMinBytes) {
        EXPECT_EQ(reinterpret_cast<uintptr_t>(b.get()) % kHugePageMinBytes, 0u);
        EXPECT_NE(b.get_deleter().map_bytes, 0u);
      } else {
        EXPECT_EQ(b.get_deleter().map_bytes, 0u);
      }
      const size_t n = bytes == 0 ? 1 : bytes;
      std::memset(b.get(), 0x5a, n);
      EXPECT_EQ(static_cast<unsigned char>(b.get()[n - 1]), 0x5a);
    }
  }
}

}  // namespace
}  // namespace kiln
