// The NDJSON trace of a run (schema in sim/trace/TRACE.md): one JSON object per
// line, one line per server step, named after the spec action it performs
// (Acquire, Release, Close, Tick with its Timeouts and Sweep; Restart), and
// one per event of the world around the server (Send, Receive, Drop, ...).
// The writer is an observer: it never changes the run. The driver owns the
// stream it writes to.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "sim/simple/observer.hpp"
#include "sim/simple/params.hpp"

namespace lockstep::sim {

inline constexpr const char* trace_schema = "lockstep.sim.trace/1";

class TraceWriter final : public Observer {
 public:
  TraceWriter(std::ostream& out, const SimParams& params);

  void server_step(const ServerStep& step, const SimpleServerNode& server) override;
  void world(TimeMs at, WorldEvent event, std::uint32_t client, ConnectionId connection,
             std::string_view line) override;
  // The last line: the run's verdict.
  void finish(TimeMs at, std::uint64_t violations, std::uint64_t event_hash);

  std::uint64_t lines() const { return lines_; }

 private:
  std::ostream& out_;
  SimParams params_;
  std::uint64_t lines_ = 0;
  std::uint64_t sweep_deletions_seen_ = 0;
};

}  // namespace lockstep::sim
