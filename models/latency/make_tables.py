#!/usr/bin/env python3
"""Builds models/latency/<gpu>/*.csv from shared/calibration/aiconfigurator (see PROVENANCE.md).

Filters (to keep the committed tables small) and the physical sanity check are stated here and in
PROVENANCE.md. Run: python3 models/latency/make_tables.py /work/shared/calibration/aiconfigurator [DUMPS]
DUMPS (optional): a folder of CSV dumps of aiconfigurator's B300 / GB300 / B200 / H200 Parquet files, named
<system>_<table>.csv (see PROVENANCE.md for how they were made); a system whose dumps are not there is
skipped (b300/, gb300/), b200/ then gets no MoE or all-reduce table and h200/ no FP8 GEMM or MoE table.
The block-scaled FP8 tables (gemm_fp8_block.csv, moe_fp8_block.csv) and the NVFP4 GEMM rows (gemm_nvfp4.csv)
need only the <system>_gemm.csv / <system>_moe.csv dumps of their system; the INT4 expert tables
(moe_int4.csv, moe_int4_power_law.csv of h200 / b200 / b300) only the vLLM 0.24.0 MoE dump
<system>_moe_0.24.0.csv (without it they are left as committed).
"""
import csv
import os
import sys

SRC = sys.argv[1] if len(sys.argv) > 1 else "/work/shared/calibration/aiconfigurator"
DUMPS = sys.argv[2] if len(sys.argv) > 2 else None
OUT = os.path.dirname(os.path.abspath(__file__))

# gpu name in models/hardware -> (aiconfigurator dir, files, bf16 peak FLOP/s, HBM B/s)
# FP8 peak of the GPUs whose GEMM file has fp8 rows (models/hardware/<gpu>.yaml fp8_flops).
FP8_PEAK = {"h100-sxm": 1979e12, "h200": 1979e12, "b200": 4500e12, "b300": 4500e12, "gb300": 5000e12}
GPUS = {
    "h100-sxm": ("h100_sxm", {"gemm": "vllm_0.19.0/gemm_bf16_fp8.csv",
                              "ctx": "vllm_0.19.0/context_attention_bf16kv.csv",
                              "gen": "vllm_0.19.0/generation_attention_bf16kv.csv",
                              "ar": "vllm_0.19.0/custom_allreduce.csv",
                              "moe": "vllm_0.19.0/moe_bf16_fp8_balanced.csv"}, 989e12, 3.35e12),
    "h200": ("h200_sxm", {"gemm": "vllm_0.19.0/gemm_bf16.csv",
                          "ctx": "vllm_0.18.0/context_attention_bf16kv_nowindow.csv",
                          "gen": "vllm_0.19.0/generation_attention_bf16kv_nowindow.csv",
                          "ar": "vllm_0.19.0/custom_allreduce.csv"}, 989e12, 4.8e12),
    "a100-80gb": ("a100_sxm", {"gemm": "vllm_0.14.0/gemm_bf16.csv",
                               "ctx": "vllm_0.14.0/context_attention_bf16kv.csv",
                               "gen": "vllm_0.14.0/generation_attention_bf16kv.csv",
                               "ar": "vllm_0.14.0/custom_allreduce.csv"}, 312e12, 2.039e12),
    # B200: GEMM and attention from the shared copy; MoE and vLLM custom all-reduce from the Parquet
    # dumps (B200_DUMPED below) when DUMPS is given. Peaks: models/hardware/b200.yaml (2,250 TFLOP/s,
    # 7.7 TB/s).
    "b200": ("b200_sxm", {"gemm": "vllm_0.19.0/gemm_bf16.csv",
                          "ctx": "vllm_0.19.0/context_attention_bf16kv_nowindow.csv",
                          "gen": "vllm_0.19.0/generation_attention_bf16kv_nowindow.csv"}, 2250e12, 7.7e12),
}
# Blackwell Ultra, from the Parquet dumps (ai-dynamo/aiconfigurator@095f58a5, vLLM 0.19.0 collections).
# Peaks: models/hardware/b300.yaml, gb300.yaml.
DUMPED = {
    "b300": ("b300_sxm", {"gemm": "b300_sxm_gemm.csv", "ctx": "b300_sxm_context_attention.csv",
                          "gen": "b300_sxm_generation_attention.csv", "ar": "b300_sxm_custom_allreduce.csv",
                          "moe": "b300_sxm_moe.csv"}, 2250e12, 7.75e12),
    "gb300": ("gb300", {"gemm": "gb300_gemm.csv", "ctx": "gb300_context_attention.csv",
                        "gen": "gb300_generation_attention.csv", "ar": "gb300_custom_allreduce.csv"},
              2500e12, 8e12),
}
# B200 tables the shared copy lacks (same repository and commit, vLLM 0.19.0 collections:
# b200_sxm/moe/vllm/0.19.0/moe_perf.parquet, b200_sxm/comm/vllm/0.19.0/custom_allreduce_perf.parquet).
B200_DUMPED = {"moe": "b200_sxm_moe.csv", "ar": "b200_sxm_custom_allreduce.csv"}
# H200 tables the shared copy lacks (same repository and commit, vLLM 0.19.0 collections): the FP8 GEMM
# rows of h200_sxm/gemm/vllm/0.19.0/gemm_perf.parquet (the shared gemm_bf16.csv kept the BF16 rows only,
# which stay the source of gemm.csv) and h200_sxm/moe/vllm/0.19.0/moe_perf.parquet. The all-reduce stays
# the shared copy of the same Parquet.
H200_DUMPED = {"gemm_fp8": "h200_sxm_gemm.csv", "moe": "h200_sxm_moe.csv"}
if DUMPS:
    # Only the systems whose dumps are in the folder (a folder may hold B200's alone).
    for gpu, (d, files, peak, bw) in DUMPED.items():
        paths = {k: os.path.join(DUMPS, v) for k, v in files.items()}
        if all(os.path.exists(p) for p in paths.values()):
            GPUS[gpu] = (d, paths, peak, bw)
    if all(os.path.exists(os.path.join(DUMPS, v)) for v in B200_DUMPED.values()):
        GPUS["b200"][1].update({k: os.path.join(DUMPS, v) for k, v in B200_DUMPED.items()})
    if all(os.path.exists(os.path.join(DUMPS, v)) for v in H200_DUMPED.values()):
        GPUS["h200"][1].update({k: os.path.join(DUMPS, v) for k, v in H200_DUMPED.items()})
    # B200's per-tensor FP8 GEMM rows are not used: the shared copy is BF16-only, and the Parquet's FP8 rows
    # fail the FP8-over-BF16 check below (as B300's and GB300's do).

