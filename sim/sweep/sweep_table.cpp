#include "sim/sweep/sweep_table.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "sim/core/errors.h"
#include "sim/metrics/table_writer.h"
#include "sim/sweep/point_result.h"
#include "sim/sweep/sweep_folder.h"

namespace kvsim {
namespace {

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string csv_number(double v) {
  if (!std::isfinite(v)) return "";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

}  // namespace

SweepTableReport merge_sweep(const std::string& dir) {
  const SweepManifest m = read_manifest(dir);
  const std::vector<std::string>& figures = sweep_figure_names();
  SweepTableReport report;
  report.points = static_cast<int>(m.points.size());

  std::vector<TableColumn> cols;
  const auto text_col = [&](const std::string& name) {
    cols.push_back(TableColumn{name, true, {}, {}});
    return cols.size() - 1;
  };
  const auto number_col = [&](const std::string& name) {
    cols.push_back(TableColumn{name, false, {}, {}});
    return cols.size() - 1;
  };
  const size_t c_point = number_col("point");
  const size_t c_axes = cols.size();
  for (const std::string& c : m.columns) text_col(c);
  const size_t c_seed = text_col("seed");
  const size_t c_status = text_col("status");
  const size_t c_fig = cols.size();
  for (const std::string& f : figures) number_col(f);
  const size_t c_fp = text_col("fingerprint");
  const size_t c_error = text_col("error");

  std::string walls = "point,status,wall_s\n";
  for (const ManifestPoint& p : m.points) {
    PointResult r;
    std::string status = "missing";
    if (std::filesystem::exists(point_file(dir, p.index))) {
      r = read_point_result(point_file(dir, p.index));
      status = "ok";
    } else if (std::filesystem::exists(failed_point_file(dir, p.index))) {
      r = read_point_result(failed_point_file(dir, p.index));
      status = "failed";
    }
    if (status != "missing" && (r.index != p.index || r.key != p.key))
      throw InputError(point_file(dir, p.index) + ": belongs to another point (" + r.key + ")");
    report.ok += status == "ok";
    report.failed += status == "failed";
    report.missing += status == "missing";
    cols[c_point].numbers.push_back(p.index);
    for (size_t i = 0; i < m.columns.size(); ++i) cols[c_axes + i].strings.push_back(p.values[i]);
    cols[c_seed].strings.push_back(std::to_string(p.seed));
    cols[c_status].strings.push_back(status);
    for (size_t i = 0; i < figures.size(); ++i) {
      double v = std::nan("");
      if (status == "ok") {
        if (i >= r.figures.size() || r.figures[i].first != figures[i])
          throw InputError(point_file(dir, p.index) + ": figures: not this kvsim version's (" + figures[i] +
                           " expected); rerun the point");
        v = r.figures[i].second;
      }
      cols[c_fig + i].numbers.push_back(v);
    }
    cols[c_fp].strings.push_back(r.fingerprint);
    cols[c_error].strings.push_back(r.error);
    if (status != "missing") walls += std::to_string(p.index) + "," + status + "," + csv_number(r.wall_s) + "\n";
  }

  std::string csv;
  for (size_t c = 0; c < cols.size(); ++c) csv += (c ? "," : "") + csv_cell(cols[c].name);
  csv += "\n";
  for (size_t row = 0; row < m.points.size(); ++row) {
    for (size_t c = 0; c < cols.size(); ++c) {
      if (c) csv += ",";
      csv += cols[c].text ? csv_cell(cols[c].strings[row]) : csv_number(cols[c].numbers[row]);
    }
    csv += "\n";
  }
  const std::filesystem::path d(dir);
  report.csv_path = (d / "table.csv").string();
  report.hdf5_path = (d / "table.h5").string();
  write_file_atomically(report.csv_path, csv);
  write_file_atomically((d / "wall_times.csv").string(), walls);
  try {
    write_table_hdf5(report.hdf5_path, cols, unique_tmp_tag());
  } catch (const std::runtime_error& e) {
    throw InputError(e.what());
  }
  return report;
}

}  // namespace kvsim
