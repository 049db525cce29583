#pragma once
// CUDA-graph padding of a step's token count, as vLLM v1 does it.
//
// vLLM (vllm/config/vllm.py, VllmConfig._set_cudagraph_sizes; no speculative decoding):
//   max_size = min(max_num_seqs * 2, 512, max_num_batched_tokens)
//   sizes    = [1, 2, 4] (those <= max_size) + range(8, min(max_size + 1, 256), 8)
//              + range(256, max_size + 1, 16)
//   the largest size becomes the final max_cudagraph_capture_size.
// At run time a step of N scheduled tokens replays the smallest captured size >= N (PIECEWISE graphs
// for mixed batches, FULL graphs for uniform decode under the default FULL_AND_PIECEWISE mode); a step
// above the largest size runs without a graph (vllm/v1/cudagraph_dispatcher.py: CUDAGraphMode.NONE).
// Token-level kernels (GEMMs, MoE, all-reduce, element-wise) then process the padded count.
#include <cstdint>
#include <vector>

namespace kvsim {

// The capture sizes vLLM picks by default, ascending. Empty when max_num_seqs or
// max_num_batched_tokens is < 1.
std::vector<int64_t> vllm_cudagraph_capture_sizes(int64_t max_num_seqs, int64_t max_num_batched_tokens);

// The token count the step's graph runs at: the smallest size >= tokens, or tokens itself when it is
// above the largest size (eager) or sizes is empty.
int64_t cudagraph_padded_tokens(const std::vector<int64_t>& sizes, int64_t tokens);

}  // namespace kvsim
