// Disaggregated prefill and decode end to end (issue 11): the NIXL flow's invariants, bytes against
// the hand count, the TTFT parts, determinism, deciders, and the bad input a user can write.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "sim/app/simulation.h"
#include "sim/core/errors.h"
#include "sim/metrics/hdf5_writer.h"
#include "sim/metrics/summary.h"
#include "sim/scenario/scenario.h"
#include "tests/app/cli_runner.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

// Qwen3-8B, 12 requests of 300 unique prompt tokens (19 blocks of 16 = 304 tokens' pages).
const std::string kBase = R"(
model: models/qwen3-8b.json
gpu: h100-sxm
seed: 5
engine: {block_size: 16, max_num_seqs: 64}
workload:
  synthetic: {kind: poisson, rate: 20, num_requests: 12, input_tokens: 300, output_tokens: 20}
)";

std::string cluster(const std::string& extra = "", const std::string& topology = "hgx-h100-1node") {
  return kBase + "cluster:\n  topology: " + topology +
         "\n  pools:\n    - {name: p, role: prefill, instances: 1}\n    - {name: d, role: decode, instances: 1}\n" +
         extra;
}

std::string error_of(const std::string& text) {
  try {
    run_simulation(parse_scenario(text, "d.yaml"));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// 36 layers x 8 KV heads x 128 x (K, V) x 2 B.
constexpr int64_t kQwen3PerToken = 36 * 8 * 128 * 2 * 2;

TEST(Disagg, EveryRequestIsPrefilledRemotelyAndItsBytesMatchTheHandCount) {
  const SimulationResult r = run_simulation(parse_scenario(cluster("  disaggregation: {decider: always}\n"), "d.yaml"));
  const RunSummary& s = r.summary;
  EXPECT_EQ(s.requests.finished, 12);
  ASSERT_TRUE(s.disaggregation.present);
  EXPECT_EQ(s.disaggregation.requests, 12);
  EXPECT_EQ(s.disaggregation.flows, 12);  // TP1 -> TP1: one flow per request
  // Unique prompts: nothing local on the decode side; 19 blocks of 16 tokens each.
  EXPECT_DOUBLE_EQ(s.disaggregation.bytes, 12.0 * kQwen3PerToken * 19 * 16);
  int64_t record_bytes = 0, flow_bytes = 0;
  for (const RequestRow& row : r.collector->requests()) {
    EXPECT_EQ(row.prefill_instance, 0);
    EXPECT_EQ(row.instance, 1);
    EXPECT_EQ(row.output_tokens, 20);
    record_bytes += row.transfer_bytes;
    // Prefill ends, then the pull, then the decode side computes the last prompt token.
    EXPECT_LE(row.prefill_done, row.transfer_start);
    EXPECT_LT(row.transfer_start, row.transfer_end);
    EXPECT_LE(row.transfer_end, row.decode_scheduled);
    EXPECT_LT(row.decode_scheduled, row.first_token);
  }
  for (const TransferRecord& t : r.collector->transfers()) flow_bytes += t.bytes;
  EXPECT_EQ(record_bytes, flow_bytes);  // bytes sent = bytes received
  EXPECT_EQ(flow_bytes, 12 * kQwen3PerToken * 19 * 16);
  // The parts of TTFT add up to TTFT (means over the same requests).
  const auto& d = s.disaggregation;
  const double parts = d.router_ms.mean + d.prefill_queue_ms.mean + d.prefill_ms.mean + d.decode_queue_ms.mean +
                       d.pull_ms.mean + d.first_decode_step_ms.mean;
  EXPECT_NEAR(parts, s.ttft_ms.mean, 1e-6 * s.ttft_ms.mean);
  // NVLink 4 inside the node: 2 hops (GPU -> NVSwitch -> GPU), 5 us + S / (0.8 x 450 GB/s)
  // (latency-model.md 4.1: 5 us + S / 360 GB/s); S = 304 x 147,456 B = 44,826,624 B: 129.52 us.
  for (const TransferRecord& t : r.collector->transfers()) EXPECT_EQ(t.hops, 2);
  // The path: the prefill GPU (packed first: node0/gpu0) to the NVSwitch, then to the decode GPU.
  std::map<int, std::string> names;
  for (const LinkTotal& l : d.links) names[l.id] = l.name;
  for (const TransferRecord& t : r.collector->transfers()) {
    ASSERT_EQ(t.links.size(), 2u);
    EXPECT_EQ(names[t.links[0]], "node0/gpu0->node0/nvswitch");
    EXPECT_EQ(names[t.links[1]], "node0/nvswitch->node0/gpu1");
  }
  // The run file holds the same flows and paths.
  const fs::path file = fs::temp_directory_path() / ("kvsim_disagg_" + std::to_string(getpid()) + ".h5");
  write_run_file(file.string(), *r.collector, s, run_meta(r));
  {
    const RunFileReader rd(file.string());
    EXPECT_EQ(rd.read_ints("/transfers/bytes"), std::vector<int64_t>(12, kQwen3PerToken * 19 * 16));
    const std::vector<int64_t> path = rd.read_ints("/transfers/path_links");
    ASSERT_EQ(path.size(), 24u);
    EXPECT_EQ(names[static_cast<int>(path[22])], "node0/gpu0->node0/nvswitch");
    EXPECT_EQ(rd.read_ints("/requests/transfer_bytes"), std::vector<int64_t>(12, kQwen3PerToken * 19 * 16));
  }
  fs::remove(file);
  EXPECT_NEAR(d.pull_ms.p50, (5e-6 + 44'826'624 / 360e9) * 1e3, 1e-5);
  // The busiest link carried every byte once.
  ASSERT_FALSE(d.links.empty());
  EXPECT_DOUBLE_EQ(d.links.front().bytes, 12.0 * kQwen3PerToken * 19 * 16);
}

TEST(Disagg, SameSeedSameBytes) {
  const std::string text = cluster("  disaggregation: {decider: always}\n", "hgx-h100-2node-ib-ndr");
  const SimulationResult a = run_simulation(parse_scenario(text, "d.yaml"));
  const SimulationResult b = run_simulation(parse_scenario(text, "d.yaml"));
  EXPECT_EQ(a.fingerprint, b.fingerprint);
  SummaryJsonOptions o;
  o.include_wall_time = false;
  EXPECT_EQ(summary_to_json(a.summary, o), summary_to_json(b.summary, o));
}

TEST(Disagg, DecidersNeverAndLlmDThreshold) {
  const SimulationResult never =
      run_simulation(parse_scenario(cluster("  disaggregation: {decider: never}\n"), "d.yaml"));
  EXPECT_EQ(never.summary.disaggregation.requests, 0);
  EXPECT_EQ(never.summary.disaggregation.flows, 0);
  EXPECT_EQ(never.summary.requests.finished, 12);
  // llm-d: disaggregate iff uncached tokens >= threshold; 300 uncached tokens, threshold 301: never.
  const SimulationResult high =
      run_simulation(parse_scenario(cluster("  disaggregation: {decider: llm_d, threshold: 301}\n"), "d.yaml"));
  EXPECT_EQ(high.summary.disaggregation.requests, 0);
  const SimulationResult low =
      run_simulation(parse_scenario(cluster("  disaggregation: {decider: llm_d, threshold: 300}\n"), "d.yaml"));
  EXPECT_EQ(low.summary.disaggregation.requests, 12);
}

TEST(Disagg, CrossNodePullGoesOverTheNicRail) {
  // hgx-h100-2node-ib-ndr packs the prefill instance on node0/gpu0 and the decode instance on
  // node0/gpu1 (same node, NVLink) unless placed: put the decode instance on the other node.
  const std::string text = kBase +
                           "cluster:\n  topology: hgx-h100-2node-ib-ndr\n  pools:\n"
                           "    - {name: p, role: prefill, instances: 1, placement: [node0/gpu0]}\n"
                           "    - {name: d, role: decode, instances: 1, placement: [node1/gpu0]}\n"
                           "  disaggregation: {decider: always}\n";
  const SimulationResult r = run_simulation(parse_scenario(text, "d.yaml"));
  ASSERT_EQ(r.collector->transfers().size(), 12u);
  // GPU -> PCIe switch -> NIC -> leaf 0 -> NIC -> PCIe switch -> GPU: the same rail, no spine.
  for (const TransferRecord& t : r.collector->transfers()) EXPECT_GT(t.hops, 2);
  // IB NDR at 35 GB/s (0.7 x 50 GB/s): 44.8 MB take at least 1.28 ms.
  const double bytes = static_cast<double>(kQwen3PerToken) * 304;
  EXPECT_GT(r.summary.disaggregation.pull_ms.p50, bytes / 35e9 * 1e3);
  // The NIC is each pull's bottleneck (PCIe carries 49.9 GB/s), so while a pull runs the rail's link is
  // full: its peak is 1, exactly, though pulls of ~1.3 ms fall between the 100 ms samples (they read 0).
  bool found = false;
  for (const LinkTotal& l : r.summary.disaggregation.links) {
    EXPECT_GE(l.peak_utilisation, l.mean_utilisation) << l.name;
    if (l.name != "node0/nic0->leaf0") continue;
    found = true;
    EXPECT_NEAR(l.peak_utilisation, 1.0, 1e-9);
  }
  EXPECT_TRUE(found);
}

// One prefill and one decode instance, packed on `topology`, every request prefilled remotely.
std::string one_prefill_one_decode(const std::string& topology) {
  return "cluster:\n  topology: " + topology +
         "\n  pools:\n    - {name: p, role: prefill, instances: 1}\n    - {name: d, role: decode, instances: 1}\n"
         "  disaggregation: {decider: always}\n";
}

TEST(Disagg, MlaTp8PullsTheLatentOncePerDecodeRank) {
  // DeepSeek-V3 on 8 x H200 each side (two nodes): 61 x 576 x 2 B = 70,272 B per token per rank.
  const std::string text = R"(
model: models/deepseek-v3.json
gpu: h200
seed: 1
engine: {block_size: 64, tensor_parallel_size: 8, max_num_seqs: 16}
workload:
  synthetic: {kind: poisson, rate: 2, num_requests: 3, input_tokens: 1000, output_tokens: 4}
)" + one_prefill_one_decode("hgx-h100-2node-ib-ndr");
  const SimulationResult r = run_simulation(parse_scenario(text, "d.yaml"));
  EXPECT_EQ(r.summary.disaggregation.flows, 3 * 8);
  // 1000 tokens in 16 blocks of 64 = 1,024 tokens' pages, read whole by each of 8 decode ranks.
  EXPECT_DOUBLE_EQ(r.summary.disaggregation.bytes, 3.0 * 8 * 70'272 * 1024);
}

TEST(Disagg, Nvl72PlacesTp8AcrossTraysOnTheRackNvlink) {
  // GB200's catalog entry has 4 GPUs a node (tray) and a 72-GPU NVLink domain: TP 8 stays on NVLink, so the
  // packer takes trays 0-1 for the prefill instance and 2-3 for the decode one, and every per-rank pull goes
  // GPU -> NVL72 switch -> GPU (2 hops), never through a NIC.
  const std::string text = R"(
model: models/qwen3-8b.json
gpu: gb200
seed: 1
engine: {block_size: 16, tensor_parallel_size: 8}
workload:
  synthetic: {kind: poisson, rate: 2, num_requests: 3, input_tokens: 500, output_tokens: 4}
)" + one_prefill_one_decode("gb200-nvl72");
  const SimulationResult r = run_simulation(parse_scenario(text, "d.yaml"));
  ASSERT_EQ(r.collector->transfers().size(), 3u * 8);
  std::set<int> src, dst;
  for (const TransferRecord& t : r.collector->transfers()) {
    EXPECT_EQ(t.hops, 2);
    src.insert(t.src_gpu);
    dst.insert(t.dst_gpu);
  }
  // Topology GPUs are numbered tray by tray, 4 a tray.
  EXPECT_EQ(src, (std::set<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(dst, (std::set<int>{8, 9, 10, 11, 12, 13, 14, 15}));
  // An HGX node is its own domain: two GPUs of two nodes cannot hold one TP 2 instance.
  const std::string e = error_of(kBase +
                                 "cluster:\n  topology: hgx-h100-2node-ib-ndr\n  pools:\n"
                                 "    - {name: p, role: prefill, instances: 1, placement: [node0/gpu0, node1/gpu0], "
                                 "engine: {tensor_parallel_size: 2}}\n"
                                 "    - {name: d, role: decode, instances: 1, engine: {tensor_parallel_size: 2}}\n");
  EXPECT_NE(e.find("d.yaml: cluster.pools[0].placement: instance 0 spans node0/gpu0 and node1/gpu0, which no NVLink "
                   "joins"),
            std::string::npos)
      << e;
}

TEST(Disagg, PackingFillsAnInstanceFromFreeGpusThatAreNotAdjacent) {
  // The prefill instance is placed on node0's even GPUs; the decode instance (TP 4) finds no run of 4
  // adjacent free GPUs (1, 3, 5, 7 are left) but one NVLink domain with 4 free: it takes them. This used
  // to be refused as "no room".
  const std::string text = R"(
model: models/qwen3-8b.json
gpu: h100-sxm
seed: 1
engine: {block_size: 16, tensor_parallel_size: 4}
workload:
  synthetic: {kind: poisson, rate: 2, num_requests: 3, input_tokens: 500, output_tokens: 4}
cluster:
  topology: hgx-h100-1node
  pools:
    - {name: p, role: prefill, instances: 1, placement: [node0/gpu0, node0/gpu2, node0/gpu4, node0/gpu6]}
    - {name: d, role: decode, instances: 1}
  disaggregation: {decider: always}
)";
  const SimulationResult r = run_simulation(parse_scenario(text, "d.yaml"));
  EXPECT_EQ(r.summary.requests.finished, 3);
  std::set<int> src, dst;
  for (const TransferRecord& t : r.collector->transfers()) {
    src.insert(t.src_gpu);
    dst.insert(t.dst_gpu);
  }
  EXPECT_EQ(src, (std::set<int>{0, 2, 4, 6}));
  EXPECT_EQ(dst, (std::set<int>{1, 3, 5, 7}));
}

TEST(Disagg, PrefixCacheQueriesSumThePrefillAndTheDecodeLookups) {
  // Two identical 320-token prompts a second apart. Each instance looks a request up once at admission
  // (queries: its 320 tokens); the second finds 304 tokens (19 blocks of 16: the lookup stops at 319).
  // vLLM's metrics summed over instances count both sides: with caching off on the prefill pool, only
  // the decode side's 640 / 304; with it on, twice that. The token hit rate stays the prefill side's.
  const std::string base = R"(
model: models/qwen3-8b.json
gpu: h100-sxm
seed: 1
engine: {block_size: 16}
workload:
  synthetic: {kind: shared_prefix, rate: 1, groups: 1, requests_per_group: 2, prefix_tokens: 320, output_tokens: 4}
)" + one_prefill_one_decode("hgx-h100-1node");
  for (bool prefill_caching : {false, true}) {
    Scenario sc = parse_scenario(base, "d.yaml");
    sc.cluster.pools[0].engine.enable_prefix_caching = prefill_caching;
    const SimulationResult r = run_simulation(sc);
    ASSERT_EQ(r.summary.requests.finished, 2);
    const int64_t sides = prefill_caching ? 2 : 1;
    EXPECT_EQ(r.summary.prefix_cache.queries, sides * 640) << prefill_caching;
    EXPECT_EQ(r.summary.prefix_cache.hits, sides * 304) << prefill_caching;
    EXPECT_EQ(r.summary.prefix_cache.hit_tokens, prefill_caching ? 304 : 0);
  }
}

TEST(Disagg, AHybridsPrefillInstanceComputesTheFirstNMinus1Tokens) {
  // Nemotron-H-8B, block 1040 (its hybrid page rule). vLLM's prefill instance truncates a hybrid's last
  // prompt token (_truncate_mamba_request_for_prefill): a 2,080-token prompt runs there as 2,079 tokens,
  // cut at floor(2079 / 1040) x 1040 = 1040 (a state, kept as the replay boundary) then 1,039. The same
  // prompt again finds that state: 1,040 tokens cached on the prefill side. Computing all 2,080 there ran
  // one 2,080-token step whose only state (at 2,080) is no replay boundary, and the repeat found nothing.
  const std::string text = R"(
model: models/nemotron-h-8b.json
gpu: h100-sxm
seed: 1
engine: {max_num_batched_tokens: 8192}
workload:
  synthetic: {kind: shared_prefix, rate: 1, groups: 1, requests_per_group: 2, prefix_tokens: 2080, output_tokens: 2}
)" + one_prefill_one_decode("hgx-h100-1node");
  const SimulationResult r = run_simulation(parse_scenario(text, "d.yaml"));
  ASSERT_EQ(r.summary.requests.finished, 2);
  EXPECT_EQ(r.engine.layout.block_size, 1040);
  std::vector<int64_t> cached;
  for (const RequestRow& row : r.collector->requests()) cached.push_back(row.cached_tokens);
  EXPECT_EQ(cached, (std::vector<int64_t>{0, 1040}));
  std::vector<int64_t> prefill_chunks;
  for (const StepRecord& s : r.collector->steps())
    if (s.instance == 0 && s.num_prefill_tokens > 0) prefill_chunks.push_back(s.num_prefill_tokens);
  // Request 1: 1040 + 1039; request 2 after its 1,040-token hit: the other 1,039.
  EXPECT_EQ(prefill_chunks, (std::vector<int64_t>{1040, 1039, 1039}));
}

