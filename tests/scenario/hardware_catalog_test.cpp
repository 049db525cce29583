#include "sim/scenario/hardware_catalog.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/errors.h"

// Tests run with the repository root as the working directory (CMake WORKING_DIRECTORY).
namespace kvsim {
namespace {

namespace fs = std::filesystem;

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

const HardwareCatalog& bundled() {
  static const HardwareCatalog catalog = load_hardware_catalog(kDefaultHardwareDir);
  return catalog;
}

// Message of the InputError thrown by `fn`; fails the test when none is thrown.
template <typename Fn>
std::string input_error(Fn fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected InputError";
  return "";
}

// A temporary catalog directory holding copies of the bundled files plus edits.
class TempCatalog {
 public:
  TempCatalog() {
    dir_ =
        fs::temp_directory_path() / ("kvsim_hw_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                                     "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~TempCatalog() { fs::remove_all(dir_); }
  void copy_bundled(const std::string& name) { fs::copy_file(fs::path(kDefaultHardwareDir) / name, dir_ / name); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  // Copies a bundled file with the first occurrence of `from` replaced by `to`.
  void copy_edited(const std::string& name, const std::string& from, const std::string& to) {
    std::ifstream in(fs::path(kDefaultHardwareDir) / name);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto pos = text.find(from);
    ASSERT_NE(pos, std::string::npos) << from;
    text.replace(pos, from.size(), to);
    write(name, text);
  }
  std::string dir() const { return dir_.string(); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

 private:
  fs::path dir_;
};

TEST(HardwareCatalog, BundledCatalogHasTheExpectedEntries) {
  const auto& c = bundled();
  for (const char* gpu :
       {"a100-80gb", "b200", "b300", "gb200", "gb300", "h100-pcie", "h100-sxm", "h200", "h800", "l40s", "mi300x"}) {
    EXPECT_TRUE(c.gpus.count(gpu)) << gpu;
  }
  for (const char* link : {"nvlink3", "nvlink4", "nvlink5", "pcie4-x16", "pcie5-x16", "ib-ndr", "ib-hdr", "roce-200",
                           "roce-400", "roce-8x400-mooncake", "eth-100g"}) {
    EXPECT_TRUE(c.links.count(link)) << link;
  }
  for (const char* tier : {"host-dram", "nvme-gen4", "nvme-gen5", "remote-rdma"}) {
    EXPECT_TRUE(c.tiers.count(tier)) << tier;
  }
}

// Essay: "An H100 80GB reports about 79.6 GiB" = nvidia-smi 81,559 MiB = 79.65 GiB.
TEST(HardwareCatalog, H100MemoryIsWhatTheEngineSees) {
  const GpuSpec& h100 = bundled().gpu("h100-sxm");
  EXPECT_EQ(h100.memory_bytes, 81559LL * 1024 * 1024);
  EXPECT_NEAR(h100.memory_bytes / kGiB, 79.65, 0.005);
  EXPECT_LT(h100.memory_bytes, 80LL * 1024 * 1024 * 1024);  // not the marketing 80 GiB
}

// latency-model.md §3.1: H100 SXM BF16 989 TFLOP/s dense, FP8 1979, HBM 3.35 TB/s, NVLink4 450 GB/s.
TEST(HardwareCatalog, H100PeaksMatchLatencyModelTable) {
  const GpuSpec& h100 = bundled().gpu("h100-sxm");
  EXPECT_DOUBLE_EQ(h100.bf16_flops, 989e12);
  EXPECT_DOUBLE_EQ(h100.fp8_flops, 1979e12);
  EXPECT_DOUBLE_EQ(h100.fp4_flops, 0.0);  // "none"
  EXPECT_DOUBLE_EQ(h100.hbm_bandwidth, 3.35e12);
  EXPECT_DOUBLE_EQ(h100.nvlink_bandwidth, 450e9);
  EXPECT_DOUBLE_EQ(h100.pcie_bandwidth, 64e9);
  EXPECT_EQ(h100.kernel_floor.ns(), 3000);
  // activation_reserve 3.5GiB is stored as a fraction of memory and round-trips to bytes.
  EXPECT_NEAR(h100.activation_reserve_fraction * static_cast<double>(h100.memory_bytes), 3.5 * kGiB, 1.0);
}

TEST(HardwareCatalog, OtherGpuKeyFigures) {
  const auto& c = bundled();
  EXPECT_EQ(c.gpu("h200").memory_bytes, 143771LL * 1024 * 1024);
  EXPECT_DOUBLE_EQ(c.gpu("h200").hbm_bandwidth, 4.8e12);
  EXPECT_DOUBLE_EQ(c.gpu("a100-80gb").bf16_flops, 312e12);
  EXPECT_DOUBLE_EQ(c.gpu("a100-80gb").fp8_flops, 0.0);
  EXPECT_DOUBLE_EQ(c.gpu("b200").fp4_flops, 9000e12);
  EXPECT_EQ(c.gpu("gb200").memory_bytes, 189471LL * 1024 * 1024);
  EXPECT_DOUBLE_EQ(c.gpu("l40s").nvlink_bandwidth, 0.0);
  EXPECT_EQ(c.gpu("mi300x").memory_bytes, 205822885888LL);
}

TEST(HardwareCatalog, EveryGpuHasEveryNumberAndASourceForEach) {
  const char* fields[] = {"memory",         "bf16_flops",         "fp8_flops",
                          "fp4_flops",      "hbm_bandwidth",      "nvlink_bandwidth",
                          "pcie_bandwidth", "compute_efficiency", "memory_efficiency",
                          "kernel_floor",   "step_overhead",      "activation_reserve"};
  for (const auto& [name, g] : bundled().gpus) {
    SCOPED_TRACE(name);
    EXPECT_EQ(g.name, name);
    EXPECT_FALSE(g.display_name.empty());
    EXPECT_GT(g.memory_bytes, 40LL << 30);
    EXPECT_GT(g.bf16_flops, 100e12);
    EXPECT_GE(g.fp8_flops, 0.0);
    EXPECT_GE(g.fp4_flops, 0.0);
    EXPECT_GT(g.hbm_bandwidth, 500e9);
    EXPECT_GE(g.nvlink_bandwidth, 0.0);
    EXPECT_GT(g.pcie_bandwidth, 0.0);
    EXPECT_GT(g.compute_efficiency, 0.0);
    EXPECT_LE(g.compute_efficiency, 1.0);
    EXPECT_GT(g.memory_efficiency, 0.0);
    EXPECT_LE(g.memory_efficiency, 1.0);
    EXPECT_GT(g.kernel_floor.ns(), 0);
    EXPECT_GT(g.step_overhead.ns(), 0);
    EXPECT_GT(g.activation_reserve_fraction, 0.0);
    EXPECT_LT(g.activation_reserve_fraction, 0.1);
    // nvlink_domain is optional and sourced when given: the NVL72 racks (aiconfigurator's
    // num_gpus_per_rack 72), nothing else.
    const bool rack = name == "gb200" || name == "gb300";
    EXPECT_EQ(g.nvlink_domain, rack ? 72 : 0);
    EXPECT_EQ(g.sources.size(), std::size(fields) + (rack ? 1 : 0));
    if (rack) EXPECT_GT(g.sources.at("nvlink_domain").size(), 10u);
    for (const char* f : fields) {
      auto it = g.sources.find(f);
      ASSERT_NE(it, g.sources.end()) << f;
      EXPECT_GT(it->second.size(), 10u) << f;
    }
  }
}

TEST(HardwareCatalog, EveryLinkAndTierHasNumbersAndSources) {
  for (const auto& [name, l] : bundled().links) {
    SCOPED_TRACE(name);
    EXPECT_GT(l.line_rate, 0.0);
    EXPECT_GT(l.achieved_fraction, 0.0);
    EXPECT_LE(l.achieved_fraction, 1.0);
    EXPECT_GT(l.latency.ns(), 0);
    for (const char* f : {"line_rate", "achieved_fraction", "latency"}) EXPECT_TRUE(l.sources.count(f)) << f;
  }
  for (const auto& [name, t] : bundled().tiers) {
    SCOPED_TRACE(name);
    EXPECT_GT(t.read_bandwidth, 0.0);
    EXPECT_GT(t.write_bandwidth, 0.0);
    EXPECT_GT(t.capacity_bytes, 0);
    for (const char* f : {"read_bandwidth", "write_bandwidth", "latency", "capacity"}) {
      EXPECT_TRUE(t.sources.count(f)) << f;
    }
  }
}

// latency-model.md §4.2 defaults: NVLink4 5 us + 360 GB/s; IB NDR 17 us + 35 GB/s; PCIe Gen5 DMA 50 GB/s.
TEST(HardwareCatalog, LinkDefaultsMatchTransferModel) {
  const auto& c = bundled();
  EXPECT_DOUBLE_EQ(c.link("nvlink4").effective_bandwidth(), 360e9);
  EXPECT_EQ(c.link("nvlink4").latency.ns(), 5000);
  EXPECT_DOUBLE_EQ(c.link("ib-ndr").line_rate, 50e9);  // 400Gb/s
  EXPECT_NEAR(c.link("ib-ndr").effective_bandwidth(), 35e9, 1e6);
  EXPECT_EQ(c.link("ib-ndr").latency.ns(), 17000);
  EXPECT_NEAR(c.link("pcie5-x16").effective_bandwidth(), 50e9, 0.1e9);
  EXPECT_NEAR(c.link("roce-8x400-mooncake").effective_bandwidth(), 137e9, 1e6);
  EXPECT_DOUBLE_EQ(c.tier("remote-rdma").read_bandwidth, 86.8e9);
  EXPECT_DOUBLE_EQ(c.tier("host-dram").read_bandwidth, 50e9);
}

TEST(HardwareCatalog, UnknownNamesListTheKnownOnes) {
  std::string msg = input_error([] { bundled().gpu("h900"); });
  EXPECT_NE(msg.find("unknown GPU 'h900'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(known: a100-80gb, b200, b300, gb200, gb300, h100-pcie, h100-sxm, h200, h800, l40s, mi300x)"),
            std::string::npos)
      << msg;
  msg = input_error([] { bundled().link("nvlink9"); });
  EXPECT_NE(msg.find("unknown link 'nvlink9' (known: eth-100g, ib-hdr"), std::string::npos) << msg;
  msg = input_error([] { bundled().tier("tape"); });
  EXPECT_NE(msg.find("unknown tier 'tape' (known: host-dram"), std::string::npos) << msg;
  EXPECT_NE(input_error([] { HardwareCatalog{}.gpu("x"); }).find("(known: none)"), std::string::npos);
}

TEST(HardwareCatalog, MalformedValueNamesFileAndKey) {
  TempCatalog t;
  t.copy_edited("h100-sxm.yaml", "hbm_bandwidth: 3.35TB/s", "hbm_bandwidth: 3.35TB");
  std::string msg = input_error([&] { load_hardware_catalog(t.dir()); });
  EXPECT_NE(msg.find(t.file("h100-sxm.yaml") + ": hbm_bandwidth: cannot parse '3.35TB'"), std::string::npos) << msg;
}

TEST(HardwareCatalog, NestedErrorsGiveTheKeyPath) {
  TempCatalog t;
  t.copy_edited("links.yaml", "    latency: 5us\n", "    latency: 5 parsecs\n");
  std::string msg = input_error([&] { load_hardware_catalog(t.dir()); });
  EXPECT_NE(msg.find(t.file("links.yaml") + ": links.nvlink4.latency: cannot parse '5 parsecs'"), std::string::npos)
      << msg;
}

TEST(HardwareCatalog, UnknownKeyIsRejected) {
  TempCatalog t;
  t.copy_edited("tiers.yaml", "    capacity: 1TiB\n", "    capacity: 1TiB\n    capcity: 2TiB\n");
  std::string msg = input_error([&] { load_hardware_catalog(t.dir()); });
  EXPECT_NE(msg.find("tiers.host-dram.capcity: unknown key"), std::string::npos) << msg;
}

TEST(HardwareCatalog, MissingKeyAndMissingSourceAreNamed) {
  {
    TempCatalog t;
    t.copy_edited("l40s.yaml", "pcie_bandwidth: 32GB/s\n", "");
    std::string msg = input_error([&] { load_hardware_catalog(t.dir()); });
    EXPECT_NE(msg.find(t.file("l40s.yaml") + ": missing key 'pcie_bandwidth'"), std::string::npos) << msg;
  }
  {
    TempCatalog t;
    t.copy_edited("l40s.yaml", "  kernel_floor: \"aiconfigurator", "  kernel_flor: \"aiconfigurator");
    std::string msg = input_error([&] { load_hardware_catalog(t.dir()); });
    EXPECT_NE(msg.find("l40s.yaml: sources: missing key 'kernel_floor'"), std::string::npos) << msg;
  }
}

TEST(HardwareCatalog, AnNvlinkDomainIsAWholeGpuCountWithASource) {
  const std::string source = "  pcie_bandwidth: \"aiconfigurator h200";
  for (const auto& [value, expected] : std::vector<std::pair<std::string, std::string>>{
           {"72.5", "nvlink_domain: must be a whole number of GPUs from 2 to 1048576 (got '72.5')"},
           {"1", "nvlink_domain: must be a whole number of GPUs from 2 to 1048576 (got '1')"},
           {"rack", "nvlink_domain: must be a whole number of GPUs from 2 to 1048576 (got 'rack')"}}) {
    TempCatalog t;
    t.copy_edited("h200.yaml", "pcie_bandwidth: 64GB/s\n", "pcie_bandwidth: 64GB/s\nnvlink_domain: " + value + "\n");
    const std::string msg = input_error([&] { load_hardware_catalog(t.dir()); });
    EXPECT_NE(msg.find("h200.yaml: " + expected), std::string::npos) << msg;
  }
  {
    TempCatalog t;  // a domain needs its source like every other number
    t.copy_edited("h200.yaml", "pcie_bandwidth: 64GB/s\n", "pcie_bandwidth: 64GB/s\nnvlink_domain: 16\n");
    const std::string msg = input_error([&] { load_hardware_catalog(t.dir()); });
    EXPECT_NE(msg.find("h200.yaml: sources: missing key 'nvlink_domain'"), std::string::npos) << msg;
  }
  {
    TempCatalog t;  // and an NVLink to span
    t.copy_edited("l40s.yaml", "pcie_bandwidth: 32GB/s\n", "pcie_bandwidth: 32GB/s\nnvlink_domain: 8\n");
    const std::string msg = input_error([&] { load_hardware_catalog(t.dir()); });
    EXPECT_NE(msg.find("l40s.yaml: nvlink_domain: needs nvlink_bandwidth"), std::string::npos) << msg;
  }
}

TEST(HardwareCatalog, DuplicateKeyIsRejected) {
  TempCatalog t;
  t.copy_edited("h200.yaml", "memory: 143771MiB\n", "memory: 143771MiB\nmemory: 141GiB\n");
  std::string msg = input_error([&] { load_hardware_catalog(t.dir()); });
  EXPECT_NE(msg.find("h200.yaml: memory: duplicate key"), std::string::npos) << msg;
}

TEST(HardwareCatalog, FractionsMustBeInUnitInterval) {
  TempCatalog t;
  t.copy_edited("b200.yaml", "compute_efficiency: 0.65", "compute_efficiency: 1.5");
  std::string msg = input_error([&] { load_hardware_catalog(t.dir()); });
  EXPECT_NE(msg.find("b200.yaml: compute_efficiency: must be in [0.01, 1] (got 1.5)"), std::string::npos) << msg;
  // 1e-12 passed and a run then exited 1 with "duration too large", naming no file.
  TempCatalog tiny;
  tiny.copy_edited("b200.yaml", "compute_efficiency: 0.65", "compute_efficiency: 1e-12");
  msg = input_error([&] { load_hardware_catalog(tiny.dir()); });
  EXPECT_NE(msg.find("b200.yaml: compute_efficiency: must be in [0.01, 1] (got 1e-12)"), std::string::npos) << msg;
}

TEST(HardwareCatalog, InvalidYamlAndBadKindNameTheFile) {
  {
    TempCatalog t;
    t.write("broken.yaml", "kind: gpu\nname: [unclosed\n");
    std::string msg = input_error([&] { load_hardware_catalog(t.dir()); });
    EXPECT_NE(msg.find(t.file("broken.yaml") + ":3: invalid YAML"), std::string::npos) << msg;
  }
  {
    // yaml-cpp's Load kept the first document and dropped the second without a word.
    TempCatalog t;
    t.copy_edited("h200.yaml", "memory: 143771MiB\n", "memory: 143771MiB\n---\nmemory: 1TiB\n");
    std::string msg = input_error([&] { load_hardware_catalog(t.dir()); });
    EXPECT_NE(msg.find("h200.yaml:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("a second document"), std::string::npos) << msg;
  }
  {
    TempCatalog t;
    t.write("odd.yaml", "kind: cpu\n");
    std::string msg = input_error([&] { load_hardware_catalog(t.dir()); });
    EXPECT_NE(msg.find("odd.yaml: kind: unknown kind 'cpu' (known: gpu, links, tiers)"), std::string::npos) << msg;
  }
}

TEST(HardwareCatalog, GpuNameMustMatchFileAndNamesAreUnique) {
  {
    TempCatalog t;
    t.copy_edited("h200.yaml", "name: h200", "name: h200-sxm");
    std::string msg = input_error([&] { load_hardware_catalog(t.dir()); });
    EXPECT_NE(msg.find("h200.yaml: name: must match the file name 'h200'"), std::string::npos) << msg;
  }
  {
    TempCatalog t;
    t.copy_bundled("links.yaml");
    fs::copy_file(fs::path(kDefaultHardwareDir) / "links.yaml", fs::path(t.dir()) / "links2.yaml");
    std::string msg = input_error([&] { load_hardware_catalog(t.dir()); });
    EXPECT_NE(msg.find("links2.yaml: links.eth-100g: link 'eth-100g' is already defined in " + t.file("links.yaml")),
              std::string::npos)
        << msg;
  }
}

TEST(HardwareCatalog, MissingOrEmptyDirectoryIsAnInputError) {
  EXPECT_THROW(load_hardware_catalog("no/such/dir"), InputError);
  TempCatalog t;
  t.write("README.txt", "not yaml");
  std::string msg = input_error([&] { load_hardware_catalog(t.dir()); });
  EXPECT_NE(msg.find("no *.yaml files"), std::string::npos) << msg;
}

}  // namespace
}  // namespace kvsim
