#include "sim/perf/cuda_graph.h"

#include <algorithm>

namespace kvsim {

std::vector<int64_t> vllm_cudagraph_capture_sizes(int64_t max_num_seqs, int64_t max_num_batched_tokens) {
  std::vector<int64_t> sizes;
  if (max_num_seqs < 1 || max_num_batched_tokens < 1) return sizes;
  const int64_t max_size = std::min({max_num_seqs * 2, int64_t{512}, max_num_batched_tokens});
  for (int64_t s : {1, 2, 4})
    if (s <= max_size) sizes.push_back(s);
  for (int64_t s = 8; s < std::min(max_size + 1, int64_t{256}); s += 8) sizes.push_back(s);
  for (int64_t s = 256; s <= max_size; s += 16) sizes.push_back(s);
  return sizes;
}

int64_t cudagraph_padded_tokens(const std::vector<int64_t>& sizes, int64_t tokens) {
  const auto it = std::lower_bound(sizes.begin(), sizes.end(), tokens);
  return it == sizes.end() ? tokens : *it;
}

}  // namespace kvsim