// Qwen3-8B P/D on one HGX node under `router`, every request prefilled remotely: `requests` prompts of
// one 320-token prefix plus 32 tokens of their own, Poisson at `rate` per second.
std::string shared_prefix_pd(const std::string& router, int prefill, int decode, int requests, const std::string& rate,
                             const std::string& decider = "always") {
  return "model: models/qwen3-8b.json\ngpu: h100-sxm\nseed: 1\nengine: {block_size: 16}\nworkload:\n"
         "  synthetic: {kind: shared_prefix, rate: " +
         rate + ", groups: 1, requests_per_group: " + std::to_string(requests) +
         ", prefix_tokens: 320, suffix_tokens: 32, output_tokens: 4}\ncluster:\n  topology: hgx-h100-1node\n"
         "  router: {policy: " +
         router + "}\n  pools:\n    - {name: p, role: prefill, instances: " + std::to_string(prefill) +
         "}\n    - {name: d, role: decode, instances: " + std::to_string(decode) +
         "}\n  disaggregation: {decider: " + decider + "}\n";
}

TEST(Disagg, SglangRoutesThePrefillStageByCacheAndTheDecodeStageByLoad) {
  // SGLang's PD router with one policy: the prefill stage cache-aware, the decode stage least-load
  // (cluster-offload.md B.3). Four prompts of one 320-token prefix plus 32 of their own, seconds apart,
  // over 2 prefill + 2 decode instances: each later prompt matches 320 / 352 = 0.91 > 0.3 of the first
  // one's prefill instance and goes there, its 320 tokens cached; every decode instance is idle at each
  // arrival, so the decode stage takes the lowest id. (The decode stage's insertions used to fill the
  // tree, the prefill stage then matched a decode instance, and fell back to alternating.)
  const std::string text = shared_prefix_pd("sglang", 2, 2, 4, "0.1");
  const SimulationResult r = run_simulation(parse_scenario(text, "d.yaml"));
  ASSERT_EQ(r.summary.requests.finished, 4);
  std::set<int> prefill, decode;
  std::vector<int64_t> cached;
  for (const RequestRow& row : r.collector->requests()) {
    prefill.insert(row.prefill_instance);
    decode.insert(row.instance);
    cached.push_back(row.cached_tokens);
  }
  EXPECT_EQ(prefill.size(), 1u);
  EXPECT_EQ(decode, (std::set<int>{2}));
  EXPECT_EQ(cached, (std::vector<int64_t>{0, 320, 320, 320}));
}

