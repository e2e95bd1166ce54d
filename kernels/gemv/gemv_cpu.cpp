#include "gemv_cpu.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/backend/parallel.hpp"
#include "split.hpp"

namespace dql::gemv {

const char* path_name(Path p) {
  switch (p) {
    case Path::Fast: return "fast";
    case Path::Naive: return "naive";
    case Path::Online: return "online";
    case Path::Cublas: return "cublas";
  }
  return "?";
}

const char* act_name(Act a) {
  switch (a) {
    case Act::None: return "none";
    case Act::Relu: return "relu";
    case Act::Silu: return "silu";
    case Act::Gelu: return "gelu";
  }
  return "?";
}

namespace {

float f16_value(uint32_t bits16, recipes::OutType t) { return act_to_f32(static_cast<uint16_t>(bits16), t); }

}  // namespace

void decode_rows(const Weights& w, int64_t n0, int64_t rows, bool naive, recipes::OutType t, float* out) {
  using quant::Layout;
  const int64_t K = w.k;
  if (w.layout == Layout::Ft) {
    const int bits = quant::scheme_bits(w.scheme);
    const layouts::FtGeometry g{bits};
    const int e = g.per_word(), il = g.interleave(), v = g.words_per_tile();
    const int64_t wptc = K * il / e;  // words per tile column
    // The row permutation is the same in every 64-row tile and column: where element j of the
    // tile's word i of a column lands, counted from the tile's first row.
    int at[64];  // [word i][element j] at i * e + j: v * e = 64
    for (int i = 0; i < v; ++i) {
      for (int j = 0; j < e; ++j) at[i * e + j] = static_cast<int>(layouts::ft_source(g, i, j, K).k);
    }
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t n = n0 + r;
      const int64_t first = (n / il) * wptc + v * (n % il);
      for (int64_t tile = 0; tile < K / 64; ++tile) {
        float* dst = out + r * K + tile * 64;
        for (int i = 0; i < v; ++i) {
          const uint32_t word = w.q[first + il * v * tile + i];
          uint32_t pairs[4];
          if (naive) {
            ft_word_pairs<true>(bits, t, word, pairs);
          } else {
            ft_word_pairs<false>(bits, t, word, pairs);
          }
          for (int j = 0; j < e; ++j) {
            const uint32_t h = (j % 2) ? bits::hi16(pairs[j / 2]) : bits::lo16(pairs[j / 2]);
            dst[at[i * e + j]] = f16_value(h, t);
          }
        }
      }
    }
  } else if (w.layout == Layout::Awq) {
    // qweight [K, N / 8]: word (k, c) holds columns 8c .. 8c + 7 of row k of W^T; qzeros
    // [K / G, N / 8] the same for each group. Each word goes through the recipe once.
    const int64_t cols = w.n / 8;
    for (int64_t c = n0 / 8; c * 8 < n0 + rows; ++c) {
      uint32_t z[4] = {};
      for (int64_t kk = 0; kk < K; ++kk) {
        if (kk % w.group == 0) {
          const uint32_t zin[2] = {w.qzeros[(kk / w.group) * cols + c], 0u};
          recipes::run_plain(recipes::RecipeId::AwqInt4F16, zin, z);
        }
        const uint32_t in[2] = {w.q[kk * cols + c], 0u};
        uint32_t q[4];
        recipes::run_plain(recipes::RecipeId::AwqInt4F16, in, q);
        for (int i = 0; i < 8; ++i) {
          const int64_t r = c * 8 + i - n0;
          if (r < 0 || r >= rows) continue;
          const uint32_t d = bits::sub_f16x2(q[i / 2], z[i / 2]);
          out[r * K + kk] = quant::half_to_f32((i % 2) ? bits::hi16(d) : bits::lo16(d));
        }
      }
    }
  } else if (w.scheme == quant::Scheme::Nf4) {
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t n = n0 + r;
      for (int64_t k0 = 0; k0 < K; k0 += 8) {
        const uint32_t in[2] = {w.q[(n * K + k0) / 8],
                                quant::bits_of_f32(w.absmax[n * (K / w.group) + k0 / w.group])};
        uint32_t q[4];
        recipes::run_plain(recipes::RecipeId::Nf4F16, in, q);
        for (int j = 0; j < 8; ++j) {
          out[r * K + k0 + j] = quant::half_to_f32((j % 2) ? bits::hi16(q[j / 2]) : bits::lo16(q[j / 2]));
        }
      }
    }
  } else {  // plain signed int8 / int4, element i in byte / nibble i
    const int bits = quant::scheme_bits(w.scheme);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t kk = 0; kk < K; ++kk) {
        out[r * K + kk] = static_cast<float>(quant::plain_element(w.q, bits, K, n0 + r, kk));
      }
    }
  }
}

float group_scale(const Weights& w, int64_t n, int64_t g) {
  if (w.scheme == quant::Scheme::Nf4) return 1.0f;
  const uint16_t s =
      w.layout == quant::Layout::Plain ? w.scales[n * (w.k / w.group) + g] : w.scales[g * w.n + n];
  return quant::half_to_f32(s);
}

