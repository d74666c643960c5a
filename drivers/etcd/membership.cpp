#include "drivers/etcd/membership.hpp"

#include <unistd.h>

#include <algorithm>
#include <random>

#include <fmt/format.h>

namespace lockstep::etcd {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A change of membership that keeps meeting another one gives up.
constexpr int membership_attempts_max = 20;

std::string new_cluster_id() {
  std::random_device device;
  const std::uint64_t id = (std::uint64_t{device()} << 32) | device();
  return fmt::format("{:016x}", id);
}

std::string this_process() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') std::snprintf(host, sizeof host, "unknown");
  std::string name = host;
  std::replace(name.begin(), name.end(), ' ', '_');
  return fmt::format("{}@{}", getpid(), name);
}

// `http://127.0.0.1:2380/` -> `127.0.0.1:2380`.
std::string host_port_of(std::string url) {
  if (const auto scheme = url.find("://"); scheme != std::string::npos) url = url.substr(scheme + 3);
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

bool same_endpoint(const std::string& a, const std::string& b) {
  if (a == b) return true;
  const auto split = [](const std::string& text) {
    const auto colon = text.rfind(':');
    std::string host = colon == std::string::npos ? text : text.substr(0, colon);
    if (host == "localhost") host = "127.0.0.1";
    return std::pair(host, colon == std::string::npos ? std::string() : text.substr(colon + 1));
  };
  return split(a) == split(b);
}

etcdserverpb::Compare revision_is(const std::string& key, std::int64_t revision) {
  etcdserverpb::Compare compare;
  compare.set_key(key);
  compare.set_target(etcdserverpb::Compare::MOD);
  compare.set_result(etcdserverpb::Compare::EQUAL);
  compare.set_mod_revision(revision);
  return compare;
}

etcdserverpb::Compare absent(const std::string& key) {
  etcdserverpb::Compare compare;
  compare.set_key(key);
  compare.set_target(etcdserverpb::Compare::CREATE);
  compare.set_result(etcdserverpb::Compare::EQUAL);
  compare.set_create_revision(0);
  return compare;
}

std::vector<Member> sorted(std::vector<Member> members) {
  std::sort(members.begin(), members.end(), [](const Member& a, const Member& b) { return a.node_id < b.node_id; });
  return members;
}

}  // namespace

bool read_cluster(Client& client, const Keys& keys, Timeout timeout, ClusterState& state, std::string& error) {
  etcdserverpb::RangeRequest request;
  request.set_key(keys.cluster());
  etcdserverpb::RangeResponse response;
  const auto status = client.range(request, response, timeout);
  if (!status.ok()) {
    error = describe(status);
    return false;
  }
  state = ClusterState{};
  if (response.kvs_size() == 0) return true;
  std::string why;
  auto membership = decode_membership(response.kvs(0).value(), why);
  if (!membership) {
    error = fmt::format("the cluster under prefix '{}' cannot be read: {}", keys.prefix(), why);
    return false;
  }
  state.membership = std::move(*membership);
  state.revision = response.kvs(0).mod_revision();
  return true;
}

bool read_claims(Client& client, const Keys& keys, Timeout timeout, std::map<std::string, ClaimRecord>& claims,
                 std::string& error) {
  etcdserverpb::RangeRequest request;
  request.set_key(keys.claims_prefix());
  request.set_range_end(prefix_end(keys.claims_prefix()));
  etcdserverpb::RangeResponse response;
  const auto status = client.range(request, response, timeout);
  if (!status.ok()) {
    error = describe(status);
    return false;
  }
  claims.clear();
  for (const auto& kv : response.kvs()) {
    if (auto record = decode_claim(kv.value())) claims[record->node_id] = *record;
  }
  return true;
}

std::optional<std::string> peer_port_refusal(Client& client, const Target& target, Timeout timeout) {
  etcdserverpb::MemberListResponse response;
  if (!client.member_list(response, timeout).ok()) return std::nullopt;
  for (const auto& endpoint : target.endpoints) {
    for (const auto& member : response.members()) {
      for (const auto& peer : member.peerurls()) {
        if (!same_endpoint(host_port_of(peer), endpoint)) continue;
        const std::string client_address =
            member.clienturls_size() > 0 ? host_port_of(member.clienturls(0)) : std::string("not known");
        return fmt::format("--etcd {} is the peer port of etcd member {}: give its client address, {}", endpoint,
                           member.name(), client_address);
      }
    }
  }
  return std::nullopt;
}

