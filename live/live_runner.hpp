// Replays conformance vectors exactly against a live server that offers the
// test clock of docs/protocol.md ("Live targets", "Exact, with a test clock"):
// one fresh server per vector, started from a command template; the clock is
// moved to every instant the vector names (and to the instant before, to see
// answers fired at an instant the vector does not list); after each request
// a `C` barrier on its connection, with its markers awaited on every open
// connection, orders requests across connections; `X` ends a connection.
// Each instant is judged by the same VectorJudge as the in-process runner.
// A `mode=cluster` vector is replayed against a cluster node started from a
// template of its own (a one-node cluster with the test clock), which may
// name {etcd} (the etcd endpoints given) and {prefix} (a key prefix no other
// vector of the run uses, so each starts from an empty log).
#pragma once

#include <chrono>
#include <string>

#include "model/runner.hpp"
#include "model/vector.hpp"

namespace lockstep::live {

struct LiveOptions {
  std::string command_template;  // with {port}, {max_keys}, ...
  // For mode=cluster vectors; empty: they are skipped.
  std::string cluster_command_template;
  std::string etcd_endpoints;  // filled into {etcd}
  std::string host = "127.0.0.1";
  std::chrono::milliseconds connect_patience{10'000};
  std::chrono::milliseconds answer_patience{5'000};
};

// A vector's verdict, or why no vector can be judged against this server:
// it did not start or accept connections, or it has no test clock (it
// answered `E` to `C`). That is the environment's fault, not a failed
// vector: `conform` stops and exits 2 (docs/protocol.md, "Exit codes").
struct LiveVerdict {
  VectorVerdict verdict;
  std::string cannot_run;     // non-empty: the server could not be run (one line)
  std::string server_output;  // then, the tail of what it printed
};

LiveVerdict run_live_vector(const Vector& vector, const LiveOptions& options);

}  // namespace lockstep::live
