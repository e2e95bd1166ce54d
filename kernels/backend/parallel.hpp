// Runs f(i) for i in [0, n) on every hardware thread: the CPU twin's stand-in for a grid.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace dql {

template <class F>
void parallel_items(int64_t n, F&& f) {
  const int64_t threads = std::max<int64_t>(1, std::thread::hardware_concurrency());
  if (n < 4096 || threads == 1) {
    for (int64_t i = 0; i < n; ++i) f(i);
    return;
  }
  std::vector<std::thread> pool;
  const int64_t step = (n + threads - 1) / threads;
  for (int64_t t = 0; t < threads; ++t) {
    const int64_t b = t * step, e = std::min(n, b + step);
    if (b >= e) break;
    pool.emplace_back([&f, b, e] {
      for (int64_t i = b; i < e; ++i) f(i);
    });
  }
  for (auto& th : pool) th.join();
}

}  // namespace dql
