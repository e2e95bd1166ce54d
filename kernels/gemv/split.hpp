// How the copy-engine GEMV's fenced form splits its tiles among blocks (host only, so that the
// CPU tests check the rule the launcher follows). A tile is `per_tile` units of K; block b of a
// grid of `blocks` takes units [units * b / blocks, units * (b + 1) / blocks) (ft_bulk_kernel).
#pragma once

#include <algorithm>
#include <cstdint>

namespace dql::gemv {

// Blocks for the fenced form: each tile split into s runs as even as can be, one a block (a grid
// of tiles x s, so that block b's run never leaves its tile: a block meets the workspace once, and
// not at all where s = 1). s is the smallest that gives the shortest longest run, with at most four
// blocks a multiprocessor and no more than `fit` (those that fit at once): more blocks than that,
// or uneven runs where even ones as long exist, measured slower (notes/performance.md, g28).
// Where not even one block a tile fits, the runs of the persistent grid (as many blocks as fit,
// runs across tiles).
inline int64_t split_tile_blocks(int64_t tiles, int64_t per_tile, int64_t fit, int64_t sms) {
  const int64_t most = std::min(per_tile, std::min(fit, 4 * sms) / tiles);
  if (most < 1) return std::min(tiles * per_tile, fit);
  const int64_t longest = (per_tile + most - 1) / most;
  return tiles * ((per_tile + longest - 1) / longest);
}

}  // namespace dql::gemv
