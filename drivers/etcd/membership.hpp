// A cluster's identity, its membership and the claims of its running nodes,
// in etcd (keys and bytes of log_format.hpp): what keeps a typo from
// starting a second lock service beside the first. A cluster is created
// once, with its members (node ids and the addresses clients reach them
// at); a node starts only on a prefix that holds a cluster, only under the
// id of one of its members, at that member's address, and only while no
// other live process holds that id. The last is a claim: a key attached to
// a lease that the running node keeps alive, so a process that died lets
// its id go within its lease's TTL, and a second process with a live id is
// refused instead of deposing the first.
//
// Blocking calls for the node's start-up and for `lockstep cluster`, each
// bounded by a timeout; a NodeClaim keeps its claim alive on a thread of
// its own and says so through fd() if it loses it to another process.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "drivers/etcd/client.hpp"
#include "drivers/etcd/event_queue.hpp"
#include "drivers/etcd/log_format.hpp"

namespace lockstep::etcd {

// What a prefix holds: a cluster (its membership and the revision it was
// last written at), or none.
struct ClusterState {
  std::optional<Membership> membership;
  std::int64_t revision = 0;  // P/cluster's mod revision; 0 when there is none
};

// Reads P/cluster. False and `error` when etcd does not answer within
// `timeout` or the key holds no membership this version reads.
bool read_cluster(Client& client, const Keys& keys, Timeout timeout, ClusterState& state, std::string& error);

// The claims of running nodes, by node id.
bool read_claims(Client& client, const Keys& keys, Timeout timeout, std::map<std::string, ClaimRecord>& claims,
                 std::string& error);

// A refusal when one of the endpoints given is a member's peer port (which
// speaks etcd's client protocol too, but is not the address clients are
// meant to use): names the endpoint, the member and its client address.
// Nothing when they are all client ports, or etcd cannot say.
std::optional<std::string> peer_port_refusal(Client& client, const Target& target, Timeout timeout);

// Creates the cluster with a new id and `members` unless the prefix holds
// one already; `state` is what the prefix holds afterwards and `created`
// whether this call wrote it.
bool create_cluster(Client& client, const Keys& keys, const std::vector<Member>& members, Timeout timeout,
                    ClusterState& state, bool& created, std::string& error);

// Changes the membership: `edit` changes it in place, or returns why it
// refuses; `claims` are the running nodes' claims at the time, for an edit
// that must not touch a running node (which the write then checks again:
// it fails if a claim named in `must_not_run` appears meanwhile). Written in
// a transaction on the revision read, and tried again from a fresh read
// when another change came in between. False and `error` on a refusal or
// an etcd error.
struct MembershipEdit {
  std::function<std::optional<std::string>(Membership&, const std::map<std::string, ClaimRecord>& claims)> edit;
  std::vector<std::string> must_not_run;
};
bool change_membership(Client& client, const Keys& keys, Timeout timeout, const MembershipEdit& edit,
                       ClusterState& state, std::string& error);

// How a node joins its cluster at start-up.
struct JoinRequest {
  std::string node_id;
  std::string advertise;
  bool init = false;             // create the cluster if the prefix has none
  std::vector<Member> members;   // with init: the members (empty: this node alone)
  std::int64_t ttl_s = 5;        // the claim's lease
  Timeout call_timeout{5'000};   // each etcd call
  Timeout start_timeout{5'000};  // how long etcd may keep failing before the node gives up
};

class NodeClaim {
 public:
  // Checks the endpoints, reads the cluster (with init, creates it), checks
  // that `node_id` is a member at `advertise`, and claims the id; a claim
  // still held by another process is waited for up to its TTL plus a
  // second (a process that died lets it go by then) and refused after.
  // Nothing, and `error` (one line naming the option at fault), when the
  // node must not start.
  static std::unique_ptr<NodeClaim> join(const Target& target, const std::string& prefix, const JoinRequest& request,
                                         std::string& error);
  ~NodeClaim();
  NodeClaim(const NodeClaim&) = delete;
  NodeClaim& operator=(const NodeClaim&) = delete;

  const Membership& membership() const { return membership_; }
  bool created() const { return created_; }

  // Readable when the claim was lost to another process (take_lost() says
  // why): the node must stop. A claim whose lease ran out while nothing
  // else took the id (this process was paused, or cut off from etcd) is
  // simply made again.
  int fd() const { return lost_.fd(); }
  std::vector<std::string> take_lost() { return lost_.take_all(); }

  // Revokes the claim, so that the id is free at once. Idempotent.
  void release();

 private:
  NodeClaim(const Target& target, const std::string& prefix, const JoinRequest& request);
  // join's last step: claims the id, waiting out a claim that may be a dead
  // process's.
  bool claim_id(const std::string& shown_prefix, const std::string& endpoints,
                std::chrono::steady_clock::time_point give_up, ClusterState& state, std::string& error);
  bool claim_once(std::string& holder, std::int64_t& holder_ttl_s, bool& membership_changed, std::string& error);
  void keep_loop();

  Client client_;
  const Keys keys_;
  const JoinRequest request_;
  Membership membership_;
  std::int64_t cluster_revision_ = 0;
  bool created_ = false;
  std::int64_t lease_ = 0;
  std::int64_t lease_ttl_s_ = 0;
  EventQueue<std::string> lost_{4096};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread keeper_;
};

}  // namespace lockstep::etcd
