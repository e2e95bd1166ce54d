// Experiment (not part of the product): a W4A16 product for 16 rows of X on the tensor cores where
// each warp owns NT n-tiles of mma.m16n8k16 (8 channels each) and walks K, so its sums stay in the
// accumulators and never meet other warps' until the end of its share. Asks whether plain 16-byte
// loads kept in flight along K, with X read through L1, carry 16 rows faster than the product's
// copy-engine ring (50.3 us at 28672x8192 on the H200, bench) and the sixteen-row walk across the
// channels (lane16_gemv.cu, about 48 us in the bench's terms).
//
// Lane (g, q) = (lane / 4, lane % 4) takes, of each 128 rows of K (a step), channel g of n-tile j's
// two column groups, tile q / 2, half q % 2: one 16-byte piece of the layout (32 rows), the same rows
// for every g. Its words enter the mma unbiased (lop3 only: 1024 + n for the low nibbles, 1024 + 16 n
// for the high ones). X, permuted on the host so that a lane's A fragment of a word's two pairs is one
// 16-byte load, carries the high pairs divided by 16; minus each token's constant a step (1032 sum x_lo
// + 1152 sum x_hi / 16) is the step's first mma's starting sums, so the step's fp32 sums come out
// exact and take their channels' scales. Groups of 128 only (a step is one group).
//
// The blocks share the work as stream-K does: the (tile group, step) pairs in order, an equal run a
// block, one wave. A block's warps own adjacent tiles and walk the same steps, so the X a step reads
// is the same for all of them (L1). At the end of a tile group or of its run a warp adds its sums into
// fp32 Y (atomics: timing and checking only). The figures are in notes/performance.md (forty-third
// session).
//
//   nvcc -O3 -arch=sm_90 -std=c++20 -Xcompiler -fopenmp -I. -Inotes/experiments -o walk16_gemv \
//       notes/experiments/walk16_gemv.cu
//   ./walk16_gemv
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "ft_int4.cuh"
#include "ptx.cuh"

constexpr int kM = 16;

