// The bodies of the Winograd transform microkernels (f32_winograd.h), written once as plain loops
// over the tiles, which each ISA file compiles with its own flags (the compiler vectorizes them;
// ivdep: the rows never overlap). Included only by the files in ukernels/<isa>/; everything here
// has internal linkage, so each ISA keeps its own copy (see src/kernels/CMakeLists.txt), and
// nothing here may use std:: templates for the same reason.
#pragma once

#include <cstddef>

#include "kernels/ukernels/f32_winograd.h"

namespace kiln::ukernels {
namespace {  // NOLINT(build/namespaces): one private copy per ISA file, on purpose

inline void WinoGather(size_t n, const float* src, float* d, size_t ds) {
  float *d0 = d, *d1 = d + ds, *d2 = d + 2 * ds, *d3 = d + 3 * ds, *d4 = d + 4 * ds,
        *d5 = d + 5 * ds;
#pragma GCC ivdep
  for (size_t q = 0; q < n; ++q) {
    const float* p = src + 4 * q;
    d0[q] = p[0];
    d1[q] = p[1];
    d2[q] = p[2];
    d3[q] = p[3];
    d4[q] = p[4];
    d5[q] = p[5];
  }
}

inline float WinoClamp(float v, float lo, float hi) {
  v = v < lo ? lo : v;
  return v > hi ? hi : v;
}

inline void WinoScatter(size_t n, const float* r, size_t rs, float bias, float lo, float hi,
                        float* y) {
  const float *r0 = r, *r1 = r + rs, *r2 = r + 2 * rs, *r3 = r + 3 * rs;
#pragma GCC ivdep
  for (size_t q = 0; q < n; ++q) {
    float* p = y + 4 * q;
    p[0] = WinoClamp(r0[q] + bias, lo, hi);
    p[1] = WinoClamp(r1[q] + bias, lo, hi);
    p[2] = WinoClamp(r2[q] + bias, lo, hi);
    p[3] = WinoClamp(r3[q] + bias, lo, hi);
  }
}

inline void WinoInputRows(size_t n, const float* in, size_t is, float* out, size_t os) {
  const float *d0 = in, *d1 = in + is, *d2 = in + 2 * is, *d3 = in + 3 * is, *d4 = in + 4 * is,
              *d5 = in + 5 * is;
  float *r0 = out, *r1 = out + os, *r2 = out + 2 * os, *r3 = out + 3 * os, *r4 = out + 4 * os,
        *r5 = out + 5 * os;
#pragma GCC ivdep
  for (size_t t = 0; t < n; ++t) {
    r0[t] = 4.0f * d0[t] - 5.0f * d2[t] + d4[t];
    r1[t] = d3[t] + d4[t] - 4.0f * (d1[t] + d2[t]);
    r2[t] = d4[t] - d3[t] + 4.0f * (d1[t] - d2[t]);
    r3[t] = d4[t] - d2[t] + 2.0f * (d3[t] - d1[t]);
    r4[t] = d4[t] - d2[t] + 2.0f * (d1[t] - d3[t]);
    r5[t] = 4.0f * d1[t] - 5.0f * d3[t] + d5[t];
  }
}

inline void WinoOutputRows(size_t n, const float* in, size_t is, float* out, size_t os) {
  const float *o0 = in, *o1 = in + is, *o2 = in + 2 * is, *o3 = in + 3 * is, *o4 = in + 4 * is,
              *o5 = in + 5 * is;
  float *s0 = out, *s1 = out + os, *s2 = out + 2 * os, *s3 = out + 3 * os;
#pragma GCC ivdep
  for (size_t t = 0; t < n; ++t) {
    const float a = o1[t] + o2[t], b = o1[t] - o2[t], c = o3[t] + o4[t], d = o3[t] - o4[t];
    s0[t] = o0[t] + a + c;
    s1[t] = b + 2.0f * d;
    s2[t] = a + 4.0f * c;
    s3[t] = b + 8.0f * d + o5[t];
  }
}

// One tile of kCb channels (f32_wino_input_cC): the columns first, into e (on the stack), then
// the rows, each step over the kCb lanes of a pixel (one vector at cb = 16 on AVX-512).
template <size_t kCb>
inline void WinoInputC(const float* d, size_t rs, float* v, size_t vs) {
  float e[6][6][kCb];
  for (size_t j = 0; j < 6; ++j) {
    const float* c = d + j * kCb;
#pragma GCC ivdep
    for (size_t l = 0; l < kCb; ++l) {
      const float d0 = c[l], d1 = c[rs + l], d2 = c[2 * rs + l], d3 = c[3 * rs + l],
                  d4 = c[4 * rs + l], d5 = c[5 * rs + l];
      e[0][j][l] = 4.0f * d0 - 5.0f * d2 + d4;
      e[1][j][l] = d3 + d4 - 4.0f * (d1 + d2);
      e[2][j][l] = d4 - d3 + 4.0f * (d1 - d2);
      e[3][j][l] = d4 - d2 + 2.0f * (d3 - d1);
      e[4][j][l] = d4 - d2 + 2.0f * (d1 - d3);
      e[5][j][l] = 4.0f * d1 - 5.0f * d3 + d5;
    }
  }
  for (size_t i = 0; i < 6; ++i) {
    float* r = v + 6 * i * vs;
#pragma GCC ivdep
    for (size_t l = 0; l < kCb; ++l) {
      const float d0 = e[i][0][l], d1 = e[i][1][l], d2 = e[i][2][l], d3 = e[i][3][l],
                  d4 = e[i][4][l], d5 = e[i][5][l];
      r[l] = 4.0f * d0 - 5.0f * d2 + d4;
      r[vs + l] = d3 + d4 - 4.0f * (d1 + d2);
      r[2 * vs + l] = d4 - d3 + 4.0f * (d1 - d2);
      r[3 * vs + l] = d4 - d2 + 2.0f * (d3 - d1);
      r[4 * vs + l] = d4 - d2 + 2.0f * (d1 - d3);
      r[5 * vs + l] = 4.0f * d1 - 5.0f * d3 + d5;
    }
  }
}

// One tile of kCb channels (f32_wino_output_cC): A^T down the columns into s, then along the
// rows, with the bias and clamp.
template <size_t kCb>
inline void WinoOutputC(const float* o, size_t os, const float* bias, float lo, float hi,
                        float* y, size_t rs) {
  float s[4][6][kCb];
  for (size_t j = 0; j < 6; ++j) {
    const float* c = o + j * os;
#pragma GCC ivdep
    for (size_t l = 0; l < kCb; ++l) {
      const float o0 = c[l], o1 = c[6 * os + l], o2 = c[12 * os + l], o3 = c[18 * os + l],
                  o4 = c[24 * os + l], o5 = c[30 * os + l];
      const float a = o1 + o2, b = o1 - o2, cc = o3 + o4, dd = o3 - o4;
      s[0][j][l] = o0 + a + cc;
      s[1][j][l] = b + 2.0f * dd;
      s[2][j][l] = a + 4.0f * cc;
      s[3][j][l] = b + 8.0f * dd + o5;
    }
  }
  for (size_t i = 0; i < 4; ++i) {
    float* r = y + i * rs;
#pragma GCC ivdep
    for (size_t l = 0; l < kCb; ++l) {
      const float o0 = s[i][0][l], o1 = s[i][1][l], o2 = s[i][2][l], o3 = s[i][3][l],
                  o4 = s[i][4][l], o5 = s[i][5][l];
      const float a = o1 + o2, b = o1 - o2, cc = o3 + o4, dd = o3 - o4, bl = bias[l];
      r[l] = WinoClamp(o0 + a + cc + bl, lo, hi);
      r[kCb + l] = WinoClamp(b + 2.0f * dd + bl, lo, hi);
      r[2 * kCb + l] = WinoClamp(a + 4.0f * cc + bl, lo, hi);
      r[3 * kCb + l] = WinoClamp(b + 8.0f * dd + o5 + bl, lo, hi);
    }
  }
}

}  // namespace
}  // namespace kiln::ukernels
