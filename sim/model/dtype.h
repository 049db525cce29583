#pragma once
// Element types of caches, states and weights, and their sizes.
#include <string>

namespace kvsim {

enum class DType { kFp32, kBf16, kFp16, kFp8, kFp8DsMla, kFp4 };

// Bytes per element; kFp4 is half a byte, so sizes are computed in bits where it matters.
double dtype_bytes(DType t);
int dtype_bits(DType t);
std::string dtype_name(DType t);
// Parses "bf16", "bfloat16", "fp16", "float16", "half", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_ds_mla",
// "fp4", "nvfp4", "fp32", "float32", "float". Throws InputError naming `what` otherwise.
DType parse_dtype(const std::string& text, const std::string& what);

}  // namespace kvsim
