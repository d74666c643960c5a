// Names on the command line (validators.hpp): IPv4 addresses, HOST:PORT and
// lists of them, a key as the protocol defines it, and one of a catalogue's
// names.
#include <arpa/inet.h>

#include <algorithm>

#include <fmt/format.h>

#include "cli/validators.hpp"

namespace lockstep::cli {

CLI::Validator ipv4_address() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        in_addr address{};
        if (inet_pton(AF_INET, text.c_str(), &address) != 1) {
          return fmt::format("'{}' is not an IPv4 address (four numbers 0 to 255: 127.0.0.1)", text);
        }
        return {};
      },
      "IPV4", "IPv4 address");
}

CLI::Validator host_and_port() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const auto colon = text.rfind(':');
        const auto port = colon == std::string::npos ? std::nullopt : digits_value(text.substr(colon + 1));
        if (colon == std::string::npos || colon == 0 || !port) {
          return fmt::format("'{}' is not HOST:PORT", text);
        }
        if (*port < 1 || *port > 65535) return fmt::format("port {} of {} is not in 1..65535", text.substr(colon + 1), text);
        return {};
      },
      "HOST:PORT", "host and port");
}

CLI::Validator protocol_name() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const bool printable = std::all_of(text.begin(), text.end(), [](char c) { return c >= '!' && c <= '~'; });
        if (text.empty() || text.size() > 250 || !printable) {
          return fmt::format("'{}' is not a key: 1 to 250 bytes of printable ASCII without space", text);
        }
        return {};
      },
      "a key", "key");
}

CLI::Validator host_and_port_list() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const auto one = host_and_port();
        std::size_t begin = 0;
        while (begin <= text.size()) {
          const auto end = std::min(text.find(',', begin), text.size());
          std::string item = text.substr(begin, end - begin);
          if (auto error = one(item); !error.empty()) return error;
          begin = end + 1;
        }
        return {};
      },
      "HOST:PORT[,HOST:PORT...]", "hosts and ports");
}

CLI::Validator one_of(std::vector<std::string> names, std::string catalogue, std::string listed_by) {
  return CLI::Validator(
      [names, catalogue, listed_by](std::string& text) -> std::string {
        for (const auto& name : names) {
          if (name == text) return {};
        }
        return fmt::format("'{}' is not in {} ({})", text, catalogue, listed_by);
      },
      "a name from " + catalogue, "one of");
}

}  // namespace lockstep::cli