bool create_cluster(Client& client, const Keys& keys, const std::vector<Member>& members, Timeout timeout,
                    ClusterState& state, bool& created, std::string& error) {
  if (auto bad = check_members(members)) {
    error = *bad;
    return false;
  }
  Membership membership{new_cluster_id(), members};
  etcdserverpb::TxnRequest txn;
  *txn.add_compare() = absent(keys.cluster());
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(keys.cluster());
  put->set_value(encode_membership(membership));
  txn.add_failure()->mutable_request_range()->set_key(keys.cluster());
  etcdserverpb::TxnResponse response;
  const auto status = client.txn(txn, response, timeout);
  if (!status.ok()) {
    error = describe(status);
    return false;
  }
  created = response.succeeded();
  if (created) {
    state.membership = std::move(membership);
    state.revision = response.header().revision();
    return true;
  }
  return read_cluster(client, keys, timeout, state, error);
}

bool change_membership(Client& client, const Keys& keys, Timeout timeout, const MembershipEdit& edit,
                       ClusterState& state, std::string& error) {
  for (int attempt = 0; attempt < membership_attempts_max; ++attempt) {
    if (!read_cluster(client, keys, timeout, state, error)) return false;
    if (!state.membership) {
      error = fmt::format("--prefix '{}' holds no cluster: create one with `lockstep cluster init`",
                          keys.prefix().substr(0, keys.prefix().size() - 1));
      return false;
    }
    std::map<std::string, ClaimRecord> claims;
    if (!read_claims(client, keys, timeout, claims, error)) return false;
    Membership changed = *state.membership;
    if (auto refusal = edit.edit(changed, claims)) {
      error = *refusal;
      return false;
    }
    if (auto bad = check_members(changed.members)) {
      error = *bad;
      return false;
    }
    etcdserverpb::TxnRequest txn;
    *txn.add_compare() = revision_is(keys.cluster(), state.revision);
    for (const auto& id : edit.must_not_run) *txn.add_compare() = absent(keys.claim(id));
    auto* put = txn.add_success()->mutable_request_put();
    put->set_key(keys.cluster());
    put->set_value(encode_membership(changed));
    etcdserverpb::TxnResponse response;
    const auto status = client.txn(txn, response, timeout);
    if (!status.ok()) {
      error = describe(status);
      return false;
    }
    if (response.succeeded()) {
      state.membership = std::move(changed);
      state.revision = response.header().revision();
      return true;
    }
    // Another change, or a node that started meanwhile: read again.
  }
  error = "the membership kept changing under this change; try again";
  return false;
}

// ---- a node's claim ---------------------------------------------------------

