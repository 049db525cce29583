#!/usr/bin/env python3
"""Plots of one kvsim run file (HDF5, layout in sim/metrics/hdf5_writer.h).

    plot.py RUN.h5 --out DIR

Writes into DIR: ttft_cdf.png, e2e_cdf.png, tpot_cdf.png (log-scale CDFs, p50 / p90 / p99 marked,
unfinished requests counted in the legend), concurrency.png, kv_usage.png (fraction of capacity),
hit_rate.png, throughput.png, steps.png (prefill / decode tokens per step, preemptions over time),
lost_reuse.png (by cause) and, for a run
with several instances (a cluster), instance_load.png (running + waiting and KV usage per instance over
time) and instance_hit_rate.png (token hit rate per instance, coloured by pool). A disaggregated run
(requests prefilled on a prefill instance) also gets link_utilisation.png (the busiest links of /links
by bytes, their /timeseries/links utilisation over time) and ttft_breakdown.png (the six TTFT parts:
router, prefill queue, prefill, decode queue, transfer, first decode step; mean and p50 from the
summary's disaggregation.ttft_breakdown_ms, else computed per request from /requests). A run with KV
offload (engine.kv_offload: /timeseries/tier<i>_used_bytes, the summary's kv_offload block) also gets
tier_occupancy.png (each tier's bytes in use over time against its size) and tier_hits.png (prompt tokens
served by the GPU prefix cache and by each tier, and the bytes stored into / loaded from each tier).
"""
import argparse
import json
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import h5py  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


def read_group(f, name):
    """A group of equal-length 1-D columns as a DataFrame (ragged columns are skipped)."""
    if name not in f:
        return pd.DataFrame()
    g = f[name]
    cols = {k: g[k][()] for k in g if isinstance(g[k], h5py.Dataset) and g[k].ndim == 1}
    if not cols:
        return pd.DataFrame()
    n = max(len(v) for v in cols.values())
    if "id" in cols:
        n = len(cols["id"])
    elif "time_s" in cols:
        n = len(cols["time_s"])
    return pd.DataFrame({k: v for k, v in cols.items() if len(v) == n})


def read_run(path):
    with h5py.File(path, "r") as f:
        requests = read_group(f, "requests")
        timeseries = read_group(f, "timeseries")
        meta = dict(f["meta"].attrs) if "meta" in f else {}
        summary = f["summary"].attrs.get("json", "") if "summary" in f else ""
    if isinstance(summary, bytes):
        summary = summary.decode()
    return requests, timeseries, meta, summary


def read_instances(path):
    """/timeseries/per_instance as a DataFrame, and the pool names by index (/requests/pool@names)."""
    with h5py.File(path, "r") as f:
        per_instance = read_group(f, "timeseries/per_instance")
        names = f["requests/pool"].attrs.get("names", "") if "requests/pool" in f else ""
    if isinstance(names, bytes):
        names = names.decode()
    return per_instance, (names.split(",") if names else [])


def plot_instances(requests, per_instance, pool_names, title, out):
    """Per-instance load over time and token hit rate per instance (runs with several instances)."""
    written = []
    instances = sorted(per_instance["instance"].unique()) if len(per_instance) else []
    fig, axes = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for i in instances:
        rows = per_instance[per_instance["instance"] == i]
        axes[0].step(rows["time_s"], rows["running"] + rows["waiting"], where="post", lw=0.8, label=f"instance {i}")
        axes[1].step(rows["time_s"], rows["kv_usage"], where="post", lw=0.8)
    axes[0].set_ylabel("running + waiting")
    axes[1].set_ylabel("KV usage (of capacity)")
    axes[1].set_ylim(0, 1.02)
    axes[1].set_xlabel("simulated time (s)")
    if 0 < len(instances) <= 16:
        axes[0].legend(fontsize=7, ncol=4)
    axes[0].set_title(f"{title}: load per instance")
    for ax in axes:
        ax.grid(True, alpha=0.3)
    written.append(save(fig, out, "instance_load.png"))

    fig, ax = plt.subplots(figsize=(8, 4))
    if len(requests) and "instance" in requests:
        g = requests.groupby("instance")
        prompt = g["prompt_tokens"].sum().astype(float)
        rate = g["cached_tokens"].sum() / prompt.where(prompt > 0, 1.0)
        pools = g["pool"].first() if "pool" in requests else pd.Series(0, index=rate.index)
        colors = [f"C{int(p) % 10}" for p in pools]
        ax.bar(rate.index.astype(int), rate.values, color=colors)
        for p in sorted(pools.unique()):
            name = pool_names[int(p)] if int(p) < len(pool_names) else f"pool {p}"
            ax.bar([], [], color=f"C{int(p) % 10}", label=name)
        ax.legend(fontsize=8)
    ax.set_xlabel("instance")
    ax.set_ylabel("cached / prompt tokens")
    ax.set_title(f"{title}: prefix-cache hit rate per instance")
    ax.grid(True, alpha=0.3, axis="y")
    written.append(save(fig, out, "instance_hit_rate.png"))
    return written


