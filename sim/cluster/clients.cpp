// The clients' side of the lock workload (workload.hpp): each client's next
// request (an acquire, a release, now and then a stale or a reused one), an
// attempt on a new connection, a retry with backoff after a timeout, a
// redirect or a close, a request given up, and the answer heard. A
// connection's id keeps the bit-packed numbering traces have always shown.
#include "sim/cluster/workload.hpp"

#include <algorithm>

#include "impl/assert.hpp"

namespace lockstep::sim {

namespace {

// The wire line of a client's request, with its session fields.
std::string request_line(const cluster::Command& command) {
  if (const auto* a = std::get_if<cluster::Acquire>(&command)) {
    return fmt::format("A {} {} {} {} {} {}", a->key, a->owner, a->lease_ms.value, a->wait_ms.value, a->session.client,
                       a->session.sequence);
  }
  const auto& r = std::get<cluster::Release>(command);
  return fmt::format("R {} {} {} {}", r.key, r.token.value, r.session.client, r.session.sequence);
}

}  // namespace

// The client's next request, or nothing once the workload stopped.
void LockWorkload::act(Harness& h, std::uint32_t c) {
  auto& client = clients_[c];
  if (client.waiting || h.in_liveness()) return;
  auto& prng = h.workload_prng();
  if (p_.reuse_sequence > 0 && client.last_answered && prng.chance(p_.reuse_sequence)) {
    reuse(h, c);
    return;
  }
  client.session = cluster::Session{client.name, ++client.sequence};
  if (client.held && client.held->releases) {
    Token token = client.held->token;
    if (prng.chance(p_.stale_release) && !client.past_tokens.empty()) {
      token = client.past_tokens[prng.below(client.past_tokens.size())];
    } else if (prng.chance(p_.random_release)) {
      token = Token{static_cast<std::uint64_t>(prng.between(1, 1'000'000))};
    }
    client.command = cluster::Release{client.session, ConnectionId{}, client.held->key, token, TimeMs{0}};
  } else {
    client.held.reset();  // a lease let run out is forgotten
    const auto key = fmt::format("k{}", prng.below(p_.keys));
    const auto lease = DurationMs{prng.between(p_.lease_min_ms.value, p_.lease_max_ms.value)};
    const auto wait = prng.chance(p_.try_lock) ? DurationMs{0} : DurationMs{prng.between(0, p_.wait_max_ms.value)};
    client.command =
        cluster::Acquire{client.session, ConnectionId{}, key, session_owner(client.session), lease, wait, TimeMs{0}};
  }
  client.line = request_line(client.command);
  ++lock_.requests;
  client.waiting = true;
  client.attempts = 0;
  send(h, c);
}

// A request under the number of the client's last one, asking something
// else (a try-lock that differs from it): the cluster must refuse it.
void LockWorkload::reuse(Harness& h, std::uint32_t c) {
  auto& client = clients_[c];
  auto& prng = h.workload_prng();
  const auto key = fmt::format("k{}", prng.below(p_.keys));
  auto lease = DurationMs{prng.between(p_.lease_min_ms.value, p_.lease_max_ms.value)};
  if (const auto* last = std::get_if<cluster::Acquire>(&client.command);
      last != nullptr && last->key == key && last->lease_ms == lease && last->wait_ms.value == 0) {
    lease = DurationMs{lease.value == 1 ? 2 : lease.value - 1};
  }
  client.command = cluster::Acquire{client.session, ConnectionId{}, key, session_owner(client.session), lease,
                                    DurationMs{0}, TimeMs{0}};
  client.line = request_line(client.command);
  client.reusing = true;
  ++lock_.requests;
  ++lock_.reused;
  client.waiting = true;
  client.attempts = 0;
  send(h, c);
}

DurationMs LockWorkload::lease_of(const cluster::Command& command) const {
  if (const auto* a = std::get_if<cluster::Acquire>(&command)) return a->lease_ms;
  return DurationMs{0};
}

DurationMs LockWorkload::wait_of(const cluster::Command& command) const {
  if (const auto* a = std::get_if<cluster::Acquire>(&command)) return a->wait_ms;
  return DurationMs{0};
}

// One attempt, on a new connection to the client's target node.
void LockWorkload::send(Harness& h, std::uint32_t c) {
  auto& client = clients_[c];
  ++client.attempts;
  ++lock_.attempts;
  const ClientConnection opened = open_connection(c);
  client.connection = opened.id;
  // (A request reusing a number is another operation, which grants
  // nothing and causes nothing: the meters follow the first one.)
  if (!client.reusing) {
    checker_->on_send(client.session, lease_of(client.command), h.now());
    lateness_.sent(client.session, h.now());
  }
  if (observer_ != nullptr) observer_->sent(h.now(), client.connection, client.line);
  const auto delay = latency(h);
  const auto slot = pool_.put(ClientMessage{opened, ClientMessage::Request{client.line}});
  h.push(h.now() + delay, work_event::ToNode{slot});
  client.timer = ++timers_;
  // The timeout doubles with each attempt (up to 8 times): a cluster slower
  // than its clients' retries would otherwise drown in their copies.
  const auto timeout = DurationMs{p_.rpc_timeout_ms.value << std::min<std::uint32_t>(client.attempts - 1, 3)};
  h.push(h.now() + wait_of(client.command) + timeout, work_event::Timer{c, client.timer, false});
}

// Gives up the attempt: a new connection after a backoff, to the hinted
// leader or the next node.
void LockWorkload::retry(Harness& h, std::uint32_t c, NodeId hint) {
  auto& client = clients_[c];
  ++lock_.retries;
  if (hint != 0 && hint != client.target) {
    client.target = hint;
  } else {
    client.target = static_cast<NodeId>(client.target % p_.raft.nodes + 1);
  }
  const auto exponent = std::min<std::uint32_t>(client.attempts, 10);
  const auto ceiling = std::min(p_.backoff_max_ms.value, p_.backoff_min_ms.value << exponent);
  const auto backoff = DurationMs{h.workload_prng().between(p_.backoff_min_ms.value, std::max(p_.backoff_min_ms.value, ceiling))};
  client.timer = ++timers_;
  if (client.connection.value != 0) {
    if (!client.reusing) lateness_.attempt_ended(client.session, h.now());
    if (observer_ != nullptr) observer_->given_up(h.now(), client.connection);
  }
  client.connection = ConnectionId{};  // nothing more is heard on the old one
  h.push(h.now() + backoff, work_event::Timer{c, client.timer, true});
}

void LockWorkload::at_client(Harness& h, ClientMessage m) {
  const std::uint32_t c = m.connection.client;
  auto& client = clients_[c];
  if (!client.waiting || m.connection.id != client.connection) return;  // a connection given up
  const auto* reply = std::get_if<ClientMessage::Reply>(&m.what);
  if (reply == nullptr) {
    LOCKSTEP_ASSERT(std::holds_alternative<ClientMessage::Closed>(m.what));  // nodes send no requests
    // The node could not tell whether the request would commit, or it
    // stopped leading while the request waited: ask again, or give up.
    if (observer_ != nullptr) observer_->closed_by_node(h.now(), m.connection.id);
    if (!client.reusing) lateness_.attempt_ended(client.session, h.now());
    client.connection = ConnectionId{};
    // (Only an acquire that may wait: the client a leader change must not
    // leave a ghost of.)
    if (p_.give_up > 0 && wait_of(client.command).value > 0 && !client.reusing &&
        h.workload_prng().chance(p_.give_up) && !h.in_liveness()) {
      give_up(h, c);
      return;
    }
    retry(h, c, 0);
    return;
  }
  const Response& response = reply->response;
  if (observer_ != nullptr) observer_->received(h.now(), m.connection.id, format_response(response));
  lateness_.received(response, h.now());
  if (response.kind == ResponseKind::error && response.reason.starts_with("not-leader")) {
    ++lock_.redirects;
    const auto hint = response.reason.size() > 11 ? address_node(std::string_view(response.reason).substr(11))
                                                    : std::nullopt;
    retry(h, c, hint.value_or(0));
    return;
  }
  if (response.kind == ResponseKind::error && response.reason == "too many requests in flight") {
    retry(h, c, 0);
    return;
  }
  const auto* release = std::get_if<cluster::Release>(&client.command);
  const bool answers = checker_->on_response(client.session, release != nullptr,
                                            release != nullptr ? release->token : Token{0}, response, h.now(),
                                            client.reusing);
  if (!answers) return;
  ++h.stats().acknowledged;
  count(response);
  client.waiting = false;
  client.last_answered = true;
  if (!client.reusing) lateness_.attempt_ended(client.session, h.now());
  if (observer_ != nullptr) observer_->given_up(h.now(), client.connection);
  client.connection = ConnectionId{};
  if (client.reusing) {
    // Refused: what it holds, it still holds.
    client.reusing = false;
    schedule_act(h, c, DurationMs{h.workload_prng().between(0, p_.think_max_ms.value)});
    return;
  }
  if (response.kind == ResponseKind::granted) {
    client.held = Held{response.key, response.token, !h.workload_prng().chance(p_.let_expire)};
    client.past_tokens.push_back(response.token);
    if (client.past_tokens.size() > 4) client.past_tokens.erase(client.past_tokens.begin());
    schedule_act(h, c, DurationMs{h.workload_prng().between(0, p_.hold_max_ms.value)});
    return;
  }
  if (release != nullptr) client.held.reset();
  schedule_act(h, c, DurationMs{h.workload_prng().between(0, p_.think_max_ms.value)});
}

// The client never asks again: whatever became of the request, it forgets
// it (a key it may have been granted, or one it released, runs out).
void LockWorkload::give_up(Harness& h, std::uint32_t c) {
  auto& client = clients_[c];
  ++lock_.given_up;
  if (trace_ != nullptr) trace_->give_up(client.name, h.now());
  client.waiting = false;
  client.last_answered = false;
  client.reusing = false;
  client.held.reset();
  schedule_act(h, c, DurationMs{h.workload_prng().between(0, p_.think_max_ms.value)});
}

void LockWorkload::count(const Response& r) {
  switch (r.kind) {
    case ResponseKind::granted: ++lock_.granted; break;
    case ResponseKind::timed_out: ++lock_.timed_out; break;
    case ResponseKind::busy: ++lock_.busy; break;
    case ResponseKind::released: ++lock_.released; break;
    case ResponseKind::not_held: ++lock_.not_held; break;
    default: ++lock_.errors; break;
  }
}

void LockWorkload::on_timer(Harness& h, const work_event::Timer& e) {
  auto& client = clients_[e.client];
  if (!client.waiting || client.timer != e.timer) return;
  if (e.resend) {
    send(h, e.client);
  } else {
    retry(h, e.client, 0);
  }
}

// A new connection of client c to its target node. Its id, the number the
// node and the trace see, keeps the numbering traces have always shown
// (the node in the top byte, the client in bits 24..47, the client's count
// of connections below) so that a seed writes the same trace; nothing
// reads node or client back out of it: connection() looks the id up.
ClientConnection LockWorkload::open_connection(std::uint32_t c) {
  auto& client = clients_[c];
  const ClientConnection opened{client.target, c,
                                ConnectionId{(std::uint64_t{client.target} << 56) | (std::uint64_t{c} << 24) |
                                             (++client.connections & 0xffffffu)}};
  const bool fresh = connections_.emplace(opened.id.value, opened).second;
  LOCKSTEP_ASSERT(fresh);
  return opened;
}

const ClientConnection& LockWorkload::connection(ConnectionId id) const {
  const auto found = connections_.find(id.value);
  LOCKSTEP_ASSERT(found != connections_.end());  // a node answers only on connections clients opened
  return found->second;
}

}  // namespace lockstep::sim
