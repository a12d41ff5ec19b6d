// The attention kernels on AVX-512, computing bit for bit what the AVX2 kernels compute: each
// output sees the same operations in the same order, so the golden parity of the AVX2 kernels
// carries over and a test can hold the two to equality.
//
// key_scores: a key tile's 16 positions are one register, and every position sees the AVX2
// kernel's operations in the AVX2 kernel's order (positions sit in lanes, all steps vertical),
// at half the instructions.
// weighted_values: an AVX2 output dimension is an 8-lane sum over positions, then a horizontal
// sum. Here a register holds the 8-lane sums of two dimensions side by side (two value rows
// loaded into its halves, the probabilities broadcast to both), so each FMA advances two
// outputs, and each half ends in the AVX2 kernel's horizontal sum.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "cpu/attention.h"
#include "cpu/attention_kernels.h"
#include "cpu/kernels/groups_of_four.h"
#include "cpu/kernels/halves_avx512.h"
#include "cpu/kernels/horizontal_sum_avx2.h"
#include "cpu/value_rows_prefetch.h"

namespace strata {
namespace {

static_assert(kKeyTile == 16, "one register of scores per key tile");

// attention_avx2.cpp's key_scores_tile on T tiles of 16 positions: dimension sums in ggml's F32
// order. The T tiles share each broadcast query element, which halves the loads at T = 2 (the
// kernel is bound by loads, one per FMA at T = 1).
template <int H, int T>
void key_scores_tiles(const float* q, const float* keys, int64_t head_dim, __m512 out[][T]) {
  const int64_t n_main = head_dim / 32 * 32, tile_floats = head_dim * kKeyTile;
  auto lane_sum = [&](int l, __m512 x[][T]) {
    __m512 s[4][H][T];
    for (int j = 0; j < 4; ++j)
      for (int h = 0; h < H; ++h)
        for (int u = 0; u < T; ++u) s[j][h][u] = _mm512_setzero_ps();
    for (int64_t i = 0; i < n_main; i += 32)
      for (int j = 0; j < 4; ++j) {
        const int64_t d = i + 8 * j + l;
        __m512 k[T];
        for (int u = 0; u < T; ++u) k[u] = _mm512_loadu_ps(keys + u * tile_floats + d * kKeyTile);
        for (int h = 0; h < H; ++h) {
          const __m512 qd = _mm512_set1_ps(q[h * head_dim + d]);
          for (int u = 0; u < T; ++u) s[j][h][u] = _mm512_fmadd_ps(k[u], qd, s[j][h][u]);
        }
      }
    for (int h = 0; h < H; ++h)
      for (int u = 0; u < T; ++u)
        x[h][u] = _mm512_add_ps(_mm512_add_ps(s[0][h][u], s[2][h][u]),
                                _mm512_add_ps(s[1][h][u], s[3][h][u]));
  };
  __m512 low[H][T], high[H][T], t[2][H][T];
  for (int pair = 0; pair < 2; ++pair)
    for (int half = 0; half < 2; ++half) {
      const int l = 2 * pair + half;
      lane_sum(l, low);
      lane_sum(l + 4, high);
      for (int h = 0; h < H; ++h)
        for (int u = 0; u < T; ++u) {
          const __m512 x = _mm512_add_ps(low[h][u], high[h][u]);
          t[pair][h][u] = half == 0 ? x : _mm512_add_ps(t[pair][h][u], x);
        }
    }
  for (int h = 0; h < H; ++h)
    for (int u = 0; u < T; ++u) {
      out[h][u] = _mm512_add_ps(t[0][h][u], t[1][h][u]);
      for (int64_t d = n_main; d < head_dim; ++d)
        out[h][u] = _mm512_add_ps(
            out[h][u], _mm512_mul_ps(_mm512_loadu_ps(keys + u * tile_floats + d * kKeyTile),
                                     _mm512_set1_ps(q[h * head_dim + d])));
    }
}

template <int H, int T>
void store_scores(const __m512 sums[][T], __m512 scale, int64_t first_tile, float* scores,
                  int64_t score_stride) {
  for (int h = 0; h < H; ++h)
    for (int u = 0; u < T; ++u)
      _mm512_storeu_ps(scores + h * score_stride + (first_tile + u) * kKeyTile,
                       _mm512_mul_ps(sums[h][u], scale));
}

template <int H>
void key_scores_heads(const float* q, const float* key_tiles, int64_t head_dim, int64_t n_pos,
                      float scale, float* scores, int64_t score_stride) {
  const int64_t n_tiles = (n_pos + kKeyTile - 1) / kKeyTile;
  const __m512 scale_v = _mm512_set1_ps(scale);
  int64_t tile = 0;
  for (; tile + 2 <= n_tiles; tile += 2) {
    __m512 sums[H][2];
    key_scores_tiles<H, 2>(q, key_tiles + tile * head_dim * kKeyTile, head_dim, sums);
    store_scores<H, 2>(sums, scale_v, tile, scores, score_stride);
  }
  if (tile < n_tiles) {
    __m512 sums[H][1];
    key_scores_tiles<H, 1>(q, key_tiles + tile * head_dim * kKeyTile, head_dim, sums);
    store_scores<H, 1>(sums, scale_v, tile, scores, score_stride);
  }
}

void key_scores_avx512(const float* q, int n_heads, const float* key_tiles, int64_t head_dim,
                       int64_t n_pos, float scale, float* scores, int64_t score_stride) {
  in_groups_of_four(n_heads, [&](auto heads, int first) {
    key_scores_heads<heads()>(q + first * head_dim, key_tiles, head_dim, n_pos, scale,
                              scores + first * score_stride, score_stride);
  });
}

// Value rows r and r + 1 at positions [j, j + 8), in the low and high halves.
__m512 two_rows(const float* rows, int64_t capacity, int64_t j) {
  return two_halves(_mm256_loadu_ps(rows + j), _mm256_loadu_ps(rows + capacity + j));
}

// 2 * P output dimensions of H heads: acc[p][h] holds dimensions 2p and 2p + 1.
template <int H, int P>
void weighted_row_pairs(const float* p, int64_t p_stride, const float* rows, int64_t capacity,
                        int64_t head_dim, int64_t n_pos, float* out) {
  const int64_t n_padded = (n_pos + kKeyTile - 1) / kKeyTile * kKeyTile;
  __m512 acc[P][H];
  for (int r = 0; r < P; ++r)
    for (int h = 0; h < H; ++h) acc[r][h] = _mm512_setzero_ps();
  for (int64_t j = 0; j < n_padded; j += 8) {
    __m512 v[P];
    for (int r = 0; r < P; ++r) v[r] = two_rows(rows + 2 * r * capacity, capacity, j);
    for (int h = 0; h < H; ++h) {
      const __m512 pj = _mm512_castpd_ps(
          _mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_loadu_ps(p + h * p_stride + j))));
      for (int r = 0; r < P; ++r) acc[r][h] = _mm512_fmadd_ps(v[r], pj, acc[r][h]);
    }
  }
  for (int h = 0; h < H; ++h)
    for (int r = 0; r < P; ++r) {
      out[h * head_dim + 2 * r] = horizontal_sum(_mm512_castps512_ps256(acc[r][h]));
      out[h * head_dim + 2 * r + 1] = horizontal_sum(high_half(acc[r][h]));
    }
}

