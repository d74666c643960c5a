// Validators of the options that name etcd and a cluster in it (`serve
// --cluster`, `lockstep cluster`), checked when the command line is parsed
// with the rules the etcd driver applies (drivers/etcd/client.hpp,
// log_format.hpp), so a refusal names its option before anything runs.
#pragma once

#include <CLI/CLI.hpp>

namespace lockstep::cli {

// etcd's client addresses, host:port, comma-separated (a URL is refused).
CLI::Validator etcd_endpoints();
// An etcd key prefix: 1 to 200 printable bytes without space.
CLI::Validator etcd_prefix();
// A node id: 1 to 64 printable bytes without space.
CLI::Validator node_id();
// A cluster's members, ID=HOST:PORT,... (no id or address twice).
CLI::Validator cluster_members();

}  // namespace lockstep::cli