# Block-scaled FP8 (128 x 128 weight blocks, per-token-group activation scales: the format of DeepSeek-V3 /
# R1, Qwen3-*-FP8, MiniMax-M2, GLM-5-FP8 checkpoints), written by block_fp8_tables() from the GEMM and MoE
# Parquet dumps of each system whose dumps are in DUMPS: gemm_fp8_block.csv (gemm_dtype fp8_block) and
# moe_fp8_block.csv (moe_dtype fp8_block, kernel vllm_fused_moe, balanced routing).
BLOCK_FP8 = {"h100-sxm": "h100_sxm", "h200": "h200_sxm", "b200": "b200_sxm", "b300": "b300_sxm"}
# NVFP4 x NVFP4 GEMM rows (gemm_dtype nvfp4: E2M1 values with an E4M3 scale per 16, both operands) of the
# Blackwell GEMM dumps, gemm_nvfp4.csv; physical check at the FP4 peak (models/hardware/<gpu>.yaml) with
# 4.5 bits per A and B element and a 2-byte C.
FP4_PEAK = {"b200": 9000e12, "b300": 14000e12}

GEMM_M = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768}
CTX_BATCH = {1, 2, 8, 32, 128}
GEN_BATCH = {1, 4, 16, 64, 256, 1024}


def rows(path):
    """Rows of a CSV copy; the Parquet dumps carry every dtype and routing, so BF16-cache and balanced
    rows are selected here (the shared copies were filtered that way already)."""
    with open(path) as f:
        for r in csv.DictReader(f):
            if r.get("kv_cache_dtype", "bfloat16") != "bfloat16":
                continue
            if r.get("distribution", "balanced") != "balanced":
                continue
            yield r


