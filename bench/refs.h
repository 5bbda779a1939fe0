// Row-major C[M x N] = A[M x K] * B[K x N] (lda = K, ldb = ldc = N) through each reference
// library, with that library's thread count set explicitly first.
#pragma once

#include <cstddef>
#include <string>

namespace kiln::bench {

void OpenblasSetThreads(int threads);
void OpenblasSgemm(size_t m, size_t n, size_t k, const float* a, const float* b, float* c);
std::string OpenblasInfo();

void BlisSetThreads(int threads);
void BlisSgemm(size_t m, size_t n, size_t k, const float* a, const float* b, float* c);
std::string BlisInfo();

// Caps oneDNN's ISA (before any other oneDNN call), unless ONEDNN_MAX_CPU_ISA or DNNL_MAX_CPU_ISA
// already says; returns what holds, in words. kNone leaves it uncapped.
enum class OnednnIsa { kNone, kAvx2, kSse41 };
std::string OnednnCapIsa(OnednnIsa cap);
// Where KILN_ISA caps kiln below the CPU's best level, caps oneDNN at the same vectors (AVX2:
// dnnl_cpu_isa_avx2; scalar: SSE4.1, its lowest): a comparison of one ISA against the other's
// widest vectors says nothing about either (isa_match.cc).
std::string OnednnMatchKilnIsa();
void OnednnSetThreads(int threads);
void OnednnSgemm(size_t m, size_t n, size_t k, const float* a, const float* b, float* c);
std::string OnednnInfo();

// GFLOP/s of `threads` threads running independent FMA chains (the widest vectors the CPU has, 12
// accumulators, enough for two FMA pipes of latency 4 or 5) for about `seconds`.
// cpu_clock: time by the calling thread's CPU time (threads must be 1).
double MeasureFmaPeak(int threads, double seconds, bool cpu_clock);

// OpenBLAS's idle workers spin for ~2^28 cycles and OpenMP's for a while too: with two cores, a
// spinning library would steal the core of the one timed after it. Shortens those spins (unless
// the caller set them) and re-executes the program, since the libraries read them at load time;
// returns only in the re-executed process (or where the re-exec failed).
void ShortenLibrarySpins(char** argv);

}  // namespace kiln::bench