TEST(Disagg, WithDeciderNeverTheRoutersRouteAsInAColocatedCluster) {
  // decider never: each request runs whole on the decode instance it is routed to, so the routers stay
  // cache-aware there. Four prompts of one 320-token prefix: sglang keeps them on one instance (320 / 352
  // = 0.91 > 0.3 of the first one's), each later one with its 320 tokens cached; so does dynamo (its
  // overlap makes the first one's instance the cheaper by 20 blocks).
  for (const char* router : {"sglang", "dynamo"}) {
    const SimulationResult r =
        run_simulation(parse_scenario(shared_prefix_pd(router, 1, 2, 4, "0.1", "never"), "d.yaml"));
    ASSERT_EQ(r.summary.requests.finished, 4) << router;
    std::set<int> decode;
    std::vector<int64_t> cached;
    for (const RequestRow& row : r.collector->requests()) {
      decode.insert(row.instance);
      cached.push_back(row.cached_tokens);
    }
    EXPECT_EQ(decode.size(), 1u) << router;
    EXPECT_EQ(cached, (std::vector<int64_t>{0, 320, 320, 320})) << router;
  }
}

TEST(Disagg, DynamoRoutesTheDecodeStageByLoadAlone) {
  // Dynamo's disaggregated serving: the decode stage scores without overlap (weight 0) or prefill-token
  // tracking, cost = the worker's active blocks plus the request's 22 (352 / 16). Requests a second apart
  // find both decode workers idle: equal costs, and the tie goes to the smaller tree, so the second
  // request takes the worker the first one did not (with overlap scoring it followed the first: cost
  // 2 + 22 against 22 + 22).
  const std::string text = shared_prefix_pd("dynamo", 1, 2, 2, "1");
  for (uint64_t seed : {1, 2, 3}) {
    Scenario sc = parse_scenario(text, "d.yaml");
    sc.seed = seed;
    const SimulationResult r = run_simulation(sc);
    ASSERT_EQ(r.summary.requests.finished, 2);
    std::vector<int> decode;
    for (const RequestRow& row : r.collector->requests()) decode.push_back(row.instance);
    ASSERT_EQ(decode.size(), 2u);
    EXPECT_NE(decode[0], decode[1]) << seed;
  }
}

