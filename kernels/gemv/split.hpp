// How the copy-engine GEMV splits its tiles among blocks and where the parts meet (so that the CPU
// tests check the rules the launcher follows). A tile is `per_tile` units of K; block b of a grid of
// `blocks` takes units [units * b / blocks, units * (b + 1) / blocks) (ft_bulk_kernel; in reverse
// order where the persistent grid's runs meet in slots).
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/bits/hd.hpp"

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

// Units of K a slice of the tensor-core AWQ and NF4 GEMVs (AWQ: groups; NF4: steps of 128), whose grid
// is `bx` column blocks by ceil(units / result) slices. As many slices as
// - keep the grid inside one wave of the `fit` blocks the device runs at once (the kernel's own
//   occupancy): a grid a little over one wave leaves its second wave nearly empty (AWQ at 16 rows of
//   28672x8192: 560 blocks where 528 fit took 144 us, 448 blocks 105);
// - keep it near `most` blocks (whole slices, rounded up), for a kernel that runs slower with more
//   blocks a multiprocessor than that even where more fit;
// - give each slice M / 8 units at least, since every slice adds its M x N sums into the workspace
//   by atomics, two tokens of a channel at a time: AWQ at 16 rows of 4096x4096 took 28.3 us in 8
//   slices of four groups, 24.7 in 16 of two, 25.3 in 32 of one; at M / 2 units 38.7.
// (H200, notes/performance.md, "the AWQ and NF4 grids" and p1.)
inline int64_t k_slice_units(int64_t units, int64_t bx, int64_t fit, int64_t most, int64_t m) {
  const int64_t by_rows = units / std::max<int64_t>(1, m / 8);
  const int64_t want = std::max<int64_t>(1, std::min({units, fit / bx, (most + bx - 1) / bx, by_rows}));
  return (units + want - 1) / want;
}

// Steps of 128 along K a slice of the NF4 GEMV: k_slice_units' one-wave grid, except that up to 8
// rows a slice longer than kNf4LongSlice steps is cut to kNf4ShortSlice, in several waves of blocks.
// Presumably one wave of long slices leaves the blocks that the memory serves last to set the time
// (the W4A16 GEMV's blocks with equal work ended up to 7 us apart on 28672x8192), where many short
// blocks let the device give a finished block's place to the next. H200, against the one-wave grid,
// alternated twice: 28672x8192 (2 slices of 32, 1 of 64 from 4 rows) 1.11-1.13x at 1-8 rows, 1.02x
// at 12-16; 8192x28672 (7 of 32, 6 of 38) 1.05-1.07x at 1-2 rows, 0.99x at 4-8, 0.97-0.98x at 12-16.
// Where the one-wave slices were 11 steps or shorter, slices of 6 gained on some shapes and rows and
// lost on others (0.90-1.12x), so those keep the one wave (notes/performance.md, "NF4's slices").
constexpr int64_t kNf4LongSlice = 16;
constexpr int64_t kNf4ShortSlice = 6;
inline int64_t nf4_slice_steps(int64_t steps, int64_t bx, int64_t fit, int64_t m) {
  const int64_t per = k_slice_units(steps, bx, fit, fit, m);
  return m <= 8 && per > kNf4LongSlice ? kNf4ShortSlice : per;
}

// Where a tile's blocks meet: the fenced form's blocks have 128 threads, its tiles 64 channels.
constexpr int kBlockThreads = 128;
constexpr int kTileChannels = 64;
// Slot values a thread of a tile's last block has in flight (meet_in_slots reads them together).
constexpr int kSlotLoads = 16;
// Blocks a tile from which the last block to arrive settles it instead: against it, slots measured
// 1.02-1.19x faster with 2-5 blocks a tile (8192x8192, 5120x5120, 16384x4096, 11008x4096,
// 14336x2048 at 1-9 rows) but the same at 1 row and 0.94-0.98x at 4 with 8 (4096x4096; H200 and
// H100, notes/performance.md, g30).
constexpr int kSlotMostBlocks = 5;
// Channels' worth of partial sums the workspace holds a row of X: N, and at least enough for the
// slots of split tiles (s - 1 slots of N channels, where tiles x s blocks, at most four a
// multiprocessor, are 64 channels a tile: under 4 * 64 * sms channels, 256 multiprocessors).
constexpr int64_t kSlotChannels = int64_t{4} * kTileChannels * 256;
inline int64_t sum_floats(int64_t n, int64_t m) { return m * std::max(n, kSlotChannels); }

