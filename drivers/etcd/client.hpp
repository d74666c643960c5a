// A blocking client of etcd's v3 API over gRPC (a driver: IO, and gRPC's
// threads). It speaks through the code protoc generates from the project's
// own subset of etcd's API (proto/rpc.proto); nothing here parses bytes.
//
// Every call takes a timeout and returns once it is answered, failed or
// timed out, so nothing waits on etcd without a bound. A call that failed
// may still have taken effect (`may_have_applied`): the request can have
// reached etcd before the connection broke or the deadline passed.
//
// Endpoints are `host:port` separated by commas (a URL is refused, with the
// host:port it holds as the hint; TLS is not supported). IPv4 addresses go to gRPC
// as one target, which keeps one connection to the first member that
// answers and moves to the next when it is lost; a host name must be the
// only endpoint. The client is safe to use from several threads at once.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "drivers/etcd/proto/rpc.grpc.pb.h"

namespace lockstep::etcd {

using Timeout = std::chrono::milliseconds;

// The gRPC target for an endpoint list, or the reason it is not valid (one
// phrase; the caller names the option it came from).
struct Target {
  std::string uri;             // e.g. ipv4:127.0.0.1:2379,127.0.0.1:22379
  std::vector<std::string> endpoints;  // host:port, as given
};
std::optional<Target> parse_endpoints(const std::string& text, std::string& error);

// Whether a failed call may have been applied by etcd all the same.
bool may_have_applied(const grpc::Status& status);
// One line for logs: `DEADLINE_EXCEEDED: Deadline Exceeded`.
std::string describe(const grpc::Status& status);

class Client {
 public:
  explicit Client(const Target& target);

  // Waits until a connection to some member is up; false after `patience`.
  bool wait_connected(Timeout patience);

  grpc::Status range(const etcdserverpb::RangeRequest& request, etcdserverpb::RangeResponse& response,
                     Timeout timeout);
  grpc::Status put(const etcdserverpb::PutRequest& request, etcdserverpb::PutResponse& response, Timeout timeout);
  grpc::Status txn(const etcdserverpb::TxnRequest& request, etcdserverpb::TxnResponse& response, Timeout timeout);
  grpc::Status compact(std::int64_t revision, Timeout timeout);
  grpc::Status lease_grant(std::int64_t ttl_s, etcdserverpb::LeaseGrantResponse& response, Timeout timeout);
  grpc::Status lease_revoke(std::int64_t lease, Timeout timeout);
  // One keep-alive of `lease` on a stream of its own. The response's TTL is
  // the lease's new time to live in seconds, 0 when the lease is gone.
  grpc::Status lease_keep_alive(std::int64_t lease, etcdserverpb::LeaseKeepAliveResponse& response,
                                Timeout timeout);
  grpc::Status status(etcdserverpb::StatusResponse& response, Timeout timeout);
  grpc::Status member_list(etcdserverpb::MemberListResponse& response, Timeout timeout);

  // A watch stream: create() it, read() responses until one fails;
  // cancel() from any thread ends a read() in progress, and so does the
  // deadline, when one is given.
  class Watch {
   public:
    explicit Watch(etcdserverpb::Watch::Stub& stub,
                   std::optional<std::chrono::system_clock::time_point> deadline = std::nullopt);
    ~Watch();
    bool create(const etcdserverpb::WatchCreateRequest& request);
    // Asks etcd for a progress response (its current revision), so a quiet
    // stream still shows it is alive. Safe while another thread reads.
    bool request_progress();
    bool read(etcdserverpb::WatchResponse& response);
    void cancel();
    // Cancels and ends the stream; no write or read may follow.
    grpc::Status finish();

   private:
    grpc::ClientContext context_;
    std::mutex write_mutex_;
    std::unique_ptr<grpc::ClientReaderWriter<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>> stream_;
  };
  std::unique_ptr<Watch> watch(std::optional<std::chrono::system_clock::time_point> deadline = std::nullopt);

  const Target& target() const { return target_; }

 private:
  Target target_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<etcdserverpb::KV::Stub> kv_;
  std::unique_ptr<etcdserverpb::Watch::Stub> watch_;
  std::unique_ptr<etcdserverpb::Lease::Stub> lease_;
  std::unique_ptr<etcdserverpb::Maintenance::Stub> maintenance_;
  std::unique_ptr<etcdserverpb::Cluster::Stub> cluster_;
};

// The smallest key greater than every key that starts with `prefix`
// (etcd's range_end for a prefix).
std::string prefix_end(std::string prefix);

}  // namespace lockstep::etcd