TEST(Disagg, ACrossRailPullOnASmallFabricGetsAWholePort) {
  // Two HGX nodes, rail-optimised, non-blocking: each leaf has 2 fabric ports up, each whole to a spine.
  // Prefill on node0/gpu1 (rail 1), decode on node1/gpu0 (rail 0): leaf1 -> spine -> leaf0, 8 hops, at a
  // whole IB NDR port as on one rail: 17 us + 1,024 x 147,456 B / (0.7 x 50 GB/s) = 4.3313 ms. (A port
  // split over the 8 spines gave each spine link 2 / 8 of one: 17.27 ms.)
  const std::string text = R"(
model: models/qwen3-8b.json
gpu: h100-sxm
seed: 1
engine: {block_size: 16}
workload:
  synthetic: {kind: poisson, rate: 1, num_requests: 1, input_tokens: 1024, output_tokens: 4}
cluster:
  topology: hgx-h100-2node-ib-ndr
  pools:
    - {name: p, role: prefill, instances: 1, placement: [node0/gpu1]}
    - {name: d, role: decode, instances: 1, placement: [node1/gpu0]}
  disaggregation: {decider: always}
)";
  const SimulationResult r = run_simulation(parse_scenario(text, "d.yaml"));
  ASSERT_EQ(r.collector->transfers().size(), 1u);
  const TransferRecord& t = r.collector->transfers()[0];
  EXPECT_EQ(t.hops, 8);
  EXPECT_EQ(t.bytes, 1024 * 147'456);
  EXPECT_NEAR((t.end - t.start).seconds(), 17e-6 + 1024 * 147'456 / (0.7 * 50e9), 1e-9);
}

// A prefill instance of 129 usable blocks holds a finished 1,500-token prompt (94 blocks) until the decode
// side pulls it; the next prompt (ceil(1,600 / 16) = 100 blocks with its output) runs alone, cannot grow, and
// preempts itself. It used to be rejected as "can never finish" although the held blocks come back when the
// pull ends; now it waits for them (its preemptions do not count toward the livelock guard).
TEST(Disagg, APromptWaitingForBlocksHeldForAPullIsNotHopeless) {
  const std::string text = R"(
model: models/qwen3-8b.json
gpu: h100-sxm
seed: 1
engine: {max_model_len: 2048, block_size: 16, num_gpu_blocks: 130, max_num_batched_tokens: 256,
         enable_prefix_caching: false, scheduler_reserve_full_isl: false}
workload:
  synthetic: {kind: poisson, rate: 100, num_requests: 3, input_tokens: 1500, output_tokens: 100}
)" + one_prefill_one_decode("hgx-h100-1node");
  const SimulationResult r = run_simulation(parse_scenario(text, "d.yaml"));
  EXPECT_EQ(r.summary.requests.finished, 3);
  EXPECT_GT(r.summary.preemptions, 0);
}

