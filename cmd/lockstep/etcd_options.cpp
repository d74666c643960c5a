#include "cmd/lockstep/etcd_options.hpp"

#include <fmt/format.h>

#include "drivers/etcd/client.hpp"
#include "drivers/etcd/log_format.hpp"

namespace lockstep::cli {

CLI::Validator etcd_endpoints() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::string error;
        return etcd::parse_endpoints(text, error) ? std::string() : error;
      },
      "HOST:PORT[,HOST:PORT...]", "etcd endpoints");
}

CLI::Validator etcd_prefix() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::string error;
        return etcd::valid_prefix(text, error) ? std::string() : error;
      },
      "PREFIX", "etcd prefix");
}

CLI::Validator node_id() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return etcd::valid_node_id(text) ? std::string()
                                         : fmt::format("'{}' is not a node id: 1 to 64 printable bytes without space",
                                                       text);
      },
      "ID", "node id");
}

CLI::Validator cluster_members() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::string error;
        return etcd::parse_members(text, error) ? std::string() : error;
      },
      "ID=HOST:PORT[,...]", "cluster members");
}

}  // namespace lockstep::cli
