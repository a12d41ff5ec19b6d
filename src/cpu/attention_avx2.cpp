#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "cpu/attention.h"
#include "cpu/attention_kernels.h"
#include "cpu/kernels/groups_of_four.h"
#include "cpu/kernels/horizontal_sum_avx2.h"
#include "cpu/value_rows_prefetch.h"

namespace strata {
namespace {

// e^x for x <= 0: x = n ln2 + r with |r| <= ln2/2, e^r by its Taylor series to r^7 (relative
// error below 2e-7), 2^n through the exponent bits. Below -87 the result is flushed to 0.
__m256 exp_nonpositive(__m256 x) {
  const __m256 underflow = _mm256_cmp_ps(x, _mm256_set1_ps(-87.0f), _CMP_LT_OQ);
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // ln 2 in two parts, the first exact in few bits, so that n * ln2_high is exact.
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i exponent =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_andnot_ps(underflow, _mm256_mul_ps(p, _mm256_castsi256_ps(exponent)));
}

// Each position's dot product runs in the order of ggml's F32 dot product, which llama.cpp uses
// for q·k: four 8-lane partial sums s_j over dimensions 32i + 8j + l, combined as
// (s0 + s2) + (s1 + s3), the lanes then as ((x0 + x4) + (x1 + x5)) + ((x2 + x6) + (x3 + x7)),
// and dimensions past the last multiple of 32 added one by one. With positions in the lanes,
// every step is vertical.
template <int H>
void key_scores_tile(const float* q, const float* keys, int64_t head_dim, __m256* out) {
  const int64_t n_main = head_dim / 32 * 32;
  auto lane_sum = [&](int l, __m256* x) {
    __m256 s[4][H];
    for (int j = 0; j < 4; ++j)
      for (int h = 0; h < H; ++h) s[j][h] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n_main; i += 32)
      for (int j = 0; j < 4; ++j) {
        const int64_t d = i + 8 * j + l;
        const __m256 k = _mm256_loadu_ps(keys + d * kKeyTile);
        for (int h = 0; h < H; ++h)
          s[j][h] = _mm256_fmadd_ps(k, _mm256_broadcast_ss(q + h * head_dim + d), s[j][h]);
      }
    for (int h = 0; h < H; ++h)
      x[h] = _mm256_add_ps(_mm256_add_ps(s[0][h], s[2][h]), _mm256_add_ps(s[1][h], s[3][h]));
  };
  __m256 low[H], high[H], t[2][H];
  for (int pair = 0; pair < 2; ++pair)
    for (int half = 0; half < 2; ++half) {
      const int l = 2 * pair + half;
      lane_sum(l, low);
      lane_sum(l + 4, high);
      for (int h = 0; h < H; ++h) {
        const __m256 x = _mm256_add_ps(low[h], high[h]);
        t[pair][h] = half == 0 ? x : _mm256_add_ps(t[pair][h], x);
      }
    }
  for (int h = 0; h < H; ++h) {
    out[h] = _mm256_add_ps(t[0][h], t[1][h]);
    for (int64_t d = n_main; d < head_dim; ++d)
      out[h] = _mm256_add_ps(out[h], _mm256_mul_ps(_mm256_loadu_ps(keys + d * kKeyTile),
                                                   _mm256_set1_ps(q[h * head_dim + d])));
  }
}

// A tile's two halves of 8 positions, each as one register (key_scores_tile reads dimension d
// of a half at keys + d * kKeyTile).
template <int H>
void key_scores_heads(const float* q, const float* key_tiles, int64_t head_dim, int64_t n_pos,
                      float scale, float* scores, int64_t score_stride) {
  static_assert(kKeyTile == 16);
  const int64_t n_tiles = (n_pos + kKeyTile - 1) / kKeyTile;
  const __m256 scale_v = _mm256_set1_ps(scale);
  for (int64_t tile = 0; tile < n_tiles; ++tile)
    for (int half = 0; half < 2; ++half) {
      __m256 sums[H];
      key_scores_tile<H>(q, key_tiles + tile * head_dim * kKeyTile + 8 * half, head_dim, sums);
      for (int h = 0; h < H; ++h)
        _mm256_storeu_ps(scores + h * score_stride + tile * kKeyTile + 8 * half,
                         _mm256_mul_ps(sums[h], scale_v));
    }
}

void key_scores_avx2(const float* q, int n_heads, const float* key_tiles, int64_t head_dim,
                     int64_t n_pos, float scale, float* scores, int64_t score_stride) {
  in_groups_of_four(n_heads, [&](auto heads, int first) {
    key_scores_heads<heads()>(q + first * head_dim, key_tiles, head_dim, n_pos, scale,
                              scores + first * score_stride, score_stride);
  });
}

// The row is padded to whole tiles: the last block of 8 is computed whole and its lanes past
// n_pos are zeroed, so the sum and the normalisation see exactly n_pos values; the rest of the
// last tile is zeroed too.
void softmax_row(float* x, int64_t n_pos) {
  const int64_t n_full = n_pos / 8 * 8;
  __m256 max_v = _mm256_set1_ps(-INFINITY);
  for (int64_t j = 0; j < n_full; j += 8) max_v = _mm256_max_ps(max_v, _mm256_loadu_ps(x + j));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, max_v);
  float max = lanes[0];
  for (float lane : lanes) max = std::fmax(max, lane);
  for (int64_t j = n_full; j < n_pos; ++j) max = std::fmax(max, x[j]);

