#pragma once
// Element types of caches, states and weights, and their sizes.
#include <string>

namespace kvsim {

// kInt4, kMxfp4 and kNvfp4 are weight formats with scales beside the values (see
// weight_bits_per_element); as a cache dtype only kFp4 exists, and "mxfp4" / "nvfp4" parse to it there.
enum class DType { kFp32, kBf16, kFp16, kFp8, kFp8DsMla, kFp4, kInt4, kMxfp4, kNvfp4 };

// Bytes per element of the values alone; 4-bit types are half a byte, so sizes are computed in bits
// where it matters.
double dtype_bytes(DType t);
int dtype_bits(DType t);
std::string dtype_name(DType t);
bool is_fp4(DType t);  // kFp4, kMxfp4, kNvfp4: served by FP4 tensor cores where the GPU has them
// Parses "bf16", "bfloat16", "fp16", "float16", "half", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_ds_mla",
// "fp4", "nvfp4", "mxfp4" (both as fp4), "fp32", "float32", "float". Throws InputError naming `what` otherwise.
DType parse_dtype(const std::string& text, const std::string& what);
// Weight dtypes: the above plus "int4", "mxfp4" / "nvfp4" as their own formats with scales, and
// "fp8_block" (FP8 with 128 x 128 block scales: kFp8 here, the kernels told apart by fp8_block_scaled).
DType parse_weight_dtype(const std::string& text, const std::string& what);

// Bits per weight, scales included, when every weight of a model is forced to `t` (--weight-dtype):
//   mxfp4 (OCP MX): 4-bit E2M1 values + one 8-bit E8M0 scale per 32 values = 4.25;
//   nvfp4: 4-bit E2M1 values + one FP8 E4M3 scale per 16 values = 4.5 (the per-tensor FP32 scale is
//          not counted here; config-driven sizing counts it per tensor);
//   int4: 4-bit values + one BF16 scale per group of 128 (GPTQ / AWQ / compressed-tensors default) = 4.125;
//   fp8, bf16, fp16, fp32: per-tensor scaled, no stored scales.
double weight_bits_per_element(DType t);

}  // namespace kvsim
