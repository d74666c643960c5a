// The cluster timeline: what the recorder keeps from the first application
// of each entry and from the nodes' roles, and its drawing on the canvas
// that simple mode's timeline uses too (sim/core/timeline_svg.hpp). The node rows
// come first (a bar per term led, coloured by term; a grey bar while down),
// then the key rows: the pale tail of a hold is a lease over whose Expire was
// not yet applied, since in cluster mode a key is held until then.
#include "sim/cluster/timeline.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "impl/raft/bugs.hpp"
#include "sim/core/timeline_svg.hpp"

namespace lockstep::sim {

namespace {

bool answered(const cluster::Applied& applied, ResponseKind kind, const std::string& owner, const std::string& key) {
  for (const auto& out : applied.responses) {
    if (out.response.kind == kind && out.response.owner == owner && out.response.key == key) return true;
  }
  return false;
}

}  // namespace

ClusterTimelineRecorder::ClusterTimelineRecorder(std::uint32_t nodes) : nodes_(nodes), node_tracks_(nodes + 1) {}

void ClusterTimelineRecorder::after_command(raft::NodeId node, raft::Index index, const cluster::Command& command,
                                            const cluster::LockMachine& machine, const cluster::Applied& applied,
                                            TimeMs now) {
  if (index > applied_) {
    applied_ = index;
    first_ = node;
  } else if (index < applied_ || node != first_) {
    return;  // applied before elsewhere: drawn then
  }
  if (const auto* key = cluster::command_key(command)) {
    update_key(*key, command, machine, applied, now);
    return;
  }
  // A Close may drop waiters of any key.
  std::vector<std::string> keys;
  for (const auto& [key, track] : tracks_) {
    if (!track.waiting.empty()) keys.push_back(key);
  }
  for (const auto& key : keys) update_key(key, command, machine, applied, now);
}

void ClusterTimelineRecorder::update_key(const std::string& key, const cluster::Command& command,
                                         const cluster::LockMachine& machine, const cluster::Applied& applied,
                                         TimeMs now) {
  Track& track = tracks_[key];
  // Whether anything changed: a bar or mark added, or a waiter joined.
  const auto drawn = bars_.size() + marks_.size();
  const auto waiting = track.waiting.size();
  const auto found = machine.keys().find(key);
  const cluster::LockMachine::KeyState* view = found != machine.keys().end() ? &found->second : nullptr;
  const bool by_release = std::holds_alternative<cluster::Release>(command);
  const bool by_expire = std::holds_alternative<cluster::Expire>(command);
  const bool ended = track.held && (view == nullptr || view->token != track.token);
  if (ended) {
    const char* how = by_release ? "released" : by_expire ? "expired" : "ended";
    bars_.push_back({key, true, track.start, now, track.owner, track.token, how, track.expiry});
    if (by_expire) marks_.push_back({key, now, view != nullptr ? "expire-handoff" : "expire-delete"});
    track.held = false;
  }
  if (view != nullptr && !track.held) {
    if (!ended) {
      marks_.push_back({key, now, "grant"});
    } else if (!by_expire) {
      marks_.push_back({key, now, "handoff"});
    }
    track.held = true;
    track.owner = view->owner;
    track.token = view->token;
    track.start = now;
    track.expiry = view->expiry;
  }
  // Waiters: who left the queue, and how; who joined it.
  for (auto it = track.waiting.begin(); it != track.waiting.end();) {
    if (view != nullptr && view->queue.contains(it->first)) {
      ++it;
      continue;
    }
    const Waiting& w = it->second;
    std::string how = "dropped";
    if (answered(applied, ResponseKind::timed_out, w.owner, key)) {
      how = "timeout";
      marks_.push_back({key, now, "timeout"});
    } else if (answered(applied, ResponseKind::granted, w.owner, key)) {
      how = "served";
    }
    bars_.push_back({key, false, w.start, now, w.owner, {}, how, w.deadline});
    it = track.waiting.erase(it);
  }
  if (view != nullptr) {
    for (const auto& [id, waiter] : view->queue) {
      if (!track.waiting.contains(id)) track.waiting.emplace(id, Waiting{waiter.owner, now, waiter.deadline});
    }
  }
  if (bars_.size() + marks_.size() != drawn || track.waiting.size() != waiting) last_change_ = now;
  if (view == nullptr && track.waiting.empty()) tracks_.erase(key);
}

void ClusterTimelineRecorder::node_state(raft::NodeId id, bool alive, raft::Term leads, TimeMs now) {
  NodeTrack& t = node_tracks_[id];
  if (t.term != leads) {
    if (t.term != 0) leaders_.push_back({id, t.term, t.since, now});
    t.term = leads;
    t.since = now;
  }
  if (t.down == alive) {
    if (t.down) downs_.push_back({id, t.down_since, now});
    t.down = !alive;
    t.down_since = now;
  }
}

void ClusterTimelineRecorder::finish(TimeMs at) {
  for (auto& [key, track] : tracks_) {
    if (track.held) bars_.push_back({key, true, track.start, at, track.owner, track.token, "end", track.expiry});
    for (const auto& [id, w] : track.waiting) bars_.push_back({key, false, w.start, at, w.owner, {}, "end", w.deadline});
  }
  tracks_.clear();
  for (raft::NodeId id = 1; id <= nodes_; ++id) {
    node_state(id, true, 0, at);
  }
}

std::string render_cluster_svg(const ClusterTimelineRecorder& recorder, const ClusterSimParams& params, TimeMs end,
                               std::size_t keys_max) {
  using svg::TimelineCanvas;
  const auto last = recorder.last_change().value;
  const TimeMs shown{last == 0 ? end.value : std::min(end.value, last + std::max<std::int64_t>(1'000, last / 20))};
  TimelineCanvas canvas(shown);
  canvas.axis();
  double y = TimelineCanvas::top_px;
  for (raft::NodeId id = 1; id <= recorder.nodes(); ++id) {
    canvas.row_label(y, fmt::format("n{}", id));
    for (const auto& down : recorder.downs()) {
      if (down.node != id) continue;
      canvas.bar("down", down.start, down.end, y + 4, TimelineCanvas::hold_px - 8,
                 fmt::format("n{} down from {} ms to {} ms", id, down.start.value, down.end.value));
    }
    for (const auto& lead : recorder.leaders()) {
      if (lead.node != id) continue;
      canvas.bar(fmt::format("leader term{}", lead.term % 6), lead.start, lead.end, y, TimelineCanvas::hold_px,
                 fmt::format("n{} leads term {} from {} ms to {} ms", id, lead.term, lead.start.value, lead.end.value),
                 fmt::format("term {}", lead.term));
    }
    y += TimelineCanvas::hold_px + 4;
  }
  canvas.key_rows(recorder.bars(), recorder.marks(), keys_max, y + TimelineCanvas::row_gap_px);
  const auto bug = params.bug != cluster::ClusterBug::none ? cluster::cluster_bug_name(params.bug)
                                                           : raft::raft_bug_name(params.raft.raft.bug);
  canvas.title(fmt::format("lockstep sim --mode cluster, seed {}: {} nodes, {} of {} keys, skew bound {} ms{}, bug {}",
                           params.raft.seed, recorder.nodes(), canvas.keys_drawn(), canvas.keys_seen(),
                           params.skew_bound_ms.value, params.skew_beyond_bound ? " (clocks beyond it)" : "", bug));

  canvas.legend_row();
  canvas.legend(canvas.swatch("leader term1"), "leader: term");
  canvas.legend(canvas.swatch("down", 5), "node down");
  canvas.legend(canvas.swatch("hold"), "holder: owner #token");
  canvas.legend(canvas.swatch("overdue"), "lease over, its Expire not yet applied");
  canvas.legend(canvas.swatch("wait", 5), "queued waiter");
  canvas.legend_row();
  canvas.legend(canvas.swatch_mark("grant"), "grant (free key)");
  canvas.legend(canvas.swatch_mark("handoff"), "hand-off on release");
  canvas.legend(canvas.swatch_mark("expire-handoff"), "hand-off by Expire");
  canvas.legend(canvas.swatch_mark("expire-delete"), "Expire deleted the key");
  canvas.legend(canvas.swatch_mark("timeout"), "waiter answered T (Timeout, or due at a hand-off)");
  return canvas.finish(
      ".leader{stroke:#333}.term0{fill:#a6cee3}.term1{fill:#b2df8a}.term2{fill:#fdbf6f}.term3{fill:#cab2d6}"
      ".term4{fill:#fb9a99}.term5{fill:#ffff99}.down{fill:#ddd;stroke:#999;stroke-dasharray:2,2}"
      ".expire-handoff{fill:#b2182b}.expire-delete{fill:#b2182b}");
}

}  // namespace lockstep::sim