TTFT_PARTS = ("router", "prefill_queue", "prefill", "decode_queue", "transfer", "first_decode_step")


def read_links(path):
    """/links (with name and type per row) and /timeseries/links as DataFrames (empty when absent)."""
    with h5py.File(path, "r") as f:
        links = read_group(f, "links")
        series = read_group(f, "timeseries/links")
        attrs = f["links/id"].attrs if "links/id" in f else {}
        for key in ("names", "types"):
            text = attrs.get(key, "")
            text = text.decode() if isinstance(text, bytes) else text
            values = text.split(",") if text else []
            if len(links) and len(values) == len(links):
                links[key[:-1]] = values
    return links, series


def ttft_parts(requests, summary):
    """{part: (mean ms, p50 ms)} of the disaggregated finished requests and where they came from.

    The summary's ttft_breakdown_ms is exact (the router part needs the prefill submission time, which
    /requests lacks); without it the parts are computed per request, the router part folded into the
    prefill queue (first_scheduled_s - arrival_s)."""
    block = summary.get("disaggregation", {}).get("ttft_breakdown_ms", {})
    if all(p in block for p in TTFT_PARTS):
        return {p: (block[p].get("mean", 0.0), block[p].get("p50", 0.0)) for p in TTFT_PARTS}, "summary"
    r = requests[(requests["prefill_instance"] >= 0) & (requests["finished"] == 1)]
    per = {
        "router": pd.Series(0.0, index=r.index),
        "prefill_queue": r["first_scheduled_s"] - r["arrival_s"],
        "prefill": r["prefill_done_s"] - r["first_scheduled_s"],
        "decode_queue": (r["transfer_start_s"] - r["prefill_done_s"]) + (r["decode_scheduled_s"] - r["transfer_end_s"]),
        "transfer": r["transfer_end_s"] - r["transfer_start_s"],
        "first_decode_step": r["first_token_s"] - r["decode_scheduled_s"],
    }
    out = {}
    for p, v in per.items():
        v = v.dropna() * 1e3
        out[p] = (float(v.mean()) if len(v) else 0.0, float(v.median()) if len(v) else 0.0)
    return out, "per request"


