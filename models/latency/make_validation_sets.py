#!/usr/bin/python3
"""Build the grouped validation sets (validation_<group>.csv and heldout/validation_<group>.csv)
from aiconfigurator's silicon sample.

    git -C AIC show 095f58a51c4ca8e61b66ec108d86f223f8d559ce:aic-core/src/aiconfigurator_core/systems/silicon_sample.csv > /tmp/ss.csv
    /usr/bin/python3 models/latency/make_validation_sets.py /tmp/ss.csv

Mechanical only (no row is chosen by its error): every `agg` row of the sample whose model has a
config here is written, one row per distinct measurement (exact duplicates across the sample's
dumps are merged, their ids listed), with the parallel layout as the sample records it. Rows the
current `kvsim validate` cannot run (GPU not in the catalog, int4, EP / attention DP / PP, TP > 8)
are kept; analysis/validation_report.py skips them for the current binary. Split: a row goes to
heldout/ when sha256 of its configuration key (model, system, backend, version, precision, layout,
isl, osl, concurrency) modulo 5 is 0, unless the same measurement is already in an earlier committed
set (its error is already published). Rows of overhead_fit.csv (used to fit) are dropped. Scheduler
columns are left empty (engine defaults) except for the vLLM Llama-3.1-70B collection
(generator_budget(), a choice made after looking at errors: models/latency/README.md), and its
TensorRT-LLM rows an FP8 KV cache (checkpoint_kv_dtype(), the same).
See models/latency/PROVENANCE.md.
"""
import hashlib
import math
import os
import re
import sys

import pandas as pd

AIC = "ai-dynamo/aiconfigurator@095f58a5"
SAMPLE = "aic-core/src/aiconfigurator_core/systems/silicon_sample.csv"
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# The measurement protocol every file states (read by kvsim validate; see the README section cited).
PROTOCOL = ('# protocol: warmup_per_slot=0 requests_per_slot=10 client=aiperf client_ttft_ms=11.6 (aiconfigurator\'s '
            'benchmark runner drains its 2c warm-up before measuring; client - server TTFT from vLLM PR #54628; '
            'models/latency/README.md, "Closed-loop measurement protocol", "Client-side TTFT")\n')

# model_path -> (config file, group)
MODELS = {
    "meta-llama/Llama-3.1-8B-Instruct": ("models/latency/configs/llama-3.1-8b.json", "dense"),
    "meta-llama/Llama-3.1-70B": ("models/latency/configs/llama-3.1-70b.json", "dense"),
    "Qwen/Qwen3-32B": ("models/latency/configs/qwen3-32b.json", "dense"),
    "nvidia/Qwen3-32B-NVFP4": ("models/latency/configs/qwen3-32b.json", "dense"),
    "Qwen/Qwen3-235B-A22B-FP8": ("models/latency/configs/qwen3-235b-a22b-fp8.json", "moe"),
    "MiniMaxAI/MiniMax-M2.5": ("models/latency/configs/minimax-m2.5.json", "moe"),
    "deepseek-ai/DeepSeek-V3": ("models/deepseek-v3.json", "mla"),
    "deepseek-ai/DeepSeek-R1": ("models/latency/configs/deepseek-r1.json", "mla"),
    "nvidia/DeepSeek-R1-NVFP4": ("models/latency/configs/deepseek-r1.json", "mla"),
    "nvidia/DeepSeek-V3.1-NVFP4": ("models/latency/configs/deepseek-r1.json", "mla"),
    "moonshotai/Kimi-K2.5": ("models/latency/configs/kimi-k2.5.json", "mla"),
    "zhipuai/GLM-5": ("models/latency/configs/glm-5.json", "mla"),
    "openai/gpt-oss-120b": ("models/gpt-oss-120b.json", "sliding"),
    "Qwen/Qwen3.5-397B-A17B": ("models/latency/configs/qwen3.5-397b-a17b.json", "hybrid"),
    # nvidia/Llama-3.1-8B-Instruct-FP8: all 21 rows are in validation_excluded.csv (TPOT below the
    # physical limit), not taken.
}
GPU = {"h100_sxm": "h100-sxm", "h200_sxm": "h200", "b200_sxm": "b200", "b300_sxm": "b300", "gb200": "gb200"}
GPUS_PER_NODE = {"h100_sxm": 8, "h200_sxm": 8, "b200_sxm": 8, "b300_sxm": 8, "gb200": 4}
COLUMNS = [
    "model", "gpu", "tp", "isl", "osl", "concurrency", "ttft_ms", "tpot_ms", "engine", "dtype",
    "weight_dtype", "kv_dtype", "dp", "enable_expert_parallel", "ep", "moe_tp", "pp", "gpus", "nodes",
    "max_num_batched_tokens", "max_num_seqs", "enable_chunked_prefill", "engine_version",
    "gemm_quant_mode", "moe_quant_mode", "measured", "layout_note", "also_in", "row_key", "source",
]
EARLIER = ["validation.csv", "validation_vllm.csv", "validation_vllm_llama70b.csv", "comparison.csv"]


