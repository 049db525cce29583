// B300, GB300 and H800 in the bundled catalog: their figures as the sources in their YAML files state
// them (aiconfigurator systems/b300_sxm.yaml and gb300.yaml at ai-dynamo/aiconfigurator@095f58a5; H800 =
// H100 SXM with NVLink 400 GB/s bidirectional), and `kvsim size` sizes a model on each.
#include <gtest/gtest.h>

#include <string>

#include "sim/scenario/hardware_catalog.h"
#include "tests/app/cli_runner.h"

namespace kvsim {
namespace {

const HardwareCatalog& bundled() {
  static const HardwareCatalog c = load_hardware_catalog(std::string(KVSIM_SOURCE_DIR) + "/models/hardware");
  return c;
}

TEST(NewGpus, B300FiguresFromAiconfigurator) {
  const GpuSpec& g = bundled().gpu("b300");
  EXPECT_EQ(g.memory_bytes, 288400343040LL);  // 275,040 MiB reported by nvidia-smi
  EXPECT_DOUBLE_EQ(g.bf16_flops, 2250e12);
  EXPECT_DOUBLE_EQ(g.fp8_flops, 4500e12);
  EXPECT_DOUBLE_EQ(g.fp4_flops, 14000e12);
  EXPECT_DOUBLE_EQ(g.hbm_bandwidth, 7.75e12);
  EXPECT_DOUBLE_EQ(g.nvlink_bandwidth, 900e9);
}

TEST(NewGpus, Gb300FiguresFromAiconfigurator) {
  const GpuSpec& g = bundled().gpu("gb300");
  EXPECT_EQ(g.memory_bytes, 298013687808LL);  // 284,208 MiB
  EXPECT_DOUBLE_EQ(g.bf16_flops, 2500e12);
  EXPECT_DOUBLE_EQ(g.fp8_flops, 5000e12);
  EXPECT_DOUBLE_EQ(g.fp4_flops, 15000e12);
  EXPECT_DOUBLE_EQ(g.hbm_bandwidth, 8e12);
}

TEST(NewGpus, H800IsH100WithLessNvlink) {
  const GpuSpec& h800 = bundled().gpu("h800");
  const GpuSpec& h100 = bundled().gpu("h100-sxm");
  EXPECT_EQ(h800.memory_bytes, h100.memory_bytes);
  EXPECT_DOUBLE_EQ(h800.bf16_flops, h100.bf16_flops);
  EXPECT_DOUBLE_EQ(h800.fp8_flops, h100.fp8_flops);
  EXPECT_DOUBLE_EQ(h800.hbm_bandwidth, h100.hbm_bandwidth);
  EXPECT_DOUBLE_EQ(h800.nvlink_bandwidth, 200e9);  // 400 GB/s bidirectional
}

int64_t json_int(const std::string& out, const std::string& key) {
  const auto at = out.find("\"" + key + "\": ");
  if (at == std::string::npos) return -1;
  return std::stoll(out.substr(at + key.size() + 4));
}

// Qwen3-8B BF16 (8,190,735,360 parameters = 16,381,470,720 bytes) under vLLM's rule: KV memory =
// ceil(memory x 0.92) - weights - 3.5 GiB reserve (3,758,096,384).
//   b300:  ceil(288,400,343,040 x 0.92) = 265,328,315,597 -> 245,188,748,493
//   gb300: ceil(298,013,687,808 x 0.92) = 274,172,592,784 -> 254,033,025,680
//   h800:  ceil(85,520,809,984 x 0.92)  =  78,679,145,186 ->  58,539,578,082
TEST(NewGpus, SizeAModelOnEach) {
  const struct {
    const char* gpu;
    int64_t kv;
  } cases[] = {{"b300", 245188748493LL}, {"gb300", 254033025680LL}, {"h800", 58539578082LL}};
  for (const auto& c : cases) {
    const auto r = testing::run_kvsim(std::string("size models/qwen3-8b.json --gpu ") + c.gpu + " --format json");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(json_int(r.out, "weight_bytes"), 16381470720LL) << c.gpu;
    EXPECT_NEAR(static_cast<double>(json_int(r.out, "kv_bytes")), static_cast<double>(c.kv), 2.0) << c.gpu << r.out;
  }
}

}  // namespace
}  // namespace kvsim
