// The layout of cluster mode's log in etcd, without an etcd: endpoint lists
// are read as gRPC targets or refused with a reason (a URL with the
// host:port to give instead); log keys sort in log
// order across writes and epochs (the snapshot writer deletes the log by key
// range, so this order is what makes that deletion exact); snapshot pointers
// and leader records round-trip, and bytes that are not one are refused;
// so do a cluster's membership and a node's claim, and a membership that
// names an id or an address twice, or no member, is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "drivers/etcd/client.hpp"
#include "drivers/etcd/log_format.hpp"

namespace lockstep::etcd {
namespace {

TEST(Endpoints, IPv4ListBecomesOneTarget) {
  std::string error;
  const auto target = parse_endpoints("127.0.0.1:2379,127.0.0.1:22379", error);
  ASSERT_TRUE(target) << error;
  EXPECT_EQ(target->uri, "ipv4:127.0.0.1:2379,127.0.0.1:22379");
  EXPECT_EQ(target->endpoints, (std::vector<std::string>{"127.0.0.1:2379", "127.0.0.1:22379"}));
}

TEST(Endpoints, OneHostNameGoesThroughDns) {
  std::string error;
  const auto target = parse_endpoints("localhost:2379", error);
  ASSERT_TRUE(target) << error;
  EXPECT_EQ(target->uri, "dns:///localhost:2379");
}

TEST(Endpoints, BadListsAreRefusedWithAReason) {
  for (const char* text : {"", "127.0.0.1", "127.0.0.1:", ":2379", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:23x",
                           "https://127.0.0.1:2379", "http://127.0.0.1:2379", "127.0.0.1:2379/", "a:1,b:2",
                           "127.0.0.1:2379,,127.0.0.1:2380"}) {
    std::string error;
    EXPECT_FALSE(parse_endpoints(text, error)) << text;
    EXPECT_FALSE(error.empty()) << text;
  }
  // A URL is refused with what to give instead.
  std::string error;
  EXPECT_FALSE(parse_endpoints("127.0.0.1:2379,http://127.0.0.1:22379", error));
  EXPECT_EQ(error, "'http://127.0.0.1:22379' is a URL: give host:port (127.0.0.1:22379)");
}

TEST(Keys, LogKeysSortInLogOrder) {
  const Keys keys("lockstep");
  EXPECT_EQ(keys.prefix(), "lockstep/");
  EXPECT_EQ(keys.leader(), "lockstep/leader");
  // Written in this order: epoch 9's writes, then epoch 300's (a later
  // leader), across a digit that changes the key's length in decimal.
  const std::vector<std::string> written{keys.log_key(9, 1), keys.log_key(9, 2), keys.log_key(9, 15),
                                         keys.log_key(9, 16), keys.log_key(300, 1), keys.log_key(300, 4096)};
  EXPECT_TRUE(std::is_sorted(written.begin(), written.end()));
  for (const auto& key : written) {
    EXPECT_TRUE(keys.is_log_key(key));
    // Every log key is inside the range a node watches, and so is the
    // election key; the snapshots are not.
    EXPECT_GE(key, keys.watch_begin());
    EXPECT_LT(key, keys.watch_end());
  }
  EXPECT_LT(keys.leader(), keys.watch_end());
  EXPECT_GE(keys.snapshot(), keys.watch_end());
  EXPECT_GE(keys.chunk_key(5, 0), keys.watch_end());
  EXPECT_FALSE(keys.is_log_key(keys.leader()));
}

TEST(Keys, ChunksOfOlderSnapshotsSortBeforeANewerOnesPrefix) {
  const Keys keys("/p/");
  EXPECT_EQ(keys.prefix(), "/p/");
  EXPECT_LT(keys.chunk_key(15, 99), keys.chunk_prefix(16));
  EXPECT_LT(keys.chunk_key(16, 0), keys.chunk_key(16, 1));
  EXPECT_GE(keys.chunk_key(16, 0), keys.chunk_prefix(16));
  EXPECT_GE(keys.chunk_key(17, 0), keys.chunk_prefix(16));
}

TEST(Keys, PrefixMustBePrintableWithoutSpace) {
  std::string error;
  EXPECT_TRUE(valid_prefix("lockstep/a-b", error));
  EXPECT_FALSE(valid_prefix("", error));
  EXPECT_FALSE(valid_prefix("a b", error));
  EXPECT_FALSE(valid_prefix(std::string(201, 'a'), error));
  EXPECT_FALSE(valid_prefix("tab\there", error));
}

TEST(Pointer, RoundTripsAndRefusesWhatIsNotOne) {
  const SnapshotPointer pointer{1234, 3 * snapshot_chunk_bytes + 1, 4, 0xdeadbeefULL};
  std::string error;
  const auto back = decode_pointer(encode_pointer(pointer), error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(*back, pointer);
  // An empty state still has one chunk.
  EXPECT_TRUE(decode_pointer(encode_pointer({7, 0, 1, fnv1a_64("")}), error));
  // A chunk count that does not fit the size, index 0, a cut, a bad version.
  EXPECT_FALSE(decode_pointer(encode_pointer({7, 10, 2, 0}), error));
  EXPECT_FALSE(decode_pointer(encode_pointer({0, 10, 1, 0}), error));
  auto bytes = encode_pointer(pointer);
  EXPECT_FALSE(decode_pointer(bytes.substr(0, bytes.size() - 1), error));
  EXPECT_FALSE(decode_pointer(bytes + "x", error));
  bytes[0] = 2;
  EXPECT_FALSE(decode_pointer(bytes, error));
}

TEST(Leader, RecordRoundTrips) {
  const LeaderRecord record{"n1", "127.0.0.1:7001"};
  EXPECT_EQ(encode_leader(record), "n1 127.0.0.1:7001");
  EXPECT_EQ(decode_leader(encode_leader(record)), record);
  EXPECT_FALSE(decode_leader("n1"));
  EXPECT_FALSE(decode_leader(" 127.0.0.1:1"));
  EXPECT_FALSE(decode_leader("n1 "));
  EXPECT_FALSE(decode_leader("n1 a b"));
}

TEST(Membership, RoundTripsAndReadsAsText) {
  const Membership membership{"00ff00ff00ff00ff", {{"n1", "127.0.0.1:27001"}, {"n2", "10.0.0.2:7878"}}};
  const auto text = encode_membership(membership);
  EXPECT_EQ(text, "lockstep-cluster 1 00ff00ff00ff00ff\nmember n1 127.0.0.1:27001\nmember n2 10.0.0.2:7878\n");
  std::string error;
  EXPECT_EQ(decode_membership(text, error), membership) << error;
  for (const std::string& bad : std::vector<std::string>{
           "", text.substr(0, text.size() - 1), "lockstep-cluster 2 00ff00ff00ff00ff\nmember n1 a:1\n",
        "lockstep-cluster 1 00ff\nmember n1 a:1\n", "lockstep-cluster 1 00ff00ff00ff00ff\n",
        "lockstep-cluster 1 00ff00ff00ff00ff\nmember n1 a:1\nmember n1 b:2\n",
        "lockstep-cluster 1 00ff00ff00ff00ff\nmember n1 a:1 extra\n", "lockstep-cluster 1 00ff00ff00ff00ff\nnode n1 a:1\n"}) {
    EXPECT_FALSE(decode_membership(bad, error)) << bad;
  }
}

TEST(Membership, MembersFromTheCommandLine) {
  std::string error;
  const auto members = parse_members("n1=127.0.0.1:27001,n2=127.0.0.1:27002", error);
  ASSERT_TRUE(members) << error;
  EXPECT_EQ(*members, (std::vector<Member>{{"n1", "127.0.0.1:27001"}, {"n2", "127.0.0.1:27002"}}));
  EXPECT_EQ(describe_members(*members), "n1 127.0.0.1:27001, n2 127.0.0.1:27002");
  for (const char* bad : {"", "n1", "n1=", "=a:1", "n1=a", "n1=a:0", "n1=a:65536", "n1=a:01", "n1=a:1,n1=b:2",
                          "n1=a:1,n2=a:1", "n 1=a:1", "n1=a:1,"}) {
    EXPECT_FALSE(parse_members(bad, error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
  EXPECT_FALSE(parse_members("n1=a:1,n1=b:2", error));
  EXPECT_EQ(error, "node id n1 is given twice");
  std::vector<Member> many;
  for (std::size_t i = 0; i <= members_max; ++i) many.push_back({fmt::format("n{}", i), fmt::format("h:{}", i + 1)});
  EXPECT_TRUE(check_members(many));
  many.pop_back();
  EXPECT_FALSE(check_members(many));
  EXPECT_TRUE(valid_node_id(std::string(64, 'a')));
  EXPECT_FALSE(valid_node_id(std::string(65, 'a')));
}

TEST(Membership, ClaimRoundTrips) {
  const ClaimRecord claim{"n1", "127.0.0.1:27001", 5, "1234@host"};
  EXPECT_EQ(encode_claim(claim), "n1 127.0.0.1:27001 5 1234@host");
  EXPECT_EQ(decode_claim(encode_claim(claim)), claim);
  EXPECT_FALSE(decode_claim("n1 127.0.0.1:27001 5"));
  EXPECT_FALSE(decode_claim("n1 127.0.0.1:27001 x 1@h"));
}

TEST(Hash, IsFnv1a64) {
  // The published FNV-1a 64 values of "" and "a".
  EXPECT_EQ(fnv1a_64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a_64("a"), 0xaf63dc4c8601ec8cULL);
}

}  // namespace
}  // namespace lockstep::etcd