// Blocks a tile (s) whose partial sums meet in slots of the workspace, for a grid of `blocks` over
// `tiles` tiles of `per_tile` units and M = `m`; 0 where the last block of a tile to arrive settles
// it. Slots need a grid of tiles x s (every run inside its tile), 2 <= s <= kSlotMostBlocks, at
// most kSlotLoads values a thread of the last block, and room in the workspace (offsets under 2^31).
inline int64_t slot_split(int64_t tiles, int64_t per_tile, int64_t blocks, int64_t m) {
  if (tiles < 1 || blocks % tiles != 0) return 0;
  const int64_t s = blocks / tiles, n = tiles * kTileChannels;
  const int64_t reads = (kTileChannels * m + kBlockThreads - 1) / kBlockThreads * (s - 1);
  const bool room = (s - 1) * n * m <= std::min(sum_floats(n, m), int64_t{1} << 31);
  return s > 1 && s <= std::min<int64_t>(per_tile, kSlotMostBlocks) && reads <= kSlotLoads && room ? s : 0;
}

// The persistent grid's runs: run v of `blocks` takes units [units x v / blocks, units x (v + 1) /
// blocks); run_holder(u) is the run that holds unit u.
DQL_HD int64_t run_first(int64_t v, int64_t blocks, int64_t units) { return units * v / blocks; }
DQL_HD int64_t run_holder(int64_t u, int64_t blocks, int64_t units) { return ((u + 1) * blocks - 1) / units; }

// The persistent grid's runs (each block `units / blocks` units or one more, crossing tiles) meeting in
// slots: the most other runs a tile's settler waits for (a tile of `per_tile` units meets at most
// (per_tile - 2) / shortest + 2 runs), or 0 where the settling kernel stays: where that needs more
// room than the workspace has, or a thread of the settler would read more than 2 x kSlotLoads values
// (64 rows on 5120x5120 and 8192x8192, over 32 reads: slots measured 0.79x and 0.90x against the
// settling kernel; notes/performance.md, g31).
inline int64_t run_slot_others(int64_t units, int64_t blocks, int64_t per_tile, int64_t n, int64_t m) {
  const int64_t shortest = blocks > 0 ? units / blocks : 0;
  if (shortest < 1 || per_tile < 2) return 0;
  const int64_t others = (per_tile - 2) / shortest + 1;
  const int64_t reads = (kTileChannels * m + kBlockThreads - 1) / kBlockThreads * others;
  const bool room = others * n * m <= std::min(sum_floats(n, m), int64_t{1} << 31);
  return reads <= 2 * kSlotLoads && room ? others : 0;
}

// ---- the wide GEMM (wide_kernel): blocks of kWideRows rows of X by kWideChannels channels ----

constexpr int64_t kWideRows = 64;
constexpr int64_t kWideChannels = 128;

// The shapes it takes (and the Hopper GEMM too; both read int4 in the mixed-GEMM layout): whole
// kWideChannels-channel tiles and groups of whole 64-row tiles of K.
inline bool wide_shape_fits(int64_t n, int64_t k, int64_t group) {
  return n % kWideChannels == 0 && k % 64 == 0 && group % 64 == 0;
}

// Its tiles for M rows of X and N channels (N a multiple of kWideChannels).
inline int64_t wide_tiles(int64_t m, int64_t n) {
  return (m + kWideRows - 1) / kWideRows * (n / kWideChannels);
}

// Where it takes over from the GEMV forms: from 129 rows of X, and from 65 where one wave of two
// blocks a multiprocessor holds every tile. H100, against the passes of 64 rows: 1.09-1.89x at 256
// rows (28672x8192, 8192x8192, 4096x4096), 1.15-1.18x at 128 on 8192x8192 and 4096x4096, but 0.95x
// on 28672x8192 (448 tiles: 1.7 waves), and 0.80-0.93x at 64 rows (notes/performance.md, w1).
inline bool wide_takes(int64_t m, int64_t n, int64_t sms) {
  return m > 2 * kWideRows || (m > kWideRows && wide_tiles(m, n) <= 2 * sms);
}

// Runs of K a tile (the grid is tiles x runs): one where the tiles fill the multiprocessors; else as
// many as fill them, each at least 8 of the 64-row tiles of K (`ktiles` in all).
inline int64_t wide_runs(int64_t tiles, int64_t ktiles, int64_t sms) {
  if (tiles >= sms) return 1;
  return std::max<int64_t>(1, std::min(sms / tiles, ktiles / 8));
}

// ---- the Hopper GEMM (hopper.cu): blocks of 48 to 256 rows of X by kHopperChannels channels ----

constexpr int64_t kHopperChannels = 128;

