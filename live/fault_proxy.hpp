// Relays on loopback that the fuzzer owns, so that it can break the links
// between the processes it started without touching the network: each link
// listens on a free 127.0.0.1 port and relays every connection made to it to
// one target port, byte for byte, until told to fault it:
//
//   cut    a black hole: bytes read in the direction cut are discarded, the
//          connections stay open (nobody hears a reset, as across a real
//          partition); when the cut heals, a connection that lost bytes is
//          reset, since its stream has a hole no protocol can read past;
//   slow   bytes in the direction slowed are held for a delay before they go;
//   reset  every connection of the link is closed now (with a TCP reset).
//
// Cuts and delays act one way (up: towards the target, down: back) or both.
// One thread relays every link of a proxy with poll(); the destructor stops
// it and closes every socket, and since the relays live in the tool's own
// process, a signal that ends the tool ends them too. Nothing listens beyond
// 127.0.0.1.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace lockstep::live {

class FaultProxy {
 public:
  enum class Direction { up, down, both };
  struct LinkStats {
    std::uint64_t accepted = 0;       // connections relayed since the start
    std::uint64_t open = 0;           // open now
    std::uint64_t bytes_relayed = 0;  // delivered, both ways
    std::uint64_t bytes_discarded = 0;  // read while cut
    std::uint64_t resets = 0;         // connections closed by reset() or a healed cut
  };

  // A proxy with no link yet, its thread running; nothing and `error` if
  // the thread's wake-up pipe cannot be made.
  static std::unique_ptr<FaultProxy> start(std::string& error);
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  // A new link to 127.0.0.1:target_port; its id, or nothing and `error`.
  std::optional<int> add_link(std::uint16_t target_port, std::string& error);
  std::uint16_t port(int link) const;  // where its clients connect
  std::string address(int link) const;  // "127.0.0.1:<port>"

  void cut(int link, Direction direction);
  void slow(int link, Direction direction, std::chrono::milliseconds delay);
  // Every cut and delay of the link lifted; connections that lost bytes reset.
  void heal(int link);
  void reset(int link);
  LinkStats stats(int link) const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Chunk {
    Clock::time_point release;
    std::string bytes;
    std::size_t sent = 0;
  };
  // One direction of one connection.
  struct Flow {
    std::vector<Chunk> queue;  // in order; front first
    std::size_t queued_bytes = 0;
    bool lost = false;  // bytes were discarded by a cut
    bool eof = false;   // its source ended; the destination is shut once the queue is empty
    bool shut = false;
  };
  struct Connection {
    int link = 0;
    int client = -1, server = -1;
    bool connecting = true;
    Flow up, down;
  };
  struct Link {
    std::uint16_t target_port = 0;
    std::uint16_t port = 0;
    int listener = -1;
    bool cut_up = false, cut_down = false;
    std::chrono::milliseconds delay_up{0}, delay_down{0};
    LinkStats stats;
  };

  struct PollSet;  // what one poll() of the loop watches (fault_proxy.cpp)

  FaultProxy() = default;
  void loop();
  PollSet watch_list() const;
  void drain_wake_pipe();
  void serve_ready(const PollSet& set);
  // One socket of a connection after poll(); false when it must close.
  bool serve_socket(Connection& c, bool client, short events, Clock::time_point now);
  // The server side's connect() has ended: false if it failed.
  static bool finish_connect(Connection& c);
  void wake();
  void accept_on(int link_id);
  void close_connection(std::uint64_t id, bool abort);
  // Reads what `from` has into `flow`; false when the connection must close.
  bool read_into(Connection& c, bool upward);
  // Writes what `flow` has due to its destination; false when it must close.
  bool write_from(Connection& c, bool upward, Clock::time_point now);
  static void drop_queue(Flow& flow);
  static void check_flow(const Flow& flow);

  mutable std::mutex mutex_;
  std::vector<Link> links_;
  std::map<std::uint64_t, Connection> connections_;
  std::uint64_t next_connection_ = 1;
  int wake_read_ = -1, wake_write_ = -1;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace lockstep::live