// 12 requests with prompts of 200 to 2,000 tokens against a max_model_len of 1,024: the longer ones are
// rejected on the prefill instance. The prefill pool counts every request once (12), as its one instance does; those
// rejected were counted twice (as the pool's records and as its instance's).
TEST(Disagg, PrefillPoolCountsRequestsRejectedOnItOnce) {
  const std::string text = R"(
model: models/qwen3-8b.json
gpu: h100-sxm
seed: 1
engine: {block_size: 16, max_model_len: 1024}
workload:
  synthetic: {kind: poisson, rate: 10, num_requests: 12, input_tokens: {kind: uniform, min: 200, max: 2000},
              output_tokens: 4}
)" + one_prefill_one_decode("hgx-h100-1node");
  const SimulationResult r = run_simulation(parse_scenario(text, "d.yaml"));
  ASSERT_GT(r.summary.requests.unfinished, 0);
  ASSERT_EQ(r.summary.pools.size(), 2u);
  const PoolSummary& prefill = r.summary.pools[0];
  EXPECT_EQ(prefill.requests, 12);
  ASSERT_EQ(prefill.per_instance.size(), 1u);
  EXPECT_EQ(prefill.per_instance[0].requests, 12);
}

TEST(Disagg, BadInputNamesTheFileAndKey) {
  const std::string two = "  disaggregation: {decider: always}\n";
  struct Case {
    std::string text;
    std::string needle;
  } cases[] = {
      {kBase + "cluster:\n  pools:\n    - {name: p, role: prefill, instances: 1}\n    - {name: d, role: decode, "
               "instances: 1}\n",
       "d.yaml: cluster.topology: missing"},
      {kBase + "cluster:\n  topology: hgx-h100-1node\n  pools: [{name: d, role: decode, instances: 1}]\n",
       "d.yaml: cluster.pools: decode pools need a prefill pool"},
      {cluster(two, "no-such-topology"), "d.yaml: cluster.topology: no topology 'no-such-topology'"},
      {kBase + "cluster:\n  topology: hgx-h100-1node\n  pools:\n"
               "    - {name: p, role: prefill, instances: 1, placement: [node5/gpu0]}\n"
               "    - {name: d, role: decode, instances: 1}\n",
       "d.yaml: cluster.pools[0].placement[0]: topology 'hgx-h100-1node' has no GPU 'node5/gpu0'"},
      {kBase + "cluster:\n  topology: hgx-h100-1node\n  pools:\n"
               "    - {name: p, role: prefill, instances: 1, placement: [node0/gpu0, node0/gpu1]}\n"
               "    - {name: d, role: decode, instances: 1}\n",
       "d.yaml: cluster.pools[0].placement: lists 2 GPUs; 1 instances x TP 1 need 1"},
      {kBase + "cluster:\n  topology: hgx-h100-1node\n  pools:\n"
               "    - {name: p, role: prefill, instances: 8}\n    - {name: d, role: decode, instances: 1}\n",
       "d.yaml: cluster.pools[1]: topology 'hgx-h100-1node' has no room for instance 0"},
      {cluster("  disaggregation: {decider: sometimes}\n"), "d.yaml: cluster.disaggregation.decider: unknown decider"},
      {kBase + "cluster:\n  topology: hgx-h100-1node\n  pools:\n    - {name: p, role: prefill, instances: 1}\n"
               "    - {name: d, role: decode, instances: 1, engine: {kv_cache_dtype: fp8}}\n",
       "d.yaml: cluster.pools: p -> d: the prefill and decode pools use different KV cache dtypes"},
      {kBase + "cluster:\n  topology: hgx-h100-1node\n  pools:\n"
               "    - {name: p, role: prefill, instances: 1, engine: {block_size: 32}}\n"
               "    - {name: d, role: decode, instances: 1}\n",
       "d.yaml: cluster.pools: p -> d: the prefill block size 32 is larger than the decode block size 16"},
      {kBase + "cluster:\n  pools: [{name: a, instances: 1}]\n  disaggregation: {decider: always}\n",
       "d.yaml: cluster.disaggregation: only for a cluster with prefill and decode pools"},
      {kBase + "cluster:\n  topology: hgx-h100-1node\n  pools:\n    - {name: p, role: prefill, instances: 1}\n"
               "    - {name: c, role: colocated, instances: 1}\n    - {name: d, role: decode, instances: 1}\n",
       "d.yaml: cluster.pools[1].role: a cluster with prefill and decode pools cannot also have colocated pools"},
  };
  for (const Case& c : cases) {
    const std::string e = error_of(c.text);
    EXPECT_NE(e.find(c.needle), std::string::npos) << "expected '" << c.needle << "' in '" << e << "'";
  }
}

