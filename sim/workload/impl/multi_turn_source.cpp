// Multi-turn conversations. Sessions start as a Poisson process at `rate`. Turn k+1's prompt is turn k's
// prompt, then turn k's answer (content = turn k's output_content_id, tokens = its output length), then
// new user tokens, so a prefix cache can reuse the history.
// think_from answer (default): turn k+1 is sent think_time after turn k ended (follow_up, called by the
// driver when a request ends; a rejected turn ends its session). Each session draws every turn's user
// tokens, output tokens and think time when it starts, in session order, so a conversation's content
// does not depend on when the engine finished its turns.
// think_from arrival: turn k+1 arrives think_time after turn k's arrival (open loop: it may arrive
// before the answer it re-sends exists). Turns are produced lazily from a heap of pending events keyed by
// (time, seq). Memory is bounded by the sessions in progress in both modes.
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

struct TurnDraws {
  int64_t user = 0, output = 0;
  double think_s = 0;  // before the next turn
};

struct Session {
  std::vector<Segment> history;  // prompt of the last turn, then its answer once known
  int64_t history_tokens = 0;
  int64_t turns_done = 0;
  std::vector<TurnDraws> draws;  // think_from answer: every turn's, drawn at the start
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
      if (config_.think_from_answer) {
        for (int64_t t = 0; t < config_.turns; ++t) {
          TurnDraws d;
          d.user = sample_tokens(config_.user_tokens, user_rng_);
          d.output = sample_tokens(config_.output_tokens, output_rng_);
          if (t + 1 < config_.turns) d.think_s = sample_seconds(config_.think_time, think_rng_);
          it->second.draws.push_back(d);
        }
        return turn(it, p.session, p.time);
      }
    }
    Session& s = it->second;
    const int64_t user = sample_tokens(config_.user_tokens, user_rng_);
    const int64_t output = sample_tokens(config_.output_tokens, output_rng_);
    RequestSpec r = make_turn(s, p.session, p.time, user, output);
    if (s.turns_done < config_.turns) {
      pending_.push(Pending{
          advance_clock(p.time, sample_seconds(config_.think_time, think_rng_), "workload.synthetic.think_time"),
          seq_++, p.session});
    } else {
      sessions_.erase(it);
    }
    return r;
  }

  std::optional<RequestSpec> follow_up(RequestId id, SimTime at, bool finished) override {
    if (!config_.think_from_answer) return std::nullopt;
    const auto w = waiting_.find(id.value());
    if (w == waiting_.end()) return std::nullopt;
    const int64_t session = w->second;
    waiting_.erase(w);
    auto it = sessions_.find(session);
    if (it == sessions_.end()) return std::nullopt;
    // A rejected turn ends its conversation: the client got no answer to continue from.
    if (!finished || (config_.num_requests > 0 && emitted_ >= config_.num_requests)) {
      sessions_.erase(it);
      return std::nullopt;
    }
    const double think = it->second.draws[static_cast<size_t>(it->second.turns_done - 1)].think_s;
    return turn(it, session, advance_clock(at, think, "workload.synthetic.think_time"));
  }

 private:
  // The session's next turn at `at` (`history` extended by the new user tokens); appends its answer to the
  // history when more turns follow.
  RequestSpec make_turn(Session& s, int64_t session, SimTime at, int64_t user, int64_t output) {
    RequestSpec r;
    r.id = RequestId(emitted_);
    r.arrival = at;
    r.session = std::to_string(session);
    r.session.insert(r.session.begin(), 's');  // "s<index>" (operator+ trips a GCC 12 -Wrestrict false positive)
    s.history.push_back(Segment{make_content_id(ContentNamespace::kUnique, static_cast<uint64_t>(emitted_)), user});
    s.history_tokens += user;
    r.prompt = s.history;
    r.prompt_tokens = s.history_tokens;
    r.output_tokens = output;
    r.output_content_id = make_content_id(ContentNamespace::kOutput, static_cast<uint64_t>(emitted_));
    ++emitted_;
    if (++s.turns_done < config_.turns) {
      s.history.push_back(Segment{r.output_content_id, r.output_tokens});
      s.history_tokens += r.output_tokens;
    }
    return r;
  }

  // think_from answer: the session's next turn from its draws; it waits for its answer when more follow.
  RequestSpec turn(std::map<int64_t, Session>::iterator it, int64_t session, SimTime at) {
    Session& s = it->second;
    const TurnDraws& d = s.draws[static_cast<size_t>(s.turns_done)];
    RequestSpec r = make_turn(s, session, at, d.user, d.output);
    if (s.turns_done < config_.turns)
      waiting_.emplace(r.id.value(), session);
    else
      sessions_.erase(it);
    return r;
  }

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
  std::map<int64_t, int64_t> waiting_;   // think_from answer: request id -> its session, until it ends
  int64_t started_ = 0;
  int64_t seq_ = 0;
  int64_t emitted_ = 0;
};

}  // namespace

std::unique_ptr<IRequestSource> make_multi_turn_source(const SyntheticConfig& config, RandomStreams& rng) {
  return std::make_unique<MultiTurnSource>(config, rng);
}

}  // namespace kvsim