// Its rows of X a block: multiples of kHopperRowStep (wgmma's N steps) from kHopperLeastRows; two
// blocks a multiprocessor up to kHopperPairRows, one alone up to kHopperLoneRows (hopper_rows says
// where each is taken).
constexpr int64_t kHopperRowStep = 16;
constexpr int64_t kHopperLeastRows = 48;
constexpr int64_t kHopperPairRows = 128;
constexpr int64_t kHopperLoneRows = 256;
// The most rows of a block alone whose ring has eight stages (hopper.cu: four above).
constexpr int64_t kHopperDeepRows = 176;
// The least of K's 64-row tiles a run keeps (where K is cut into runs): blocks alone, blocks alone of
// over kHopperDeepRows rows, and pairs of blocks over kWideRows rows.
constexpr int64_t kHopperLoneLeastRun = 48;
constexpr int64_t kHopperShallowLeastRun = 128;
constexpr int64_t kHopperPairLeastRun = 32;

// Where it takes over on compute capability 9.0: from 65 rows of X, and from 33 on large matrices: N
// of at least kHopperWideN channels, or of kHopperMidN with K of at least kHopperMidK. At 65-128 rows of
// 28672x8192 it measured 1.53-1.87x faster than the passes of 64 rows, where the mma.sync GEMM does not
// take over (notes/performance.md, h1). At 33-64 rows (blocks of 48 or 64 rows, one tile for each 128
// channels, K cut into runs where the tiles leave places idle) against the copy-engine form of eight
// token tiles, H200, fp16 and bf16: 1.36-1.77x on 28672x8192, 8192x28672, 8192x8192, 14336x4096 and
// 11008x4096, 1.11-1.50x on 8192x4096, 8192x2048, 5120x13824, 4096x14336 and 4096x11008, 1.02-1.23x on
// 4096x8192; but 0.85-1.03x on 4096x4096 (K in 8 runs of 8 tiles) and 0.59-0.78x on 2048x8192 (16
// runs of 8), whose runs' start and meeting cost more than the product (notes/performance.md,
// sixtieth session). From 17 to 32 rows the walk's two token tiles run (walk16_takes); against the ring of
// four token tiles before them the GEMM had measured 0.38-1.17x there.
constexpr int64_t kHopperLargeFromRows = 33;
constexpr int64_t kHopperWideN = 8192;
constexpr int64_t kHopperMidN = 4096;
constexpr int64_t kHopperMidK = 8192;
inline bool hopper_takes(int64_t m, int64_t n, int64_t k) {
  if (m > kWideRows) return true;
  return m >= kHopperLargeFromRows && (n >= kHopperWideN || (n >= kHopperMidN && k >= kHopperMidK));
}

// The rows of X a block may be set to (GemvLaunch::rows, bench --gemm-rows): the sizes it has.
inline bool hopper_rows_exist(int64_t rows) {
  return rows >= kHopperLeastRows && rows <= kHopperLoneRows && rows % kHopperRowStep == 0;
}

// Its tiles for M rows of X, `rows` a block, and N channels (N a multiple of kHopperChannels).
inline int64_t hopper_tiles(int64_t m, int64_t rows, int64_t n) {
  return (m + rows - 1) / rows * (n / kHopperChannels);
}

// Blocks a multiprocessor: two of up to 128 rows; one above (its BN / 2 accumulators a thread take the
// registers of two blocks).
constexpr int64_t hopper_blocks_per_sm(int64_t rows) { return rows > kHopperPairRows ? 1 : 2; }

// Runs of K a tile (the grid is tiles x runs): one where the tiles fill the multiprocessors' blocks;
// else as many as fill them, each at least 8 of the 64-row tiles of K (`ktiles` in all).
inline int64_t hopper_runs(int64_t tiles, int64_t ktiles, int64_t sms, int64_t rows) {
  return wide_runs(tiles, ktiles, hopper_blocks_per_sm(rows) * sms);
}

// Whether the slots of a grid of `blocks` blocks of `rows` rows by kHopperChannels channels (each block's
// fp32 sums, where K is cut into runs) fit in the workspace's sums for N channels and M rows.
inline bool hopper_slots_fit(int64_t blocks, int64_t rows, int64_t n, int64_t m) {
  return blocks * rows * kHopperChannels <= sum_floats(n, m);
}

// M shared evenly by the fewest blocks of at most `most` rows, rounded up to 16 (wgmma's N steps), so
// that the padding a block multiplies stays under 16 rows.
inline int64_t hopper_fit(int64_t m, int64_t most) {
  const int64_t blocks = (m + most - 1) / most;
  const int64_t even = (m + blocks - 1) / blocks;
  return std::max(kHopperLeastRows, (even + kHopperRowStep - 1) / kHopperRowStep * kHopperRowStep);
}

