// Replays conformance vectors against a lock service inside this process, in
// virtual time. The service is anything that implements LockService: the
// engine and the reference model both do, through the adapters below.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "impl/engine.hpp"
#include "impl/protocol.hpp"
#include "model/model.hpp"
#include "model/vector.hpp"

namespace lockstep {

// A lock service driven in virtual time: the engine's interface, abstracted
// so that one runner drives the engine and the model alike.
class LockService {
 public:
  virtual ~LockService() = default;
  virtual LineOutcome on_line(ConnectionId connection, std::string_view line, TimeMs now,
                              Outputs& out) = 0;
  virtual void on_close(ConnectionId connection, TimeMs now, Outputs& out) = 0;
  virtual void advance(TimeMs now, Outputs& out) = 0;
  virtual std::optional<TimeMs> next_due() const = 0;
};

// The reference model as a LockService, its state kept visible (the
// playground draws its keys; model_view_at reads them).
class ModelService final : public LockService {
 public:
  explicit ModelService(const Limits& limits, InjectedBug bug = InjectedBug::none) : model_(limits, Token{1}, bug) {}
  LineOutcome on_line(ConnectionId c, std::string_view line, TimeMs now, Outputs& out) override {
    return model_.on_line(c, line, now, out);
  }
  void on_close(ConnectionId c, TimeMs now, Outputs& out) override { model_.on_close(c, now, out); }
  void advance(TimeMs now, Outputs& out) override { model_.advance(now, out); }
  std::optional<TimeMs> next_due() const override { return model_.next_due(); }
  const Model& model() const { return model_; }

 private:
  Model model_;
};

enum class ServiceKind { engine, model };

// A fresh service with the given limits. The engine adapter checks the
// engine's internal invariants after every call.
std::unique_ptr<LockService> make_service(ServiceKind kind, const Limits& limits,
                                          InjectedBug bug = InjectedBug::none);
// A fresh one-node cluster that commits each command at the instant it is
// proposed (docs/protocol.md, "Cluster semantics in conformance vectors"), for
// `config mode=cluster` vectors: `engine` is the cluster node itself, with
// its lock table and deadline heap, on its test clock
// (cluster::OneNodeCluster, invariants checked after every call), `model`
// the reference model::ClusterModel with a deadline scan of its own.
std::unique_ptr<LockService> make_cluster_service(ServiceKind kind, const Limits& limits);

struct VectorVerdict {
  enum class Status { ok, fail, skip };
  Status status = Status::ok;
  int line = 0;
  std::string message;
};

// A mode=cluster vector runs on make_cluster_service(kind); `bug` is a
// simple-mode engine bug and does not exist there, so it is not injected.
VectorVerdict run_vector(const Vector& vector, ServiceKind kind,
                         InjectedBug bug = InjectedBug::none);
// Reads, parses and runs one file; a file that cannot be read or parsed fails.
VectorVerdict run_vector_file(const std::string& path, ServiceKind kind,
                              InjectedBug bug = InjectedBug::none);

// What the reference model holds after running `vector` up to and
// including instant `at`: each key's holder, token (by its `$name` where the
// vector bound one), expiry and queue. For failure reports of live runs.
std::string model_view_at(const Vector& vector, TimeMs at);

// The runner's report line: `ok FILE`, `FAIL FILE:LINE: ...` or `skip FILE: ...`.
std::string verdict_line(const std::string& path, const VectorVerdict& verdict);

}  // namespace lockstep
