// Bad model configs: every one is an InputError naming the file (and the key), never a crash, a
// division by zero, a huge allocation or a wrapped byte count.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/app/size_report.h"
#include "sim/core/errors.h"
#include "sim/model/config_reader.h"
#include "sim/model/json.h"

namespace kvsim {
namespace {

// The message of the InputError `f` throws ("" when it throws none).
template <typename F>
std::string input_error(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string read_text(const std::string& path) {
  std::ifstream in(std::string(KVSIM_SOURCE_DIR) + "/" + path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Parses `text` as model "m.json" and builds a size report; returns the InputError message, or ""
// when the config is accepted. Any other exception fails the test.
std::string size_text(const std::string& text) {
  try {
    const ModelSpec spec = model_from_json(parse_json(text, "m.json"), "m.json", "m");
    SizeOptions opt;
    const SizeReport r = build_size_report(spec, opt);
    EXPECT_GE(r.kv_bytes_per_token, 0);
    EXPECT_GE(r.state_bytes_per_request, 0);
    EXPECT_GT(r.spec.params, 0);
    EXPECT_GT(r.weight_bytes, 0);
    for (const auto& row : r.contexts) EXPECT_GE(row.bytes, 0);
    return "";
  } catch (const InputError& e) {
    return e.what();
  }
}

// Replaces the first occurrence of `"key": <value>` in `text`.
std::string with_key(std::string text, const std::string& key, const std::string& value) {
  const std::string k = "\"" + key + "\":";
  const size_t at = text.find(k);
  EXPECT_NE(at, std::string::npos) << key;
  if (at == std::string::npos) return text;
  size_t v = at + k.size();
  size_t end = text.find_first_of(",}\n", v);
  return text.substr(0, v) + " " + value + text.substr(end);
}

TEST(ConfigRobustness, TruncatedJsonNeverCrashes) {
  for (const char* model : {"models/qwen3-8b.json", "models/nemotron-h-8b.json", "models/deepseek-v3.2.json"}) {
    const std::string text = read_text(model);
    ASSERT_FALSE(text.empty());
    for (size_t off = 0; off + 1 < text.size(); off += 37) {
      const std::string err = size_text(text.substr(0, off));
      EXPECT_NE(err.find("m.json"), std::string::npos) << model << " at " << off << ": " << err;
    }
  }
}

TEST(ConfigRobustness, EveryNumericKeyWithABadValueIsAnErrorOrSane) {
  // Each top-level integer key of every model set to zero, negative, huge, out of int64 and
  // fractional: either rejected with the key named, or sized to non-negative numbers.
  for (const auto& entry : std::filesystem::directory_iterator(std::string(KVSIM_SOURCE_DIR) + "/models")) {
    if (entry.path().extension() != ".json") continue;
    const std::string text = read_text("models/" + entry.path().filename().string());
    const JsonValue doc = parse_json(text, "m.json");
    for (const auto& [key, v] : doc.object()) {
      if (!v.is_integer()) continue;
      for (const char* bad : {"0", "-5", "5000000000", "1e30", "2.5", "\"x\""}) {
        const std::string err = size_text(with_key(text, key, bad));
        if (!err.empty()) {
          EXPECT_NE(err.find("m.json"), std::string::npos) << key << "=" << bad << ": " << err;
        }
      }
    }
  }
}

TEST(ConfigRobustness, ZeroSizesAreErrorsNotDivisionByZero) {
  // Each of these divided or took a modulo by the value (SIGFPE).
  const struct {
    const char* model;
    const char* key;
  } cases[] = {{"models/falcon-7b.json", "n_head"},
               {"models/rwkv6-1b6.json", "head_size"},
               {"models/deepseek-v3.json", "moe_layer_freq"}};
  for (const auto& c : cases) {
    const std::string err = size_text(with_key(read_text(c.model), c.key, "0"));
    EXPECT_NE(err.find("m.json"), std::string::npos) << c.model << ": " << err;
  }
}

TEST(ConfigRobustness, HugeLayerCountIsAnErrorNotBadAlloc) {
  const std::string err = size_text(with_key(read_text("models/qwen3-8b.json"), "num_hidden_layers", "5000000000"));
  EXPECT_NE(err.find("'num_hidden_layers'"), std::string::npos) << err;
}

TEST(ConfigRobustness, NegativeStateSizesAreErrors) {
  // Accepted before, with negative state bytes per request.
  for (const char* key : {"mamba_head_dim", "ssm_state_size", "mamba_num_heads"}) {
    const std::string err = size_text(with_key(read_text("models/nemotron-h-8b.json"), key, "-5"));
    EXPECT_NE(err.find(std::string("'") + key + "'"), std::string::npos) << err;
  }
  const std::string err = size_text(with_key(read_text("models/qwen3.5-4b.json"), "linear_key_head_dim", "-5"));
  EXPECT_NE(err.find("'linear_key_head_dim'"), std::string::npos) << err;
}

TEST(ConfigRobustness, KvHeadsMustDivideAttentionHeads) {
  const std::string err = size_text(with_key(read_text("models/qwen3-8b.json"), "num_key_value_heads", "5"));
  EXPECT_NE(err.find("'num_key_value_heads'"), std::string::npos) << err;
  EXPECT_NE(err.find("must divide"), std::string::npos) << err;
}

TEST(ConfigRobustness, OverflowingParameterCountIsAnError) {
  // Before: a negative weight size. Every key is in range; the product is not.
  std::string text = read_text("models/deepseek-v3.json");
  text = with_key(text, "n_routed_experts", "16384");
  text = with_key(text, "moe_intermediate_size", "4194304");
  const std::string err = size_text(text);
  EXPECT_NE(err.find("parameters"), std::string::npos) << err;
}

TEST(ConfigRobustness, DuplicateJsonKeysAreErrors) {
  try {
    parse_json(R"({"a": 1, "b": 2, "a": 3})", "d.json");
    FAIL() << "accepted a duplicate key";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("d.json:1:18"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("duplicate key 'a'"), std::string::npos) << e.what();
  }
}

// Past 16 members the check uses a set (100,000 keys took 24 s scanned): a repeat far down a large object
// is still found, at its own position.
TEST(ConfigRobustness, DuplicateKeyOfALargeObjectIsFound) {
  std::string text = "{";
  for (int i = 0; i < 40; ++i) text += "\"k" + std::to_string(i) + "\": " + std::to_string(i) + ", ";
  text += "\"k7\": 0}";
  const std::string err = input_error([&] { parse_json(text, "big.json"); });
  EXPECT_NE(err.find("duplicate key 'k7'"), std::string::npos) << err;
  EXPECT_NE(err.find("big.json:1:" + std::to_string(text.rfind("\"k7\"") + 1) + ":"), std::string::npos) << err;
}

// Python's json, which wrote these files, refuses 036; it was read as 36. A document of more than 2^21
// values is refused (a 64 MiB array of zeros took 3.5 GB).
TEST(ConfigRobustness, LeadingZerosAndHugeDocumentsAreErrors) {
  EXPECT_NE(input_error([] {
              parse_json(R"({"num_hidden_layers": 036})", "z.json");
            }).find("z.json:1:23: invalid JSON: number with a leading zero"),
            std::string::npos);
  EXPECT_EQ(parse_json("[0, -0, 0.5, -0.25, 10]", "ok.json").array().size(), 5u);
  std::string many = "[";
  for (int i = 0; i < (1 << 21); ++i) many += "0,";
  many += "0]";
  EXPECT_NE(input_error([&] { parse_json(many, "many.json"); }).find("more than 2097152 values"), std::string::npos);
  // kvsim's own files (a sweep manifest of 210,000 points) are bounded by their size only.
  EXPECT_EQ(parse_json(many, "sweep.json", INT64_MAX).array().size(), (size_t{1} << 21) + 1);
}

// Keys whose odd values were read as something else (a fuzzing helper's finds): each is now refused by name.
TEST(ConfigRobustness, KeysThatSilentlyChangedTheModelAreRefused) {
  const std::string moe = read_text("models/qwen3-30b-a3b.json");
  // decoder_sparse_step -1 left no MoE layer: 30.5 B parameters read as 3.3 B.
  EXPECT_NE(size_text(with_key(moe, "decoder_sparse_step", "-1")).find("'decoder_sparse_step' must be in [1, 48]"),
            std::string::npos);
  // Experts of width 0 counted no parameters.
  EXPECT_NE(size_text(with_key(moe, "moe_intermediate_size", "0")).find("'moe_intermediate_size' must be in [1,"),
            std::string::npos);
  // An interval beyond the 48 layers gave a hybrid with no attention layer.
  const std::string next = read_text("models/qwen3-next-80b-a3b.json");
  EXPECT_NE(size_text(with_key(next, "full_attention_interval", "2147483648")).find("full_attention_interval"),
            std::string::npos);
  // A string where a boolean belongs was read as false.
  EXPECT_NE(size_text(with_key(read_text("models/qwen3-8b.json"), "attention_bias", "\"abc\""))
                .find("'attention_bias' must be true or false"),
            std::string::npos);
  // A vision_config that is not an object was read as no vision tower.
  const std::string vl = read_text("models/qwen3-vl-8b.json");
  const size_t at = vl.find("\"vision_config\": {");
  ASSERT_NE(at, std::string::npos);
  const std::string str_vision =
      vl.substr(0, at) + "\"vision_config\": \"abc\", \"old_vision\": {" + vl.substr(at + 18);
  EXPECT_NE(size_text(str_vision).find("vision_config: must be an object"), std::string::npos) << size_text(str_vision);
}

TEST(ConfigRobustness, BinaryBytesAndBadSurrogatesAreNamedNotEchoed) {
  try {
    parse_json(std::string("\x01\x02", 2), "b.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("byte 0x01"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_json(R"({"model_type": "\ud800\u0041"})", "s.json"), InputError);
}

TEST(ConfigRobustness, DirectoryIsNamedAsSuch) {
  try {
    parse_json_file(std::string(KVSIM_SOURCE_DIR) + "/models");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
}

TEST(ConfigRobustness, QwenSlidingLayersWithUseSlidingWindowOffAreFullAttention) {
  // transformers' Qwen2/Qwen3 configs set sliding_window = None unless use_sliding_window, and vLLM's
  // qwen2.py gives a "sliding_attention" layer config.sliding_window: no window. Qwen3-8B with every
  // layer marked sliding and use_sliding_window false is the plain model: 36 full-attention layers of
  // 2 x 8 x 128 x 2 B = 4,096 B per token each.
  std::string text = read_text("models/qwen3-8b.json");
  std::string types = "[";
  for (int i = 0; i < 36; ++i) types += std::string(i ? "," : "") + "\"sliding_attention\"";
  types += "]";
  text.insert(text.rfind('}'), ", \"layer_types\": " + types);
  const ModelSpec spec = model_from_json(parse_json(text, "m.json"), "m.json", "m");
  ASSERT_EQ(spec.layers.size(), 36u);
  for (const LayerSpec& l : spec.layers) {
    EXPECT_EQ(l.kind, LayerKind::kFullAttention);
    EXPECT_EQ(l.attn.window, 0);
  }
}

}  // namespace
}  // namespace kvsim