def plot_disaggregation(path, requests, summary, title, out, busiest=5):
    """Link utilisation over time (the `busiest` links by bytes) and the TTFT breakdown."""
    written = []
    links, series = read_links(path)
    fig, axes = plt.subplots(2, 1, figsize=(8, 6.5), gridspec_kw={"height_ratios": [1.6, 1]})
    ax = axes[0]
    top = links.sort_values("bytes", ascending=False, kind="stable").head(busiest) if len(links) else links
    names = [row["name"] if "name" in row else f"link {int(row['id'])}" for _, row in top.iterrows()]
    drawn = 0
    for k, (_, row) in enumerate(top.iterrows()):
        s = series[series["link"] == row["id"]] if len(series) else series
        if len(s):
            label = f"{names[k]} ({row['bytes'] / 1e9:.3g} GB)"
            # Samples exist only while the link carries bytes (0 elsewhere): stems, not a joined line.
            ax.vlines(s["time_s"], 0, s["utilisation"], lw=0.6, color=f"C{k}", alpha=0.6)
            ax.plot(s["time_s"], s["utilisation"], ".", ms=3, color=f"C{k}", label=label)
            drawn += 1
    if drawn:
        ax.legend(fontsize=7, loc="center right")
    else:
        ax.text(0.5, 0.5, "no link utilisation samples (/timeseries/links;\n"
                "cluster.disaggregation.utilisation_interval)", ha="center", va="center", transform=ax.transAxes)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("utilisation at each sample")
    ax.set_title(f"{title}\nlink utilisation, busiest {len(top)} of {len(links)} links by bytes", fontsize=10)
    ax.grid(True, alpha=0.3)
    # Mean (over the run) and peak (over the samples) utilisation of the same links, from /links.
    y = np.arange(len(top))
    if len(top):
        axes[1].barh(y + 0.2, top["mean_utilisation"], 0.4, color="C0", label="mean (run)")
        axes[1].barh(y - 0.2, top["peak_utilisation"], 0.4, color="C3", label="peak (samples)")
        axes[1].legend(fontsize=7, loc="lower right")
    axes[1].set_yticks(y)
    axes[1].set_yticklabels(names, fontsize=7)
    axes[1].invert_yaxis()
    axes[1].set_xlim(0, 1.05)
    axes[1].set_xlabel("utilisation (of capacity)")
    axes[1].grid(True, alpha=0.3, axis="x")
    written.append(save(fig, out, "link_utilisation.png"))

    parts, source = ttft_parts(requests, summary)
    labels = [p.replace("_", " ") for p in TTFT_PARTS]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), gridspec_kw={"width_ratios": [1, 2.2]})
    bottom = 0.0
    for k, p in enumerate(TTFT_PARTS):
        mean = parts[p][0]
        axes[0].bar(["mean TTFT"], [mean], bottom=bottom, color=f"C{k}", label=f"{labels[k]} {mean:.3g} ms")
        bottom += mean
    axes[0].set_ylabel("ms")
    axes[0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    axes[0].set_title("means stacked (they sum to the mean TTFT)", fontsize=9)
    x = np.arange(len(TTFT_PARTS))
    axes[1].bar(x - 0.2, [parts[p][0] for p in TTFT_PARTS], 0.4, color="C0", label="mean")
    axes[1].bar(x + 0.2, [parts[p][1] for p in TTFT_PARTS], 0.4, color="C1", label="p50")
    for k, p in enumerate(TTFT_PARTS):
        for dx, v in ((-0.2, parts[p][0]), (0.2, parts[p][1])):
            axes[1].annotate(f"{v:.3g}", (x[k] + dx, v), ha="center", va="bottom", fontsize=6)
    axes[1].set_xticks(x)
    axes[1].set_xticklabels(labels, rotation=20, fontsize=8)
    axes[1].set_ylabel("ms")
    axes[1].legend(fontsize=8)
    axes[1].set_title(f"per part (from the {source})", fontsize=9)
    for a in axes:
        a.grid(True, alpha=0.3, axis="y")
    fig.suptitle(f"{title}: TTFT breakdown of disaggregated requests", fontsize=10)
    written.append(save(fig, out, "ttft_breakdown.png"))
    return written


def cdf(ax, values, label):
    """A CDF on a log x axis with p50 / p90 / p99 marked and labelled (numpy's linear percentiles)."""
    v = np.sort(np.asarray(values, dtype=float))
    v = v[~np.isnan(v)]
    if len(v) == 0:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
        return
    y = np.arange(1, len(v) + 1) / len(v)
    ax.step(v, y, where="post", label=label)
    if v[0] > 0:
        ax.set_xscale("log")
    for q in (0.5, 0.9, 0.99):
        x = np.percentile(v, 100 * q)
        ax.axhline(q, color="grey", lw=0.5, ls=":")
        ax.plot([x], [q], "o", color="C3", ms=4)
        ax.annotate(f"p{int(round(q * 100))} {x:.4g}", (x, q), textcoords="offset points", xytext=(6, -10),
                    fontsize=8, color="C3")
    ax.set_ylim(0, 1.0)
    ax.set_ylabel("fraction of requests")
    ax.grid(True, alpha=0.3, which="both")


def describe(meta):
    """'model on gpu TPn, workload' from the resolved scenario in /meta (plain line matching: no YAML parser)."""
    text = meta.get("scenario", "")
    if isinstance(text, bytes):
        text = text.decode()

    def first(key):
        # block style ("key: value" on its line) or flow style ("{key: value, ...}")
        m = re.search(r"(?:^|[{,\s])" + key + r":\s*([^\n#,}]+)", text, re.M)
        return m.group(1).strip().strip("'\"") if m else ""

    model = os.path.splitext(os.path.basename(first("model")))[0]
    tp = first("tensor_parallel_size") or "1"
    if re.search(r"(?:^|[{,\s])trace:", text, re.M):
        workload = (first("format") + " trace " + os.path.basename(first("path"))).strip()
    else:
        workload = (first("kind") or "synthetic") + " workload"
    parts = [p for p in (model, first("gpu") and f"on {first('gpu')} TP{tp}", workload and f"({workload})") if p]
    return " ".join(parts)


def binned_rate(times, weights, bins):
    counts, edges = np.histogram(times, bins=bins, weights=weights)
    width = edges[1] - edges[0] if len(edges) > 1 else 1.0
    return edges[:-1], counts / width


def save(fig, out, name):
    path = os.path.join(out, name)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_all(path, out, title=None):
    requests, ts, meta, summary_text = read_run(path)
    summary = json.loads(summary_text) if summary_text else {}
    with h5py.File(path, "r") as f:
        steps = read_group(f, "steps")
    title = title or describe(meta) or os.path.basename(path)
    os.makedirs(out, exist_ok=True)
    written = []
    done = requests[requests["finished"] == 1] if "finished" in requests else requests
    unfinished = len(requests) - len(done)
    legend = f"{len(done)} finished" + (f", {unfinished} unfinished (not in the CDF)" if unfinished else "")

    tpot = ((done["finish_s"] - done["first_token_s"]) / (done["output_tokens"] - 1)).where(done["output_tokens"] > 1) \
        if len(done) else []
    for name, values, label in (
        ("ttft_cdf.png", (done["first_token_s"] - done["arrival_s"]) * 1e3 if len(done) else [], "TTFT (ms)"),
        ("e2e_cdf.png", (done["finish_s"] - done["arrival_s"]) * 1e3 if len(done) else [], "E2E latency (ms)"),
        ("tpot_cdf.png", np.asarray(tpot, dtype=float) * 1e3, "TPOT (ms per output token)"),
    ):
        fig, ax = plt.subplots(figsize=(7, 4.2))
        cdf(ax, values, legend)
        ax.set_xlabel(label)
        ax.legend(loc="lower right", fontsize=8)
        ax.set_title(f"{title}\n{label.split(' (')[0]} CDF", fontsize=10)
        written.append(save(fig, out, name))

    fig, ax = plt.subplots(figsize=(7, 4))
    if len(ts):
        ax.step(ts["time_s"], ts["concurrency"], where="post", label="in flight (arrival..finish)")
        ax.step(ts["time_s"], ts["running"], where="post", label="running")
        ax.step(ts["time_s"], ts["waiting"], where="post", label="waiting")
        ax.legend()
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("requests")
    ax.set_title(f"{title}\nconcurrency", fontsize=10)
    ax.grid(True, alpha=0.3)
    written.append(save(fig, out, "concurrency.png"))

    fig, ax = plt.subplots(figsize=(7, 4))
    total = summary.get("kv_blocks", {}).get("total", 0)
    usable = total - max(1, summary.get("cluster", {}).get("instances", 1)) if total else 0  # null block each
    if len(ts):
        if usable > 0:
            ax.step(ts["time_s"], ts["kv_blocks_used"] / usable, where="post", label="KV blocks used")
            ax.axhline(1.0, color="C3", lw=1, ls="--", label=f"capacity ({usable} blocks)")
            ax.set_ylim(0, 1.05)
            ax.set_ylabel("fraction of KV capacity")
        else:
            ax.step(ts["time_s"], ts["kv_blocks_used"], where="post", label="KV blocks used")
            ax.set_ylabel("blocks")
        ax.legend()
    ax.set_xlabel("simulated time (s)")
    ax.set_title(f"{title}\nKV cache usage", fontsize=10)
    ax.grid(True, alpha=0.3)
    written.append(save(fig, out, "kv_usage.png"))

    fig, ax = plt.subplots(figsize=(7, 4))
    if len(requests):
        prompt = requests["prompt_tokens"].astype(float)
        rate = np.where(prompt > 0, requests["cached_tokens"] / prompt.where(prompt > 0, 1.0), np.nan)
        ax.scatter(requests["arrival_s"], rate, s=4, alpha=0.5)
        total_rate = requests["cached_tokens"].sum() / max(prompt.sum(), 1.0)
        ax.axhline(total_rate, color="C1", lw=1, label=f"token hit rate {total_rate:.1%}")
        ax.legend()
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("arrival time (s)")
    ax.set_ylabel("cached / prompt tokens")
    ax.set_title(f"{title}\nprefix-cache hit rate per request", fontsize=10)
    ax.grid(True, alpha=0.3)
    written.append(save(fig, out, "hit_rate.png"))

    # Throughput over time: finished requests and output tokens per second, in 50 bins.
    fig, ax = plt.subplots(figsize=(7, 4))
    if len(done) > 1:
        x, r = binned_rate(done["finish_s"], None, 50)
        ax.step(x, r, where="post", label="finished requests / s")
        ax2 = ax.twinx()
        x2, tok = binned_rate(done["finish_s"], done["output_tokens"], 50)
        ax2.step(x2, tok, where="post", color="C1", label="output tokens / s (by finish)")
        ax2.set_ylabel("output tokens / s")
        ax2.legend(loc="upper right", fontsize=8)
        ax.legend(loc="upper left", fontsize=8)
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("requests / s")
    ax.set_title(f"{title}\nthroughput over time", fontsize=10)
    ax.grid(True, alpha=0.3)
    written.append(save(fig, out, "throughput.png"))

    # Prefill and decode tokens per step, and preemptions over time (from /steps; empty with output.steps: none).
    fig, axes = plt.subplots(2, 1, figsize=(7, 5.5), sharex=True)
    if len(steps):
        axes[0].plot(steps["end_s"], steps["num_prefill_tokens"], ".", ms=1, label="prefill tokens")
        axes[0].plot(steps["end_s"], steps["num_decode_tokens"], ".", ms=1, label="decode tokens")
        axes[0].legend(fontsize=8, markerscale=8)
        axes[1].step(steps["end_s"], np.cumsum(steps["preemptions"]), where="post", color="C3")
    else:
        axes[0].text(0.5, 0.5, "no /steps (output.steps: none)", ha="center", va="center", transform=axes[0].transAxes)
    axes[0].set_ylabel("tokens per step")
    axes[1].set_ylabel("preemptions (cumulative)")
    axes[1].set_xlabel("simulated time (s)")
    axes[0].set_title(f"{title}\nsteps: tokens and preemptions", fontsize=10)
    for a in axes:
        a.grid(True, alpha=0.3)
    written.append(save(fig, out, "steps.png"))

    # Lost reuse by cause (summary); different_image is a what-if, named as such.
    fig, ax = plt.subplots(figsize=(7, 4))
    pc = summary.get("prefix_cache", {})
    lost = dict(pc.get("lost_tokens_by_cause", {}))
    lost.update(pc.get("what_if_lost_tokens", {}))  # kept apart in the summary: not a cache loss
    causes = [c for c in lost if c != "none"]
    labels = [c + (" (what-if)" if c == "different_image" else "") for c in causes]
    ax.barh(labels, [lost[c] for c in causes], color="C4")
    ax.set_xlabel("prompt tokens not reused")
    ax.set_title(f"{title}\nlost reuse by cause", fontsize=10)
    ax.grid(True, alpha=0.3, axis="x")
    written.append(save(fig, out, "lost_reuse.png"))

    per_instance, pool_names = read_instances(path)
    if len(per_instance) and per_instance["instance"].nunique() > 1:
        written += plot_instances(requests, per_instance, pool_names, title, out)
    if "prefill_instance" in requests and (requests["prefill_instance"] >= 0).any():
        written += plot_disaggregation(path, requests, summary, title, out)
    if summary.get("kv_offload", {}).get("tiers"):
        written += plot_offload(ts, requests, summary, title, out)
    return written


def plot_offload(ts, requests, summary, title, out):
    """Tier occupancy over time and hits by tier (runs with engine.kv_offload)."""
    written = []
    ko = summary.get("kv_offload", {})
    tiers = ko.get("tiers", [])
    fig, ax = plt.subplots(figsize=(7, 4))
    for i, t in enumerate(tiers):
        col = f"tier{i}_used_bytes"
        size = float(t.get("size_bytes", 0)) * max(1, summary.get("cluster", {}).get("instances", 1))
        if col in ts and size > 0:
            ax.step(ts["time_s"], ts[col] / size, where="post", color=f"C{i}",
                    label=f"{t.get('name', col)} ({size / 2**30:.4g} GiB)")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("fraction of tier size in use")
    ax.set_title(f"{title}\nKV offload tier occupancy", fontsize=10)
    if tiers:
        ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    written.append(save(fig, out, "tier_occupancy.png"))

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    gpu = int(requests["cached_tokens"].sum()) if "cached_tokens" in requests else 0
    names = ["GPU"] + [t.get("name", f"tier {i}") for i, t in enumerate(tiers)]
    hits = [gpu] + [int(t.get("hit_tokens", 0)) for t in tiers]
    prompt = float(requests["prompt_tokens"].sum()) if "prompt_tokens" in requests else 0.0
    axes[0].bar(names, hits, color=[f"C{k}" for k in range(len(names))])
    for k, h in enumerate(hits):
        if prompt > 0:
            axes[0].text(k, h, f"{h / prompt:.1%}", ha="center", va="bottom", fontsize=8)
    axes[0].set_ylabel("prompt tokens reused (first admissions)")
    axes[0].set_title("hits by tier", fontsize=10)
    axes[0].grid(True, alpha=0.3, axis="y")
    y = np.arange(len(tiers))
    axes[1].barh(y + 0.2, [t.get("stored_bytes", 0) / 2**30 for t in tiers], 0.4, color="C0", label="stored")
    axes[1].barh(y - 0.2, [t.get("loaded_bytes", 0) / 2**30 for t in tiers], 0.4, color="C3", label="loaded")
    axes[1].set_yticks(y)
    axes[1].set_yticklabels([t.get("name", "") for t in tiers], fontsize=8)
    axes[1].set_xlabel("GiB")
    axes[1].legend(fontsize=8)
    axes[1].set_title("bytes into / out of each tier", fontsize=10)
    axes[1].grid(True, alpha=0.3, axis="x")
    fig.suptitle(f"{title}: KV offload ({ko.get('backend', 'native')}, policy {ko.get('policy', '')}, "
                 f"{ko.get('store_wait_steps', 0)} steps waited on a store)", fontsize=10)
    written.append(save(fig, out, "tier_hits.png"))
    return written


def main(argv=None):
    p = argparse.ArgumentParser(description="Plot a kvsim run file.")
    p.add_argument("run", help="run file written by kvsim (HDF5)")
    p.add_argument("--out", required=True, help="directory for the PNG files (created)")
    p.add_argument("--title", help="title prefix (default: file name)")
    args = p.parse_args(argv)
    if not os.path.exists(args.run):
        print(f"plot.py: {args.run}: no such file", file=sys.stderr)
        return 2
    for path in plot_all(args.run, args.out, args.title):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
