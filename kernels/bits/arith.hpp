// The floating-point instructions the conversion recipes use, one function per PTX
// instruction. On the device each is the instruction itself (where the architecture has it);
// on the host, and on older devices, the correctly rounded emulation from float.hpp.
//
// Packed pairs (f16x2, bf16x2) live in one 32-bit register: lane 0 in bits 0-15.
#pragma once

#include "float.hpp"

namespace dql::bits {

// ---- emulation, usable on both sides --------------------------------------------------------

DQL_HD uint32_t soft_fma_f16x2(uint32_t a, uint32_t b, uint32_t c) {
  return pack16(soft_fma(kF16, lo16(a), lo16(b), lo16(c)), soft_fma(kF16, hi16(a), hi16(b), hi16(c)));
}
DQL_HD uint32_t soft_add_f16x2(uint32_t a, uint32_t b) {
  return pack16(soft_add(kF16, lo16(a), lo16(b)), soft_add(kF16, hi16(a), hi16(b)));
}
DQL_HD uint32_t soft_sub_f16x2(uint32_t a, uint32_t b) {
  return pack16(soft_sub(kF16, lo16(a), lo16(b)), soft_sub(kF16, hi16(a), hi16(b)));
}
DQL_HD uint32_t soft_mul_f16x2(uint32_t a, uint32_t b) {
  return pack16(soft_mul(kF16, lo16(a), lo16(b)), soft_mul(kF16, hi16(a), hi16(b)));
}
DQL_HD uint32_t soft_fma_bf16x2(uint32_t a, uint32_t b, uint32_t c) {
  return pack16(soft_fma(kBF16, lo16(a), lo16(b), lo16(c)), soft_fma(kBF16, hi16(a), hi16(b), hi16(c)));
}
DQL_HD uint32_t soft_sub_f32(uint32_t a, uint32_t b) { return soft_sub(kF32, a, b); }
DQL_HD uint32_t soft_mul_f32(uint32_t a, uint32_t b) { return soft_mul(kF32, a, b); }
DQL_HD uint32_t soft_cvt_f16_f32(uint32_t a) { return soft_convert(kF16, kF32, a); }
DQL_HD uint32_t soft_cvt_f16x2_f32(uint32_t hi, uint32_t lo) {
  return pack16(soft_cvt_f16_f32(lo), soft_cvt_f16_f32(hi));
}
DQL_HD uint32_t soft_cvt_f16_s32(int32_t a) { return soft_from_int(kF16, a); }
DQL_HD uint32_t soft_cvt_bf16x2_f32(uint32_t hi, uint32_t lo) {
  return pack16(soft_convert(kBF16, kF32, lo), soft_convert(kBF16, kF32, hi));
}

// ---- the instructions -----------------------------------------------------------------------

// fma.rn.f16x2 d, a, b, c
DQL_HD uint32_t fma_f16x2(uint32_t a, uint32_t b, uint32_t c) {
#if DQL_ARCH >= 530
  uint32_t d;
  asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
#else
  return soft_fma_f16x2(a, b, c);
#endif
}

// add.rn.f16x2 d, a, b
DQL_HD uint32_t add_f16x2(uint32_t a, uint32_t b) {
#if DQL_ARCH >= 530
  uint32_t d;
  asm("add.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
#else
  return soft_add_f16x2(a, b);
#endif
}

// sub.rn.f16x2 d, a, b
DQL_HD uint32_t sub_f16x2(uint32_t a, uint32_t b) {
#if DQL_ARCH >= 530
  uint32_t d;
  asm("sub.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
#else
  return soft_sub_f16x2(a, b);
#endif
}

// mul.rn.f16x2 d, a, b
DQL_HD uint32_t mul_f16x2(uint32_t a, uint32_t b) {
#if DQL_ARCH >= 530
  uint32_t d;
  asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
#else
  return soft_mul_f16x2(a, b);
#endif
}

// fma.rn.bf16x2 d, a, b, c (sm_80 and newer)
DQL_HD uint32_t fma_bf16x2(uint32_t a, uint32_t b, uint32_t c) {
#if DQL_ARCH >= 800
  uint32_t d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
#else
  return soft_fma_bf16x2(a, b, c);
#endif
}

// sub.rn.f32 d, a, b (fp32 bit patterns in, out)
DQL_HD uint32_t sub_f32(uint32_t a, uint32_t b) {
#if DQL_ARCH >= 200
  float d;
  asm("sub.rn.f32 %0, %1, %2;" : "=f"(d) : "f"(__uint_as_float(a)), "f"(__uint_as_float(b)));
  return __float_as_uint(d);
#else
  return soft_sub_f32(a, b);
#endif
}

// mul.rn.f32 d, a, b
DQL_HD uint32_t mul_f32(uint32_t a, uint32_t b) {
#if DQL_ARCH >= 200
  float d;
  asm("mul.rn.f32 %0, %1, %2;" : "=f"(d) : "f"(__uint_as_float(a)), "f"(__uint_as_float(b)));
  return __float_as_uint(d);
#else
  return soft_mul_f32(a, b);
#endif
}

// cvt.rn.f16.f32 d, a (result in the low 16 bits)
DQL_HD uint32_t cvt_f16_f32(uint32_t a) {
#if DQL_ARCH >= 530
  unsigned short d;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(d) : "f"(__uint_as_float(a)));
  return d;
#else
  return soft_cvt_f16_f32(a);
#endif
}

// cvt.rn.f16x2.f32 d, hi, lo (sm_80 and newer): d = {cvt(hi) in bits 16-31, cvt(lo) in 0-15}
DQL_HD uint32_t cvt_f16x2_f32(uint32_t hi, uint32_t lo) {
#if DQL_ARCH >= 800
  uint32_t d;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(__uint_as_float(hi)), "f"(__uint_as_float(lo)));
  return d;
#else
  return soft_cvt_f16x2_f32(hi, lo);
#endif
}

// cvt.f32.f16 d, a (exact: every fp16 value is an fp32 value)
DQL_HD uint32_t cvt_f32_f16(uint32_t a) {
#if DQL_ARCH >= 530
  float d;
  asm("cvt.f32.f16 %0, %1;" : "=f"(d) : "h"(static_cast<unsigned short>(a & 0xFFFFu)));
  return __float_as_uint(d);
#else
  return soft_convert(kF32, kF16, a & 0xFFFFu);
#endif
}

// cvt.rn.bf16x2.f32 d, hi, lo (sm_80 and newer)
DQL_HD uint32_t cvt_bf16x2_f32(uint32_t hi, uint32_t lo) {
#if DQL_ARCH >= 800
  uint32_t d;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(__uint_as_float(hi)), "f"(__uint_as_float(lo)));
  return d;
#else
  return soft_cvt_bf16x2_f32(hi, lo);
#endif
}

// cvt.rn.f16.s32 d, a (result in the low 16 bits)
DQL_HD uint32_t cvt_f16_s32(int32_t a) {
#if DQL_ARCH >= 530
  unsigned short d;
  asm("cvt.rn.f16.s32 %0, %1;" : "=h"(d) : "r"(a));
  return d;
#else
  return soft_cvt_f16_s32(a);
#endif
}

}  // namespace dql::bits