std::vector<uint16_t> gemv_cpu(const Weights& w, const Problem& p, const std::vector<uint16_t>* dequantized) {
  const int64_t M = p.m, N = w.n, K = w.k;
  std::vector<uint16_t> y(static_cast<size_t>(M * N));
  std::vector<float> x(static_cast<size_t>(M * K));
  for (size_t i = 0; i < x.size(); ++i) x[i] = act_to_f32(p.x[i], p.dtype);
  const auto finish = [&](int64_t m, int64_t n, float acc) {
    const float b = p.bias ? act_to_f32(p.bias[n], p.dtype) : 0.0f;
    y[static_cast<size_t>(m * N + n)] = epilogue(acc, b, p.epi, p.dtype);
  };

  if (p.path == Path::Cublas) {
    parallel_items(N, [&](int64_t n) {
      for (int64_t m = 0; m < M; ++m) {
        float acc = 0.0f;
        for (int64_t kk = 0; kk < K; ++kk) {
          acc += x[m * K + kk] * act_to_f32((*dequantized)[n * K + kk], p.dtype);
        }
        finish(m, n, acc);
      }
    });
    return y;
  }

  if (p.path == Path::Online) {
    // Activations to int8 per K block (the weight's group), then exact integer block sums.
    const int64_t G = w.group, blocks = K / G;
    std::vector<int> aq(static_cast<size_t>(M * K));
    std::vector<ActBlock> ab(static_cast<size_t>(M * blocks));
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t b = 0; b < blocks; ++b) {
        float lo = x[m * K + b * G], hi = lo;
        for (int64_t i = 0; i < G; ++i) {
          lo = std::min(lo, x[m * K + b * G + i]);
          hi = std::max(hi, x[m * K + b * G + i]);
        }
        const ActBlock a = act_block_params(lo, hi);
        ab[m * blocks + b] = a;
        for (int64_t i = 0; i < G; ++i) aq[m * K + b * G + i] = act_code(x[m * K + b * G + i], a);
      }
    }
    // The kernel's slices of K (online_slices): each sums its blocks from zero, then the slices add in
    // order.
    const int64_t slices = online_slices(N, K, G);
    parallel_items(N, [&](int64_t n) {
      std::vector<float> q(static_cast<size_t>(K));
      decode_rows(w, n, 1, false, p.dtype, q.data());
      for (int64_t m = 0; m < M; ++m) {
        float acc = 0.0f;
        for (int64_t s = 0; s < slices; ++s) {
          float part = 0.0f;
          for (int64_t b = online_slice_first(s, slices, blocks);
               b < online_slice_first(s + 1, slices, blocks); ++b) {
            int32_t cq = 0, bsum = 0;
            for (int64_t i = 0; i < G; ++i) {
              const int32_t wq = static_cast<int32_t>(q[b * G + i]);
              cq += aq[m * K + b * G + i] * wq;
              bsum += wq;
            }
            const float sb = group_scale(w, n, b);
            const ActBlock a = ab[m * blocks + b];
            part += quant::mul_rn(quant::mul_rn(a.scale, sb), static_cast<float>(cq)) +
                    quant::mul_rn(quant::mul_rn(a.offset, sb), static_cast<float>(bsum));
          }
          acc = s == 0 ? part : acc + part;
        }
        finish(m, n, acc);
      }
    });
    return y;
  }

  const int64_t rows = w.layout == quant::Layout::Awq ? 8 : 1;
  const int64_t G = w.group, groups = K / G;
  parallel_items(N / rows, [&](int64_t blk) {
    std::vector<float> q(static_cast<size_t>(rows * K));
    decode_rows(w, blk * rows, rows, p.path == Path::Naive, p.dtype, q.data());
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t n = blk * rows + r;
      for (int64_t m = 0; m < M; ++m) {
        float acc = 0.0f;
        for (int64_t g = 0; g < groups; ++g) {
          float part = 0.0f;
          for (int64_t i = 0; i < G; ++i) part += x[m * K + g * G + i] * q[r * K + g * G + i];
          acc += group_scale(w, n, g) * part;
        }
        finish(m, n, acc);
      }
    }
  });
  return y;
}

std::vector<double> product_f64(const uint16_t* x, int64_t m, const uint16_t* w_nk, int64_t n, int64_t k,
                                recipes::OutType t) {
  std::vector<double> out(static_cast<size_t>(m * n));
  std::vector<double> xd(static_cast<size_t>(m * k));
  for (size_t i = 0; i < xd.size(); ++i) xd[i] = act_to_f32(x[i], t);
  parallel_items(n, [&](int64_t j) {
    for (int64_t i = 0; i < m; ++i) {
      double acc = 0.0;
      for (int64_t kk = 0; kk < k; ++kk) acc += xd[i * k + kk] * act_to_f32(w_nk[j * k + kk], t);
      out[i * n + j] = acc;
    }
  });
  return out;
}

double epilogue_f64(double v, double bias, const Epilogue& e) {
  v += bias;
  switch (e.act) {
    case Act::None: break;
    case Act::Relu: v = v > 0.0 ? v : 0.0; break;
    case Act::Silu: v = v / (1.0 + std::exp(-v)); break;
    case Act::Gelu: v = 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); break;
  }
  if (e.clamp) v = std::clamp(v, static_cast<double>(e.lo), static_cast<double>(e.hi));
  return v;
}

Accuracy compare(const std::vector<uint16_t>& y, const std::vector<double>& ref, recipes::OutType t) {
  Accuracy a;
  double num = 0, den = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double v = static_cast<double>(act_to_f32(y[i], t)), d = v - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
    // A NaN difference makes the largest one NaN too (std::max would pass it over).
    a.max_abs = std::isnan(d) || std::isnan(a.max_abs) ? NAN : std::max(a.max_abs, std::abs(d));
    if (!std::isfinite(v) || !std::isfinite(ref[i])) {
      ++a.nonfinite;
      if (std::isfinite(ref[i]) || !(std::isnan(v) ? std::isnan(ref[i]) : v == ref[i])) ++a.nonfinite_apart;
    }
  }
  a.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return a;
}

}  // namespace dql::gemv