// WB warps a block, NT n-tiles (8 channels each) a warp, AHEAD steps of loads in flight beyond the one
// in use. MODE 0: the product; 1: loads of weights and scales only; 2: X not read (registers of the
// lane instead: wrong values, to time X's loads).
//
// Xp (uint4): step s, word i, h, lane (g, q) -> the A fragment of word i's pairs 2h, 2h + 1 at the lane's
// rows (tokens g and g + 8; the high pairs divided by 16), so that a warp's load is 512 contiguous bytes.
// C4 (float4): step s, g -> minus the constants of tokens g, g, g + 8, g + 8: the first mma of a step
// starts from it, so the step's sums come out with the constant taken off. S (u32): fp16 scales
// [K / 128][N].
template <int WB, int NT, int AHEAD, int MINB, int MODE, bool PF = false>
__global__ void __launch_bounds__(WB * 32, MINB)
    walk16(const uint4* __restrict__ Wq, const uint4* __restrict__ Xp, const float4* __restrict__ C4,
           const uint32_t* __restrict__ S, float* __restrict__ Y, int N, int K) {
  constexpr int R = AHEAD + 1;  // steps a round
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, q = lane % 4;
  const int nsteps = K / 128;
  const int total = (N / (8 * NT * WB)) * nsteps;
  const int u0 = int(int64_t{blockIdx.x} * total / gridDim.x);
  const int u1 = int(int64_t{blockIdx.x + 1} * total / gridDim.x);
  const int n = u1 - u0;
  if (n <= 0) return;
  const int64_t stride = K / 8;  // pieces a column group
  const int64_t jstride = 2 * stride;
  const int64_t sstride = N / 2;
  const auto wptr = [&](int tg) {
    return Wq + (2 * int64_t{(tg * WB + warp) * NT} + g / 4) * stride + 8 * (q / 2) + 2 * (g % 4) + q % 2;
  };
  const auto sptr = [&](int tg) { return S + 4 * ((tg * WB + warp) * NT) + q; };

  int lt = u0 / nsteps, ls = u0 % nsteps;  // the load cursor
  const uint4* pw = wptr(lt) + 16 * int64_t{ls};
  // PF: the load cursor's step of X (one 128-byte line a lane) and of the constants (lane 0) are
  // fetched into L1 when its weights are loaded
  const uint4* pxl = Xp + (int64_t{ls} * 256 + 8 * lane);
  const float4* pcl = C4 + ls * 8;
  const uint32_t* ps = sptr(lt) + ls * sstride;
  int ct = lt, cs = ls;  // the compute cursor
  const uint4* px = Xp + (int64_t{cs} * 256 + lane);
  const float4* pc = C4 + (cs * 8 + g);
  uint4 bv[R][NT];
  uint32_t bs[R][NT];
  float acc[NT][4] = {};
  unsigned xo = 0;
  const uint4 xnone = make_uint4(lane, 3u * lane, lane + 7u, 5u * lane);

  const auto issue = [&](int slot, const uint4* w, const uint32_t* sc, const uint4* xl, const float4* cl) {
    if constexpr (PF) {
      asm volatile("prefetch.global.L1 [%0];" ::"l"(xl));
      if (lane == 0) asm volatile("prefetch.global.L1 [%0];" ::"l"(cl));
    }
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      bv[slot][j] = ldnc(w + j * jstride);
      bs[slot][j] = __ldg(sc + 4 * j);
    }
  };
  const auto load = [&](int slot) {  // one step, the cursor checked
    issue(slot, pw, ps, pxl, pcl);
    if (++ls == nsteps) {
      ls = 0;
      ++lt;
      pw = wptr(lt);
      ps = sptr(lt);
      pxl = Xp + 8 * lane;
      pcl = C4;
    } else {
      pw += 16;
      ps += sstride;
      pxl += 256;
      pcl += 8;
    }
  };
  const auto flush = [&] {
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      float* y = Y + g * int64_t{N} + 8 * int64_t{(ct * WB + warp) * NT + j} + 2 * q;
      atomicAdd(y, acc[j][0]);
      atomicAdd(y + 1, acc[j][1]);
      atomicAdd(y + 8 * int64_t{N}, acc[j][2]);
      atomicAdd(y + 8 * int64_t{N} + 1, acc[j][3]);
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[j][e] = 0.0f;
    }
  };
  // step `d` of the compute cursor's run (X and the constants at px + 256 d, pc + 8 d)
  const auto body = [&](const uint4(&v)[NT], const uint32_t(&sc)[NT], int d) {
    if constexpr (MODE == 1) {
#pragma unroll
      for (int j = 0; j < NT; ++j) xo ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w ^ sc[j];
    } else {
      const float4 c = __ldg(pc + 8 * d);
      float dd[NT][4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        uint4 xa, xb;  // the A fragments of pairs 0, 1 and 2, 3 of word i
        if constexpr (MODE == 2) {
          xa = xnone, xb = xnone;
        } else {
          xa = __ldg(px + 256 * d + 64 * i);
          xb = __ldg(px + 256 * d + 64 * i + 32);
        }
        // the tiles' chains interleaved: an mma's accumulator was last written NT mma before
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          const uint32_t w = i == 0 ? v[j].x : i == 1 ? v[j].y : i == 2 ? v[j].z : v[j].w;
          if (i == 0) dd[j][0] = c.x, dd[j][1] = c.y, dd[j][2] = c.z, dd[j][3] = c.w;
          mma16816(dd[j], xa.x, xa.y, xa.z, xa.w, lop3_and_or(w, 0x000F000Fu, 0x64006400u),
                   lop3_and_or(w, 0x00F000F0u, 0x64006400u));
        }
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          const uint32_t w8 = (i == 0 ? v[j].x : i == 1 ? v[j].y : i == 2 ? v[j].z : v[j].w) >> 8;
          mma16816(dd[j], xb.x, xb.y, xb.z, xb.w, lop3_and_or(w8, 0x000F000Fu, 0x64006400u),
                   lop3_and_or(w8, 0x00F000F0u, 0x64006400u));
        }
      }
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&sc[j]));
        acc[j][0] = fmaf(dd[j][0], f.x, acc[j][0]);
        acc[j][1] = fmaf(dd[j][1], f.y, acc[j][1]);
        acc[j][2] = fmaf(dd[j][2], f.x, acc[j][2]);
        acc[j][3] = fmaf(dd[j][3], f.y, acc[j][3]);
      }
    }
  };
  // the compute cursor one step on, checked: the sums leave at a tile group's end and the run's
  const auto advance = [&](bool last) {
    const bool end = ++cs == nsteps;
    if constexpr (MODE != 1) {
      if (end || last) flush();
    }
    if (end) {
      cs = 0;
      ++ct;
      px = Xp + lane;
      pc = C4 + g;
    } else {
      px += 256;
      pc += 8;
    }
  };

