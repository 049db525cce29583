#!/usr/bin/env python3
"""Builds models/latency/<gpu>/*.csv from shared/calibration/aiconfigurator (see PROVENANCE.md).

Filters (to keep the committed tables small) and the physical sanity check are stated here and in
PROVENANCE.md. Run: python3 models/latency/make_tables.py /work/shared/calibration/aiconfigurator
"""
import csv
import os
import sys

SRC = sys.argv[1] if len(sys.argv) > 1 else "/work/shared/calibration/aiconfigurator"
OUT = os.path.dirname(os.path.abspath(__file__))

# gpu name in models/hardware -> (aiconfigurator dir, files, bf16 peak FLOP/s, HBM B/s)
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
}
GEMM_M = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768}
CTX_BATCH = {1, 2, 8, 32, 128}
GEN_BATCH = {1, 4, 16, 64, 256, 1024}


def rows(path):
    with open(path) as f:
        yield from csv.DictReader(f)


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
        print(gpu, "dropped as unphysical:", dropped)


def write(gpu, name, out):
    with open(os.path.join(OUT, gpu, name), "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(out)
    print(gpu, name, len(out) - 1, "rows")


if __name__ == "__main__":
    main()
