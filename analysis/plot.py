#!/usr/bin/env python3
"""Plots of one kvsim run file (HDF5, layout in sim/metrics/hdf5_writer.h).

    plot.py RUN.h5 --out DIR

Writes into DIR: ttft_cdf.png, e2e_cdf.png, concurrency.png, kv_usage.png, hit_rate.png.
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
