// The FasterTransformer / TensorRT-LLM mixed-GEMM weight layout (sm_75 .. sm_89 form), as an
// index map in both directions. A plain [N, K] matrix of signed int8 or int4 goes through:
//   1. row permutation along K, in groups of 16 (int8) or 32 (int4) rows:
//        permuted position p takes row src(p) = 8 * ((p % E) / 2) + p % 2 + 2 * (p / E),
//        E = 32 / bits elements per 32-bit word;
//   2. transpose to column-major, so each column n runs along K;
//   3. column interleave: 32-bit word r of column n (r = k' / E) moves to
//        tile column n / I, word I * (r - r % V) + V * (n % I) + r % V of that tile column,
//        I = 2 (int8) or 4 (int4) columns, V = 64 / E words (64 rows of K);
//   4. inside each word, +128 / +8 bias and the register interleave: bytes hold e0 e2 e1 e3,
//        nibbles hold e0 e2 e4 e6 e1 e3 e5 e7 (e_j = the j-th element of the word after step 3).
// Word w of the result is word w of a flat array of N * K / E words.
#pragma once

#include <cstdint>

#include "kernels/bits/hd.hpp"

namespace dql::layouts {

struct FtGeometry {
  int bits;                                                                // 4 or 8
  DQL_HD constexpr int per_word() const { return 32 / bits; }              // E
  DQL_HD constexpr int interleave() const { return bits == 4 ? 4 : 2; }    // I
  DQL_HD constexpr int words_per_tile() const { return 64 / per_word(); }  // V
  DQL_HD constexpr int row_group() const { return bits == 4 ? 32 : 16; }
};

// Step 1: the source row of permuted position p (0 .. row_group - 1).
DQL_HD constexpr int ft_row_source(FtGeometry g, int p) {
  const int e = g.per_word();
  return 8 * ((p % e) / 2) + p % 2 + 2 * (p / e);
}
// Its inverse: where row r of a group goes.
DQL_HD constexpr int ft_row_place(FtGeometry g, int r) {
  for (int p = 0; p < g.row_group(); ++p) {
    if (ft_row_source(g, p) == r) return p;
  }
  return -1;
}
// Step 4: the element e_j held by slot d (byte or nibble d) of a word, and its inverse.
DQL_HD constexpr int ft_slot_element(FtGeometry g, int d) {
  const int half = g.per_word() / 2;
  return d < half ? 2 * d : 2 * (d - half) + 1;
}
DQL_HD constexpr int ft_element_slot(FtGeometry g, int j) {
  const int half = g.per_word() / 2;
  return (j % 2 == 0) ? j / 2 : half + j / 2;
}

struct FtPlace {
  int64_t word;
  int slot;
};
struct FtSource {
  int64_t n;
  int64_t k;
};

// Where element (n, k) of an [N, K] matrix lands. K % 64 == 0 and N % interleave == 0.
DQL_HD constexpr FtPlace ft_place(FtGeometry g, int64_t n, int64_t k, int64_t K) {
  const int e = g.per_word(), i = g.interleave(), v = g.words_per_tile(), rg = g.row_group();
  const int64_t kp = (k / rg) * rg + ft_row_place(g, static_cast<int>(k % rg));
  const int64_t r = kp / e;
  const int j = static_cast<int>(kp % e);
  const int64_t words_per_tile_column = K * i / e;
  const int64_t vwr = i * (r - r % v) + v * (n % i) + r % v;
  return FtPlace{(n / i) * words_per_tile_column + vwr, ft_element_slot(g, j)};
}

// Which element of the [N, K] matrix is e_j of word w.
DQL_HD constexpr FtSource ft_source(FtGeometry g, int64_t w, int j, int64_t K) {
  const int e = g.per_word(), i = g.interleave(), v = g.words_per_tile(), rg = g.row_group();
  const int64_t words_per_tile_column = K * i / e;
  const int64_t col = w / words_per_tile_column, vwr = w % words_per_tile_column;
  const int64_t tile = vwr / (i * v), within = vwr % (i * v);
  const int64_t n = col * i + within / v;
  const int64_t r = tile * v + within % v;
  const int64_t kp = r * e + j;
  return FtSource{n, (kp / rg) * rg + ft_row_source(g, static_cast<int>(kp % rg))};
}

}  // namespace dql::layouts
