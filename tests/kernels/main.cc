// The kernel tests' main. CTest runs this binary once more per KILN_ISA level
// (kernel_tests_isa_*, tests/kernels/CMakeLists.txt); a cap at or above what the CPU has changes
// nothing, so that run would repeat the default one (under the sanitizers, about two minutes
// each on 2 cores). Those runs set KILN_TEST_SKIP_UNLOWERED, and then such a cap exits with
// kSkipped, which CTest reports as skipped. Run by hand, any cap runs every test.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "support/cpu.h"

namespace {
constexpr int kSkipped = 77;  // SKIP_RETURN_CODE of the kernel_tests_isa_* tests
}  // namespace

int main(int argc, char** argv) {
  const char* cap = std::getenv("KILN_ISA");
  const kiln::CpuInfo& cpu = kiln::GetCpuInfo();
  if (std::getenv("KILN_TEST_SKIP_UNLOWERED") != nullptr && cap != nullptr && *cap != '\0' &&
      cpu.env_status.ok() && cpu.isa == cpu.hardware_isa) {
    std::printf("KILN_ISA=%s does not lower this CPU's level (%s): the default run covers it\n",
                cap, kiln::IsaName(cpu.hardware_isa));
    return kSkipped;
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