def fnum(x):
    return None if pd.isna(x) else int(x)


def family(cfg):
    """DeepSeek-V3 / R1 (and the NVFP4 checkpoints) share one architecture; the sample lists some
    measurements under both names."""
    return "deepseek" if cfg in ("models/deepseek-v3.json", "models/latency/configs/deepseek-r1.json") else cfg


def earlier_rows():
    """(model family, gpu, tp, isl, osl, concurrency) -> [(ttft_ms, file)] of the committed sets."""
    rows = {}
    for name in EARLIER + ["overhead_fit.csv"]:
        f = pd.read_csv(os.path.join(HERE, name), comment="#")
        for r in f.itertuples():
            k = (family(r.model), r.gpu, int(r.tp), int(r.isl), int(r.osl), int(r.concurrency))
            rows.setdefault(k, []).append((float(r.ttft_ms), name))
    return rows


def earlier_file(rows, key, ttft):
    """The committed file holding this measurement (TTFT equal to its 0.01 ms rounding), or ''."""
    for t, name in rows.get(key, []):
        if abs(t - ttft) <= 0.006:
            return name
    return ""


def generator_budget(r):
    """max_num_batched_tokens of the vLLM Llama-3.1-70B collection (ids 2026_04_06_llama_3_1_70b_*_vllm_*,
    measured 2025-10-29): aiconfigurator's vLLM agg generator rule, concurrency + isl + 1500, as
    validation_vllm_llama70b.csv has it for the same measurements (PROVENANCE.md); '' for every other row
    (the engine's default)."""
    if r.backend == "vllm" and r.id.startswith("2026_04_06_llama_3_1_70b_") and r.measured.startswith("2025-10-29"):
        return int(r.conc) + int(r.isl) + 1500
    return ""


def checkpoint_kv_dtype(r):
    """kv_dtype of the TensorRT-LLM Llama-3.1-70B collection (ids 2026_04_06_llama_3_1_70b_*_trtllm_*, measured
    2025-10-29, FP8 and NVFP4 weights): fp8. TensorRT-LLM's KV cache dtype 'auto' inherits the checkpoint's KV
    quantisation, and its own points need it: at H200 TP2, concurrency 128, isl 1024, osl 8192, TTFT 656 ms means
    no request waited for a slot, yet a BF16 cache holds 66 such requests and an FP8 one 133 (kvsim size). A
    choice made after looking at errors (models/latency/README.md); '' for every other row (the engine default)."""
    if r.backend == "trtllm" and r.id.startswith("2026_04_06_llama_3_1_70b_") and r.measured.startswith("2025-10-29"):
        return "fp8"
    return ""


