#!/usr/bin/python3
"""Grouped error table of `kvsim validate` on the validation sets.

    /usr/bin/python3 analysis/validation_report.py [--kvsim build/kvsim] [--jobs 2] [--out rows.csv]
        [--cache rows.jsonl] [--markdown] [--all] [--heldout] [FILE.csv ...] [-- VALIDATE OPTIONS]

The whole default set (2,248 rows with --all) takes about 9 minutes on two cores, the held-out split
about 2; --cache makes an interrupted run resume and a rerun with another output format instant.

Default files: models/latency/validation_{dense,moe,mla,sliding,hybrid}.csv (never the held-out
split under models/latency/heldout/ unless --heldout is given: nobody tunes on those rows).

For each file it
1. splits off the rows the current binary cannot simulate, with the reason: GPU not in
   models/hardware/, dtype not bf16/fp16/fp8/fp4, expert parallelism (ep > 1), attention data
   parallelism (dp > 1), pipeline parallelism (pp > 1), TP > 8 (several nodes or NVL72). `validate`
   before the `par` / `quant` branches reads none of the dp / ep / pp / kv_dtype / weight_dtype
   columns, so without this filter it would silently run an EP row as plain TP; `--all` turns the
   filter off for a binary that reads them (a GPU it lacks then makes validate refuse the file);
2. runs `kvsim validate` on the rest (in --jobs chunks, each a temporary CSV) and reads its
   per-row lines (predicted TTFT / TPOT, or "excluded: no request finished");
3. prints, per group (architecture, engine, GPU, concurrency band) and marginals, the median and
   p90 of the absolute relative error and the signed median, in %, for TTFT and TPOT.
Options after `--` go to `kvsim validate` unchanged (e.g. `-- --warmup-per-slot 0`).
"""
import argparse
import concurrent.futures as cf
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import pandas as pd

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GROUPS = ["dense", "moe", "mla", "sliding", "hybrid"]
DTYPES = {"bf16", "fp16", "fp8", "fp4"}
BANDS = [(1, 7, "c<8"), (8, 63, "c8-63"), (64, 127, "c64-127"), (128, 255, "c128-255"), (256, 10**9, "c>=256")]


def band(c):
    return next(name for lo, hi, name in BANDS if lo <= c <= hi)


def num(row, col, default=1):
    v = row.get(col)
    return default if v is None or pd.isna(v) or v == "" else int(v)


def why_not(row, gpus):
    """Reasons the current binary cannot simulate this row, '' if it can."""
    r = []
    if row["gpu"] not in gpus:
        r.append("GPU %s not in catalog" % row["gpu"])
    if str(row.get("dtype", "bf16")) not in DTYPES | {"nan"}:
        r.append("dtype %s" % row["dtype"])
    if num(row, "ep") > 1:
        r.append("EP")
    if num(row, "dp") > 1:
        r.append("attention DP")
    if num(row, "pp") > 1:
        r.append("PP")
    if int(row["tp"]) > 8:
        r.append("TP>8")
    if row.get("moe_tp", "") and num(row, "moe_tp") * num(row, "ep") != int(row["tp"]) * num(row, "dp"):
        r.append("moe_tp x ep != tp x dp")
    return ", ".join(r)


# The columns the current `validate` reads (sim/app/validate_command.cpp); the cache key uses only these
# unless --all (a newer binary may read more).
READ_BY_VALIDATE = ["model", "gpu", "tp", "isl", "osl", "concurrency", "ttft_ms", "tpot_ms", "engine", "dtype",
                    "max_num_batched_tokens", "max_num_seqs", "enable_chunked_prefill", "prefill_workers", "prefill_tp",
                    "decode_workers", "decode_tp", "topology", "max_prefill_tokens", "enable_mixed_chunk", "measured"]
LINE = re.compile(r"^(\d+)\s+\S+\s+\S+\s+\S+\s+\d+\s+\d+\s+\d+\s+\d+\s+(\S+)\s+(.*)$")