// Rows of X a block, a multiple of 16 from 48 to 256 (wgmma's N: the tensor cores' work a step is in
// proportion to it, padding included). A larger block dequantizes each weight for more rows, but its
// fewer tiles are cut into more runs of K, whose start and meeting then weigh more.
// - From 129 rows, blocks of up to 256 rows alone on their multiprocessor, which dequantize each
//   weight once for all of them, where K stays whole or each run keeps at least kHopperLoneLeastRun
//   tiles; and over kHopperDeepRows rows, where the ring has four stages instead of eight, only where
//   the runs keep at least kHopperShallowLeastRun.
// - Else at most 128 where the runs of 128-row tiles keep at least kHopperPairLeastRun tiles of K,
//   else at most 64.
// H100, 65-256 rows of eight shapes from 4096x4096 to 8192x28672 with runs meeting in slots, each
// size forced in turn: the rule's choice is within 9% of the fastest everywhere, 0.35% over it on
// the geometric mean; the rule tuned while runs met by fp32 atomics was up to 1.44x slower
// (notes/performance.md, q1; before, h1 and h3 to h5).
inline int64_t hopper_rows(int64_t m, int64_t n, int64_t ktiles, int64_t sms) {
  if (m > kHopperPairRows) {
    const int64_t rows = hopper_fit(m, kHopperLoneRows);
    const int64_t runs = hopper_runs(hopper_tiles(m, rows, n), ktiles, sms, rows);
    const int64_t run = ktiles / runs;
    if ((runs == 1 || run >= kHopperLoneLeastRun) &&
        (rows <= kHopperDeepRows || run >= kHopperShallowLeastRun))
      return rows;
  }
  const int64_t pair_runs = hopper_runs(hopper_tiles(m, kHopperPairRows, n), ktiles, sms, kHopperPairRows);
  return hopper_fit(m, ktiles / pair_runs >= kHopperPairLeastRun ? kHopperPairRows : kWideRows);
}

