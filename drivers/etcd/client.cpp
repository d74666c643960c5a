#include "drivers/etcd/client.hpp"

#include <arpa/inet.h>

#include <fmt/format.h>

namespace lockstep::etcd {

namespace {

// Snapshot chunks and log pages stay far below this; it only bounds what a
// misbehaving server could make the client hold.
constexpr int receive_bytes_max = 64 << 20;

// Calls wait for a connection up to their deadline instead of failing at
// once while the channel reconnects: a member that died is replaced by the
// next within one call, and the waiting call is what drives gRPC's polling
// of the new connection (without a waiting call, only gRPC's backup poller
// would, every few seconds).
std::unique_ptr<grpc::ClientContext> context_with(Timeout timeout) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + timeout);
  context->set_wait_for_ready(true);
  return context;
}

bool is_ipv4(const std::string& host) {
  in_addr address{};
  return inet_pton(AF_INET, host.c_str(), &address) == 1;
}

}  // namespace

std::optional<Target> parse_endpoints(const std::string& text, std::string& error) {
  Target target;
  bool all_ipv4 = true;
  if (text.empty()) {
    error = "no etcd endpoint: give etcd's client addresses, host:port, comma-separated";
    return std::nullopt;
  }
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    const std::string endpoint = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? text.size() + 1 : comma + 1;
    if (const auto scheme = endpoint.find("://"); scheme != std::string::npos) {
      error = fmt::format("'{}' is a URL: give host:port ({})", endpoint, endpoint.substr(scheme + 3));
      return std::nullopt;
    }
    const auto colon = endpoint.rfind(':');
    if (endpoint.empty() || colon == std::string::npos || colon == 0 || colon + 1 == endpoint.size()) {
      error = fmt::format("'{}' is not host:port", endpoint);
      return std::nullopt;
    }
    const auto port = endpoint.substr(colon + 1);
    if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos || std::stoul(port) == 0 ||
        std::stoul(port) > 65535) {
      error = fmt::format("'{}': the port must be 1 to 65535", endpoint);
      return std::nullopt;
    }
    all_ipv4 = all_ipv4 && is_ipv4(endpoint.substr(0, colon));
    target.endpoints.push_back(endpoint);
  }
  if (target.endpoints.size() > 1 && !all_ipv4) {
    error = "several endpoints must all be IPv4 addresses (or give one host name)";
    return std::nullopt;
  }
  if (all_ipv4) {
    target.uri = "ipv4:";
    for (std::size_t i = 0; i < target.endpoints.size(); ++i) {
      if (i > 0) target.uri += ',';
      target.uri += target.endpoints[i];
    }
  } else {
    target.uri = "dns:///" + target.endpoints.front();
  }
  return target;
}

bool may_have_applied(const grpc::Status& status) {
  switch (status.error_code()) {
    case grpc::StatusCode::OK:
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::OUT_OF_RANGE:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::UNIMPLEMENTED:
      return false;  // refused before anything was done
    default:
      return true;  // deadline, connection lost, etcd unavailable mid-call: unknown
  }
}

std::string describe(const grpc::Status& status) {
  static constexpr const char* names[] = {"OK",
                                          "CANCELLED",
                                          "UNKNOWN",
                                          "INVALID_ARGUMENT",
                                          "DEADLINE_EXCEEDED",
                                          "NOT_FOUND",
                                          "ALREADY_EXISTS",
                                          "PERMISSION_DENIED",
                                          "RESOURCE_EXHAUSTED",
                                          "FAILED_PRECONDITION",
                                          "ABORTED",
                                          "OUT_OF_RANGE",
                                          "UNIMPLEMENTED",
                                          "INTERNAL",
                                          "UNAVAILABLE",
                                          "DATA_LOSS",
                                          "UNAUTHENTICATED"};
  const auto code = static_cast<std::size_t>(status.error_code());
  const std::string name = code < std::size(names) ? names[code] : fmt::format("code {}", code);
  auto message = status.error_message();
  for (auto& c : message) {
    if (c == '\n') c = ' ';
  }
  return message.empty() ? name : fmt::format("{}: {}", name, message);
}

Client::Client(const Target& target) : target_(target) {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(receive_bytes_max);
  // Reconnect soon after a member dies: the next one is tried at once, and
  // a lost member again within a second, not after gRPC's default backoff.
  // (The minimum backoff stays gRPC's: it is also the connect timeout.)
  arguments.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  arguments.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1'000);
  // Keep-alive pings find a member that vanished without closing its socket
  // (paused, cut off), while a call waits on it. Within what etcd allows by
  // default (--grpc-keepalive-min-time 5 s, and no pings without a call in
  // progress): pings more often, or on an idle connection, are answered
  // with a GOAWAY "too_many_pings" that gRPC logs on stderr, which a
  // cluster without etcd's majority (calls failing, watches ended) used to
  // show on every node.
  arguments.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 6'000);
  arguments.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 2'000);
  arguments.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
  arguments.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // Each client its own connection (gRPC shares one between equal channels
  // otherwise): a benchmark's callers must not all queue on one socket.
  arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  channel_ = grpc::CreateCustomChannel(target_.uri, grpc::InsecureChannelCredentials(), arguments);
  kv_ = etcdserverpb::KV::NewStub(channel_);
  watch_ = etcdserverpb::Watch::NewStub(channel_);
  lease_ = etcdserverpb::Lease::NewStub(channel_);
  maintenance_ = etcdserverpb::Maintenance::NewStub(channel_);
  cluster_ = etcdserverpb::Cluster::NewStub(channel_);
}

