// The bodies of the Winograd transform microkernels (f32_winograd.h), written once as plain loops
// over the tiles of a chunk, which each ISA file compiles with its own flags (the compiler
// vectorizes the loops over q). Included only by the files in ukernels/<isa>/; everything here
// has internal linkage, so each ISA keeps its own copy (see src/kernels/CMakeLists.txt), and
// nothing here may use std:: templates for the same reason.
#pragma once

#include <cstddef>

#include "kernels/ukernels/f32_winograd.h"

namespace kiln::ukernels {
namespace {  // NOLINT(build/namespaces): one private copy per ISA file, on purpose

// Tiles per chunk: the 36 x kChunk intermediate stays in L1.
constexpr size_t kWinoChunk = 32;

inline void WinoInput(size_t n, const float* __restrict x, size_t x_stride, float* __restrict v,
                      size_t v_stride) {
  float e[36][kWinoChunk];  // after the row transform: e[6 i + k][q]
  for (size_t q0 = 0; q0 < n; q0 += kWinoChunk) {
    const size_t nq = n - q0 < kWinoChunk ? n - q0 : kWinoChunk;
    // Rows: e[i][k] = (d B)[i][k], the six inputs of row i at stride 4 across the tiles.
    for (size_t i = 0; i < 6; ++i) {
      const float* __restrict row = x + i * x_stride + 4 * q0;
      float* __restrict r0 = e[6 * i];
      float* __restrict r1 = e[6 * i + 1];
      float* __restrict r2 = e[6 * i + 2];
      float* __restrict r3 = e[6 * i + 3];
      float* __restrict r4 = e[6 * i + 4];
      float* __restrict r5 = e[6 * i + 5];
#pragma GCC ivdep
      for (size_t q = 0; q < nq; ++q) {
        const float* p = row + 4 * q;
        const float d0 = p[0], d1 = p[1], d2 = p[2], d3 = p[3], d4 = p[4], d5 = p[5];
        r0[q] = 4.0f * d0 - 5.0f * d2 + d4;
        r1[q] = d3 + d4 - 4.0f * (d1 + d2);
        r2[q] = d4 - d3 + 4.0f * (d1 - d2);
        r3[q] = d4 - d2 + 2.0f * (d3 - d1);
        r4[q] = d4 - d2 + 2.0f * (d1 - d3);
        r5[q] = 4.0f * d1 - 5.0f * d3 + d5;
      }
    }
    // Columns: V[k][j] = (B^T e)[k][j].
    for (size_t j = 0; j < 6; ++j) {
      const float* __restrict d0 = e[j];
      const float* __restrict d1 = e[6 + j];
      const float* __restrict d2 = e[12 + j];
      const float* __restrict d3 = e[18 + j];
      const float* __restrict d4 = e[24 + j];
      const float* __restrict d5 = e[30 + j];
      float* __restrict v0 = v + (0 + j) * v_stride + q0;
      float* __restrict v1 = v + (6 + j) * v_stride + q0;
      float* __restrict v2 = v + (12 + j) * v_stride + q0;
      float* __restrict v3 = v + (18 + j) * v_stride + q0;
      float* __restrict v4 = v + (24 + j) * v_stride + q0;
      float* __restrict v5 = v + (30 + j) * v_stride + q0;
#pragma GCC ivdep
      for (size_t q = 0; q < nq; ++q) {
        v0[q] = 4.0f * d0[q] - 5.0f * d2[q] + d4[q];
        v1[q] = d3[q] + d4[q] - 4.0f * (d1[q] + d2[q]);
        v2[q] = d4[q] - d3[q] + 4.0f * (d1[q] - d2[q]);
        v3[q] = d4[q] - d2[q] + 2.0f * (d3[q] - d1[q]);
        v4[q] = d4[q] - d2[q] + 2.0f * (d1[q] - d3[q]);
        v5[q] = 4.0f * d1[q] - 5.0f * d3[q] + d5[q];
      }
    }
  }
}

inline float WinoClamp(float v, float lo, float hi) {
  v = v < lo ? lo : v;
  return v > hi ? hi : v;
}

inline void WinoOutput(size_t n, const float* __restrict o, size_t o_stride, float bias, float lo,
                       float hi, float* __restrict y, size_t y_stride) {
  float s[24][kWinoChunk];  // after the column transform: s[6 i + j][q], i < 4
  for (size_t q0 = 0; q0 < n; q0 += kWinoChunk) {
    const size_t nq = n - q0 < kWinoChunk ? n - q0 : kWinoChunk;
    for (size_t j = 0; j < 6; ++j) {
      const float* __restrict o0 = o + (0 + j) * o_stride + q0;
      const float* __restrict o1 = o + (6 + j) * o_stride + q0;
      const float* __restrict o2 = o + (12 + j) * o_stride + q0;
      const float* __restrict o3 = o + (18 + j) * o_stride + q0;
      const float* __restrict o4 = o + (24 + j) * o_stride + q0;
      const float* __restrict o5 = o + (30 + j) * o_stride + q0;
      float* __restrict s0 = s[j];
      float* __restrict s1 = s[6 + j];
      float* __restrict s2 = s[12 + j];
      float* __restrict s3 = s[18 + j];
#pragma GCC ivdep
      for (size_t q = 0; q < nq; ++q) {
        const float a = o1[q] + o2[q], b = o1[q] - o2[q], c = o3[q] + o4[q], d = o3[q] - o4[q];
        s0[q] = o0[q] + a + c;
        s1[q] = b + 2.0f * d;
        s2[q] = a + 4.0f * c;
        s3[q] = b + 8.0f * d + o5[q];
      }
    }
    // Rows of the tile, written at stride 4 across the tiles with the bias and clamp.
    for (size_t i = 0; i < 4; ++i) {
      const float* __restrict t0 = s[6 * i];
      const float* __restrict t1 = s[6 * i + 1];
      const float* __restrict t2 = s[6 * i + 2];
      const float* __restrict t3 = s[6 * i + 3];
      const float* __restrict t4 = s[6 * i + 4];
      const float* __restrict t5 = s[6 * i + 5];
      float* __restrict row = y + i * y_stride + 4 * q0;
#pragma GCC ivdep
      for (size_t q = 0; q < nq; ++q) {
        const float a = t1[q] + t2[q], b = t1[q] - t2[q], c = t3[q] + t4[q], d = t3[q] - t4[q];
        float* p = row + 4 * q;
        p[0] = WinoClamp(t0[q] + a + c + bias, lo, hi);
        p[1] = WinoClamp(b + 2.0f * d + bias, lo, hi);
        p[2] = WinoClamp(a + 4.0f * c + bias, lo, hi);
        p[3] = WinoClamp(b + 8.0f * d + t5[q] + bias, lo, hi);
      }
    }
  }
}

}  // namespace
}  // namespace kiln::ukernels
