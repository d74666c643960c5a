// What the simulator tells its observers (the trace writer, the timeline
// recorder): every server step, named after the spec action it performs,
// and every event of the simulated world around the server (clients,
// network, faults). Observers only watch; they never change the run, so a
// run with a trace is the same run as one without.
#pragma once

#include <cstdint>
#include <string_view>

#include "impl/protocol.hpp"
#include "impl/units.hpp"

namespace lockstep::sim {

class SimpleServerNode;

// Spec actions (spec/LockServer.tla): Acquire, Release, Close, and Tick (time
// advancing: wait timeouts, then the sweep). Restart is the simulator's: the
// server process dies and a fresh one starts from its durable storage.
enum class ServerAction { tick, acquire, release, close, restart };

struct ServerStep {
  TimeMs at;
  ServerAction action = ServerAction::tick;
  ConnectionId connection;
  std::string_view line;  // Acquire and Release
  const Outputs& out;
  std::size_t first = 0;  // out[first..] is this step's
};

// Events of the world around the server.
enum class WorldEvent {
  connect,     // a client opened a connection
  send,        // a client sent a request line
  receive,     // a client received a response
  drop,        // a connection broke; the client sees it at once, the server later
  crash,       // a client died: its holds are never released
  revive,      // a crashed client came back
  reset,       // a client learned that its connection died with the server
  lost,        // a message reached a server that was down or had forgotten the connection
  server_down, // the server process died
};

class Observer {
 public:
  virtual ~Observer() = default;
  virtual void server_step(const ServerStep& step, const SimpleServerNode& server) = 0;
  virtual void world(TimeMs at, WorldEvent event, std::uint32_t client, ConnectionId connection,
                     std::string_view line) = 0;
};

}  // namespace lockstep::sim