def physical(flops, nbytes, ms, peak, bw):
    s = ms * 1e-3
    return s > 0 and flops / s <= peak and nbytes / s <= bw


def main():
    for gpu, (d, files, peak, bw) in GPUS.items():
        os.makedirs(os.path.join(OUT, gpu), exist_ok=True)
        dropped = {}
        # GEMM: C[m x n] = A[m x k] B[k x n], bf16.
        out = [("m", "n", "k", "latency_ms")]
        for r in rows(os.path.join(SRC, d, files["gemm"])):
            if r["gemm_dtype"] != "bfloat16" or int(r["m"]) not in GEMM_M:
                continue
            m, n, k, t = int(r["m"]), int(r["n"]), int(r["k"]), float(r["latency"])
            if not physical(2 * m * n * k, 2 * (m * k + n * k + m * n), t, peak, bw):
                dropped["gemm"] = dropped.get("gemm", 0) + 1
                continue
            out.append((m, n, k, r["latency"]))
        write(gpu, "gemm.csv", out)
        bf16 = {(m, n, k): float(t) for m, n, k, t in out[1:]}
        # FP8 GEMM (per-tensor scaled FP8 x FP8, BF16 out), where the file has fp8 rows: same m filter;
        # physical check against the FP8 peak with 1-byte A and B and a 2-byte C. From files["gemm_fp8"]
        # where the BF16 rows come from another copy (H200), else from the GEMM file itself.
        out = [("m", "n", "k", "latency_ms")]
        for r in rows(os.path.join(SRC, d, files.get("gemm_fp8", files["gemm"]))):
            if r["gemm_dtype"] != "fp8" or int(r["m"]) not in GEMM_M or gpu not in FP8_PEAK:
                continue
            m, n, k, t = int(r["m"]), int(r["n"]), int(r["k"]), float(r["latency"])
            if not physical(2 * m * n * k, m * k + n * k + 2 * m * n, t, FP8_PEAK[gpu], bw):
                dropped["gemm_fp8"] = dropped.get("gemm_fp8", 0) + 1
                continue
            out.append((m, n, k, r["latency"]))
        # A collection whose FP8 rows are slower than its BF16 rows where both are compute-bound (median
        # over the shapes at m = 16384; FP8's peak is twice BF16's on every GPU here) did not run the FP8
        # tensor-core kernel; it is not written (Blackwell's vLLM 0.19.0 rows: 1.7 x BF16, PROVENANCE.md).
        big = sorted(float(t) / bf16[(m, n, k)] for m, n, k, t in out[1:] if m == 16384 and (m, n, k) in bf16)
        if big and big[len(big) // 2] >= 1:
            print(gpu, "gemm_fp8.csv not written: FP8 / BF16 at m = 16384 is", round(big[len(big) // 2], 2))
            if os.path.exists(os.path.join(OUT, gpu, "gemm_fp8.csv")):
                os.remove(os.path.join(OUT, gpu, "gemm_fp8.csv"))
        elif len(out) > 1:
            write(gpu, "gemm_fp8.csv", out)
        # Context (prefill) attention: causal, no prefix; FLOPs 4 * heads * hd * isl(isl+1)/2 per sequence.
        out = [("batch", "isl", "num_heads", "num_kv_heads", "head_dim", "window", "latency_ms")]
        for r in rows(os.path.join(SRC, d, files["ctx"])):
            b, s = int(r["batch_size"]), int(r["isl"])
            if b not in CTX_BATCH:
                continue
            h, kv, hd = int(r["num_heads"]), int(r["num_key_value_heads"]), int(r["head_dim"])
            w = int(r.get("window_size", 0) or 0)
            span = s * (s + 1) / 2 if w == 0 else sum(min(i + 1, w) for i in range(s))
            t = float(r["latency"])
            if not physical(4 * h * hd * b * span, 2 * b * s * (h + 2 * kv) * hd * 2, t, peak, bw):
                dropped["ctx"] = dropped.get("ctx", 0) + 1
                continue
            out.append((b, s, h, kv, hd, w, r["latency"]))
        write(gpu, "context_attention.csv", out)
        # Generation (decode) attention: one token per sequence over `step` cached tokens.
        out = [("batch", "context", "num_heads", "num_kv_heads", "head_dim", "window", "latency_ms")]
        for r in rows(os.path.join(SRC, d, files["gen"])):
            b, s = int(r["batch_size"]), int(r["step"])
            if b not in GEN_BATCH:
                continue
            h, kv, hd = int(r["num_heads"]), int(r["num_key_value_heads"]), int(r["head_dim"])
            w = int(r.get("window_size", 0) or 0)
            ctx = s if w == 0 else min(s, w)
            t = float(r["latency"])
            if not physical(4 * h * hd * b * ctx, b * ctx * 2 * kv * hd * 2, t, peak, bw):
                dropped["gen"] = dropped.get("gen", 0) + 1
                continue
            out.append((b, s, h, kv, hd, w, r["latency"]))
        write(gpu, "generation_attention.csv", out)
        # vLLM custom all-reduce under CUDA graphs; message_size in elements (bf16: 2 bytes each).
        if "ar" in files:
            out = [("num_gpus", "message_bytes", "latency_ms")]
            for r in rows(os.path.join(SRC, d, files["ar"])):
                if r["kernel_source"] != "vLLM_custom_graph":
                    continue
                out.append((int(r["num_gpus"]), 2 * int(r["message_size"]), r["latency"]))
            write(gpu, "allreduce.csv", out)
        if "moe" in files:
            out = [("num_tokens", "hidden", "inter", "topk", "num_experts", "moe_tp", "moe_ep", "latency_ms")]
            for r in rows(os.path.join(SRC, d, files["moe"])):
                if r["moe_dtype"] != "bfloat16":
                    continue
                out.append((r["num_tokens"], r["hidden_size"], r["inter_size"], r["topk"], r["num_experts"],
                            r["moe_tp_size"], r["moe_ep_size"], r["latency"]))
            write(gpu, "moe.csv", out)
            out = [out[0]]
            for r in rows(os.path.join(SRC, d, files["moe"])):
                if r["moe_dtype"] != "fp8":
                    continue
                out.append((r["num_tokens"], r["hidden_size"], r["inter_size"], r["topk"], r["num_experts"],
                            r["moe_tp_size"], r["moe_ep_size"], r["latency"]))
            write(gpu, "moe_fp8.csv", out)
            # Quantised expert kernels where the collection has them (B200, B300): NVFP4 (FlashInfer TRT-LLM FP4
            # MoE), balanced routing; MXFP4 weight-only (w4a16_mxfp4, kernel vllm_mxfp4_moe, gpt-oss's expert
            # shapes only), each shape once (first_per_shape), H200 only: B200's rows fail the plausibility
            # check in PROVENANCE.md (16 % of HBM bandwidth with all experts touched, H200 49 %), so B200 keeps
            # no MXFP4 table. INT4 weight-only rows come from the vLLM 0.24.0 collection (int4_tables below):
            # this collection's `vllm_marlin_int4_moe` rows fail the same kind of check.
            for dtype, name in (("nvfp4", "moe_nvfp4.csv"), ("w4a16_mxfp4", "moe_mxfp4.csv")):
                if dtype == "w4a16_mxfp4" and gpu != "h200":
                    continue
                out = [out[0]]
                for r in rows(os.path.join(SRC, d, files["moe"])):
                    if r["moe_dtype"] != dtype:
                        continue
                    out.append((r["num_tokens"], r["hidden_size"], r["inter_size"], r["topk"], r["num_experts"],
                                r["moe_tp_size"], r["moe_ep_size"], r["latency"]))
                if dtype == "w4a16_mxfp4":
                    out = ep_one_only(out, 6)
                if len(out) > 1:
                    write(gpu, name, first_per_shape(out, 7) if dtype == "w4a16_mxfp4" else out)
        print(gpu, "dropped as unphysical:", dropped)


def ep_one_only(out, ep_col):
    """The header and the rows with moe_ep 1. The H200 w4a16_mxfp4 rows do not vary with moe_ep (1 to 128
    give the same time within 1 % at the median, one local expert as slow as 128: the collector's ep_size had
    no effect), so their EP rows are dropped and an EP query borrows the EP-1 curves at its own SOL
    (sim/perf/moe_table.h); PROVENANCE.md."""
    return [out[0]] + [r for r in out[1:] if int(r[ep_col]) == 1]


def block_fp8_tables():
    for gpu, system in BLOCK_FP8.items():
        peak, bw = FP8_PEAK[gpu], (DUMPED.get(gpu) or GPUS[gpu])[3]
        gemm = os.path.join(DUMPS, system + "_gemm.csv")
        if os.path.exists(gemm):
            out, dropped = [("m", "n", "k", "latency_ms")], 0
            for r in rows(gemm):
                if r["gemm_dtype"] != "fp8_block" or int(r["m"]) not in GEMM_M:
                    continue
                m, n, k, t = int(r["m"]), int(r["n"]), int(r["k"]), float(r["latency"])
                if not physical(2 * m * n * k, m * k + n * k + 2 * m * n, t, peak, bw):
                    dropped += 1
                    continue
                out.append((m, n, k, r["latency"]))
            write(gpu, "gemm_fp8_block.csv", out)
            print(gpu, "gemm_fp8_block dropped as unphysical:", dropped)
            if gpu in FP4_PEAK:
                out, dropped = [("m", "n", "k", "latency_ms")], 0
                for r in rows(gemm):
                    if r["gemm_dtype"] != "nvfp4" or int(r["m"]) not in GEMM_M:
                        continue
                    m, n, k, t = int(r["m"]), int(r["n"]), int(r["k"]), float(r["latency"])
                    if not physical(2 * m * n * k, 0.5625 * (m * k + n * k) + 2 * m * n, t, FP4_PEAK[gpu], bw):
                        dropped += 1
                        continue
                    out.append((m, n, k, r["latency"]))
                write(gpu, "gemm_nvfp4.csv", out)
                print(gpu, "gemm_nvfp4 dropped as unphysical:", dropped)
        moe = os.path.join(DUMPS, system + "_moe.csv")
        if os.path.exists(moe):
            out = [("num_tokens", "hidden", "inter", "topk", "num_experts", "moe_tp", "moe_ep", "latency_ms")]
            for r in rows(moe):
                if r["moe_dtype"] != "fp8_block":
                    continue
                out.append((r["num_tokens"], r["hidden_size"], r["inter_size"], r["topk"], r["num_experts"],
                            r["moe_tp_size"], r["moe_ep_size"], r["latency"]))
            write(gpu, "moe_fp8_block.csv", out)


# Power-law routing (aiconfigurator's collector/helper.py power_law_logits_v3: expert loads drawn from a
# power law of exponent alpha, the most-loaded EP rank measured as rank 0; the SDK's default workload,
# sdk/config.py workload_distribution = "power_law"): for each balanced MoE table of a system whose MoE
# dump is in DUMPS, <table>_power_law.csv with the rows of both collected exponents (column distribution,
# power_law_1.01 / power_law_1.2), same dtype selection as the balanced file.
MOE_FILES = {"bfloat16": "moe", "fp8": "moe_fp8", "fp8_block": "moe_fp8_block", "nvfp4": "moe_nvfp4",
             "int4_wo": "moe_int4", "w4a16_mxfp4": "moe_mxfp4"}


def power_law_tables():
    for gpu, system in BLOCK_FP8.items():
        moe = os.path.join(DUMPS, system + "_moe.csv")
        if not os.path.exists(moe):
            continue
        by_dtype = {}
        with open(moe) as f:
            for r in csv.DictReader(f):
                if r["distribution"] in ("power_law_1.01", "power_law_1.2") and r["moe_dtype"] in MOE_FILES:
                    by_dtype.setdefault(r["moe_dtype"], []).append(
                        (r["num_tokens"], r["hidden_size"], r["inter_size"], r["topk"], r["num_experts"],
                         r["moe_tp_size"], r["moe_ep_size"], r["distribution"], r["latency"]))
        for dtype, name in MOE_FILES.items():
            # Only beside a balanced table kvsim reads (Hopper has no NVFP4 kernel); INT4: int4_tables.
            if dtype != "int4_wo" and dtype in by_dtype and os.path.exists(os.path.join(OUT, gpu, name + ".csv")):
                out = [("num_tokens", "hidden", "inter", "topk", "num_experts", "moe_tp", "moe_ep", "distribution",
                        "latency_ms")] + by_dtype[dtype]
                if dtype == "w4a16_mxfp4":
                    out = ep_one_only(out, 6)
                write(gpu, name + "_power_law.csv", first_per_shape(out, 8) if dtype == "w4a16_mxfp4" else out)


# INT4 weight-only experts (W4A16, the format of compressed-tensors `pack-quantized` checkpoints such as
# Kimi-K2.5) from the vLLM 0.24.0 MoE collections, dumped as <system>_moe_0.24.0.csv: the rows of kernel
# INT4_KERNEL, i.e. vLLM's CompressedTensorsWNA16MarlinMoEMethod with the Marlin experts, the method vLLM
# selects for a compressed-tensors WNA16 MoE layer (vllm/model_executor/layers/quantization/
# compressed_tensors/compressed_tensors_moe.py, CompressedTensorsMoEMethod.get_moe_method), balanced routing
# into moe_int4.csv and the power-law rows into moe_int4_power_law.csv. Only Kimi-K2.5's expert shape
# (hidden 7168, inter 2048, top-8, 384 experts) was collected; other INT4 shapes borrow its utilisation
# (sim/perf/moe_table.h). The vLLM 0.19.0 collection's `vllm_marlin_int4_moe` rows are not used: they fail
# the check `check_int4_rows` prints (PROVENANCE.md).
INT4_KERNEL = "vllm_compressedtensorswna16marlinmoe_marlin_marlinexperts"
INT4_SYSTEMS = {"h200": "h200_sxm", "b200": "b200_sxm", "b300": "b300_sxm"}


def int4_tables():
    for gpu, system in INT4_SYSTEMS.items():
        path = os.path.join(DUMPS, system + "_moe_0.24.0.csv")
        if not os.path.exists(path):
            continue
        balanced = [("num_tokens", "hidden", "inter", "topk", "num_experts", "moe_tp", "moe_ep", "latency_ms")]
        skewed = [balanced[0][:7] + ("distribution", "latency_ms")]
        with open(path) as f:
            every = list(csv.DictReader(f))  # both routings (rows() keeps the balanced ones only)
        for r in every:
            if r["moe_dtype"] != "int4_wo" or r["kernel_source"] != INT4_KERNEL:
                continue
            key = (r["num_tokens"], r["hidden_size"], r["inter_size"], r["topk"], r["num_experts"],
                   r["moe_tp_size"], r["moe_ep_size"])
            if r["distribution"] == "balanced":
                balanced.append(key + (r["latency"],))
            elif r["distribution"] in ("power_law_1.01", "power_law_1.2"):
                skewed.append(key + (r["distribution"], r["latency"]))
        write(gpu, "moe_int4.csv", balanced)
        write(gpu, "moe_int4_power_law.csv", skewed)
        check_int4_rows(gpu, system)


# MLA attention-module rows (vLLM 0.19.0 collections, mla/vllm/0.19.0/mla_{context,generation}_module_perf
# .parquet, dumped as <system>_mla_context.csv / <system>_mla_generation.csv): the whole DeepSeek-V3
# attention module (q_a / kv_a / q_b projections, absorbed attention, o_proj; collector/vllm/
# collect_mla_module.py) under CUDA graphs, one layer, TP 1 at `num_heads` local heads. Kept: the MLA
# compute dtype bfloat16 (the only one measured), KV cache bfloat16 / fp8, projection GEMMs bfloat16 /
# fp8_block / nvfp4; the first row of each shape (B300's collection holds every shape twice).
MLA_SYSTEMS = {"h100-sxm": "h100_sxm", "h200": "h200_sxm", "b200": "b200_sxm", "b300": "b300_sxm", "gb300": "gb300"}
MLA_GEMM = {"bfloat16": "bf16", "fp8_block": "fp8_block", "nvfp4": "nvfp4"}
MLA_KV = {"bfloat16": "bf16", "fp8": "fp8"}


def mla_tables():
    for gpu, system in MLA_SYSTEMS.items():
        for phase, col, name in (("context", "isl", "mla_context.csv"), ("generation", "step", "mla_generation.csv")):
            path = os.path.join(DUMPS, "%s_mla_%s.csv" % (system, phase))
            if not os.path.exists(path):
                continue
            length = "isl" if phase == "context" else "context"
            out = [("gemm", "kv_dtype", "num_heads", "batch", length, "latency_ms")]
            with open(path) as f:
                for r in csv.DictReader(f):
                    if r["model"] != "deepseek-ai/DeepSeek-V3" or r["mla_dtype"] != "bfloat16":
                        continue
                    if r["gemm_type"] not in MLA_GEMM or r["kv_cache_dtype"] not in MLA_KV:
                        continue
                    out.append((MLA_GEMM[r["gemm_type"]], MLA_KV[r["kv_cache_dtype"]], int(r["num_heads"]),
                                int(r["batch_size"]), int(r[col]), r["latency"]))
            write(gpu, name, first_per_shape(out, 5))


# DSA attention-module rows (SGLang 0.5.14 collections, sparse_attention/sglang/0.5.14/
# dsa_generation_module_perf.parquet, dumped as <system>_dsa_generation.csv): one GLM-5 layer's whole DSA
# attention module (projections, the indexer's keys, logits and top-k, the sparse MLA kernel, o_proj) in
# decode, under SGLang, at `num_heads` local heads (64 / TP), batch 1-256, 1-202,751 cached tokens (the
# `step` column). Kept: zai-org/GLM-5-FP8 (projections fp8_block), MLA compute dtype bfloat16, KV cache
# bfloat16 / fp8; the first row of each shape. The context rows of the same collection are not used: they
# stay at about 0.74 ms a layer from 4 to 16,384 new tokens, then jump (PROVENANCE.md).
DSA_GLM5 = "zai-org/GLM-5-FP8"


def dsa_tables():
    for gpu, system in MLA_SYSTEMS.items():
        path = os.path.join(DUMPS, "%s_dsa_generation.csv" % system)
        if not os.path.exists(path):
            continue
        out = [("gemm", "kv_dtype", "num_heads", "batch", "context", "latency_ms")]
        with open(path) as f:
            for r in csv.DictReader(f):
                if r["model"] != DSA_GLM5 or r["mla_dtype"] != "bfloat16":
                    continue
                if r["gemm_type"] not in MLA_GEMM or r["kv_cache_dtype"] not in MLA_KV:
                    continue
                out.append((MLA_GEMM[r["gemm_type"]], MLA_KV[r["kv_cache_dtype"]], int(r["num_heads"]),
                            int(r["batch_size"]), int(r["step"]), r["latency"]))
        write(gpu, "dsa_generation.csv", first_per_shape(out, 5))


# Gated DeltaNet kernels (SGLang 0.5.14 collections, linear_attention/sglang/0.5.14/gdn_perf.parquet, dumped as
# <system>_gdn.csv; collector/sglang/collect_gdn.py): per Qwen3.5 shape and local head count, the two kernels
# of a GDN layer's state path, context (causal_conv1d_fn + chunk_gated_delta_rule over batch_size sequences
# of seq_len new tokens) and generation (causal_conv1d_update + fused_recurrent_gated_delta_rule_packed_decode
# over batch_size sequences of one token). Summed per (local shape, batch, seq_len) where both kernels were
# measured; the kernels see only the local heads, so shapes are keyed by them ("k2x128_v8x128": 2 key heads
# and 8 value heads of 128 on this GPU), the first row of each key kept.
GDN_KERNELS = {"context": ("causal_conv1d_fn", "chunk_gated_delta_rule"),
               "generation": ("causal_conv1d_update", "fused_recurrent_gated_delta_rule_packed_decode")}


def gdn_tables():
    for gpu, system in MLA_SYSTEMS.items():
        path = os.path.join(DUMPS, "%s_gdn.csv" % system)
        if not os.path.exists(path):
            continue
        for phase, (conv, rule) in GDN_KERNELS.items():
            sums = {}
            with open(path) as f:
                for r in csv.DictReader(f):
                    if r["phase"] != phase or r["kernel_source"] not in (conv, rule):
                        continue
                    shape = "k%sx%s_v%sx%s" % (r["num_k_heads"], r["head_k_dim"], r["num_v_heads"], r["head_v_dim"])
                    key = (shape, int(r["num_v_heads"]), int(r["batch_size"]), int(r["seq_len"]))
                    by_model = sums.setdefault(key, {}).setdefault(r["model_name"], {})
                    by_model.setdefault(r["kernel_source"], float(r["latency"]))
            out = [("shape", "num_v_heads", "batch", "tokens", "latency_ms")]
            for key in sorted(sums):
                # Models sharing a local shape (Qwen3.5-122B and -397B) were measured alike; the first model
                # name, in sorted order, with both kernels measured at this point gives the row.
                both = [m for m in sorted(sums[key]) if len(sums[key][m]) == 2]
                if both:
                    out.append(key + ("%.6g" % sum(sums[key][both[0]].values()),))
            write(gpu, "gdn_%s.csv" % phase, out)


def check_int4_rows(gpu, system):
    """Prints, per expert shape at 256 tokens (moe_tp 1, moe_ep 1, balanced: every expert touched), the HBM
    bandwidth each collection's INT4 rows imply (4.125 bits per weight) beside the same shape's BF16 row.
    A weight-only INT4 kernel reads a quarter of BF16's bytes, so in this memory-bound range it should not
    be slower than BF16: the 0.19.0 `vllm_marlin_int4_moe` rows are, at every shape (PROVENANCE.md)."""
    for label, name in (("0.19.0", system + "_moe.csv"), ("0.24.0", system + "_moe_0.24.0.csv")):
        path = os.path.join(DUMPS, name)
        if not os.path.exists(path):
            continue
        lat = {}
        for r in rows(path):
            if (r["num_tokens"], r["moe_tp_size"], r["moe_ep_size"], r["distribution"]) != ("256", "1", "1",
                                                                                          "balanced"):
                continue
            if r["moe_dtype"] == "bfloat16" and r["kernel_source"] != "vllm_fused_moe":
                continue
            shape = tuple(int(r[k]) for k in ("hidden_size", "inter_size", "topk", "num_experts"))
            lat.setdefault(shape, {})[r["moe_dtype"]] = float(r["latency"])
        for (h, i, k, e), d in sorted(lat.items()):
            if "int4_wo" not in d:
                continue
            touched = min(e, 256 * k)
            tbs = touched * 3 * h * i * 4.125 / 8 / (d["int4_wo"] * 1e-3) / 1e12
            bf16 = " bf16 %.3f ms" % d["bfloat16"] if "bfloat16" in d else ""
            print(gpu, label, "int4 check", (h, i, k, e), "%.3f ms (%.2f TB/s)%s" % (d["int4_wo"], tbs, bf16))


def first_per_shape(out, key_len):
    """The header and the first row of each shape (the first key_len columns), for the MXFP4 tables: the H200
    MXFP4 collection (vLLM 0.19.1) holds some shapes twice, measured twice (e.g. 1 token, 128 experts: 0.083637
    and 0.083365 ms); the file's first is kept. The other tables keep their repeated rows as before (the
    loader reads every row; committed before this was added)."""
    seen, kept = set(), [out[0]]
    for r in out[1:]:
        if tuple(r[:key_len]) not in seen:
            seen.add(tuple(r[:key_len]))
            kept.append(r)
    return kept


def write(gpu, name, out):
    with open(os.path.join(OUT, gpu, name), "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(out)
    print(gpu, name, len(out) - 1, "rows")


if __name__ == "__main__":
    main()
    if DUMPS:
        block_fp8_tables()
        power_law_tables()
        int4_tables()
        mla_tables()
        dsa_tables()
        gdn_tables()