namespace {

// Reads the cluster, trying again while etcd fails until `give_up`; false
// and `error` on a cluster that cannot be read or an etcd that kept failing.
bool read_cluster_until(Client& client, const Keys& keys, const JoinRequest& request, const std::string& endpoints,
                        Clock::time_point give_up, ClusterState& state, std::string& error) {
  milliseconds backoff{100};
  while (true) {
    std::string why;
    if (read_cluster(client, keys, request.call_timeout, state, why)) return true;
    if (why.starts_with("the cluster under")) {
      error = why;
      return false;
    }
    if (Clock::now() + backoff >= give_up) {
      error = fmt::format("cannot read the cluster from etcd at {} within {} ms: {}", endpoints,
                          request.start_timeout.count(), why);
      return false;
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, milliseconds{1'000});
  }
}

// The cluster the node joins: the one `state` holds, or with init a new one
// when there is none; false and `error` when there is none to join, or
// init names other members than the cluster's.
bool find_or_create_cluster(Client& client, const Keys& keys, const JoinRequest& request,
                            const std::string& shown_prefix, const std::string& endpoints, ClusterState& state,
                            bool& created, std::string& error) {
  const std::vector<Member> wanted =
      request.members.empty() ? std::vector<Member>{{request.node_id, request.advertise}} : request.members;
  if (!state.membership && !request.init) {
    error = fmt::format("--prefix '{}' holds no cluster in etcd at {}: create one with `lockstep cluster init` (or "
                        "start its first node with --init)",
                        shown_prefix, endpoints);
    return false;
  }
  if (!state.membership) {
    if (!create_cluster(client, keys, wanted, request.call_timeout, state, created, error)) {
      error = "--init: cannot create the cluster: " + error;
      return false;
    }
  } else if (request.init && sorted(state.membership->members) != sorted(wanted)) {
    error = fmt::format("--init: --prefix '{}' holds a cluster already, whose members ({}) are not {}; start the node "
                        "without --init, or change the members with `lockstep cluster add` and `remove`",
                        shown_prefix, describe_members(state.membership->members), describe_members(wanted));
    return false;
  }
  return true;
}

// Why the node cannot claim its id in `membership`: it is no member, or a
// member at another address.
std::optional<std::string> member_refusal(const Membership& membership, const JoinRequest& request,
                                          const std::string& shown_prefix) {
  const auto* member = find_member(membership, request.node_id);
  if (member == nullptr) {
    return fmt::format(
        "--node-id {} is not a member of the cluster under --prefix '{}' ({}): add it with `lockstep cluster add`",
        request.node_id, shown_prefix, describe_members(membership.members));
  }
  if (member->advertise != request.advertise) {
    return fmt::format("--advertise {} is not {}'s address in the cluster under --prefix '{}', {}", request.advertise,
                       request.node_id, shown_prefix, member->advertise);
  }
  return std::nullopt;
}

}  // namespace

NodeClaim::NodeClaim(const Target& target, const std::string& prefix, const JoinRequest& request)
    : client_(target), keys_(prefix), request_(request) {}

NodeClaim::~NodeClaim() { release(); }

std::unique_ptr<NodeClaim> NodeClaim::join(const Target& target, const std::string& prefix, const JoinRequest& request,
                                           std::string& error) {
  std::unique_ptr<NodeClaim> claim(new NodeClaim(target, prefix, request));
  const auto endpoints = fmt::format("{}", fmt::join(target.endpoints, ","));
  const auto give_up = Clock::now() + request.start_timeout;
  ClusterState state;
  if (!read_cluster_until(claim->client_, claim->keys_, request, endpoints, give_up, state, error)) return nullptr;
  if (auto refusal = peer_port_refusal(claim->client_, target, request.call_timeout)) {
    error = *refusal;
    return nullptr;
  }
  if (!find_or_create_cluster(claim->client_, claim->keys_, request, prefix, endpoints, state, claim->created_,
                              error)) {
    return nullptr;
  }
  if (!claim->claim_id(prefix, endpoints, give_up, state, error)) return nullptr;
  claim->keeper_ = std::thread([raw = claim.get()] { raw->keep_loop(); });
  return claim;
}

// Claims the node's id in the cluster `state` holds (read again whenever it
// changes under the claim); false and `error` when the node must not start.
bool NodeClaim::claim_id(const std::string& shown_prefix, const std::string& endpoints,
                         std::chrono::steady_clock::time_point give_up, ClusterState& state, std::string& error) {
  std::optional<Clock::time_point> wait_until;
  while (true) {
    membership_ = *state.membership;
    cluster_revision_ = state.revision;
    if (auto refusal = member_refusal(membership_, request_, shown_prefix)) {
      error = std::move(*refusal);
      return false;
    }
    std::string holder, why;
    std::int64_t holder_ttl_s = 0;
    bool changed = false;
    if (claim_once(holder, holder_ttl_s, changed, why)) break;
    if (changed) {
      if (!read_cluster(client_, keys_, request_.call_timeout, state, why) || !state.membership) {
        error = fmt::format("the cluster under --prefix '{}' changed and cannot be read: {}", shown_prefix,
                            why.empty() ? "it is gone" : why);
        return false;
      }
      continue;
    }
    if (holder.empty()) {
      if (Clock::now() >= give_up) {
        error = fmt::format("cannot claim --node-id {} in etcd at {} within {} ms: {}", request_.node_id, endpoints,
                            request_.start_timeout.count(), why);
        return false;
      }
    } else {
      // Held: by a process that died (its lease ends within its TTL) or by
      // one that runs.
      if (!wait_until) wait_until = Clock::now() + std::chrono::seconds(holder_ttl_s) + std::chrono::seconds(1);
      if (Clock::now() >= *wait_until) {
        error = fmt::format("--node-id {} is held by a running process ({}): one process per node id "
                            "(a process that died lets it go within {} s)",
                            request_.node_id, holder, holder_ttl_s);
        return false;
      }
    }
    std::this_thread::sleep_for(milliseconds{200});
  }
  return true;
}

bool NodeClaim::claim_once(std::string& holder, std::int64_t& holder_ttl_s, bool& membership_changed,
                           std::string& error) {
  etcdserverpb::LeaseGrantResponse grant;
  auto status = client_.lease_grant(request_.ttl_s, grant, request_.call_timeout);
  if (!status.ok()) {
    error = describe(status);
    return false;
  }
  etcdserverpb::TxnRequest txn;
  *txn.add_compare() = revision_is(keys_.cluster(), cluster_revision_);
  *txn.add_compare() = absent(keys_.claim(request_.node_id));
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(keys_.claim(request_.node_id));
  put->set_value(encode_claim(ClaimRecord{request_.node_id, request_.advertise, grant.ttl(), this_process()}));
  put->set_lease(grant.id());
  txn.add_failure()->mutable_request_range()->set_key(keys_.claim(request_.node_id));
  txn.add_failure()->mutable_request_range()->set_key(keys_.cluster());
  etcdserverpb::TxnResponse response;
  status = client_.txn(txn, response, request_.call_timeout);
  if (status.ok() && response.succeeded()) {
    std::lock_guard lock(mutex_);
    lease_ = grant.id();
    lease_ttl_s_ = grant.ttl();
    return true;
  }
  // Not claimed (or not known to be): the lease goes, and the claim with
  // it if the write took effect after all.
  client_.lease_revoke(grant.id(), request_.call_timeout);
  if (!status.ok()) {
    error = describe(status);
    return false;
  }
  const auto& held = response.responses(0).response_range().kvs();
  if (!held.empty()) {
    const auto record = decode_claim(held[0].value());
    holder = record ? fmt::format("{} at {}", record->owner, record->advertise) : std::string("a process");
    holder_ttl_s = record ? record->ttl_s : request_.ttl_s;
  }
  const auto& cluster = response.responses(1).response_range().kvs();
  membership_changed = cluster.empty() || cluster[0].mod_revision() != cluster_revision_;
  error = "claimed by another process";
  return false;
}

void NodeClaim::keep_loop() {
  while (true) {
    std::int64_t lease = 0;
    {
      std::unique_lock lock(mutex_);
      // Three keep-alives a lease, as the leader's.
      const auto period = milliseconds{std::max<std::int64_t>(lease_ttl_s_, 1) * 1000 / 3};
      wake_.wait_for(lock, period, [&] { return stopping_; });
      if (stopping_) return;
      lease = lease_;
    }
    etcdserverpb::LeaseKeepAliveResponse response;
    const auto status = client_.lease_keep_alive(lease, response, request_.call_timeout);
    if (!status.ok() || response.ttl() > 0) continue;  // renewed, or etcd not reached: again next period
    // The lease ran out (this process was paused or cut off past it): claim
    // the id again, unless another process took it meanwhile.
    std::string holder, why;
    std::int64_t holder_ttl_s = 0;
    bool changed = false;
    if (claim_once(holder, holder_ttl_s, changed, why)) continue;
    if (!holder.empty()) {
      lost_.push(fmt::format("--node-id {} was claimed by another process ({}) while this one could not renew its "
                             "claim: it stops",
                             request_.node_id, holder),
                 256);
      return;
    }
    if (!changed) continue;  // etcd not reached: again next period
    // The membership changed meanwhile: claimed again on the new one if this
    // node is still in it, at its address.
    ClusterState state;
    if (!read_cluster(client_, keys_, request_.call_timeout, state, why)) continue;
    const auto* member = state.membership ? find_member(*state.membership, request_.node_id) : nullptr;
    if (member == nullptr || member->advertise != request_.advertise) {
      lost_.push(fmt::format("--node-id {} is no longer a member of the cluster at --advertise {}: it stops",
                             request_.node_id, request_.advertise),
                 256);
      return;
    }
    cluster_revision_ = state.revision;
  }
}

void NodeClaim::release() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  if (keeper_.joinable()) keeper_.join();
  if (lease_ != 0) client_.lease_revoke(lease_, request_.call_timeout);
  lease_ = 0;
  lost_.close();
}

}  // namespace lockstep::etcd