// The walk of 2 to 32 rows of int4 fed by the copy engine (compute capability 9.0 and newer; fp16
// or bf16 X, the fast conversion and its naive twin): blocks of 128 channels, steps of 128 rows of K, groups
// of 64 rows or of whole steps; the stream-K grid's units (ranges x steps) counted in 32 bits. X is
// laid out in tiles of 16 tokens whatever M (one up to 16 rows, two from 17), so its time hardly depends on
// M within a tile. On the H200 against the copy-engine ring (notes/performance.md, forty-fifth and
// forty-ninth sessions; 17-32 rows against the ring's four token tiles, sixty-first session):
// - 17-32 rows, from 2^24 weights: 28672x8192 1.19-1.24x, 8192x28672 1.19-1.41x, 8192x8192 1.22-1.40x,
//   14336x4096 1.18-1.27x, 4096x14336 1.36-1.43x, 4096x4096 1.39-1.55x (fp16; bf16 1.19-1.53x).
// - 9-16 rows, from 2^24 weights: 4096x4096 1.06-1.11x, 8192x8192 1.10-1.19x, 28672x8192 1.14-1.17x,
//   8192x28672 1.21x; 2048x2048 0.97-1.00x.
// - 3-8 rows: 28672x8192 1.05-1.16x, 8192x28672 1.04-1.18x, 8192x8192 1.03-1.16x, 14336x4096
//   1.02-1.15x, 4096x4096 1.02-1.17x (the more rows, the more it gains).
// - 2 rows: 1.03-1.05x at 28672x8192 and 8192x28672, 0.99-1.02x at 8192x8192 and 14336x4096, but
//   0.97-1.00x at 4096x4096: from 2 rows at 2^25 weights, from 3 below.
// bf16 X (fiftieth session; its walk is about 6% slower than fp16's: two more shifts a weight register)
// follows the same rule: 1.23-1.40x at 16 rows, 1.10-1.19x at 8, 1.00-1.10x at 3; at 2 rows 1.01-1.09x
// from 2^25 weights but 0.95-1.01x below. (At one row it measured 1.00x on the large shapes and
// 0.92-1.00x on the others; one row of bf16 takes the lane form, X scaled into fp16.)
constexpr int64_t kWalkChannels = 128;
constexpr int64_t kWalkStep = 128;
constexpr int64_t kWalkRows = 16;      // X is laid out in tiles of 16 tokens whatever M
constexpr int64_t kWalkMostRows = 32;  // two token tiles
// The walk's token tiles for M rows of X: one up to 16 rows, two from 17.
constexpr int walk_token_tiles(int64_t m) { return m > kWalkRows ? 2 : 1; }
// 17 to 24 rows from 2^25 weights: every token goes as the mma's n8 operand (three tiles of 8) against
// pairs of the step's n-tiles (the walk's half tile): six products a pair of n-tiles where two whole tiles
// took eight. On the H200 against two whole tiles (the product of two A/B runs' ratios): 28672x8192 and
// 8192x28672 fp16 1.16-1.18x, bf16 1.15-1.19x; 8192x8192 1.07-1.12x (notes/performance.md, sixty-third and
// sixty-fourth sessions). At 2^24 weights it was 0.91-0.99x with groups of 128 and 1.02-1.03x with groups
// of 64 (one round), so from 2^25.
constexpr int64_t kWalkHalfRows = kWalkRows + 8;
constexpr int64_t kWalkHalfWeights = int64_t{1} << 25;
constexpr bool walk_half_tile(int64_t m, int64_t n, int64_t k) {
  return m > kWalkRows && m <= kWalkHalfRows && n * k >= kWalkHalfWeights;
}
// 2 to 8 rows where a stage of the walk has two steps (bf16 X, walk16_stage_steps): tokens 0..7 go as the
// mma's n8 operand (one tile of 8) against pairs of the step's n-tiles, 16 products a step where the tile
// of 16 takes 32. On the H200 against the tile of 16, two alternated rounds (notes/performance.md,
// sixty-fifth session): bf16 1.02-1.04x with groups of 128 at 28672x8192, 8192x28672, 8192x8192 and
// 14336x4096, 1.03-1.06x with groups of 64, the naive twin 0.99-1.03x; fp16 (one step a stage)
// 0.99-1.01x, and bf16 at 4096x4096 (one step a stage) 1.00-1.01x.
constexpr int64_t kWalkEightRows = 8;
constexpr bool walk_eight_n8(int64_t m, int stage_steps) { return m <= kWalkEightRows && stage_steps == 2; }
constexpr int64_t kWalkLeastWeights = int64_t{1} << 24;
constexpr int64_t kWalkLeastRows = 2;                     // from kWalkTwoRowWeights
constexpr int64_t kWalkTwoRowWeights = int64_t{1} << 25;  // below: from 3 rows
inline bool walk16_takes(int cc, int64_t m, int64_t n, int64_t k, int64_t group) {
  const int64_t least_rows = n * k >= kWalkTwoRowWeights ? kWalkLeastRows : kWalkLeastRows + 1;
  return cc >= 90 && m >= least_rows && m <= kWalkMostRows && n % kWalkChannels == 0 && k % kWalkStep == 0 &&
         group > 0 && (group == 64 || (group % kWalkStep == 0 && k % group == 0)) &&
         n * k >= kWalkLeastWeights && (n / kWalkChannels) * (k / kWalkStep) < (int64_t{1} << 31);
}
// Steps of K a stage of the walk's ring: two for bf16 X from 2^25 weights where K has an even number of
// steps (three stages, two blocks a multiprocessor), else one (four stages, three blocks). On the H200
// (notes/performance.md, fifty-fourth session): bf16 1.02-1.03x at 28672x8192 and 8192x28672, 1.00-1.01x
// at 8192x8192 and 14336x4096, 0.98-0.99x at 4096x4096; fp16 0.995-1.003x at its goal shapes.
constexpr int64_t kWalkTwoStepWeights = int64_t{1} << 25;
inline int walk16_stage_steps(bool bf16, int64_t n, int64_t k) {
  return bf16 && n * k >= kWalkTwoStepWeights && (k / kWalkStep) % 2 == 0 ? 2 : 1;
}

// One row of int4 on the lane form (ft_lane_kernel): a warp owns a slab of 256 rows of K, a block
// as many warps as K has slabs, 8, 16 or 32, so that up to K = 8192 a column range meets in shared
// memory (a meeting in the workspace costs about 2 us on the H200, notes/performance.md, session 41).
// Beyond K = 8192 the launcher asks lane_warps(n, k, resident) (below) instead.
constexpr int64_t kLaneSlab = 256;
inline int lane_warps(int64_t k) {
  const int64_t slabs = (k + kLaneSlab - 1) / kLaneSlab;
  return slabs <= 8 ? 8 : (slabs <= 16 ? 16 : 32);
}