#pragma unroll
  for (int d = 0; d < AHEAD; ++d)
    if (d < n) load(d);
  int j0 = 0;
  for (; j0 + 2 * AHEAD + 1 <= n; j0 += R) {
    if (ls + R < nsteps && cs + R < nsteps) {  // a whole round inside one tile group: no checks
#pragma unroll
      for (int d = 0; d < R; ++d) {
        issue((d + AHEAD) % R, pw + 16 * d, ps + d * sstride, pxl + 256 * d, pcl + 8 * d);
        body(bv[d], bs[d], d);
      }
      pw += 16 * R, ps += R * sstride, ls += R, pxl += 256 * R, pcl += 8 * R;
      px += 256 * R, pc += 8 * R, cs += R;
    } else {
#pragma unroll
      for (int d = 0; d < R; ++d) {
        load((d + AHEAD) % R);
        body(bv[d], bs[d], 0);
        advance(false);
      }
    }
  }
  for (; j0 < n; j0 += R) {
#pragma unroll
    for (int d = 0; d < R; ++d) {
      if (j0 + d + AHEAD < n) load((d + AHEAD) % R);
      if (j0 + d < n) {
        body(bv[d], bs[d], 0);
        advance(j0 + d == n - 1);
      }
    }
  }
  if (xo == 0x12345678u) sink = xo;
}

