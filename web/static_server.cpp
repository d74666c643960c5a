#include "web/static_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace lockstep::web {

namespace {

std::string_view content_type(std::string_view name) {
  const auto dot = name.rfind('.');
  const auto extension = dot == std::string_view::npos ? std::string_view{} : name.substr(dot + 1);
  if (extension == "html") return "text/html; charset=utf-8";
  if (extension == "css") return "text/css; charset=utf-8";
  if (extension == "js") return "text/javascript; charset=utf-8";
  if (extension == "svg") return "image/svg+xml";
  if (extension == "png") return "image/png";
  if (extension == "wasm") return "application/wasm";
  if (extension == "json") return "application/json";
  return "text/plain; charset=utf-8";
}

// A file name of the folder itself: letters, digits, `.`, `_`, `-`, not
// starting with a dot.
bool plain_name(std::string_view name) {
  if (name.empty() || name.size() > 255 || name.front() == '.') return false;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string plain_response(int status, std::string_view reason, std::string_view body, bool head_only) {
  return fmt::format("HTTP/1.1 {} {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n"
                     "Connection: close\r\n\r\n{}",
                     status, reason, body.size(), head_only ? std::string_view{} : body);
}

bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const auto sent = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(sent));
  }
  return true;
}

// Reads a request head (up to the blank line) within head_wait_ms.
std::optional<std::string> read_head(int fd) {
  std::string head;
  char buffer[2048];
  while (head.find("\r\n\r\n") == std::string::npos) {
    if (head.size() > head_bytes_max) return std::nullopt;
    pollfd ready{fd, POLLIN, 0};
    if (::poll(&ready, 1, head_wait_ms) <= 0) return std::nullopt;
    const auto got = ::recv(fd, buffer, sizeof buffer, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return std::nullopt;
    head.append(buffer, static_cast<std::size_t>(got));
  }
  return head;
}

}  // namespace

std::string static_response(const std::string& folder, std::string_view head) {
  const auto line_end = head.find("\r\n");
  const auto request_line = head.substr(0, line_end);
  const auto first_space = request_line.find(' ');
  const auto second_space = request_line.find(' ', first_space == std::string_view::npos ? 0 : first_space + 1);
  if (first_space == std::string_view::npos || second_space == std::string_view::npos) {
    return plain_response(400, "Bad Request", "bad request line\n", false);
  }
  const auto method = request_line.substr(0, first_space);
  auto target = request_line.substr(first_space + 1, second_space - first_space - 1);
  const bool head_only = method == "HEAD";
  if (method != "GET" && !head_only) return plain_response(405, "Method Not Allowed", "GET or HEAD only\n", false);
  target = target.substr(0, target.find_first_of("?#"));
  if (target.empty() || target.front() != '/') return plain_response(400, "Bad Request", "bad path\n", head_only);
  std::string name(target.substr(1));
  if (name.empty()) name = "index.html";
  if (!plain_name(name)) return plain_response(404, "Not Found", "not found\n", head_only);
  std::ifstream file(folder + "/" + name, std::ios::binary);
  if (!file) return plain_response(404, "Not Found", "not found\n", head_only);
  std::ostringstream body;
  body << file.rdbuf();
  const auto content = body.str();
  if (content.size() > file_bytes_max) return plain_response(404, "Not Found", "file too large\n", head_only);
  return fmt::format("HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\n"
                     "Connection: close\r\n\r\n{}",
                     content_type(name), content.size(), head_only ? std::string() : content);
}

int run_static_server(const StaticServerConfig& config) {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  const int signal_fd = signalfd(-1, &mask, SFD_CLOEXEC);
  const int listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int yes = 1;
  setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(config.port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (signal_fd < 0 || listen_fd < 0 || bind(listen_fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      listen(listen_fd, 64) != 0) {
    fmt::print(stderr, "lockstep playground: cannot listen on 127.0.0.1:{}: {}\n", config.port, std::strerror(errno));
    return 2;
  }
  socklen_t length = sizeof address;
  getsockname(listen_fd, reinterpret_cast<sockaddr*>(&address), &length);
  fmt::print("playground: http://127.0.0.1:{}/ (serving {}; Ctrl-C stops)\n", ntohs(address.sin_port), config.folder);
  std::fflush(stdout);

  for (;;) {
    pollfd ready[2] = {{listen_fd, POLLIN, 0}, {signal_fd, POLLIN, 0}};
    if (::poll(ready, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (ready[1].revents != 0) break;
    if ((ready[0].revents & POLLIN) == 0) continue;
    const int client = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    if (const auto head = read_head(client)) send_all(client, static_response(config.folder, *head));
    ::close(client);
  }
  ::close(listen_fd);
  ::close(signal_fd);
  return 0;
}

}  // namespace lockstep::web
