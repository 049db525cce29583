#!/usr/bin/env python3
"""Plots and a one-page HTML report of a kvsim sweep folder (kvsim sweep --out DIR).

    compare.py SWEEP_DIR [--x AXIS] [--by AXIS] [--y FIGURE ...] [--where AXIS=VALUE ...] [--out DIR]

Reads SWEEP_DIR/table.csv (written by kvsim sweep / kvsim sweep merge; columns documented in
sim/sweep/sweep_table.h) and SWEEP_DIR/sweep.json (which columns are axes). For each figure it writes
<figure>_vs_<x>.png: the figure against axis --x, one line per value of axis --by (and per value of
any other varied axis, so that settings are never mixed; --where picks one). Points that differ only
in their repeat are averaged (the band shows their min..max). Failed and missing points are left
out of the plots and shown in the table. report.html puts the plots and the whole table on one page.

Defaults: --x the first key-path axis with more than one value, --by the next varied axis or the
variant (none if there is no other),
--y token_hit_rate, block_hit_rate, ttft_ms.p50, ttft_ms.p99, tpot_ms.p50, output_tokens_per_s,
peak_kv_usage, preemptions; --out SWEEP_DIR/report. --where keeps only the points whose axis has
that value (as table.csv writes it), e.g. --where variant=quarter-rate; the report's table keeps them all.
"""
import argparse
import csv
import html
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

DEFAULT_FIGURES = ["token_hit_rate", "block_hit_rate", "ttft_ms.p50", "ttft_ms.p99", "tpot_ms.p50",
                   "output_tokens_per_s", "peak_kv_usage", "preemptions"]


def read_sweep(folder):
    """(axis columns, table header, rows as dicts) of a sweep folder."""
    with open(os.path.join(folder, "sweep.json")) as f:
        axes = json.load(f)["columns"]
    with open(os.path.join(folder, "table.csv"), newline="") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames
        rows = list(reader)
    return axes, header, rows


def as_number(s):
    try:
        v = float(s)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def ordered_values(rows, column):
    """Distinct values of a column in point order; numeric columns sorted by value."""
    seen = []
    for r in rows:
        if r[column] not in seen:
            seen.append(r[column])
    if all(as_number(v) is not None for v in seen):
        seen.sort(key=as_number)
    return seen


def series_of(rows, columns):
    """Distinct value tuples of `columns` in the order of their ordered values (one line each)."""
    combos = [()]
    for c in columns:
        combos = [t + (v,) for t in combos for v in ordered_values(rows, c)]
    present = {tuple(r[c] for c in columns) for r in rows}
    return [t for t in combos if t in present]


def plot_figure(rows, figure, x, lines, path, title):
    """One line per value tuple of the axes in `lines` (--by, then any other varied axis), so that
    only points that differ in their repeat are averaged."""
    xs = ordered_values(rows, x)
    numeric_x = all(as_number(v) is not None for v in xs)
    groups = series_of(rows, lines)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    drawn = []
    for g in groups:
        px, mean, lo, hi = [], [], [], []
        for i, xv in enumerate(xs):
            vals = [as_number(r[figure]) for r in rows
                    if r[x] == xv and tuple(r[c] for c in lines) == g and r["status"] == "ok"]
            vals = [v for v in vals if v is not None]
            if not vals:
                continue
            px.append(as_number(xv) if numeric_x else i)
            mean.append(sum(vals) / len(vals))
            lo.append(min(vals))
            hi.append(max(vals))
        if not px:
            continue
        label = ", ".join(f"{c}={v}" for c, v in zip(lines, g)) if lines else None
        line, = ax.plot(px, mean, marker="o", label=label)
        drawn.append(label or figure)
        if any(h > l for h, l in zip(hi, lo)):
            ax.fill_between(px, lo, hi, color=line.get_color(), alpha=0.2)
    if numeric_x:
        nums = [as_number(v) for v in xs]
        if min(nums) > 0 and max(nums) / min(nums) >= 16:
            ax.set_xscale("log", base=2)
            ax.set_xticks(nums)
            ax.set_xticklabels(xs)
    else:
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels(xs, rotation=20)
    ax.set_xlabel(x)
    ax.set_ylabel(figure)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if lines:
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return drawn


def file_name(figure, x):
    safe = lambda s: "".join(c if c.isalnum() or c in "-_." else "_" for c in s)  # noqa: E731
    return f"{safe(figure)}_vs_{safe(x)}.png"


