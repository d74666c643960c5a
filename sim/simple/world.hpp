// The simulated world behind run_simulation (simulation.hpp): its event
// kinds, its clients and its connections. world.cpp runs the loop, the
// network and the faults; clients.cpp is what the clients do.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "impl/prng.hpp"
#include "impl/protocol.hpp"
#include "sim/core/event_queue.hpp"
#include "sim/core/network.hpp"
#include "sim/core/violations.hpp"
#include "sim/simple/client_edge.hpp"
#include "sim/simple/params.hpp"
#include "sim/simple/server_node.hpp"
#include "sim/simple/simulation.hpp"
#include "sim/simple/storage.hpp"

namespace lockstep::sim {

// The world's events, one struct per kind with the fields it needs. The
// variant's order is each kind's number in the run's event hash, with the
// client and the slot or hold (sim/simple/world.cpp, event_word), so that the hash
// of a seed stays what it was.
namespace event {
// An owner slot of a client may send its next acquire (while `link`, the
// client's connection it was planned on, is still current).
struct SlotWake {
  std::uint32_t client = 0, slot = 0;
  std::uint64_t link = 0;
};
// A client's hold is to be released (while the client lives the `life` it
// was taken in).
struct ReleaseDue {
  std::uint32_t client = 0, hold = 0;
  std::uint64_t life = 0;
};
// A message reaches the server's end of a connection, or a response the
// client's end: `message` indexes the world's pool of messages in flight.
struct ToServer {
  std::uint32_t client = 0, message = 0;
};
struct ToClient {
  std::uint32_t client = 0, message = 0;
};
struct ServerTick {};   // something is due at the server
struct Drop {};         // a connection breaks (a fault; the client is drawn then)
struct ClientCrash {};  // a client dies (a fault; the client is drawn then)
struct ClientRevive {   // a crashed client starts again
  std::uint32_t client = 0;
  std::uint64_t life = 0;
};
struct Reconnect {  // a client tries to connect
  std::uint32_t client = 0;
  std::uint64_t link = 0;
};
struct ResetNotice {  // a client learns that the server side of `connection` died
  std::uint32_t client = 0;
  ConnectionId connection;
};
struct ServerCrash {};  // the server dies (a fault)
struct ServerUp {};     // the server starts again
struct Audit {};        // the clients' checker looks for requests never answered
struct WorkloadEnd {};  // the drain begins
}  // namespace event

using Event = std::variant<event::SlotWake, event::ReleaseDue, event::ToServer, event::ToClient, event::ServerTick,
                           event::Drop, event::ClientCrash, event::ClientRevive, event::Reconnect,
                           event::ResetNotice, event::ServerCrash, event::ServerUp, event::Audit,
                           event::WorkloadEnd>;

// A message from a client to the server: a request line, or the end of the
// connection (TCP's FIN, which follows the data sent before it).
struct Upstream {
  ConnectionId connection;
  bool close = false;
  std::string line;
  RequestId request = 0;
  RequestId release_of = 0;
};

struct Downstream {
  ConnectionId connection;
  Response response;
  std::uint32_t incarnation = 0;
};

struct OwnerSlot {
  std::uint32_t owner = 0;
  std::string owner_name;
  bool in_flight = false;
  RequestId request = 0;
};

struct Hold {
  std::uint32_t key = 0;
  Token token;
  RequestId request = 0;  // the acquire that got it
  std::uint32_t owner = 0;
  bool live = false;
};

struct Client {
  bool alive = true;
  std::optional<ConnectionId> connection;
  std::uint64_t life = 0;  // bumped by a crash: voids release timers
  std::uint64_t link = 0;  // bumped by a crash or a drop: voids slot timers
  std::vector<OwnerSlot> slots;
  std::vector<Hold> holds;       // fixed size; `live` marks the used ones
  std::vector<Hold> released;    // recent releases, for stale-token releases
  std::size_t released_next = 0;
};

struct ConnectionEnds {
  std::uint32_t client = 0;
  bool client_open = false;
  FifoChannel upstream;
  FifoChannel downstream;
};

class World {
 public:
  World(const SimParams& params, const RunOptions& options);
  RunResult run();

 private:
  // world.cpp
  void dispatch(const Event& event);
  void handle(const event::SlotWake& e);
  void handle(const event::ReleaseDue& e);
  void handle(const event::ToServer& e);
  void handle(const event::ToClient& e);
  void handle(const event::ServerTick& e);
  void handle(const event::Drop& e);
  void handle(const event::ClientCrash& e);
  void handle(const event::ClientRevive& e);
  void handle(const event::Reconnect& e);
  void handle(const event::ResetNotice& e);
  void handle(const event::ServerCrash& e);
  void handle(const event::ServerUp& e);
  void handle(const event::Audit& e);
  void handle(const event::WorkloadEnd& e);
  Client& client_at(std::uint32_t index);
  void schedule(TimeMs at, Event event);
  void send_upstream(std::uint32_t client, Upstream message);
  void send_downstream(const Outputs& out, std::size_t first);
  void deliver_to_server(Upstream message);
  void deliver_to_client(Downstream message);
  void tick_server_to(TimeMs now);
  void arm_server_tick();
  void notify_step(ServerAction action, ConnectionId connection, std::string_view line,
                   const Outputs& out, std::size_t first);
  void notify_world(WorldEvent event, std::uint32_t client, ConnectionId connection,
                    std::string_view line = {});
  void on_drop(std::uint32_t client);
  void on_server_crash();
  void on_server_up();
  void schedule_fault(Event fault, double per_hour);
  void final_checks();
  void mix(std::uint64_t value);
  void mix(std::string_view text);
  TimeMs now() const { return queue_.now(); }

  // clients.cpp
  void start_client(std::uint32_t client);
  void connect(std::uint32_t client);
  void close_client_side(std::uint32_t client);
  void on_slot_wake(std::uint32_t client, std::uint32_t slot);
  void on_release_due(std::uint32_t client, std::uint32_t hold);
  void on_answer(std::uint32_t client, const Answer& answer);
  void on_crash(std::uint32_t client);
  void on_revive(std::uint32_t client);
  void wake_slot_later(std::uint32_t client, std::uint32_t slot);
  DurationMs think_time();
  DurationMs hold_time(TimeMs sent_at, DurationMs lease_ms);
  bool sending() const { return !draining_; }

  SimParams params_;
  RunOptions options_;
  Prng workload_prng_;
  Prng network_prng_;
  Prng fault_prng_;
  KeyChooser keys_;
  std::vector<std::string> key_names_;
  EventQueue<Event> queue_;
  InFlightPool<Upstream> upstream_pool_;
  InFlightPool<Downstream> downstream_pool_;
  ViolationLog violations_;
  DurableStorage storage_;
  SimpleServerNode server_;
  ClientEdgeChecker edge_;
  std::vector<Client> clients_;
  std::vector<ConnectionEnds> connections_;  // by connection id - 1
  std::optional<TimeMs> tick_armed_at_;
  bool draining_ = false;
  TimeMs end_;
  RequestId next_request_ = 1;
  Outputs out_;
  SimStats stats_;
  std::uint64_t hash_ = 0xcbf29ce484222325ULL;
  std::vector<InputRecord> inputs_;
  std::string line_buffer_;
};

}  // namespace lockstep::sim
