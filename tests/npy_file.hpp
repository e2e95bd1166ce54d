// .npy files written byte by byte for the tests (version 1 headers, as the program writes them), the
// shape given as the header's own text so that a test can also write shapes no array could have.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace dql::test {

inline std::string npy_shape_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (int64_t d : shape) s += std::to_string(d) + ",";
  if (shape.size() > 1) s.pop_back();
  return s + ")";
}

inline void write_npy_text(const std::string& path, const std::string& descr, const std::string& shape,
                           const void* data, size_t bytes) {
  std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  h.append((64 - (10 + h.size() + 1) % 64) % 64, ' ');
  h += '\n';
  std::ofstream f(path, std::ios::binary);
  f.write("\x93NUMPY\x01\x00", 8);
  const char len[2] = {static_cast<char>(h.size() & 0xFF), static_cast<char>(h.size() >> 8)};
  f.write(len, 2);
  f.write(h.data(), static_cast<std::streamsize>(h.size()));
  if (bytes > 0) f.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  REQUIRE(f.good());
}

}  // namespace dql::test
