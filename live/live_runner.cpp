#include "live/live_runner.hpp"

#include <unistd.h>

#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "client/line_socket.hpp"
#include "live/process.hpp"
#include "model/judge.hpp"

namespace lockstep::live {

namespace {

using client::LineSocket;

// The runner's own connection, which the vector does not know about: it
// moves the clock between steps. Nothing may arrive on it but markers.
const std::string control_name = "(control)";

class LiveRun {
 public:
  // `control`: a connection the server has accepted, the runner's own.
  LiveRun(const Vector& vector, const LiveOptions& options, std::uint16_t port, LineSocket control)
      : vector_(vector), options_(options), port_(port), judge_(vector) {
    sockets_.emplace(control_name, std::move(control));
  }

  std::optional<VectorError> run() {
    if (judge_.problem()) return judge_.problem();
    if (auto error = barrier(control_name, TimeMs{0}, line_at_or_before(TimeMs{0}))) return error;
    std::optional<TimeMs> previous;
    for (const TimeMs instant : named_instants(vector_)) {
      if (auto error = run_instant(instant, previous)) return error;
      previous = instant;
    }
    return std::nullopt;
  }

  // Empty, or how the server showed it has no test clock.
  const std::string& no_test_clock() const { return no_test_clock_; }

 private:
  int line_at_or_before(TimeMs instant) const { return lockstep::line_at_or_before(vector_, instant); }

  std::optional<VectorError> run_instant(TimeMs instant, std::optional<TimeMs> previous) {
    // First the instant before: whatever fires between two named instants
    // arrives before its markers and is unexpected.
    if (instant.value > 0 && (!previous || previous->value < instant.value - 1)) {
      const TimeMs before{instant.value - 1};
      received_.clear();
      if (auto error = barrier(control_name, before, line_at_or_before(before))) return error;
      if (!received_.empty()) return judge_.unexpected(before, received_, line_at_or_before(before));
    }
    received_.clear();
    if (auto error = barrier(control_name, instant, line_at_or_before(instant))) return error;
    for (const auto& step : vector_.steps) {
      if (step.time != instant) continue;
      if (step.kind == VectorStep::Kind::at) {
        auto line = judge_.request_line(step);
        if (auto* error = std::get_if<VectorError>(&line)) return *error;
        if (auto error = open(step.connection, instant)) return error;
        if (!sockets_.at(step.connection).send_line(std::get<std::string>(line))) {
          return VectorError{step.line, fmt::format("cannot send on {}", step.connection)};
        }
        // The barrier on the request's own connection: once its markers are
        // back everywhere, the request was handled and its answers are in.
        if (auto error = barrier(step.connection, instant, step.line)) return error;
      } else if (step.kind == VectorStep::Kind::close) {
        if (auto error = open(step.connection, instant)) return error;
        if (auto error = end_connection(step.connection, step.line)) return error;
      }
    }
    if (auto error = barrier(control_name, instant, line_at_or_before(instant))) return error;
    for (const auto& r : received_) {
      if (r.connection == control_name) {
        return VectorError{line_at_or_before(instant),
                           fmt::format("at {}: '{}' arrived on the runner's control connection", instant.value, r.line)};
      }
    }
    return judge_.judge_instant(instant, received_);
  }

  // Opens the vector's connection `name` if it is not open, and makes sure
  // the server has accepted it (a barrier on it).
  std::optional<VectorError> open(const std::string& name, TimeMs instant) {
    if (sockets_.contains(name)) return std::nullopt;
    auto socket = LineSocket::connect(options_.host, port_, options_.connect_patience);
    if (!socket) return VectorError{0, fmt::format("cannot connect to {}:{}", options_.host, port_)};
    sockets_.emplace(name, std::move(*socket));
    return barrier(name, instant, line_at_or_before(instant));
  }