TEST(Disagg, TopologyErrorsAndUnreachablePairsExitTwoWithOneLine) {
  const fs::path dir = fs::temp_directory_path() / ("kvsim_disagg_cli_" + std::to_string(getpid()));
  fs::create_directories(dir);
  // Two GPUs joined by a link type the catalog lacks.
  std::ofstream(dir / "badlink.yaml") << "kind: topology\nvertices:\n  - {name: node0/gpu0, kind: gpu, node: 0}\n"
                                         "  - {name: node0/gpu1, kind: gpu, node: 0}\nlinks:\n"
                                         "  - {from: node0/gpu0, to: node0/gpu1, type: nvlink9}\n";
  // Two islands: GPUs 0-1 and 2-3 never meet.
  std::ofstream(dir / "islands.yaml") << "kind: topology\nvertices:\n  - {name: node0/gpu0, kind: gpu, node: 0}\n"
                                         "  - {name: node0/gpu1, kind: gpu, node: 0}\n"
                                         "  - {name: node1/gpu0, kind: gpu, node: 1}\n"
                                         "  - {name: node1/gpu1, kind: gpu, node: 1}\nlinks:\n"
                                         "  - {from: node0/gpu0, to: node0/gpu1, type: nvlink4}\n"
                                         "  - {from: node1/gpu0, to: node1/gpu1, type: nvlink4}\n";
  const auto scenario = [&](const std::string& name, const std::string& topo, const std::string& placement) {
    std::ofstream(dir / name) << kBase << "cluster:\n  topology: " << (dir / topo).string()
                              << "\n  pools:\n    - {name: p, role: prefill, instances: 1" << placement
                              << "}\n    - {name: d, role: decode, instances: 1}\n";
    return (dir / name).string();
  };
  const testing::CliResult bad_link = testing::run_kvsim("run " + scenario("a.yaml", "badlink.yaml", ""));
  EXPECT_EQ(bad_link.exit_code, 2) << bad_link.out;
  EXPECT_EQ(testing::count_lines(bad_link.out), 1) << bad_link.out;
  EXPECT_NE(bad_link.out.find("badlink.yaml: links[0].type"), std::string::npos) << bad_link.out;
  EXPECT_NE(bad_link.out.find("nvlink9"), std::string::npos) << bad_link.out;
  const testing::CliResult no_path =
      testing::run_kvsim("run " + scenario("b.yaml", "islands.yaml", ", placement: [node1/gpu0]"));
  EXPECT_EQ(no_path.exit_code, 2) << no_path.out;
  EXPECT_EQ(testing::count_lines(no_path.out), 1) << no_path.out;
  EXPECT_NE(no_path.out.find("b.yaml: cluster.topology: no path in"), std::string::npos) << no_path.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kvsim

namespace kvsim {
namespace {

TEST(Disagg, LayerwiseStreamingHidesThePullBehindThePrefill) {
  // One 4,000-token prompt (one chunk), prefill on node0/gpu0, decode on node1/gpu0 over one IB NDR rail:
  // the whole-request pull takes 17 us + 4,000 x 147,456 B / 35 GB/s = 16.87 ms after the prefill; the
  // layer-wise pull starts with the prefill step and is over before it ends (the step takes far longer),
  // so TTFT drops by the whole pull and the visible transfer part is 0.
  const std::string base = R"(
model: models/qwen3-8b.json
gpu: h100-sxm
seed: 1
engine: {block_size: 16}
workload:
  synthetic: {kind: poisson, rate: 1, num_requests: 1, input_tokens: 4000, output_tokens: 4}
cluster:
  topology: hgx-h100-2node-ib-ndr
  pools:
    - {name: p, role: prefill, instances: 1, placement: [node0/gpu0]}
    - {name: d, role: decode, instances: 1, placement: [node1/gpu0]}
)";
  const SimulationResult whole =
      run_simulation(parse_scenario(base + "  disaggregation: {decider: always}\n", "d.yaml"));
  const SimulationResult layer =
      run_simulation(parse_scenario(base + "  disaggregation: {decider: always, layerwise: true}\n", "d.yaml"));
  const double pull_ms = (17e-6 + 4000.0 * 147'456 / 35e9) * 1e3;
  const auto& w = whole.summary.disaggregation;
  const auto& l = layer.summary.disaggregation;
  EXPECT_NEAR(w.pull_ms.mean, pull_ms, 1e-3);
  ASSERT_GT(w.prefill_ms.mean, pull_ms);  // the premise: the prefill step outlasts the pull
  EXPECT_NEAR(l.pull_ms.mean, 0.0, 1e-9);
  EXPECT_NEAR(whole.summary.ttft_ms.mean - layer.summary.ttft_ms.mean, pull_ms, 1e-3);
  EXPECT_DOUBLE_EQ(l.bytes, w.bytes);  // the same blocks cross
}

}  // namespace
}  // namespace kvsim

namespace kvsim {
namespace {

TEST(Disagg, PerDescriptorCostIsPaidBeforeBytesMove) {
  // Qwen3-8B, 300-token prompts: 19 blocks x 36 layers x (K, V) = 1,368 descriptors; at 1 us each the
  // NVLink pull (5 us + 44,826,624 B / 360 GB/s) takes 1.368 ms longer.
  const SimulationResult r =
      run_simulation(parse_scenario(cluster("  disaggregation: {decider: always, per_descriptor: 1us}\n"), "d.yaml"));
  EXPECT_NEAR(r.summary.disaggregation.pull_ms.p50, (5e-6 + 44'826'624 / 360e9 + 1368e-6) * 1e3, 1e-5);
}

}  // namespace
}  // namespace kvsim

namespace kvsim {
namespace {

TEST(Disagg, AHybridPromptWithNothingToPullIsComputedOnTheDecodeSide) {
  // A Mamba-style hybrid pulls N - 1 tokens (vLLM _get_remote_prefill_token_count). A 1-token prompt has
  // none: the pull is a 0-byte message that frees the prefill side, and the decode side computes the token.
  const std::string pd = R"(
cluster:
  topology: hgx-h100-1node
  pools:
    - {name: p, role: prefill, instances: 1}
    - {name: d, role: decode, instances: 1}
  disaggregation: {decider: always}
model: models/qwen3.5-4b.json
gpu: h100-sxm
)";
  const SimulationResult r = run_simulation(parse_scenario(
      pd + "workload:\n  synthetic: {kind: poisson, rate: 10, num_requests: 3, input_tokens: 1, output_tokens: 2}\n",
      "d.yaml"));
  EXPECT_EQ(r.summary.requests.finished, 3);
  EXPECT_EQ(r.summary.disaggregation.requests, 3);
  EXPECT_DOUBLE_EQ(r.summary.disaggregation.bytes, 0.0);
  for (const RequestRow& row : r.collector->requests()) {
    EXPECT_EQ(row.output_tokens, 2);
    EXPECT_EQ(row.transfer_bytes, 0);
    EXPECT_LE(row.transfer_end, row.decode_scheduled);
  }
  // The same when the decode side's own hit already covers the N - 1 tokens: a 751-token prompt whose
  // 750-token prefix the second request finds locally (prefix_match_unit 2 matches it to the token).
  const SimulationResult h = run_simulation(
      parse_scenario(pd + "engine: {prefix_match_unit: 2}\nworkload:\n  synthetic: {kind: shared_prefix, "
                          "requests_per_group: 2, prefix_tokens: 750, suffix_tokens: 1, concurrency: 1}\n",
                     "d.yaml"));
  EXPECT_EQ(h.summary.requests.finished, 2);
}

}  // namespace
}  // namespace kvsim