bool Client::wait_connected(Timeout patience) {
  return channel_->WaitForConnected(std::chrono::system_clock::now() + patience);
}

grpc::Status Client::range(const etcdserverpb::RangeRequest& request, etcdserverpb::RangeResponse& response,
                           Timeout timeout) {
  auto context = context_with(timeout);
  return kv_->Range(context.get(), request, &response);
}

grpc::Status Client::put(const etcdserverpb::PutRequest& request, etcdserverpb::PutResponse& response,
                         Timeout timeout) {
  auto context = context_with(timeout);
  return kv_->Put(context.get(), request, &response);
}

grpc::Status Client::txn(const etcdserverpb::TxnRequest& request, etcdserverpb::TxnResponse& response,
                         Timeout timeout) {
  auto context = context_with(timeout);
  return kv_->Txn(context.get(), request, &response);
}

grpc::Status Client::compact(std::int64_t revision, Timeout timeout) {
  etcdserverpb::CompactionRequest request;
  request.set_revision(revision);
  etcdserverpb::CompactionResponse response;
  auto context = context_with(timeout);
  return kv_->Compact(context.get(), request, &response);
}

grpc::Status Client::lease_grant(std::int64_t ttl_s, etcdserverpb::LeaseGrantResponse& response, Timeout timeout) {
  etcdserverpb::LeaseGrantRequest request;
  request.set_ttl(ttl_s);
  auto context = context_with(timeout);
  auto status = lease_->LeaseGrant(context.get(), request, &response);
  if (status.ok() && !response.error().empty()) return grpc::Status(grpc::StatusCode::UNKNOWN, response.error());
  return status;
}

grpc::Status Client::lease_revoke(std::int64_t lease, Timeout timeout) {
  etcdserverpb::LeaseRevokeRequest request;
  request.set_id(lease);
  etcdserverpb::LeaseRevokeResponse response;
  auto context = context_with(timeout);
  return lease_->LeaseRevoke(context.get(), request, &response);
}

grpc::Status Client::lease_keep_alive(std::int64_t lease, etcdserverpb::LeaseKeepAliveResponse& response,
                                      Timeout timeout) {
  auto context = context_with(timeout);
  auto stream = lease_->LeaseKeepAlive(context.get());
  etcdserverpb::LeaseKeepAliveRequest request;
  request.set_id(lease);
  const bool answered = stream->Write(request) && stream->Read(&response);
  stream->WritesDone();  // etcd ends the stream when the client's side ends
  auto status = stream->Finish();
  if (answered) return grpc::Status::OK;  // the answer counts, however the stream ended
  return status.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "keep-alive stream ended") : status;
}

grpc::Status Client::status(etcdserverpb::StatusResponse& response, Timeout timeout) {
  etcdserverpb::StatusRequest request;
  auto context = context_with(timeout);
  return maintenance_->Status(context.get(), request, &response);
}

grpc::Status Client::member_list(etcdserverpb::MemberListResponse& response, Timeout timeout) {
  etcdserverpb::MemberListRequest request;
  auto context = context_with(timeout);
  return cluster_->MemberList(context.get(), request, &response);
}

Client::Watch::Watch(etcdserverpb::Watch::Stub& stub, std::optional<std::chrono::system_clock::time_point> deadline) {
  if (deadline) context_.set_deadline(*deadline);
  // Ask etcd to end the stream when the member loses its Raft leader, as
  // etcd's own client does, instead of staying silent behind a partition.
  context_.AddMetadata("hasleader", "true");
  context_.set_wait_for_ready(true);
  stream_ = stub.Watch(&context_);
}

Client::Watch::~Watch() {
  cancel();
  finish();
}

bool Client::Watch::create(const etcdserverpb::WatchCreateRequest& request) {
  etcdserverpb::WatchRequest message;
  *message.mutable_create_request() = request;
  std::lock_guard lock(write_mutex_);
  return stream_ && stream_->Write(message);
}

bool Client::Watch::request_progress() {
  etcdserverpb::WatchRequest message;
  message.mutable_progress_request();
  std::lock_guard lock(write_mutex_);
  return stream_ && stream_->Write(message);
}

bool Client::Watch::read(etcdserverpb::WatchResponse& response) { return stream_->Read(&response); }

void Client::Watch::cancel() { context_.TryCancel(); }

grpc::Status Client::Watch::finish() {
  // A write in progress on another thread ends at the cancel; then no write
  // can start, since it checks the stream under the same lock.
  context_.TryCancel();
  std::lock_guard lock(write_mutex_);
  if (!stream_) return grpc::Status::OK;
  auto status = stream_->Finish();
  stream_.reset();
  return status;
}

std::unique_ptr<Client::Watch> Client::watch(std::optional<std::chrono::system_clock::time_point> deadline) {
  return std::make_unique<Watch>(*watch_, deadline);
}

std::string prefix_end(std::string prefix) {
  while (!prefix.empty()) {
    auto& last = prefix.back();
    if (static_cast<unsigned char>(last) < 0xff) {
      ++last;
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');  // every key
}

}  // namespace lockstep::etcd
