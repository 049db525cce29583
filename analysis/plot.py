#!/usr/bin/env python3
"""Plots of one kvsim run file (HDF5, layout in sim/metrics/hdf5_writer.h).

    plot.py RUN.h5 --out DIR

Writes into DIR: ttft_cdf.png, e2e_cdf.png, concurrency.png, kv_usage.png, hit_rate.png and, for a run
with several instances (a cluster), instance_load.png (running + waiting and KV usage per instance over
time) and instance_hit_rate.png (token hit rate per instance, coloured by pool).
"""
import argparse
import os
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


def cdf(ax, values, label):
    v = np.sort(np.asarray(values, dtype=float))
    v = v[~np.isnan(v)]
    if len(v) == 0:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
        return
    y = np.arange(1, len(v) + 1) / len(v)
    ax.step(v, y, where="post", label=label)
    for q in (0.5, 0.9, 0.99):
        ax.axhline(q, color="grey", lw=0.5, ls=":")
    ax.set_ylim(0, 1.0)
    ax.set_ylabel("fraction of requests")
    ax.grid(True, alpha=0.3)


def save(fig, out, name):
    path = os.path.join(out, name)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_all(path, out, title=None):
    requests, ts, meta, _ = read_run(path)
    title = title or os.path.basename(path)
    os.makedirs(out, exist_ok=True)
    written = []
    done = requests[requests["finished"] == 1] if "finished" in requests else requests

    for name, start, end, label in (
        ("ttft_cdf.png", "arrival_s", "first_token_s", "TTFT (ms)"),
        ("e2e_cdf.png", "arrival_s", "finish_s", "E2E latency (ms)"),
    ):
        fig, ax = plt.subplots(figsize=(6, 4))
        values = (done[end] - done[start]) * 1e3 if len(done) else []
        cdf(ax, values, label)
        ax.set_xlabel(label)
        ax.set_title(f"{title}: {label.split(' (')[0]} CDF")
        written.append(save(fig, out, name))

    fig, ax = plt.subplots(figsize=(7, 4))
    if len(ts):
        ax.step(ts["time_s"], ts["concurrency"], where="post", label="in flight (arrival..finish)")
        ax.step(ts["time_s"], ts["running"], where="post", label="running")
        ax.step(ts["time_s"], ts["waiting"], where="post", label="waiting")
        ax.legend()
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("requests")
    ax.set_title(f"{title}: concurrency")
    ax.grid(True, alpha=0.3)
    written.append(save(fig, out, "concurrency.png"))

    fig, ax = plt.subplots(figsize=(7, 4))
    if len(ts):
        ax.step(ts["time_s"], ts["kv_blocks_used"], where="post", label="KV blocks used")
        ax.legend()
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("blocks")
    ax.set_title(f"{title}: KV cache usage")
    ax.grid(True, alpha=0.3)
    written.append(save(fig, out, "kv_usage.png"))

    fig, ax = plt.subplots(figsize=(7, 4))
    if len(requests):
        prompt = requests["prompt_tokens"].astype(float)
        rate = np.where(prompt > 0, requests["cached_tokens"] / prompt.where(prompt > 0, 1.0), np.nan)
        ax.scatter(requests["arrival_s"], rate, s=4, alpha=0.5)
        total = requests["cached_tokens"].sum() / max(prompt.sum(), 1.0)
        ax.axhline(total, color="C1", lw=1, label=f"token hit rate {total:.1%}")
        ax.legend()
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("arrival time (s)")
    ax.set_ylabel("cached / prompt tokens")
    ax.set_title(f"{title}: prefix-cache hit rate per request")
    ax.grid(True, alpha=0.3)
    written.append(save(fig, out, "hit_rate.png"))

    per_instance, pool_names = read_instances(path)
    if len(per_instance) and per_instance["instance"].nunique() > 1:
        written += plot_instances(requests, per_instance, pool_names, title, out)
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
