#!/usr/bin/env python3
"""Read a kvsim run file (HDF5, layout in sim/metrics/hdf5_writer.h) into pandas DataFrames.

    from runfile import read_run
    run = read_run("runs/a.h5")
    run.requests            # one row per request, sorted by request id
    run.steps, run.timeseries, run.per_instance
    run.summary             # the summary JSON as a dict; run.meta: /meta attributes

kvsim writes /requests in the order requests leave the engine; read_requests() sorts them by id and
decodes miss_cause and pool to their names (columns miss_cause_name, pool_name). Saved-state
positions (variable length) come as a list per request in saved_state_positions.

Command line: runfile.py RUN.h5 [--csv DIR] prints the shape of each table, or writes them as CSV.
"""
import argparse
import json
import os
import sys
from collections import namedtuple

import h5py
import numpy as np
import pandas as pd

Run = namedtuple("Run", "requests steps timeseries per_instance summary meta")


def _text(v):
    return v.decode() if isinstance(v, bytes) else v


def _columns(group):
    return {k: group[k][()] for k in group if isinstance(group[k], h5py.Dataset) and group[k].ndim == 1}


def read_requests(f):
    g = f["requests"]
    cols = _columns(g)
    positions = cols.pop("saved_state_positions", np.array([], dtype=np.int64))
    offsets = cols.pop("saved_state_offsets", np.array([0], dtype=np.int64))
    df = pd.DataFrame(cols)
    df["saved_state_positions"] = [list(positions[offsets[i]:offsets[i + 1]]) for i in range(len(df))]
    for col, name in (("miss_cause", "miss_cause_name"), ("pool", "pool_name")):
        if col in g and "names" in g[col].attrs:
            names = _text(g[col].attrs["names"]).split(",")
            df[name] = [names[int(v)] if 0 <= int(v) < len(names) else str(v) for v in df[col]]
    return df.sort_values("id", kind="stable").reset_index(drop=True)


def read_run(path):
    with h5py.File(path, "r") as f:
        requests = read_requests(f)
        steps = pd.DataFrame(_columns(f["steps"])) if "steps" in f else pd.DataFrame()
        ts = f["timeseries"] if "timeseries" in f else None
        timeseries = pd.DataFrame(_columns(ts)) if ts is not None else pd.DataFrame()
        per_instance = pd.DataFrame(_columns(ts["per_instance"])) if ts is not None and "per_instance" in ts else pd.DataFrame()
        summary = json.loads(_text(f["summary"].attrs["json"])) if "summary" in f else {}
        meta = {k: _text(v) for k, v in f["meta"].attrs.items()} if "meta" in f else {}
    return Run(requests, steps, timeseries, per_instance, summary, meta)


def main(argv=None):
    p = argparse.ArgumentParser(description="Read a kvsim run file into DataFrames.")
    p.add_argument("run", help="run file written by kvsim (HDF5)")
    p.add_argument("--csv", help="write requests.csv, steps.csv, timeseries.csv, per_instance.csv into this directory")
    args = p.parse_args(argv)
    if not os.path.exists(args.run):
        print(f"runfile.py: {args.run}: no such file", file=sys.stderr)
        return 2
    run = read_run(args.run)
    tables = {"requests": run.requests, "steps": run.steps, "timeseries": run.timeseries,
              "per_instance": run.per_instance}
    for name, df in tables.items():
        if args.csv:
            os.makedirs(args.csv, exist_ok=True)
            out = df.drop(columns=["saved_state_positions"], errors="ignore")
            out.to_csv(os.path.join(args.csv, name + ".csv"), index=False)
        print(f"{name}: {len(df)} rows, {len(df.columns)} columns")
    print(f"complete: {run.meta.get('complete', 1)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