  const __m256 shift = _mm256_set1_ps(max);
  __m256d sum_low = _mm256_setzero_pd(), sum_high = _mm256_setzero_pd();
  for (int64_t j = 0; j < n_pos; j += 8) {
    __m256 e = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(x + j), shift));
    if (j + 8 > n_pos) {
      const __m256i lane_index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
      const __m256i valid = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(n_pos - j)), lane_index);
      e = _mm256_and_ps(e, _mm256_castsi256_ps(valid));
    }
    _mm256_storeu_ps(x + j, e);
    sum_low = _mm256_add_pd(sum_low, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    sum_high = _mm256_add_pd(sum_high, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  alignas(32) double parts[4];
  _mm256_store_pd(parts, _mm256_add_pd(sum_low, sum_high));
  const __m256 inverse =
      _mm256_set1_ps(float(1.0 / ((parts[0] + parts[1]) + (parts[2] + parts[3]))));
  int64_t j = 0;
  for (; j < n_pos; j += 8) _mm256_storeu_ps(x + j, _mm256_mul_ps(_mm256_loadu_ps(x + j), inverse));
  for (; j < LayerKvView::capacity_for(n_pos); j += 8) _mm256_storeu_ps(x + j, _mm256_setzero_ps());
}

void softmax_rows_avx2(float* scores, int n_heads, int64_t n_pos, int64_t score_stride) {
  for (int h = 0; h < n_heads; ++h) softmax_row(scores + h * score_stride, n_pos);
}

// Two output dimensions at a time: each loaded probability serves two value rows. Each output
// is one 8-lane sum over whole tiles: the probabilities past n_pos are zero (softmax_rows) and
// the values there finite (zero-initialised, or an earlier conversation's).
template <int H, int R>
void weighted_rows(const float* p, int64_t p_stride, const float* rows, int64_t capacity,
                   int64_t head_dim, int64_t n_pos, float* out) {
  const int64_t n_padded = (n_pos + kKeyTile - 1) / kKeyTile * kKeyTile;
  __m256 acc[R][H];
  for (int r = 0; r < R; ++r)
    for (int h = 0; h < H; ++h) acc[r][h] = _mm256_setzero_ps();
  for (int64_t j = 0; j < n_padded; j += 8) {
    __m256 v[R];
    for (int r = 0; r < R; ++r) v[r] = _mm256_loadu_ps(rows + r * capacity + j);
    for (int h = 0; h < H; ++h) {
      const __m256 pj = _mm256_loadu_ps(p + h * p_stride + j);
      for (int r = 0; r < R; ++r) acc[r][h] = _mm256_fmadd_ps(v[r], pj, acc[r][h]);
    }
  }
  for (int h = 0; h < H; ++h)
    for (int r = 0; r < R; ++r) out[h * head_dim + r] = horizontal_sum(acc[r][h]);
}

template <int H>
void weighted_values_heads(const float* p, int64_t p_stride, const float* values_t,
                           int64_t capacity, int64_t head_dim, int64_t n_pos, float* out) {
  prefetch_value_rows(values_t, std::min(kValueRowsAhead, head_dim), capacity, n_pos);
  int64_t d = 0;
  for (; d + 2 <= head_dim; d += 2) {
    if (d + kValueRowsAhead + 2 <= head_dim)
      prefetch_value_rows(values_t + (d + kValueRowsAhead) * capacity, 2, capacity, n_pos);
    weighted_rows<H, 2>(p, p_stride, values_t + d * capacity, capacity, head_dim, n_pos, out + d);
  }
  if (d < head_dim)
    weighted_rows<H, 1>(p, p_stride, values_t + d * capacity, capacity, head_dim, n_pos, out + d);
}

void weighted_values_avx2(const float* p, int n_heads, int64_t p_stride, const float* values_t,
                          int64_t capacity, int64_t head_dim, int64_t n_pos, float* out) {
  in_groups_of_four(n_heads, [&](auto heads, int first) {
    weighted_values_heads<heads()>(p + first * p_stride, p_stride, values_t, capacity, head_dim,
                                   n_pos, out + first * head_dim);
  });
}

}  // namespace

const AttentionKernels& attention_kernels_avx2() {
  static const AttentionKernels kernels{key_scores_avx2, softmax_rows_avx2, weighted_values_avx2};
  return kernels;
}

}  // namespace strata