// The lane form's roles in its mma.sync m16n8k16 products, one a word of the lane's piece. Lane
// (g, q) = (lane / 4, lane % 4) loads the piece of tile 2 (g % 2) + q / 2, channel g / 2, half q % 2 of
// its slab (piece 8 tile + 2 channel + half of the column group's 32, the half being the tile's
// row-permutation group of 32 rows: 4 words); A register r of a word's product takes the word's pair
// lane_a_pair(r) (pairs 0 and 2 at rows g and g + 8, k columns 2q, 2q + 1; pairs 1 and 3 at columns
// 8 + 2q, 9 + 2q). As B the lane holds X of the 16 slab rows from lane_x_row where lane_holds_x, zeros
// elsewhere; B register 0 of word i's product holds rows 2i, 2i + 1 of them, register 1 rows 8 + 2i,
// 9 + 2i. Lanes where lane_holds_tile come out with their own piece's tile and channel (D[g][2q] +
// D[g + 8][2q + 1]): lanes 8c, 8c + 2, 8c + 5 and 8c + 7 hold channel c over tiles 0, 1, 2 and 3.
struct LanePiece {
  int tile, channel, half;
};
DQL_HD LanePiece lane_piece(int lane) {
  const int g = lane / 4, q = lane % 4;
  return LanePiece{2 * (g % 2) + q / 2, g / 2, q % 2};
}
DQL_HD int lane_piece_index(int lane) {
  const LanePiece p = lane_piece(lane);
  return 8 * p.tile + 2 * p.channel + p.half;
}
DQL_HD int lane_a_pair(int r) { return r == 1 ? 2 : (r == 2 ? 1 : r); }
DQL_HD bool lane_holds_x(int lane) { return (lane % 4) / 2 == (lane / 4) / 4; }
DQL_HD int lane_x_row(int lane) {
  const int g = lane / 4, q = lane % 4;
  return 64 * (2 * ((g / 2) % 2) + q / 2) + 32 * (q % 2) + 16 * (g % 2);
}
DQL_HD bool lane_holds_tile(int lane) { return (lane / 4) % 2 == lane % 2; }

// The partial sums a block keeps in shared memory (warps x groups x 4 floats) at most: well under the
// 48 KB a launch may ask without opting in, beside the kernel's static shared memory.
constexpr int64_t kLanePartBytes = 32 * 1024;

// The grid: `rows` rows of blocks along K (K / (256 warps) rounded up) by `columns` ranges of
// `per` column groups (4 channels each); as many groups a range as fill the `resident` blocks (blocks
// a multiprocessor times multiprocessors) in one wave, unless the partial sums would pass
// kLanePartBytes; the last range may hold fewer. Each row of blocks takes `per_row` slabs of K (the
// slabs over the rows as evenly as whole slabs allow; the last row may hold fewer), the first
// `per_row` warps of a block one each. Where the warps do not divide the slabs, rows of equal work
// ran 2-3% faster than full rows before a short last one (4096x11008 at 16 warps: rows of 15, 15 and
// 13 slabs against 16, 16 and 11; 4096x14336 and 5120x13824 at 32: 28 + 28 and 27 + 27 against 32 +
// 24 and 32 + 22; H200, notes/performance.md, fifty-ninth session). `spread`: the launcher takes the
// kernel's instance for per_row below the warps, which it needs only with several rows of blocks (in
// one row the warps past per_row are those past K, which every instance leaves idle).
struct LaneGrid {
  int64_t rows, columns, per, shared_bytes, per_row;
  bool spread;
};
inline LaneGrid lane_grid(int64_t n, int64_t k, int warps, int64_t resident) {
  LaneGrid g{};
  const int64_t groups = n / 4;
  const int64_t slabs = (k + kLaneSlab - 1) / kLaneSlab;
  g.rows = (slabs + warps - 1) / warps;
  g.per_row = (slabs + g.rows - 1) / g.rows;
  g.spread = g.rows > 1 && g.per_row < warps;
  const int64_t ranges = std::max<int64_t>(1, resident / g.rows);
  const int64_t most = kLanePartBytes / (warps * 4 * 4);
  g.per = std::min<int64_t>(most, (groups + ranges - 1) / ranges);
  g.columns = (groups + g.per - 1) / g.per;
  g.shared_bytes = warps * g.per * 4 * 4;
  return g;
}

// fp16 X (ft_lane_kernel's UNMET): where a block walks ranges of kLaneUnmetGroups column groups and more,
// a step's sums leave unmet, each of a column's four tiles stored as it is rather than met by two
// shuffles in the walk, and the block's meeting adds them in the shuffles' order (the same bits), with
// four times the shared memory (`block_most`: the most the device lets a block have, less the kernel's
// own; 227 KB on compute capability 9.0, 99 KB on 8.6 and 8.9, 64 KB on 7.5). On the H100, one binary
// with and without (notes/performance.md, eighty-third session): 28672x8192 45.92 against 46.37 us,
// 17408x4224 18.85 against 19.94, 14336x28672 78.9 against 81.2, 8192x16384 29.4 against 29.6-31.6,
// 8192x28672 and 16384x8448 the same. With ranges of 16 groups (8192x8192) the walk alone measured
// 0.6 us slower so (eighty-second session).
constexpr int64_t kLaneUnmetGroups = 32;
inline bool lane_unmet(const LaneGrid& g, int64_t block_most) {
  return g.per >= kLaneUnmetGroups && 4 * g.shared_bytes <= block_most;
}

