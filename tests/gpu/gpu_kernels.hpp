// Thin launchers over the primitives and recipes compiled for the device, for the GPU suite.
// Every call checks each CUDA call and the launch; an error comes back as a sentence.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/recipes/recipes.hpp"

namespace dql::gpu_test {

// Empty when a device can run kernels; otherwise why not.
std::string device_problem();
std::string device_description();

enum class Prim : uint8_t {
  Lop3,  // param: immLut
  Prmt,  // param: PrmtMode
  AddF16x2,
  SubF16x2,
  MulF16x2,
  FmaF16x2,
  FmaBF16x2,
  SubF32,
  MulF32,
  CvtF16F32,
  CvtF16x2F32,
  CvtF16S32,
};

// out[i] = prim(a[i], b[i], c[i]) on the device, for i < n.
std::string run_primitive(Prim p, uint32_t param, const uint32_t* a, const uint32_t* b, const uint32_t* c,
                          size_t n, uint32_t* out);

// out[i * out_regs + r] = result register r of the recipe on input register regs[i]
// (absmax[i] for recipes that take one).
std::string run_recipe(recipes::RecipeId id, const uint32_t* regs, const uint32_t* absmax, size_t n,
                       uint32_t* out);

}  // namespace dql::gpu_test
