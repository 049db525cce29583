#include "sim/model/dtype.h"

#include "sim/core/errors.h"

namespace kvsim {

int dtype_bits(DType t) {
  switch (t) {
    case DType::kFp32:
      return 32;
    case DType::kBf16:
    case DType::kFp16:
      return 16;
    case DType::kFp8:
    case DType::kFp8DsMla:
      return 8;
    case DType::kFp4:
    case DType::kInt4:
    case DType::kMxfp4:
    case DType::kNvfp4:
      return 4;
  }
  return 16;
}

double dtype_bytes(DType t) { return dtype_bits(t) / 8.0; }

bool is_fp4(DType t) { return t == DType::kFp4 || t == DType::kMxfp4 || t == DType::kNvfp4; }

std::string dtype_name(DType t) {
  switch (t) {
    case DType::kFp32:
      return "fp32";
    case DType::kBf16:
      return "bf16";
    case DType::kFp16:
      return "fp16";
    case DType::kFp8:
      return "fp8";
    case DType::kFp8DsMla:
      return "fp8_ds_mla";
    case DType::kFp4:
      return "fp4";
    case DType::kInt4:
      return "int4";
    case DType::kMxfp4:
      return "mxfp4";
    case DType::kNvfp4:
      return "nvfp4";
  }
  return "?";
}

DType parse_dtype(const std::string& s, const std::string& what) {
  if (s == "bf16" || s == "bfloat16") return DType::kBf16;
  if (s == "fp16" || s == "float16" || s == "half") return DType::kFp16;
  if (s == "fp8" || s == "fp8_e4m3" || s == "fp8_e5m2" || s == "float8") return DType::kFp8;
  if (s == "fp8_ds_mla") return DType::kFp8DsMla;
  if (s == "fp4" || s == "nvfp4" || s == "mxfp4") return DType::kFp4;
  if (s == "fp32" || s == "float32" || s == "float") return DType::kFp32;
  throw InputError(what + ": unknown dtype " + quote_for_message(s) +
                   " (known: bf16, fp16, fp8, fp8_ds_mla, fp4, fp32)");
}

DType parse_weight_dtype(const std::string& s, const std::string& what) {
  if (s == "int4") return DType::kInt4;
  if (s == "mxfp4") return DType::kMxfp4;
  if (s == "nvfp4") return DType::kNvfp4;
  if (s == "fp8_block") return DType::kFp8;  // FP8 values; the block scales: fp8_block_scaled (sizing.h)
  try {
    return parse_dtype(s, what);
  } catch (const InputError&) {
    throw InputError(what + ": unknown weight dtype '" + s +
                     "' (known: auto, bf16, fp16, fp8, fp8_block, int4, mxfp4, nvfp4, fp4, fp32)");
  }
}

double weight_bits_per_element(DType t) {
  switch (t) {
    case DType::kMxfp4:
      return 4.0 + 8.0 / 32;
    case DType::kNvfp4:
      return 4.0 + 8.0 / 16;
    case DType::kInt4:
      return 4.0 + 16.0 / 128;
    default:
      return dtype_bits(t);
  }
}

}  // namespace kvsim