// bf16 X (ft_lane_kernel's STAGED): for groups of 128 (two scale rows a warp), from compute capability 8.0
// (cp.async), and where a block walks ranges of kLaneStagedGroups column groups and more (long enough to
// repay the wait for the copy at the start), each warp copies its scales to shared memory at the start
// rather than reading them from global memory step by step, with twice the partial sums' shared memory
// (`block_most` as for lane_unmet). On the H100 (notes/performance.md, eighty-fourth session) 28672x8192
// took 44.6 us against 46.2 and 14336x28672 75.3-75.9 against 78.8-80.3, 8192x28672 and 17408x4224 the same
// within noise; fp16 X measured 1% slower so (eighty-second session) and keeps its unmet sums.
constexpr int64_t kLaneStagedGroups = 32;
inline bool lane_stages_scales(const LaneGrid& g, int64_t group, int cc, int64_t block_most) {
  return group == 128 && cc >= 80 && g.per >= kLaneStagedGroups && 2 * g.shared_bytes <= block_most;
}

// Beyond K = 8192 a range's rows of blocks meet in slots of the workspace (ft_lane_kernel): rows 0 ..
// rows - 2 store their sums in slot `row` ([rows - 1][N] floats, float bits marked so that zero means "not
// stored yet") and end; the last row, the last blocks in launch order, reads the slots as they fill, adds
// them after its own sums in row order and writes the outputs. The last row waits for the others, so the
// whole grid must be on the device at once; where it is not (ranges capped by kLanePartBytes), the last
// block of a range to arrive settles it (atomic adds, a fence, an arrival counter: three trips to the L2
// one after another where slots take one). On the H200 (notes/performance.md, sixty-eighth session) slots
// took M = 1 8192x28672 from 35.0 to 34.3 us, 4096x16384 from 16.1 to 15.0 and 2048x11008 from 11.9 to
// 10.7, and the outputs no longer depend on the order the blocks finish in.
// lane_slot_floats: the room the slots need, for the most rows any block gives beyond K = 8192 (8 warps: K /
// 2048 rounded up); up to 8192 a block holds the whole K.
inline int64_t lane_slot_floats(int64_t n, int64_t k) {
  const int64_t slabs = (k + kLaneSlab - 1) / kLaneSlab;
  return slabs <= 32 ? 0 : ((slabs + 7) / 8 - 1) * n;
}
inline bool lane_meets_in_slots(const LaneGrid& g, int64_t n, int64_t k, int64_t resident) {
  const int64_t room = std::min(lane_slot_floats(n, k), int64_t{1} << 31);
  return g.rows > 1 && g.rows * g.columns <= resident && (g.rows - 1) * n <= room;
}
// The workspace's partial sums: sum_floats, and at one row of X room for the lane form's slots.
inline int64_t workspace_sum_floats(int64_t n, int64_t k, int64_t m) {
  return m == 1 ? std::max(sum_floats(n, m), lane_slot_floats(n, k)) : sum_floats(n, m);
}

// Beyond K = 8192 the rows of blocks meet in the workspace whatever the block, and the block is chosen
// by its grid: the column groups each warp walks (times the waves the grid takes) plus one for each
// row of blocks (the meeting), the smaller block where two cost the same. On the H200 this picks 16
// warps at 8192x28672 (7 full rows, 56 groups a warp, where 32 warps leave 4 rows, the last half empty,
// and 63 groups: 36.8 against 38.3 us; with the slabs spread over the 4 rows, 28 each, 35.5-35.7
// against 35.4 in the fifty-ninth session, so the pick stands) and 14336x28672 (59.9 against 72.9),
// 8 at 16384x53248 (120.6 against 132.3) and 7168x18432, and keeps 32 at 4096x14336 and 5120x13824,
// where 8 warps' shorter walks cost more in rows than they gain. Over 17 shapes with K from 8960 to
// 53248 its picks were 2.2 us in all from the fastest of the three, where 32 warps everywhere were
// 35 us (notes/performance.md, forty-fourth session).
// resident(w): the blocks of w warps the device holds at once.
inline int64_t lane_cost(const LaneGrid& g, int64_t resident) {
  const int64_t waves = (g.rows * g.columns + resident - 1) / resident;
  return waves * g.per + g.rows;
}
template <class Resident>
inline int lane_warps(int64_t n, int64_t k, Resident resident) {
  if (k <= 32 * kLaneSlab) return lane_warps(k);
  int best = 8;
  int64_t least = 0;
  for (const int w : {8, 16, 32}) {
    const int64_t r = std::max<int64_t>(1, resident(w));
    const int64_t c = lane_cost(lane_grid(n, k, w, r), r);
    if (w == 8 || c < least) best = w, least = c;
  }
  return best;
}

