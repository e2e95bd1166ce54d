// The layout maps the layouts view draws: each a bijection, inverse after forward is the identity,
// the documented orders, and the map read back from the permute kernel equals the formula.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "kernels/backend/backend.hpp"
#include "kernels/layouts/maps.hpp"
#include "kernels/recipes/recipes.hpp"

using namespace dql;
using namespace dql::layouts;

namespace {

template <class V>
bool is_permutation_of_range(const V& v) {
  std::vector<int64_t> s(v.begin(), v.end());
  std::sort(s.begin(), s.end());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("layout maps: register order, row permutation and column interleave") {
  CHECK(register_order(FtGeometry{4}) == std::vector<int>{0, 2, 4, 6, 1, 3, 5, 7});
  CHECK(register_order(FtGeometry{8}) == std::vector<int>{0, 2, 1, 3});
  // The FT recipes read the same order the recipe table declares.
  for (int d = 0; d < 8; ++d) {
    CHECK(recipes::recipe_slot_of(recipes::RecipeId::FtInt4F16, register_order(FtGeometry{4})[d]) == d);
  }
  for (int d = 0; d < 4; ++d) {
    CHECK(recipes::recipe_slot_of(recipes::RecipeId::FtUint8F16, register_order(FtGeometry{8})[d]) == d);
  }
  for (int bits : {4, 8}) {
    const FtGeometry g{bits};
    CAPTURE(bits);
    const auto rows = row_permutation(g);
    CHECK(static_cast<int>(rows.size()) == g.row_group());
    CHECK(is_permutation_of_range(rows));
    for (int p = 0; p < g.row_group(); ++p) CHECK(ft_row_place(g, rows[p]) == p);
    const auto cols = column_interleave(g);
    CHECK(static_cast<int>(cols.size()) == tile_words(g));
    CHECK(is_permutation_of_range(cols));
  }
  // Word r of column n sits at I * (r - r % V) + V * n + r % V: within one tile, column after column.
  CHECK(column_interleave(FtGeometry{4})[0 * 8 + 0] == 0);
  CHECK(column_interleave(FtGeometry{4})[1 * 8 + 0] == 8);
  CHECK(column_interleave(FtGeometry{4})[3 * 8 + 7] == 31);
  CHECK(row_permutation(FtGeometry{8}) ==
        std::vector<int>{0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15});
}

TEST_CASE("layout maps: the tile map is a bijection and inverse(forward) is the identity") {
  for (int bits : {4, 8}) {
    const FtGeometry g{bits};
    CAPTURE(bits);
    const auto fwd = tile_forward(g);
    const auto inv = tile_inverse(g);
    REQUIRE(static_cast<int>(fwd.size()) == tile_elements(g));
    REQUIRE(static_cast<int>(inv.size()) == tile_elements(g));
    CHECK(tile_words(g) == 32);
    std::set<int> places, bytes;
    for (int i = 0; i < tile_elements(g); ++i) {
      const TilePlace p = fwd[i];
      CHECK(p.word >= 0);
      CHECK(p.word < 32);
      CHECK(p.slot >= 0);
      CHECK(p.slot < g.per_word());
      places.insert(p.index(g));
      bytes.insert(p.byte(g) * 2 + p.nibble(g));
      CHECK(inv[p.index(g)] == i);  // inverse(forward(i)) == i
    }
    CHECK(static_cast<int>(places.size()) == tile_elements(g));
    CHECK(static_cast<int>(bytes.size()) == tile_elements(g));
    CHECK(is_permutation_of_range(inv));
    for (int j = 0; j < tile_elements(g); ++j) CHECK(fwd[inv[j]].index(g) == j);  // forward(inverse(j)) == j
  }
  // Element (0, 0) is the low nibble of byte 0; element (0, 1) is held by slot 4 (register order).
  const FtGeometry g4{4};
  CHECK(tile_forward(g4)[0].byte(g4) == 0);
  CHECK(tile_forward(g4)[1].slot == 4);
  CHECK(tile_forward(g4)[1].byte(g4) == 2);
  CHECK(tile_forward(g4)[1].nibble(g4) == 0);
}

TEST_CASE("layout maps: the tile map repeats over a whole matrix, as ft_place has it") {
  for (int bits : {4, 8}) {
    const FtGeometry g{bits};
    CAPTURE(bits);
    const int64_t N = 3 * g.interleave(), K = 192;
    const auto fwd = tile_forward(g);
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t k = 0; k < K; ++k) {
        const FtPlace p = ft_place(g, n, k, K);
        const TilePlace t = fwd[(n % g.interleave()) * kTileRows + k % kTileRows];
        CHECK(p.word == tile_origin(g, n / g.interleave(), k / kTileRows, K) + t.word);
        CHECK(p.slot == t.slot);
      }
    }
  }
}

TEST_CASE("layout maps: the map read back from the permute kernel equals the formula") {
  auto cpu = make_cpu_backend();
  for (int bits : {4, 8}) {
    CAPTURE(bits);
    const int64_t n = bits == 4 ? 8 : 4, k = 128;
    const auto probe = probe_permute(
        bits, n, k, [&](const std::vector<uint32_t>& w) { return cpu->permute(bits, n, k, w, true); });
    REQUIRE(static_cast<int64_t>(probe.size()) == n * k);
    CHECK(is_permutation_of_range(probe));
    const MapCheck c = check_probe(bits, n, k, probe);
    CHECK(c.match);
    CHECK(c.checked == n * k);
    CHECK(c.sentence().find("matches the permute kernel") == 0);
    // And in tile terms: tile (0, 0) of the kernel's output is tile_inverse.
    const auto inv = tile_inverse(FtGeometry{bits});
    for (int j = 0; j < tile_elements(FtGeometry{bits}); ++j) {
      const int64_t logical = probe[j];
      CHECK(inv[j] == (logical / k) * kTileRows + logical % k);
    }
  }
  // A permute that is not the layout is caught, with the first place named.
  const int64_t n = 4, k = 64;
  const auto identity = probe_permute(4, n, k, [](const std::vector<uint32_t>& w) {
    std::vector<uint32_t> out(w.size());
    for (size_t i = 0; i < w.size(); ++i) out[i] = w[i] ^ 0x88888888u;  // the bias, nothing moved
    return out;
  });
  const MapCheck bad = check_probe(4, n, k, identity);
  CHECK_FALSE(bad.match);
  CHECK(bad.word == 0);
  CHECK(bad.slot == 1);
  CHECK(bad.sentence().find("differs from the permute kernel: word 0 slot 1") == 0);
}