// attention_avx2.cpp's weighted_rows for one output dimension (an odd head_dim's last).
template <int H>
void weighted_row(const float* p, int64_t p_stride, const float* row, int64_t head_dim,
                  int64_t n_pos, float* out) {
  const int64_t n_padded = (n_pos + kKeyTile - 1) / kKeyTile * kKeyTile;
  __m256 acc[H];
  for (int h = 0; h < H; ++h) acc[h] = _mm256_setzero_ps();
  for (int64_t j = 0; j < n_padded; j += 8) {
    const __m256 v = _mm256_loadu_ps(row + j);
    for (int h = 0; h < H; ++h)
      acc[h] = _mm256_fmadd_ps(v, _mm256_loadu_ps(p + h * p_stride + j), acc[h]);
  }
  for (int h = 0; h < H; ++h) out[h * head_dim] = horizontal_sum(acc[h]);
}

template <int H>
void weighted_values_heads(const float* p, int64_t p_stride, const float* values_t,
                           int64_t capacity, int64_t head_dim, int64_t n_pos, float* out) {
  constexpr int64_t kRows = 4;  // two registers of two dimensions per head
  prefetch_value_rows(values_t, std::min(kValueRowsAhead, head_dim), capacity, n_pos);
  int64_t d = 0;
  for (; d + kRows <= head_dim; d += kRows) {
    if (d + kValueRowsAhead + kRows <= head_dim)
      prefetch_value_rows(values_t + (d + kValueRowsAhead) * capacity, kRows, capacity, n_pos);
    weighted_row_pairs<H, kRows / 2>(p, p_stride, values_t + d * capacity, capacity, head_dim,
                                     n_pos, out + d);
  }
  for (; d + 2 <= head_dim; d += 2)
    weighted_row_pairs<H, 1>(p, p_stride, values_t + d * capacity, capacity, head_dim, n_pos,
                             out + d);
  if (d < head_dim) weighted_row<H>(p, p_stride, values_t + d * capacity, head_dim, n_pos, out + d);
}

void weighted_values_avx512(const float* p, int n_heads, int64_t p_stride, const float* values_t,
                            int64_t capacity, int64_t head_dim, int64_t n_pos, float* out) {
  in_groups_of_four(n_heads, [&](auto heads, int first) {
    weighted_values_heads<heads()>(p + first * p_stride, p_stride, values_t, capacity, head_dim,
                                   n_pos, out + first * head_dim);
  });
}

}  // namespace

const AttentionKernels& attention_kernels_avx512() {
  static const AttentionKernels kernels{key_scores_avx512, attention_kernels_avx2().softmax_rows,
                                        weighted_values_avx512};
  return kernels;
}

}  // namespace strata