int main() {
  Lab lab;
  auto& [prop, tm, copy_gbps] = lab;
  const Shape shapes[] = {{28672, 8192}, {8192, 28672}, {8192, 8192}};
  const bool profile = std::getenv("WALK_PROFILE") != nullptr;  // one launch a variant, one shape
  for (const Shape& sh : shapes) {
    if (profile && sh.n != 28672) continue;
    const int N = sh.n, K = sh.k, G = 128;
    const Int4Problem pb = int4_problem(kM, N, K, G);
    const std::vector<float>& xf = pb.xf;
    // X in the walk's order (the high pairs divided by 16) and each token's constant a step
    const int nsteps = K / 128;
    std::vector<__half> xp(size_t(kM) * K);
    std::vector<float> c4(size_t(nsteps) * 32);
    for (int st = 0; st < nsteps; ++st) {
      double cst[kM] = {};
      for (int qq = 0; qq < 4; ++qq)
        for (int i = 0; i < 4; ++i)
          for (int t = 0; t < kM; ++t)
            for (int p = 0; p < 4; ++p)
              for (int e = 0; e < 2; ++e) {
                const int row = st * 128 + 32 * qq + 8 * p + 2 * i + e;
                const float v = xf[size_t(t) * K + row] * (p % 2 ? 0.0625f : 1.0f);
                const __half hv = __float2half(v);
                // step, word i, h = p / 2, lane (g, q): {token g pair 2h, token g + 8 pair 2h, g 2h + 1, g +
                // 8 2h + 1}
                const int ln = 4 * (t % 8) + qq, slot = 2 * (p % 2) + t / 8;
                xp[((((size_t(st) * 4 + i) * 2 + p / 2) * 32 + ln) * 4 + slot) * 2 + e] = hv;
                cst[t] += (p % 2 ? 1152.0 : 1032.0) * double(__half2float(hv));
              }
      for (int gg = 0; gg < 8; ++gg) {
        float* c = &c4[(size_t(st) * 8 + gg) * 4];
        c[0] = c[1] = -float(cst[gg]);
        c[2] = c[3] = -float(cst[gg + 8]);
      }
    }
    const DevBuf<uint32_t> dW(pb.words);
    const DevBuf<__half> dS(pb.s), dXp(xp);
    const DevBuf<float> dC(c4), dY(size_t(kM) * N);
    const double bytes = int4_bytes(pb, kM, N);
    std::printf("%dx%d M=16: floor %.1f us\n", N, K, bytes / copy_gbps / 1e3);
    const auto run = [&](auto kernel, const char* name, int WB, bool check) {
      int per = 0;
      CK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, 0));
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kernel, WB * 32, 0));
      const dim3 grid(per * prop.multiProcessorCount);
      const auto launch = [&] {
        kernel<<<grid, WB * 32>>>(reinterpret_cast<const uint4*>(dW.p), reinterpret_cast<const uint4*>(dXp.p),
                                  reinterpret_cast<const float4*>(dC.p),
                                  reinterpret_cast<const uint32_t*>(dS.p), dY.p, N, K);
        CK(cudaGetLastError());
      };
      if (profile) {
        launch();
        CK(cudaDeviceSynchronize());
        std::printf("  %s: one launch\n", name);
        return;
      }
      const double err = check ? fp16_rel_err(outputs_once(launch, dY.p, dY.n), pb.ref) : -1.0;
      const double us = tm.median_us(launch);
      std::printf("  %-44s %d blocks/SM %5u blocks %8.2f us %6.1f%% of copy", name, per, grid.x, us,
                  100.0 * bytes / (us * 1e3) / copy_gbps);
      if (check) std::printf("  rel err %.2e", err);
      std::printf("\n");
    };
    for (int round = 0; round < (profile ? 1 : 2); ++round) {
      const bool ck = round == 0 && !profile;
      run(walk16<8, 2, 2, 3, 1>, "loads only: 8w, 2 tiles, 2 ahead, 3 blocks", 8, false);
      run(walk16<4, 4, 2, 4, 2>, "no X: 4w, 4 tiles, 2 ahead, 4 blocks", 4, false);
      run(walk16<4, 4, 2, 4, 2, true>, "no X: 4w, 4 tiles, 2 ahead, 4 blocks, L1 prefetch", 4, false);
      run(walk16<8, 2, 2, 2, 0>, "8w, 2 tiles, 2 ahead, 2 blocks", 8, ck);
      run(walk16<8, 2, 2, 2, 0, true>, "8w, 2 tiles, 2 ahead, 2 blocks, L1 prefetch", 8, ck);
      run(walk16<4, 4, 2, 4, 0, true>, "4w, 4 tiles, 2 ahead, 4 blocks, L1 prefetch", 4, ck);
      run(walk16<4, 4, 1, 4, 0>, "4w, 4 tiles, 1 ahead, 4 blocks", 4, ck);
      run(walk16<4, 4, 1, 4, 0, true>, "4w, 4 tiles, 1 ahead, 4 blocks, L1 prefetch", 4, ck);
      run(walk16<8, 4, 1, 2, 0, true>, "8w, 4 tiles, 1 ahead, 2 blocks, L1 prefetch", 8, ck);
      run(walk16<2, 8, 1, 4, 0>, "2w, 8 tiles, 1 ahead, 4 blocks", 2, ck);
      run(walk16<2, 8, 1, 4, 0, true>, "2w, 8 tiles, 1 ahead, 4 blocks, L1 prefetch", 2, ck);
      run(walk16<8, 2, 1, 3, 0>, "8w, 2 tiles, 1 ahead, 3 blocks", 8, ck);
      run(walk16<8, 2, 2, 3, 0>, "8w, 2 tiles, 2 ahead, 3 blocks", 8, ck);
      run(walk16<4, 4, 1, 5, 0>, "4w, 4 tiles, 1 ahead, 5 blocks", 4, ck);
      run(walk16<8, 2, 1, 4, 0>, "8w, 2 tiles, 1 ahead, 4 blocks", 8, ck);
    }
  }
  return 0;
}