def main(path):
    s = pd.read_csv(path)
    s = s[(s["mode"] == "agg") & s.model_path.isin(MODELS.keys())].copy()
    s["conc"] = s.silicon_data_source.str.extract(r"silicon_concurrency=(\d+)")[0]
    no_conc = s[s.conc.isna()]
    s = s[s.conc.notna()].copy()
    s["conc"] = s.conc.astype(int)
    s["image"] = s.silicon_data_source.str.extract(r"image=([^;]+)")[0].fillna("")
    s["image"] = s.image.where(s.image != "", s.silicon_data_source.str.extract(r"; ([^;=]+:[^;=]+)$")[0].fillna(""))
    s["measured"] = s.silicon_data_source.str.extract(r"measured=([^;]+)")[0].fillna("")
    s["id_tp"] = s.id.str.extract(r"_tp(\d+)(?:_0)?_ep")[0]
    s["id_ep"] = s.id.str.extract(r"_ep(\d+)(?:_0)?_\d+$")[0]
    for c in ["tp_size", "pp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size"]:
        s[c] = s[c].fillna(1).astype(int)
    s.loc[s.moe_ep_size == 0, "moe_ep_size"] = 1  # dense rows of the gap analysis record 0
    s.loc[s.moe_tp_size == 0, "moe_tp_size"] = s.tp_size
    s.loc[s.attention_dp_size == 0, "attention_dp_size"] = 1
    # Prefer, among copies of one measurement, one whose fields agree with the layout in its id.
    s["consistent"] = s.id_tp.isna() | (s.id_tp.astype(float) == s.tp_size * s.attention_dp_size)
    s["rank"] = (~s.consistent).astype(int) * 10 + (s.image == "").astype(int)
    s = s.sort_values(["rank", "id"])
    # One measurement = same model, system, backend, isl, osl, concurrency and values; one copy (the
    # gap-analysis dump) rounds to 0.01 ms, so values are compared at 0.1 ms (TTFT) / 0.01 ms (TPOT).
    s["ttft_r"] = s.silicon_ttft_ms.round(1)
    s["tpot_r"] = s.silicon_tpot_ms.round(2)
    s["family"] = s.model_path.map(lambda m: family(MODELS[m][0]))
    meas = ["family", "system", "backend", "isl", "osl", "conc", "ttft_r", "tpot_r"]
    groups = s.groupby(meas, sort=False)
    earlier = earlier_rows()
    out = {}
    dropped_fit = []
    for _, g in groups:
        r = g.iloc[0]
        cfg, group = MODELS[r.model_path]
        gpu = GPU[r.system]
        prec = r.precision if isinstance(r.precision, str) else "bf16"
        version = r.backend_version if isinstance(r.backend_version, str) else ""
        tp, dp, pp, ep, moe_tp = r.tp_size, r.attention_dp_size, r.pp_size, r.moe_ep_size, r.moe_tp_size
        if group == "dense":  # the sample's MoE fields carry 0 / 1 placeholders for dense models
            ep, moe_tp = 1, ""
        gpus = tp * dp * pp
        notes = []
        layouts = sorted({(x.tp_size, x.attention_dp_size, x.moe_tp_size, x.moe_ep_size) for x in g.itertuples()})
        if len(layouts) > 1:
            notes.append("copies disagree on layout " + " / ".join("tp%d dp%d moe_tp%d ep%d" % l for l in layouts))
        if not r.consistent:
            notes.append("id says tp%s ep%s but fields give %d GPUs" % (r.id_tp, r.id_ep, gpus))
        # Such a row is read with its id's layout (PROVENANCE.md, "Layout caveat"): the fields multiply the id's
        # GPU count by f in the TP (or, with attention DP, the DP) size and in moe_tp; the id's EP size stands.
        split = (tp, dp, moe_tp, ep)  # the held-out split and row_key stay on the recorded fields
        if not r.consistent and group != "dense" and isinstance(r.id_ep, str) and r.id_ep.isdigit():
            id_gpus, id_ep = int(float(r.id_tp)), int(r.id_ep)
            f = (tp * dp) // id_gpus if id_gpus > 0 else 0
            if f > 1 and f * id_gpus == tp * dp and (dp % f == 0 if dp > 1 else tp % f == 0) and id_gpus % id_ep == 0:
                if dp > 1:
                    dp //= f
                else:
                    tp //= f
                ep, moe_tp = id_ep, id_gpus // id_ep
                gpus = tp * dp * pp
                notes[-1] += "; read as the id's layout tp%d dp%d moe_tp%d ep%d" % (tp, dp, moe_tp, ep)
        if r.system == "gb200":
            notes.append("GB200 NVL72: one NVLink domain")
        ekey = (family(cfg), gpu, split[0], int(r.isl), int(r.osl), int(r.conc))
        also = earlier_file(earlier, ekey, float(r.silicon_ttft_ms))
        if also == "overhead_fit.csv":
            dropped_fit.append(r.id)
            continue
        key = "|".join(str(x) for x in [r.family, r.system, r.backend, version, prec, split[0], split[1], split[2],
                                         split[3], pp, int(r.isl), int(r.osl), int(r.conc)])
        heldout = also == "" and int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % 5 == 0
        src = "%s %s; %s" % (AIC, SAMPLE, r.id)
        if len(g) > 1:
            src += " (same values: " + " ".join("%s [%s]" % (x.id, x.model_path) if x.model_path != r.model_path
                                                else x.id for x in g.iloc[1:].itertuples()) + ")"
        src += "; %s %s %s %s %s" % (r.backend, version or "(version not recorded)", r.system, r.model_path, prec)
        if r.image:
            src += "; image " + r.image
        row = {
            "model": cfg, "gpu": gpu, "tp": tp, "isl": int(r.isl), "osl": int(r.osl), "concurrency": int(r.conc),
            "ttft_ms": "%.2f" % r.silicon_ttft_ms, "tpot_ms": "%.3f" % r.silicon_tpot_ms, "engine": r.backend,
            "dtype": prec, "weight_dtype": prec, "kv_dtype": checkpoint_kv_dtype(r), "dp": dp,
            "enable_expert_parallel": int(ep > 1), "ep": ep, "moe_tp": moe_tp, "pp": pp, "gpus": gpus,
            "nodes": math.ceil(gpus / GPUS_PER_NODE[r.system]),
            "max_num_batched_tokens": generator_budget(r), "max_num_seqs": "",
            "enable_chunked_prefill": "", "engine_version": version or r.image.split(":")[-1],
            "gemm_quant_mode": r.gemm_quant_mode if isinstance(r.gemm_quant_mode, str) else "",
            "moe_quant_mode": r.moe_quant_mode if isinstance(r.moe_quant_mode, str) else "",
            "measured": r.measured, "layout_note": "; ".join(notes), "also_in": also, "row_key": key,
            "source": src,
        }
        out.setdefault((group, heldout), []).append(row)
    os.makedirs(os.path.join(HERE, "heldout"), exist_ok=True)
    header = {
        False: "# Measured end-to-end points (aggregated serving, fixed isl/osl/concurrency) for `kvsim validate`, group %s.\n"
        "# From %s %s by models/latency/make_validation_sets.py; sources per row, see PROVENANCE.md. Never used to fit.\n" + PROTOCOL,
        True: "# HELD-OUT test split, group %s: do not tune on these rows (models/latency/README.md).\n"
        "# From %s %s by models/latency/make_validation_sets.py; sources per row, see PROVENANCE.md.\n" + PROTOCOL,
    }
    for (group, held), rows in sorted(out.items()):
        df = pd.DataFrame(rows, columns=COLUMNS).sort_values(["model", "gpu", "engine", "tp", "dp", "ep", "isl",
                                                              "osl", "concurrency", "ttft_ms"])
        name = os.path.join(HERE, "heldout" if held else "", "validation_%s.csv" % group)
        with open(name, "w") as f:
            f.write(header[held] % (group, AIC, SAMPLE))
            df.to_csv(f, index=False)
        print("%-45s %4d rows" % (os.path.relpath(name, REPO), len(df)))
    print("dropped: %d rows in overhead_fit.csv; %d rows without silicon_concurrency: %s"
          % (len(dropped_fit), len(no_conc), " ".join(no_conc.id)))


if __name__ == "__main__":
    main(sys.argv[1])
