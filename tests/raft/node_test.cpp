// The Raft node and the register through their public calls only: the
// configuration checks, the answers to a proposal, time that must not go
// back, the Ready of a single-node cluster (persist, then apply), and the
// register's snapshot round trip with data that looks like its own format.
#include <gtest/gtest.h>

#include "impl/assert.hpp"
#include "impl/raft/node.hpp"
#include "impl/raft/register.hpp"

namespace lockstep::raft {
namespace {

RaftConfig config(NodeId id, std::vector<NodeId> peers) {
  RaftConfig c;
  c.id = id;
  c.peers = std::move(peers);
  return c;
}

TEST(RaftConfig, InvalidConfigurationsAreNamed) {
  EXPECT_EQ(validate(config(1, {1, 2, 3})), "");
  EXPECT_NE(validate(config(0, {1, 2, 3})), "");
  EXPECT_NE(validate(config(4, {1, 2, 3})), "");
  EXPECT_NE(validate(config(1, {2, 1, 3})), "");
  auto c = config(1, {1, 2, 3});
  c.election_ms = DurationMs{60};  // less than two heartbeats
  EXPECT_NE(validate(c), "");
  c = config(1, {1, 2, 3});
  c.inflight_max = 0;
  EXPECT_NE(validate(c), "");
}

TEST(RaftNode, AFollowerRedirectsAndTimeMustNotGoBack) {
  RaftNode node(config(1, {1, 2, 3}), 7, PersistedState{}, TimeMs{100});
  const auto r = node.propose("x", TimeMs{100});
  EXPECT_EQ(r.kind, ProposeResult::Kind::not_leader);
  EXPECT_EQ(r.leader_hint, node_none);
  EXPECT_THROW(node.tick(TimeMs{99}), InvariantViolation);
}

TEST(RaftNode, ASingleNodeElectsItselfPersistsThenCommits) {
  RaftNode node(config(1, {1}), 7, PersistedState{}, TimeMs{0});
  const auto elected = node.tick(TimeMs{1000});
  ASSERT_EQ(node.role(), Role::leader);
  ASSERT_TRUE(elected.hard_state.has_value());
  EXPECT_EQ(elected.hard_state->term, 1u);
  EXPECT_EQ(elected.hard_state->vote, 1u);
  ASSERT_EQ(elected.entries.size(), 1u);  // the term's no-op
  EXPECT_EQ(elected.entries[0].kind, EntryKind::noop);
  EXPECT_TRUE(elected.messages.empty());
  auto proposed = node.propose("x", TimeMs{1000});
  ASSERT_EQ(proposed.kind, ProposeResult::Kind::accepted);
  EXPECT_EQ(proposed.index, 2u);
  ASSERT_EQ(proposed.ready.entries.size(), 1u);
  ASSERT_EQ(proposed.ready.committed.size(), 1u);
  EXPECT_EQ(proposed.ready.committed[0].data, "x");
}

TEST(RaftNode, ARestartRecoversTermVoteAndLogButNotTheCommitIndex) {
  PersistedState persisted;
  persisted.hard_state = {3, 2};
  persisted.entries = {Entry{1, 1, EntryKind::noop, {}}, Entry{3, 2, EntryKind::command, "x"}};
  RaftNode node(config(1, {1, 2, 3}), 7, persisted, TimeMs{0});
  EXPECT_EQ(node.term(), 3u);
  EXPECT_EQ(node.vote(), 2u);
  EXPECT_EQ(node.last_index(), 2u);
  EXPECT_EQ(node.last_term(), 3u);
  EXPECT_EQ(node.commit(), 0u);
  EXPECT_EQ(node.role(), Role::follower);
}

TEST(RaftNode, TheUncommittedBoundRefusesProposals) {
  auto c = config(1, {1, 2, 3});
  c.uncommitted_entries_max = 2;
  RaftNode node(c, 7, PersistedState{}, TimeMs{0});
  node.campaign(TimeMs{0});
  // Grant the pre-vote and the vote from node 2.
  Message m;
  m.type = MessageType::pre_vote_response;
  m.from = 2;
  m.to = 1;
  m.term = 1;
  m.granted = true;
  node.step(m, TimeMs{1});
  m.type = MessageType::vote_response;
  node.step(m, TimeMs{2});
  ASSERT_EQ(node.role(), Role::leader);
  EXPECT_EQ(node.propose("a", TimeMs{3}).kind, ProposeResult::Kind::accepted);  // the no-op and a
  EXPECT_EQ(node.propose("b", TimeMs{3}).kind, ProposeResult::Kind::too_many_uncommitted);
}

TEST(AppendOnlyRegister, SnapshotRoundTripKeepsAnyData) {
  AppendOnlyRegister machine;
  machine.apply(Entry{1, 1, EntryKind::noop, {}});
  machine.apply(Entry{1, 2, EntryKind::command, "a:b;c"});
  machine.apply(Entry{1, 3, EntryKind::command, ""});
  machine.apply(Entry{1, 4, EntryKind::command, "12:3:x"});
  AppendOnlyRegister copy;
  copy.restore(Snapshot{4, 1, machine.snapshot_through(4)});
  EXPECT_EQ(copy.values(), machine.values());
  EXPECT_EQ(copy.applied(), 4u);
  AppendOnlyRegister prefix;
  prefix.restore(Snapshot{2, 1, machine.snapshot_through(2)});
  ASSERT_EQ(prefix.values().size(), 1u);
  EXPECT_EQ(prefix.values()[0].data, "a:b;c");
  EXPECT_THROW(machine.apply(Entry{1, 6, EntryKind::command, "gap"}), InvariantViolation);
}

}  // namespace
}  // namespace lockstep::raft
