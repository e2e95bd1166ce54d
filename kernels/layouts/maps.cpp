#include "maps.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace dql::layouts {

std::vector<int> row_permutation(FtGeometry g) {
  std::vector<int> v(g.row_group());
  for (int p = 0; p < g.row_group(); ++p) v[p] = ft_row_source(g, p);
  return v;
}

std::vector<int> column_interleave(FtGeometry g) {
  const int i = g.interleave(), v = g.words_per_tile();
  std::vector<int> out(i * v);
  for (int n = 0; n < i; ++n) {
    for (int r = 0; r < v; ++r) out[n * v + r] = i * (r - r % v) + v * (n % i) + r % v;
  }
  return out;
}

std::vector<int> register_order(FtGeometry g) {
  std::vector<int> v(g.per_word());
  for (int d = 0; d < g.per_word(); ++d) v[d] = ft_slot_element(g, d);
  return v;
}

// One tile column of K = 64 is exactly one tile: ft_place's word is then the word in the tile.
std::vector<TilePlace> tile_forward(FtGeometry g) {
  const int i = g.interleave();
  std::vector<TilePlace> out(tile_elements(g));
  for (int n = 0; n < i; ++n) {
    for (int k = 0; k < kTileRows; ++k) {
      const FtPlace p = ft_place(g, n, k, kTileRows);
      out[n * kTileRows + k] = TilePlace{static_cast<int>(p.word), p.slot};
    }
  }
  return out;
}

std::vector<int> tile_inverse(FtGeometry g) {
  const int e = g.per_word();
  std::vector<int> out(tile_elements(g));
  for (int w = 0; w < tile_words(g); ++w) {
    for (int d = 0; d < e; ++d) {
      const FtSource s = ft_source(g, w, ft_slot_element(g, d), kTileRows);
      out[w * e + d] = static_cast<int>(s.n * kTileRows + s.k);
    }
  }
  return out;
}

std::vector<int64_t> probe_permute(int bits, int64_t n, int64_t k, const PermuteFn& permute) {
  if (bits != 4 && bits != 8) throw std::invalid_argument("probe_permute: bits must be 4 or 8");
  const int e = 32 / bits;
  const int64_t count = n * k, words = count / e;
  const uint32_t mask = (1u << bits) - 1u, bias = 1u << (bits - 1);
  std::vector<int64_t> index(static_cast<size_t>(count), 0);
  int shift = 0;
  for (int64_t left = count - 1; shift == 0 || (left >> shift) > 0; shift += bits) {
    std::vector<uint32_t> plain(static_cast<size_t>(words), 0u);
    for (int64_t idx = 0; idx < count; ++idx) {
      const uint32_t digit = static_cast<uint32_t>(idx >> shift) & mask;
      plain[idx / e] |= digit << (bits * (idx % e));
    }
    const std::vector<uint32_t> out = permute(plain);
    if (static_cast<int64_t>(out.size()) != words)
      throw std::runtime_error("probe_permute: the permute returned a different number of words");
    for (int64_t w = 0; w < words; ++w) {
      for (int d = 0; d < e; ++d) {
        const uint32_t stored = (out[w] >> (bits * d)) & mask;
        const uint32_t digit = (stored - bias) & mask;  // stored = signed value + bias
        index[w * e + d] |= static_cast<int64_t>(digit) << shift;
      }
    }
  }
  return index;
}

MapCheck check_probe(int bits, int64_t n, int64_t k, const std::vector<int64_t>& probe) {
  const FtGeometry g{bits};
  const int e = g.per_word();
  MapCheck c;
  c.k_total = k;
  const int64_t words = n * k / e;
  for (int64_t w = 0; w < words; ++w) {
    for (int d = 0; d < e; ++d) {
      const FtSource s = ft_source(g, w, ft_slot_element(g, d), k);
      const int64_t want = s.n * k + s.k;
      const size_t at = static_cast<size_t>(w * e + d);
      const int64_t got = at < probe.size() ? probe[at] : -1;
      ++c.checked;
      if (c.match && got != want) {
        c.match = false;
        c.word = w, c.slot = d, c.expected = want, c.got = got;
      }
    }
  }
  return c;
}

std::string MapCheck::sentence() const {
  if (match)
    return fmt::format("matches the permute kernel: all {} elements in the place the formula gives", checked);
  return fmt::format(
      "differs from the permute kernel: word {} slot {} holds element (n {}, k {}), the formula says (n {}, "
      "k "
      "{})",
      word, slot, got / k_total, got % k_total, expected / k_total, expected % k_total);
}

}  // namespace dql::layouts