def run_validate(kvsim, df, extra):
    """Run validate on df (its own CSV). Returns ({position: (ttft, tpot) or None}, error or None)."""
    cols = [c for c in df.columns if not c.startswith("_")]
    # The file's '# protocol:' line travels with its rows (chunks never mix files), so validate runs
    # them under the protocol the file states unless `extra` overrides it.
    protocol = df["_protocol"].iloc[0] if "_protocol" in df.columns and len(df) else ""
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False, dir="/tmp") as f:
        if protocol:
            f.write(protocol + "\n")
        df[cols].to_csv(f, index=False)
        path = f.name
    first_row_line = 3 if protocol else 2
    try:
        p = subprocess.run([kvsim, "validate", path, *extra], cwd=REPO, capture_output=True, text=True)
    finally:
        os.unlink(path)
    out = {}
    for line in p.stdout.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        pos = int(m.group(1)) - first_row_line  # header on the line before
        rest = m.group(3).split()
        out[pos] = None if rest[0] == "excluded:" else (float(rest[0]), float(rest[3]))  # pred err% tpot pred err%
    if p.returncode != 0:
        msg = (p.stderr or p.stdout).strip().splitlines()
        return out, (msg[-1] if msg else "rc %d" % p.returncode).replace(path, "ROW")
    return out, None


def run_chunk(kvsim, df, extra):
    """{position: (ttft, tpot) | None | 'error text'}; a chunk that fails is rerun row by row so that
    one refused row (e.g. a model that does not fit) does not lose the others."""
    out, err = run_validate(kvsim, df, extra)
    if err is None:
        return out
    res = {}
    for i in range(len(df)):
        o, e = run_validate(kvsim, df.iloc[[i]].reset_index(drop=True), extra)
        res[i] = ("validate refused: " + e) if e else o.get(0)
    return res