def write_report(out, name, images, header, rows):
    cells = lambda r: "".join(f"<td>{html.escape(r.get(h, '') or '')}</td>" for h in header)  # noqa: E731
    table = ("<table><thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr></thead><tbody>" +
             "".join(f"<tr class='{html.escape(r['status'])}'>{cells(r)}</tr>" for r in rows) + "</tbody></table>")
    figs = "".join(f"<figure><img src='{html.escape(i)}' alt='{html.escape(i)}'>"
                   f"<figcaption>lines: {html.escape('; '.join(lines))}</figcaption></figure>" for i, lines in images)
    page = f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>kvsim sweep {html.escape(name)}</title>
<style>
body {{ font-family: sans-serif; margin: 1em; }}
figure {{ display: inline-block; margin: 0.3em; vertical-align: top; }}
figcaption {{ font-size: 11px; max-width: 480px; }}
img {{ width: 480px; }}
table {{ border-collapse: collapse; font-size: 11px; }}
td, th {{ border: 1px solid #ccc; padding: 2px 4px; text-align: right; white-space: nowrap; }}
tr.failed, tr.missing {{ background: #fdd; }}
#image-check.bad {{ color: #b00; font-weight: bold; }}
</style></head>
<body data-images="{len(images)}">
<h1>kvsim sweep {html.escape(name)}</h1>
<p>{len(rows)} points: {sum(r['status'] == 'ok' for r in rows)} ok,
{sum(r['status'] == 'failed' for r in rows)} failed, {sum(r['status'] == 'missing' for r in rows)} missing.
<span id="image-check"></span></p>
{figs}
<h2>Table</h2>
{table}
<script>
// Reports whether every plot loaded (a moved or missing PNG shows here; tests read it).
window.addEventListener("load", function () {{
  var imgs = document.images, ok = 0;
  for (var i = 0; i < imgs.length; i++) if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++;
  var el = document.getElementById("image-check");
  el.textContent = ok + " of " + imgs.length + " plots loaded";
  el.className = ok === imgs.length ? "good" : "bad";
  document.body.setAttribute("data-images-loaded", ok + "/" + imgs.length);
}});
</script>
</body></html>
"""
    with open(os.path.join(out, "report.html"), "w") as f:
        f.write(page)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("sweep_dir")
    p.add_argument("--x", help="axis on the x axis (default: the first key-path axis with more than one value)")
    p.add_argument("--by", help="axis with one line per value (default: the next axis; 'none' for no --by axis: "
                                "other varied axes still split the lines, --where keeps one value)")
    p.add_argument("--y", nargs="+", help="figures (table columns) to plot")
    p.add_argument("--where", nargs="+", default=[], metavar="AXIS=VALUE",
                   help="plot only the points whose axis has this value")
    p.add_argument("--out", help="output folder (default: SWEEP_DIR/report)")
    a = p.parse_args(argv)
    axes, header, all_rows = read_sweep(a.sweep_dir)
    rows = all_rows
    for w in a.where:
        column, eq, value = w.partition("=")
        if not eq or column not in header:
            p.error(f"--where: {w!r} is not AXIS=VALUE with a column of table.csv (axes: {', '.join(axes) or 'none'})")
        rows = [r for r in rows if r[column] == value]
        if not rows:
            p.error(f"--where: no point has {column} = {value!r}")
    varied = [c for c in axes if c != "repeat" and len(ordered_values(rows, c)) > 1]
    keys = [c for c in varied if c != "variant"]
    x = a.x or (keys[0] if keys else (varied[0] if varied else (axes[0] if axes else "point")))
    if x not in header:
        p.error(f"--x: no column {x!r} (axes: {', '.join(axes) or 'none'})")
    by = a.by if a.by is not None else next((c for c in varied if c != x), None)
    if by == "none":
        by = None
    if by is not None and by not in header:
        p.error(f"--by: no column {by!r} (axes: {', '.join(axes) or 'none'})")
    # Every other varied axis splits the lines too: averaging over it would mix settings as if repeats.
    lines = ([by] if by else []) + [c for c in varied if c not in (x, by)]
    figures = a.y or [f for f in DEFAULT_FIGURES if f in header]
    for f in figures:
        if f not in header:
            p.error(f"--y: no column {f!r} in table.csv")
    out = a.out or os.path.join(a.sweep_dir, "report")
    os.makedirs(out, exist_ok=True)
    name = os.path.basename(os.path.normpath(a.sweep_dir))
    images = []
    for f in figures:
        image = file_name(f, x)
        images.append((image, plot_figure(rows, f, x, lines, os.path.join(out, image), f"{name}: {f}")))
    write_report(out, name, images, header, all_rows)
    print(f"report: {os.path.join(out, 'report.html')} ({len(images)} plots, {len(all_rows)} points)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