  // Sends `C instant` on `via` and reads every open connection up to its
  // marker; responses before a marker belong to this instant.
  std::optional<VectorError> barrier(const std::string& via, TimeMs instant, int line) {
    const auto marker = fmt::format("C {}", instant.value);
    if (!sockets_.at(via).send_line(marker)) {
      return VectorError{line, fmt::format("cannot send the barrier on {}", via)};
    }
    // The connection the barrier went on first: if the server closes it
    // instead (after an overlong line), the barrier is sent again on the
    // control connection, which the server reads after that close.
    if (via != control_name) {
      auto& socket = sockets_.at(via);
      std::string text;
      while (true) {
        const auto status = socket.read_line(text, options_.answer_patience);
        if (status == LineSocket::Status::timeout) {
          return VectorError{line, fmt::format("at {}: no '{}' marker on {} within {} ms", instant.value, marker,
                                               via, options_.answer_patience.count())};
        }
        if (status == LineSocket::Status::closed) {
          sockets_.erase(via);
          return barrier(control_name, instant, line);
        }
        if (text == marker) break;
        received_.push_back({via, text});
      }
    }
    std::vector<std::string> closed;
    for (auto& [name, socket] : sockets_) {
      if (name == via && via != control_name) continue;
      std::string text;
      while (true) {
        const auto status = socket.read_line(text, options_.answer_patience);
        if (status == LineSocket::Status::timeout) {
          return VectorError{line, fmt::format("at {}: no '{}' marker on {} within {} ms", instant.value, marker,
                                               name, options_.answer_patience.count())};
        }
        if (status == LineSocket::Status::closed) {
          closed.push_back(name);  // the server closed it (an overlong line, say)
          break;
        }
        if (text == marker) break;
        // Only markers come on the runner's connection: an `E` there
        // answers a `C`, which a server without the test clock refuses
        // (docs/protocol.md, "Exact, with a test clock"). No answer will
        // come, so it is said at once rather than after the patience.
        if (name == control_name && text.starts_with("E")) {
          no_test_clock_ = fmt::format(
              "the server has no test clock: it answered '{}' to '{}' (start it with its test-clock option, "
              "as `lockstep serve --test-clock`; docs/protocol.md, \"Exact, with a test clock\")",
              text, marker);
          return VectorError{line, no_test_clock_};
        }
        received_.push_back({name, text});
      }
    }
    for (const auto& name : closed) {
      if (name == control_name) return VectorError{line, "the server closed the runner's control connection"};
      sockets_.erase(name);
    }
    return std::nullopt;
  }

  // `X`, then everything up to the server's close belongs to this instant.
  std::optional<VectorError> end_connection(const std::string& name, int line) {
    auto& socket = sockets_.at(name);
    socket.send_line("X");
    std::string text;
    while (true) {
      const auto status = socket.read_line(text, options_.answer_patience);
      if (status == LineSocket::Status::closed) break;
      if (status == LineSocket::Status::timeout) {
        return VectorError{line, fmt::format("the server did not close {} after X", name)};
      }
      if (!text.starts_with("C ")) received_.push_back({name, text});
    }
    sockets_.erase(name);
    return std::nullopt;
  }

  const Vector& vector_;
  const LiveOptions& options_;
  std::uint16_t port_;
  VectorJudge judge_;
  std::map<std::string, LineSocket> sockets_;
  std::vector<ObservedResponse> received_;
  std::string no_test_clock_;
};

std::string instant_of(const std::string& message) {
  // Messages begin "at T" or "at T (...)"; the model view is taken at T.
  if (!message.starts_with("at ")) return {};
  const auto end = message.find_first_not_of("0123456789", 3);
  return message.substr(3, end == std::string::npos ? std::string::npos : end - 3);
}

LiveVerdict judged(VectorVerdict verdict) { return LiveVerdict{std::move(verdict), {}, {}}; }
LiveVerdict cannot_run(std::string why, std::string output = {}) {
  return LiveVerdict{{}, std::move(why), std::move(output)};
}

}  // namespace

LiveVerdict run_live_vector(const Vector& vector, const LiveOptions& options) {
  const bool cluster = vector.mode == VectorMode::cluster;
  if (cluster && options.cluster_command_template.empty()) {
    return judged(VectorVerdict{VectorVerdict::Status::skip, 0, "mode=cluster vectors need a cluster-mode server"});
  }
  if (!cluster && options.command_template.empty()) {
    return judged(VectorVerdict{VectorVerdict::Status::skip, 0, "simple-mode vectors need a simple-mode server"});
  }
  const auto port = client::pick_free_port();
  if (!port) return cannot_run("no free port on 127.0.0.1 for the server");
  auto values = template_values(*port, vector.limits);
  static int vectors_run = 0;
  values["etcd"] = options.etcd_endpoints;
  values["prefix"] = fmt::format("lockstep-conform-{}-{}-{}", getpid(), *port, ++vectors_run);
  const auto command = fill_template(cluster ? options.cluster_command_template : options.command_template, values);
  const auto log_path = fmt::format("{}/lockstep-conform-{}-{}.log", temporary_base(), getpid(), *port);
  auto server = ServerProcess::start(command, log_path);
  if (!server) return cannot_run(fmt::format("cannot start '{}'", command));
  auto accepted = wait_until_accepting(*server, options.host, *port, options.connect_patience);
  if (!accepted.socket) {
    server->stop();
    ::unlink(log_path.c_str());
    return cannot_run(fmt::format("the server '{}' cannot start: {}", command, accepted.why_not), accepted.output);
  }
  LiveRun run(vector, options, *port, std::move(*accepted.socket));
  auto error = run.run();
  const bool still_running = server->running();
  const auto log = server->log_tail();
  server->stop();
  ::unlink(log_path.c_str());
  if (!run.no_test_clock().empty()) return cannot_run(run.no_test_clock());
  if (!error) return judged(VectorVerdict{});
  std::string message = error->message;
  if (!still_running) message += fmt::format("\n  the server exited; its output:\n{}", log);
  const auto at = instant_of(error->message);
  if (!at.empty()) message += "\n" + model_view_at(vector, TimeMs{std::stoll(at)});
  return judged(VectorVerdict{VectorVerdict::Status::fail, error->line, message});
}

}  // namespace lockstep::live
