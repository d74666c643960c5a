// The log commands' byte encoding: every command survives encode/decode
// unchanged, the encoding is fixed (a golden byte string pins version 3), and
// decode refuses truncated, extended, out-of-range and random bytes with an
// error instead of crashing (a RapidCheck property over arbitrary strings).
// Entries: frames concatenate (so a driver may batch proposals into one
// entry), an empty entry holds none, a command carries its frame's epoch,
// and one bad frame (or one whose command names another epoch) rejects the
// entry.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "impl/cluster/bytes.hpp"
#include "impl/cluster/commands.hpp"
#include "tests/cluster/helpers.hpp"

namespace lockstep::cluster::testing {
namespace {

std::vector<Command> samples() {
  return {
      acquire(7, 3, 12, "printer", "alice", 30'000, 5'000, 1'234),
      acquire(1, 1, 1, "k", "o", 1, 0, 0),
      acquire(0, 0, 1, "k", "o", 1, 0, 0),  // anonymous
      Acquire{Session{std::string(250, '~'), sequence_max}, ConnectionId{1}, "k", "o", DurationMs{1}, DurationMs{0},
              TimeMs{0}},
      release(7, 4, 12, "printer", 99, 2'000),
      Expire{"printer", Token{99}, TimeMs{31'234}},
      at_epoch(Expire{"printer", Token{99}, TimeMs{31'234}}, UINT64_MAX),
      Timeout{"printer", WaiterId{5}, TimeMs{6'234}, 3},
      Close{ConnectionId{12}, TimeMs{7'000}},
  };
}

TEST(ClusterCommands, RoundTripEveryKind) {
  for (const auto& command : samples()) {
    const auto decoded = decode(encode(command));
    ASSERT_TRUE(std::holds_alternative<Command>(decoded)) << describe(command);
    EXPECT_EQ(std::get<Command>(decoded), command) << describe(command);
  }
}

TEST(ClusterCommands, EncodingIsFixed) {
  // Version 3, tag 3 (Expire), key "k" (length 1), token 2, instant 256, epoch 5.
  const std::string expected("\x03\x03\x01\x00\x00\x00k\x02\0\0\0\0\0\0\0\x00\x01\0\0\0\0\0\0\x05\0\0\0\0\0\0\0",
                             31);
  EXPECT_EQ(encode(Expire{"k", Token{2}, TimeMs{256}, 5}), expected);
}

TEST(ClusterCommands, RejectsEveryTruncationAndTrailingBytes) {
  for (const auto& command : samples()) {
    const std::string bytes = encode(command);
    for (std::size_t length = 0; length < bytes.size(); ++length) {
      EXPECT_TRUE(std::holds_alternative<DecodeError>(decode(bytes.substr(0, length))))
          << describe(command) << " cut at " << length;
    }
    EXPECT_TRUE(std::holds_alternative<DecodeError>(decode(bytes + "x"))) << describe(command);
  }
}

TEST(ClusterCommands, RejectsUnknownVersionTagAndBadValues) {
  std::string bytes = encode(Expire{"k", Token{2}, TimeMs{256}});
  auto changed = [&](std::size_t at, char value) {
    std::string copy = bytes;
    copy[at] = value;
    return decode(copy);
  };
  EXPECT_EQ(std::get<DecodeError>(changed(0, 1)).reason, "unknown command format version 1");
  EXPECT_EQ(std::get<DecodeError>(changed(1, 9)).reason, "unknown command tag 9");
  EXPECT_TRUE(std::holds_alternative<DecodeError>(changed(6, ' ')));  // a space in the key
  EXPECT_TRUE(std::holds_alternative<DecodeError>(decode(encode(Expire{"k", Token{0}, TimeMs{1}}))));
  EXPECT_TRUE(std::holds_alternative<DecodeError>(decode(encode(Close{ConnectionId{1}, TimeMs{-1}}))));
  EXPECT_TRUE(std::holds_alternative<DecodeError>(decode(encode(acquire(1, 1, 1, "k", "o", 0, 0, 0)))));
  EXPECT_TRUE(std::holds_alternative<DecodeError>(decode(encode(acquire(0, 1, 1, "k", "o", 1, 0, 0)))));
  EXPECT_TRUE(std::holds_alternative<DecodeError>(decode(encode(acquire(1, 0, 1, "k", "o", 1, 0, 0)))));
  EXPECT_TRUE(std::holds_alternative<DecodeError>(
      decode(encode(Acquire{Session{"a b", 1}, ConnectionId{1}, "k", "o", DurationMs{1}, DurationMs{0}, TimeMs{0}}))));
  EXPECT_TRUE(std::holds_alternative<DecodeError>(decode(encode(
      Acquire{Session{"a", sequence_max + 1}, ConnectionId{1}, "k", "o", DurationMs{1}, DurationMs{0}, TimeMs{0}}))));
  EXPECT_TRUE(std::holds_alternative<DecodeError>(decode(encode(acquire(1, 1, 1, std::string(251, 'k'), "o", 1, 0, 0)))));
}

TEST(ClusterEntries, FramesConcatenateIntoOneEntry) {
  std::string entry;
  std::vector<Framed> expected;
  std::uint64_t proposal = 0;
  for (const auto& command : samples()) {
    const Origin origin{7, ++proposal};
    entry += encode_framed(origin, command);
    // Written with its frame's epoch, whatever it carried.
    Command stamped = command;
    set_epoch(stamped, 7);
    expected.push_back(Framed{origin, stamped});
  }
  const auto decoded = decode_entry(entry);
  ASSERT_TRUE(std::holds_alternative<std::vector<Framed>>(decoded));
  EXPECT_EQ(std::get<std::vector<Framed>>(decoded), expected);
  EXPECT_TRUE(std::get<std::vector<Framed>>(decode_entry("")).empty());
}

TEST(ClusterEntries, OneBadFrameRejectsTheEntry) {
  const std::string good = encode_framed(Origin{1, 1}, Expire{"k", Token{2}, TimeMs{256}});
  for (std::size_t length = 1; length < good.size(); ++length) {
    EXPECT_TRUE(std::holds_alternative<DecodeError>(decode_entry(good + good.substr(0, length)))) << length;
  }
  EXPECT_TRUE(std::holds_alternative<DecodeError>(decode_entry(good + "x")));
  EXPECT_TRUE(std::holds_alternative<DecodeError>(decode_entry(encode(Expire{"k", Token{2}, TimeMs{256}}))));
  // A frame of epoch 1 whose command says epoch 2: the command would detach
  // waiters its leadership never saw, so the entry is refused.
  ByteWriter payload;
  payload.u64(1);
  payload.u64(1);
  ByteWriter frame;
  frame.text(payload.take() + encode(Expire{"k", Token{2}, TimeMs{256}, 2}));
  const auto mismatched = decode_entry(good + frame.take());
  ASSERT_TRUE(std::holds_alternative<DecodeError>(mismatched));
  EXPECT_EQ(std::get<DecodeError>(mismatched).reason, "a command of another epoch than its frame");
}

RC_GTEST_PROP(ClusterCommands, DecodeNeverCrashesAndRoundTripsWhatItAccepts, (const std::string& bytes)) {
  const auto decoded = decode(bytes);
  if (const auto* command = std::get_if<Command>(&decoded)) RC_ASSERT(encode(*command) == bytes);
}

RC_GTEST_PROP(ClusterCommands, DecodeRejectsMutatedAcquires, (std::uint8_t at, std::uint8_t value)) {
  std::string bytes = encode(acquire(7, 3, 12, "printer", "alice", 30'000, 5'000, 1'234));
  bytes[at % bytes.size()] = static_cast<char>(value);
  const auto decoded = decode(bytes);
  if (const auto* command = std::get_if<Command>(&decoded)) RC_ASSERT(encode(*command) == bytes);
}

}  // namespace
}  // namespace lockstep::cluster::testing
