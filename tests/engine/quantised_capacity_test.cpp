// KV capacity of a quantised checkpoint through the engine: the memory rule gives the KV cache what the
// weights leave, so a weight format changes the block count by its weight bytes (sim/model/sizing.h
// weight_bytes, checked by hand in tests/model/quantization_test.cpp) and nothing else.
#include <gtest/gtest.h>

#include <string>

#include "sim/app/simulation.h"
#include "sim/model/config_reader.h"
#include "sim/model/sizing.h"
#include "sim/scenario/scenario.h"

namespace kvsim {
namespace {

EngineConfig resolve(const std::string& engine) {
  const Scenario s = parse_scenario("model: models/gpt-oss-120b.json\ngpu: h200\nengine: {" + engine +
                                        "}\nworkload:\n  synthetic: {kind: poisson, rate: 1, num_requests: 1}\n",
                                    "quantised capacity test");
  return resolve_engine_config(s, read_model_config(s.model));
}

// gpt-oss-120b on one H200: the generic "fp4" is the MXFP4 checkpoint as stored (experts MXFP4,
// attention and the rest BF16), so it leaves exactly the blocks "auto" leaves. Forcing "mxfp4" on every
// linear weight shrinks attention too, and the KV cache gains those bytes, to within one block.
TEST(QuantisedCapacity, GptOssFp4IsTheCheckpointAndForcedMxfp4FreesItsWeightBytes) {
  const EngineConfig a = resolve("weight_dtype: auto");
  const EngineConfig f = resolve("weight_dtype: fp4");
  const EngineConfig m = resolve("weight_dtype: mxfp4");
  EXPECT_EQ(f.layout.num_blocks, a.layout.num_blocks);
  EXPECT_EQ(f.layout.bytes_per_block, a.layout.bytes_per_block);
  const ModelSpec oss = read_model_config("models/gpt-oss-120b.json");
  const int64_t freed = weight_bytes(oss, std::nullopt) - weight_bytes(oss, DType::kMxfp4);
  ASSERT_GT(freed, 0);
  const int64_t gained = (m.layout.num_blocks - a.layout.num_blocks) * a.layout.bytes_per_block;
  EXPECT_NEAR(static_cast<double>(gained), static_cast<double>(freed), static_cast<double>(a.layout.bytes_per_block));
  // An FP8 cache halves the bytes of a block (1 byte per element instead of 2), so the same memory holds
  // twice the blocks, to within the rounding of the count.
  const EngineConfig kv8 = resolve("kv_cache_dtype: fp8");
  EXPECT_EQ(2 * kv8.layout.bytes_per_block, a.layout.bytes_per_block);
  EXPECT_NEAR(static_cast<double>(kv8.layout.num_blocks), 2.0 * static_cast<double>(a.layout.num_blocks), 2.0);
}

// SGLang's mem_fraction_static covers the weights and the KV pool; activations and CUDA graphs live in the
// rest (model_runner.py), so the GPU file's activation reserve is not taken out of the pool: set it by hand
// and the block count drops by exactly its bytes (to within one block); leave it and the pool is what
// `kvsim size --engine sglang` prints (reserve 0).
TEST(QuantisedCapacity, SglangKeepsTheActivationReserveOutsideItsFraction) {
  const EngineConfig none = resolve("kind: sglang");
  const EngineConfig zero = resolve("kind: sglang, activation_reserve: 0");
  const EngineConfig gib = resolve("kind: sglang, activation_reserve: 4GiB");
  EXPECT_EQ(none.layout.num_blocks, zero.layout.num_blocks);
  const int64_t lost = (zero.layout.num_blocks - gib.layout.num_blocks) * zero.layout.bytes_per_block;
  EXPECT_NEAR(static_cast<double>(lost), 4.0 * (1 << 30), static_cast<double>(zero.layout.bytes_per_block));
  // vLLM takes the GPU file's 3.5 GiB reserve out of its share by default.
  EXPECT_NE(resolve("kind: vllm").layout.num_blocks, resolve("kind: vllm, activation_reserve: 0").layout.num_blocks);
}

}  // namespace
}  // namespace kvsim
