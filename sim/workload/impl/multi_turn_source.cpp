// Multi-turn conversations. Sessions start as a Poisson process at `rate`; turn k+1 of a session
// arrives think_time after turn k's arrival (open loop: the source cannot see completions). Turn
// k+1's prompt is turn k's prompt, then turn k's answer (content = turn k's output_content_id,
// tokens = its output length), then new user tokens, so a prefix cache can reuse the history.
// Turns are produced lazily from a heap of pending events keyed by (time, seq); memory is bounded
// by the sessions in progress.
#include <map>
#include <queue>
#include <vector>

#include "sim/workload/content_ids.h"
#include "sim/workload/impl/dist_sampling.h"
#include "sim/workload/impl/synthetic_sources.h"

namespace kvsim {
namespace {

struct Pending {
  SimTime time;
  int64_t seq;      // insertion counter: ties in time go first-scheduled first
  int64_t session;  // session index
  bool operator>(const Pending& o) const { return time != o.time ? time > o.time : seq > o.seq; }
};

struct Session {
  std::vector<Segment> history;  // prompt of the last turn, then its answer once known
  int64_t history_tokens = 0;
  int64_t turns_done = 0;
};

class MultiTurnSource final : public IRequestSource {
 public:
  MultiTurnSource(const SyntheticConfig& c, RandomStreams& rng)
      : config_(c),
        starts_(false, c.rate, 1.0, rng.stream("workload/arrivals")),
        think_rng_(rng.stream("workload/think_time")),
        user_rng_(rng.stream("workload/user_tokens")),
        output_rng_(rng.stream("workload/output_tokens")) {
    schedule_session_start();
  }

  std::optional<RequestSpec> next() override {
    if (pending_.empty() || (config_.num_requests > 0 && emitted_ >= config_.num_requests)) return std::nullopt;
    const Pending p = pending_.top();
    pending_.pop();
    auto it = sessions_.find(p.session);
    if (it == sessions_.end()) {
      it = sessions_.emplace(p.session, Session{}).first;
      if (config_.system_prompt_tokens > 0) {
        it->second.history.push_back(
            Segment{make_content_id(ContentNamespace::kSystemPrompt, 0), config_.system_prompt_tokens});
        it->second.history_tokens = config_.system_prompt_tokens;
      }
      schedule_session_start();
    }
    Session& s = it->second;
    RequestSpec r;
    r.id = RequestId(emitted_);
    r.arrival = p.time;
    r.session = std::to_string(p.session);
    r.session.insert(r.session.begin(), 's');  // "s<index>" (operator+ trips a GCC 12 -Wrestrict false positive)
    const int64_t user = sample_tokens(config_.user_tokens, user_rng_);
    s.history.push_back(Segment{make_content_id(ContentNamespace::kUnique, static_cast<uint64_t>(emitted_)), user});
    s.history_tokens += user;
    r.prompt = s.history;
    r.prompt_tokens = s.history_tokens;
    r.output_tokens = sample_tokens(config_.output_tokens, output_rng_);
    r.output_content_id = make_content_id(ContentNamespace::kOutput, static_cast<uint64_t>(emitted_));
    ++emitted_;
    if (++s.turns_done < config_.turns) {
      s.history.push_back(Segment{r.output_content_id, r.output_tokens});
      s.history_tokens += r.output_tokens;
      pending_.push(Pending{
          advance_clock(p.time, sample_seconds(config_.think_time, think_rng_), "workload.synthetic.think_time"),
          seq_++, p.session});
    } else {
      sessions_.erase(it);
    }
    return r;
  }

 private:
  // Puts the next session's first turn on the heap, unless the session count or duration is used up.
  void schedule_session_start() {
    if (config_.sessions > 0 && started_ >= config_.sessions) return;
    const SimTime t = starts_.next();
    if (config_.duration > 0.0 && t > SimTime::zero() + duration_from_seconds(config_.duration)) return;
    pending_.push(Pending{t, seq_++, started_++});
  }

  SyntheticConfig config_;
  ArrivalProcess starts_;
  RandomStream& think_rng_;
  RandomStream& user_rng_;
  RandomStream& output_rng_;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<Pending>> pending_;
  std::map<int64_t, Session> sessions_;  // sessions in progress, by index
  int64_t started_ = 0;
  int64_t seq_ = 0;
  int64_t emitted_ = 0;
};

}  // namespace

std::unique_ptr<IRequestSource> make_multi_turn_source(const SyntheticConfig& config, RandomStreams& rng) {
  return std::make_unique<MultiTurnSource>(config, rng);
}

}  // namespace kvsim