// AWQ at one to sixteen rows of X (awq_lane_kernel): blocks of kAwqLaneWarps warps, each warp
// awq_lane_channels(M) channels (the launcher picks the form by them) by a run of `steps_per_warp` steps of
// 16 rows of K; the warps of a block take consecutive runs of one column of channels, `rows` rows of blocks a
// column (they meet in the workspace). A warp holds 256 channels at one and two rows, 128 at three to
// eight and 64 at nine to sixteen (its accumulators grow with the rows it holds X of). The rows: the fewest
// that finish soonest, counting whole waves of the device's resident blocks and kAwqLaneBlockSteps steps a
// block for its start and its meeting; the steps spread evenly over their warps, the last row may hold fewer.
// Taken where the warps' channels divide N, for the groups the tensor-core forms take (a multiple of 64),
// from compute capability 8.0; from nine rows only where one wave of its blocks holds N's columns
// (`resident`: the blocks of the sixteen-row form the device runs at once). Beyond that the waves' starts and
// meetings cost more than the lane form gains: H200, 28672x8192 at 16 rows (448 columns over 264 blocks) 105
// us against the ring's 91.5, where 8192x8192 (128 columns) reads 28 against 38.
constexpr int kAwqLaneWarps = 8;
constexpr int64_t kAwqLaneMostRows = 16;   // rows of X the lane form takes (awq_lane_kernel)
constexpr int64_t kAwqLaneBlockSteps = 2;  // a block's start and meeting, in steps, for the grid's choice
inline int64_t awq_lane_channels(int64_t m) { return m <= 2 ? 256 : m <= 8 ? 128 : 64; }
struct AwqLaneGrid {
  int64_t columns, rows, steps_per_warp;
};
// `channels`: the launched form's warp (awq_lane_channels of its rows of X).
inline AwqLaneGrid awq_lane_grid(int64_t n, int64_t k, int64_t channels, int64_t resident) {
  AwqLaneGrid g{};
  g.columns = n / channels;
  const int64_t steps = k / 16, most = (steps + kAwqLaneWarps - 1) / kAwqLaneWarps;
  const int64_t per_wave = std::max<int64_t>(1, resident);
  int64_t best = 0;
  for (int64_t rows = 1, least = 0; rows <= most; ++rows) {
    const int64_t per = (steps + rows * kAwqLaneWarps - 1) / (rows * kAwqLaneWarps);
    const int64_t waves = (g.columns * rows + per_wave - 1) / per_wave;
    const int64_t cost = waves * (per + kAwqLaneBlockSteps);
    if (best == 0 || cost < least) best = rows, least = cost;
  }
  const int64_t warps = best * kAwqLaneWarps;
  g.steps_per_warp = (steps + warps - 1) / warps;
  const int64_t runs = (steps + g.steps_per_warp - 1) / g.steps_per_warp;
  g.rows = (runs + kAwqLaneWarps - 1) / kAwqLaneWarps;
  return g;
}
inline bool awq_lane_takes(int64_t m, int64_t n, int group, int cc, int64_t resident) {
  return m >= 1 && m <= kAwqLaneMostRows && n % awq_lane_channels(m) == 0 && group % 64 == 0 && cc >= 80 &&
         (m <= 8 || n / awq_lane_channels(m) <= resident);
}

// ---- the online int8 path (online_kernel): slices of K ------------------------------------------
//
// A warp takes 16 channels over one slice of K's blocks (the weight's groups, 64 or 128 rows); the grid
// is N / 64 blocks of 4 warps by `online_slices` slices. A slice sums its blocks in K order from zero,
// and the slices' sums are added in slice order (by a second kernel where there are several), which
// the CPU twin does too. The slices depend on the shape alone, not on the device, so that the GPU's
// outputs equal the twin's bit for bit on every device. As many slices as give kOnlineWarps warps (32
// a multiprocessor of the H200, each with one step's 1 KB of loads in flight), at most
// kOnlineMostSlices, and none of fewer than kOnlineLeastBlocks blocks.
constexpr int64_t kOnlineWarps = 4096;
constexpr int64_t kOnlineMostSlices = 16;
constexpr int64_t kOnlineLeastBlocks = 4;
inline int64_t online_slices(int64_t n, int64_t k, int64_t group) {
  const int64_t warps = std::max<int64_t>(1, (n + 15) / 16), blocks = group > 0 ? k / group : 0;
  const int64_t want = (kOnlineWarps + warps - 1) / warps;
  const int64_t most = std::min(kOnlineMostSlices, std::max<int64_t>(1, blocks / kOnlineLeastBlocks));
  return std::clamp<int64_t>(want, 1, most);
}
// The first block of slice s of `slices` over `blocks` blocks (slice s takes [first(s), first(s + 1))).
DQL_HD int64_t online_slice_first(int64_t s, int64_t slices, int64_t blocks) { return blocks * s / slices; }

}  // namespace dql::gemv