def summary(df, keys):
    def q(s, p):
        return s.quantile(p) if len(s) else float("nan")

    rows = []
    for k, g in (df.groupby(keys[0] if len(keys) == 1 else keys) if keys else [("all", df)]):
        et, ep = g.ttft_err, g.tpot_err
        rows.append({**dict(zip(keys or ["group"], k if isinstance(k, tuple) else (k,))), "n": len(g),
                     "TTFT med": q(et.abs(), .5), "TTFT p90": q(et.abs(), .9), "TTFT signed": q(et, .5),
                     "TPOT med": q(ep.abs(), .5), "TPOT p90": q(ep.abs(), .9), "TPOT signed": q(ep, .5)})
    return pd.DataFrame(rows)


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*")
    ap.add_argument("--kvsim", default=os.path.join(REPO, "build/kvsim"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--chunk", type=int, default=40, help="rows per validate call")
    ap.add_argument("--out", help="write per-row predictions and errors here")
    ap.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    ap.add_argument("--cache", help="JSON-lines cache of simulated rows (resume an interrupted report)")
    ap.add_argument("--all", action="store_true", help="do not skip rows the current binary cannot simulate")
    ap.add_argument("--heldout", action="store_true", help="the held-out split instead of the default files")
    a = ap.parse_args(argv)
    d = "models/latency/heldout" if a.heldout else "models/latency"
    files = a.files or [os.path.join(d, "validation_%s.csv" % g) for g in GROUPS]
    gpus = {os.path.basename(p)[:-5] for p in glob.glob(os.path.join(REPO, "models/hardware/*.yaml"))}
    frames = []
    for f in files:
        df = pd.read_csv(os.path.join(REPO, f), comment="#", dtype=str, keep_default_na=False)
        df["_file"] = os.path.basename(f)
        with open(os.path.join(REPO, f)) as fh:
            df["_protocol"] = next((l.rstrip("\n") for l in fh if l.startswith("# protocol:")), "")
        m = re.search(r"validation_(\w+)\.csv$", f)
        df["_group"] = m.group(1) if m else os.path.basename(f)
        frames.append(df)
    all_rows = pd.concat(frames, ignore_index=True)
    all_rows["_why"] = "" if a.all else all_rows.apply(lambda r: why_not(r, gpus), axis=1)
    run = all_rows[all_rows._why == ""]
    chunks = [run.iloc[i:i + a.chunk] for i in range(0, len(run), a.chunk)]
    # Cache: one JSON line per simulated row, keyed by the row's CSV text, the validate options and the
    # binary's mtime, so an interrupted report resumes.
    stamp = "%s|%d|%s" % (a.kvsim, os.path.getmtime(a.kvsim), " ".join(extra))
    read = [c for c in READ_BY_VALIDATE if c in run.columns] if not a.all else [c for c in run.columns if c[0] != "_"]
    rowkey = lambda r: stamp + "|" + r["_protocol"] + "|" + ",".join(str(r[c]) for c in read)
    cache = {}
    if a.cache and os.path.exists(a.cache):
        with open(a.cache) as f:
            for line in f:
                k, v = json.loads(line)
                cache[k] = v
    pred = {i: cache[rowkey(r)] for i, r in run.iterrows() if rowkey(r) in cache}
    todo = run.drop(index=list(pred))
    chunks = [g.iloc[i:i + a.chunk] for _, g in todo.groupby("_file", sort=False) for i in range(0, len(g), a.chunk)]
    cf_out = open(a.cache, "a") if a.cache else None
    with cf.ThreadPoolExecutor(a.jobs) as ex:
        futs = {ex.submit(run_chunk, a.kvsim, c.reset_index(drop=True), extra): c for c in chunks}
        for fu in cf.as_completed(futs):
            c = futs[fu]
            for pos, v in fu.result().items():
                pred[c.index[pos]] = v
                if cf_out:
                    cf_out.write(json.dumps([rowkey(c.iloc[pos]), v]) + "\n")
            if cf_out:
                cf_out.flush()
            print("  %d / %d rows simulated" % (len(pred), len(run)), file=sys.stderr)
    ok = lambda v: isinstance(v, (list, tuple))
    all_rows["pred_ttft"] = [pred[i][0] if ok(pred.get(i)) else float("nan") for i in all_rows.index]
    all_rows["pred_tpot"] = [pred[i][1] if ok(pred.get(i)) else float("nan") for i in all_rows.index]
    for i in run.index:
        v = pred.get(i, "no output line")
        if not ok(v):
            all_rows.loc[i, "_why"] = v if isinstance(v, str) else "no request finished"
    for c in ["ttft_ms", "tpot_ms", "concurrency"]:
        all_rows[c] = pd.to_numeric(all_rows[c])
    all_rows["ttft_err"] = (all_rows.pred_ttft - all_rows.ttft_ms) / all_rows.ttft_ms * 100
    all_rows["tpot_err"] = (all_rows.pred_tpot - all_rows.tpot_ms) / all_rows.tpot_ms * 100
    all_rows["band"] = all_rows.concurrency.map(band)
    if a.out:
        all_rows.drop(columns=["source"]).to_csv(a.out, index=False)
    ok = all_rows[all_rows._why == ""].rename(columns={"_group": "arch"})
    print("validate options: %s; files: %s" % (" ".join(extra) or "(defaults)", " ".join(files)))
    print("\nrows not simulated, by reason:")
    why = all_rows._why.str.replace(r"validate refused: (kvsim: )?(error: )?ROW:\d+: (validation point line \d+: )?", "refused: ", regex=True).str.slice(0, 110)
    why = why.str.replace(r"\d+\.\d+ GiB", "N GiB", regex=True).str.replace(r"--tp \d+", "--tp N", regex=True)
    print(all_rows[why != ""].groupby([all_rows._group, why]).size().to_string() if (why != "").any() else "  none")
    def fmt(t):
        if not a.markdown:
            return t.to_string(index=False, float_format=lambda x: "%.1f" % x)
        cell = lambda x: "%.1f" % x if isinstance(x, float) else str(x)
        lines = ["| " + " | ".join(t.columns) + " |", "|" + "---|" * len(t.columns)]
        lines += ["| " + " | ".join(cell(x) for x in row) + " |" for row in t.itertuples(index=False)]
        return "\n".join(lines)
    print("\nabsolute relative error (%): median, p90; signed median (predicted - measured)")
    for keys in [["arch"], ["arch", "engine"], ["arch", "gpu"], ["arch", "band"], ["engine"], ["gpu"], ["band"],
                 ["arch", "engine", "gpu", "band"], []]:
        print("\n" + fmt(summary(ok, keys)))


if __name__ == "__main__":
    main()
