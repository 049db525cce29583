#pragma once
// Text outputs that follow the run as it goes, as IRunStreams (records stream to them in chunks; nothing
// is kept in memory):
//  - CsvRequestStream: one line per request (the /requests columns, times in seconds, empty for a time
//    never reached), in the order requests leave the engine.
//  - TraceEventStream: a Chrome / Perfetto trace (the JSON "Trace Event Format", open it in
//    ui.perfetto.dev or chrome://tracing): one process per instance; thread 0 has a complete event ("X")
//    per step with its tokens and batch, thread 1 an async span ("b" / "e") per request from arrival to
//    finish with an instant at its first token. Times in microseconds of simulated time.
// Both write "<path>.tmp" and rename it in commit(); a stream destroyed uncommitted removes it.
// TeeStream forwards every chunk to several streams.
#include <cstdio>
#include <string>
#include <vector>

#include "sim/metrics/run_collector.h"

namespace kvsim {

class TextFileStream : public IRunStream {
 public:
  explicit TextFileStream(std::string path);
  ~TextFileStream() override;
  TextFileStream(const TextFileStream&) = delete;
  TextFileStream& operator=(const TextFileStream&) = delete;
  // Writes the closing text, closes and renames the file (OutputError naming the path on failure).
  void commit();
  void write_requests(const std::vector<RequestRow>&, const std::vector<int64_t>&,
                      const std::vector<int64_t>&) override {}
  void write_steps(const std::vector<StepRecord>&) override {}
  void write_samples(const TimeSeries&, const InstanceSeries&) override {}

 protected:
  void put(const std::string& text);
  virtual std::string closing() const { return ""; }

 private:
  std::string path_;
  std::string tmp_;
  std::FILE* f_ = nullptr;
  bool committed_ = false;
};

class CsvRequestStream final : public TextFileStream {
 public:
  explicit CsvRequestStream(const std::string& path);
  void write_requests(const std::vector<RequestRow>& rows, const std::vector<int64_t>& positions,
                      const std::vector<int64_t>& offsets) override;
};

class TraceEventStream final : public TextFileStream {
 public:
  explicit TraceEventStream(const std::string& path);
  void write_requests(const std::vector<RequestRow>& rows, const std::vector<int64_t>& positions,
                      const std::vector<int64_t>& offsets) override;
  void write_steps(const std::vector<StepRecord>& steps) override;

 private:
  std::string closing() const override { return "\n]}\n"; }
  void event(const std::string& json);
  bool first_ = true;
};

class TeeStream final : public IRunStream {
 public:
  void add(IRunStream* s) { streams_.push_back(s); }
  bool empty() const { return streams_.empty(); }
  void write_requests(const std::vector<RequestRow>& rows, const std::vector<int64_t>& positions,
                      const std::vector<int64_t>& offsets) override {
    for (IRunStream* s : streams_) s->write_requests(rows, positions, offsets);
  }
  void write_steps(const std::vector<StepRecord>& steps) override {
    for (IRunStream* s : streams_) s->write_steps(steps);
  }
  void write_samples(const TimeSeries& series, const InstanceSeries& per_instance) override {
    for (IRunStream* s : streams_) s->write_samples(series, per_instance);
  }
  void write_transfers(const std::vector<TransferRecord>& rows) override {
    for (IRunStream* s : streams_) s->write_transfers(rows);
  }
  void write_link_samples(const std::vector<LinkSample>& rows) override {
    for (IRunStream* s : streams_) s->write_link_samples(rows);
  }

 private:
  std::vector<IRunStream*> streams_;  // not owned
};

}  // namespace kvsim
