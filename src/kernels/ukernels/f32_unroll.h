// Compile-time unrolling for the per-ISA microkernel bodies (the *_impl.h headers): loops whose
// index must be a constant, because it picks an accumulator or weight register. Always inlined:
// GCC otherwise kept some nested lambdas as calls, with the accumulators in memory.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

namespace kiln::ukernels {
namespace {  // NOLINT(build/namespaces): one private copy per ISA file, on purpose

// Calls f(std::integral_constant<size_t, i>) for i = 0 .. N - 1.
template <size_t N, class F>
__attribute__((always_inline)) inline void Unrolled(F&& f) {
  [&]<size_t... I>(std::index_sequence<I...>) __attribute__((always_inline)) {
    (f(std::integral_constant<size_t, I>{}), ...);
  }(std::make_index_sequence<N>{});
}

}  // namespace
}  // namespace kiln::ukernels
