// Index maps of the mixed-GEMM (FasterTransformer) layout as whole tables, for pictures and checks.
//
// A tile is the unit the layout repeats: I columns (n) by 64 rows of K (k), I = 4 for int4 and 2 for
// int8, i.e. 256 int4 or 128 int8 elements in 32 words (128 bytes). Element (n, k) of an [N, K]
// matrix lands in tile (n / I, k / 64) at the same place as element (n % I, k % 64) of tile (0, 0),
// and tile (tc, tk) starts at word tc * (K * I / E) + tk * 32 of the permuted array. The physical
// array is read as N / I rows (one per tile column) of K * I / E words.
//
// The functions here list the maps of ft.hpp over one group or tile, forward and inverse, and read
// the same map back from a permute kernel by giving it a matrix whose elements spell their own index.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/layouts/ft.hpp"

namespace dql::layouts {

inline constexpr int kTileRows = 64;  // rows of K in one tile

DQL_HD constexpr int tile_elements(FtGeometry g) { return g.interleave() * kTileRows; }
DQL_HD constexpr int tile_words(FtGeometry g) { return tile_elements(g) / g.per_word(); }

// A place inside one tile: word 0 .. 31, slot (nibble or byte of the word) 0 .. E - 1.
struct TilePlace {
  int word = 0, slot = 0;
  int byte(FtGeometry g) const { return 4 * word + slot * g.bits / 8; }
  int nibble(FtGeometry g) const { return g.bits == 4 ? slot % 2 : 0; }  // 0 = low nibble of the byte
  int index(FtGeometry g) const { return word * g.per_word() + slot; }   // element slot in the tile
};

// Step 1 over one group of rows: entry p is the source row of permuted position p.
std::vector<int> row_permutation(FtGeometry g);
// Step 3 over one tile: entry n * V + r is the word of the tile that word r of column n (r < V) goes to.
std::vector<int> column_interleave(FtGeometry g);
// Step 4: entry d is the element e_j a word's slot d holds (int4 0 2 4 6 1 3 5 7, int8 0 2 1 3).
std::vector<int> register_order(FtGeometry g);

// The composed map over one tile. Forward: entry n * 64 + k (n < I, k < 64) is where logical
// element (n, k) of the tile lands. Inverse: entry word * E + slot is the logical index n * 64 + k
// held there. Both come from ft_place / ft_source; inverse(forward(i)) == i for every i.
std::vector<TilePlace> tile_forward(FtGeometry g);
std::vector<int> tile_inverse(FtGeometry g);

// The word where tile (tc, tk) of an [N, K] matrix starts in the permuted array.
DQL_HD constexpr int64_t tile_origin(FtGeometry g, int64_t tc, int64_t tk, int64_t K) {
  return tc * (K * g.interleave() / g.per_word()) + tk * tile_words(g);
}

// Permutes plain packed signed words of an [N, K] matrix into the layout (e.g. Backend::permute).
using PermuteFn = std::function<std::vector<uint32_t>(const std::vector<uint32_t>& plain)>;

// Reads the map back from a permute kernel: runs it on matrices whose elements spell their own
// index n * K + k, one base-2^bits digit per run, and returns for every element of the permuted
// array (word * E + slot) the logical index it holds. The permute adds the 2^(bits-1) bias; it is
// taken off again.
std::vector<int64_t> probe_permute(int bits, int64_t n, int64_t k, const PermuteFn& permute);

// What a probe says against ft_source.
struct MapCheck {
  bool match = true;
  int64_t checked = 0;
  int64_t word = -1;  // the first place where they differ
  int slot = -1;
  int64_t expected = -1, got = -1;  // logical indices n * K + k there
  int64_t k_total = 1;
  std::string sentence() const;  // "matches the permute kernel: ..." or the first mismatch
};
MapCheck check_probe(int bits, int64_t n, int64_t k, const std::vector<int64_t>& probe);

}  // namespace dql::layouts
