#include "impl/cluster/commands.hpp"

#include <fmt/format.h>

#include "impl/cluster/bytes.hpp"
#include "impl/protocol.hpp"

namespace lockstep::cluster {

namespace {

// Tags are part of the format: never renumber, only add.
enum class Tag : std::uint8_t { acquire = 1, release = 2, expire = 3, timeout = 4, close = 5 };

void put_time(ByteWriter& w, TimeMs t) { w.i64(t.value); }
void put_duration(ByteWriter& w, DurationMs d) { w.i64(d.value); }
void put_session(ByteWriter& w, const Session& s) {
  w.text(s.client);
  w.u64(s.sequence);
}

TimeMs get_time(ByteReader& r) {
  const TimeMs t{r.i64()};
  if (t.value < 0 || t > time_max) r.fail("instant out of range");
  return t;
}

DurationMs get_duration(ByteReader& r, std::int64_t low) {
  const DurationMs d{r.i64()};
  if (d.value < low || d > duration_limit_max) r.fail("duration out of range");
  return d;
}

Session get_session(ByteReader& r) {
  Session s;
  s.client = r.text(name_bytes_max);
  s.sequence = r.u64();
  if (r.failed()) return s;
  // Anonymous (empty, 0), or a valid client id with a sequence in range.
  const bool anonymous = s.client.empty() && s.sequence == 0;
  if (!anonymous && (!is_valid_name(s.client) || s.sequence == 0 || s.sequence > sequence_max)) {
    r.fail("bad session");
  }
  return s;
}

std::string get_name(ByteReader& r) {
  std::string name = r.text(name_bytes_max);
  if (!r.failed() && !is_valid_name(name)) r.fail("invalid key or owner");
  return name;
}

Token get_token(ByteReader& r) {
  const Token token{r.u64()};
  if (token.value == 0) r.fail("token must be positive");
  return token;
}

struct Encoder {
  ByteWriter& w;
  void operator()(const Acquire& c) const {
    w.u8(static_cast<std::uint8_t>(Tag::acquire));
    put_session(w, c.session);
    w.u64(c.connection.value);
    w.text(c.key);
    w.text(c.owner);
    put_duration(w, c.lease_ms);
    put_duration(w, c.wait_ms);
    put_time(w, c.now);
    w.u64(c.epoch);
  }
  void operator()(const Release& c) const {
    w.u8(static_cast<std::uint8_t>(Tag::release));
    put_session(w, c.session);
    w.u64(c.connection.value);
    w.text(c.key);
    w.u64(c.token.value);
    put_time(w, c.now);
    w.u64(c.epoch);
  }
  void operator()(const Expire& c) const {
    w.u8(static_cast<std::uint8_t>(Tag::expire));
    w.text(c.key);
    w.u64(c.token.value);
    put_time(w, c.now);
    w.u64(c.epoch);
  }
  void operator()(const Timeout& c) const {
    w.u8(static_cast<std::uint8_t>(Tag::timeout));
    w.text(c.key);
    w.u64(c.waiter.value);
    put_time(w, c.now);
    w.u64(c.epoch);
  }
  void operator()(const Close& c) const {
    w.u8(static_cast<std::uint8_t>(Tag::close));
    w.u64(c.connection.value);
    put_time(w, c.now);
    w.u64(c.epoch);
  }
};

Command read_fields(Tag tag, ByteReader& r) {
  switch (tag) {
    case Tag::acquire: {
      Acquire c;
      c.session = get_session(r);
      c.connection = ConnectionId{r.u64()};
      c.key = get_name(r);
      c.owner = get_name(r);
      c.lease_ms = get_duration(r, 1);
      c.wait_ms = get_duration(r, 0);
      c.now = get_time(r);
      c.epoch = r.u64();
      return c;
    }
    case Tag::release: {
      Release c;
      c.session = get_session(r);
      c.connection = ConnectionId{r.u64()};
      c.key = get_name(r);
      c.token = get_token(r);
      c.now = get_time(r);
      c.epoch = r.u64();
      return c;
    }
    case Tag::expire: {
      Expire c;
      c.key = get_name(r);
      c.token = get_token(r);
      c.now = get_time(r);
      c.epoch = r.u64();
      return c;
    }
    case Tag::timeout: {
      Timeout c;
      c.key = get_name(r);
      c.waiter = WaiterId{r.u64()};
      c.now = get_time(r);
      c.epoch = r.u64();
      return c;
    }
    case Tag::close: {
      Close c;
      c.connection = ConnectionId{r.u64()};
      c.now = get_time(r);
      c.epoch = r.u64();
      return c;
    }
  }
  r.fail("unknown command tag");
  return Close{};
}

}  // namespace

TimeMs stamped_time(const Command& command) {
  return std::visit([](const auto& c) { return c.now; }, command);
}

std::uint64_t command_epoch(const Command& command) {
  return std::visit([](const auto& c) { return c.epoch; }, command);
}

void set_epoch(Command& command, std::uint64_t epoch) {
  std::visit([epoch](auto& c) { c.epoch = epoch; }, command);
}

const std::string* command_key(const Command& command) {
  if (const auto* a = std::get_if<Acquire>(&command)) return &a->key;
  if (const auto* r = std::get_if<Release>(&command)) return &r->key;
  if (const auto* e = std::get_if<Expire>(&command)) return &e->key;
  if (const auto* t = std::get_if<Timeout>(&command)) return &t->key;
  return nullptr;
}

std::string encode(const Command& command) {
  ByteWriter w;
  w.u8(command_format_version);
  std::visit(Encoder{w}, command);
  return w.take();
}

std::variant<Command, DecodeError> decode(std::string_view bytes) {
  ByteReader r(bytes);
  const auto version = r.u8();
  if (r.failed()) return DecodeError{"empty command"};
  if (version != command_format_version) {
    return DecodeError{fmt::format("unknown command format version {}", version)};
  }
  const auto tag = r.u8();
  if (tag < static_cast<std::uint8_t>(Tag::acquire) || tag > static_cast<std::uint8_t>(Tag::close)) {
    return DecodeError{fmt::format("unknown command tag {}", tag)};
  }
  Command command = read_fields(static_cast<Tag>(tag), r);
  if (r.failed()) return DecodeError{r.reason()};
  if (!r.at_end()) return DecodeError{"trailing bytes"};
  return command;
}

namespace {
// A frame's length prefix bounds it: the largest command (an Acquire with
// names and a client id of 250 bytes each) plus the origin fits easily.
constexpr std::size_t frame_bytes_max = 4'096;
}  // namespace

std::string encode_framed(const Origin& origin, const Command& command) {
  ByteWriter payload;
  payload.u64(origin.epoch);
  payload.u64(origin.proposal);
  std::string bytes = payload.take();
  // The command carries its frame's epoch, whatever it was stamped with.
  Command stamped = command;
  set_epoch(stamped, origin.epoch);
  bytes += encode(stamped);
  ByteWriter frame;
  frame.text(bytes);
  return frame.take();
}

std::variant<std::vector<Framed>, DecodeError> decode_entry(std::string_view bytes) {
  std::vector<Framed> frames;
  ByteReader r(bytes);
  while (!r.at_end()) {
    const std::string_view frame = r.text_view(frame_bytes_max);
    if (r.failed()) return DecodeError{"bad frame: " + r.reason()};
    ByteReader f(frame);
    Origin origin;
    origin.epoch = f.u64();
    origin.proposal = f.u64();
    if (f.failed()) return DecodeError{"frame too short"};
    auto decoded = decode(frame.substr(16));
    if (auto* error = std::get_if<DecodeError>(&decoded)) return std::move(*error);
    if (command_epoch(std::get<Command>(decoded)) != origin.epoch) return DecodeError{"a command of another epoch than its frame"};
    frames.push_back(Framed{origin, std::move(std::get<Command>(decoded))});
  }
  return frames;
}

std::string describe(const Command& command) {
  static constexpr auto show_client = [](const Session& s) -> std::string_view {
    return s.anonymous() ? "-" : std::string_view(s.client);
  };
  struct Describer {
    std::string operator()(const Acquire& c) const {
      return fmt::format("Acquire(client {} seq {}, c{}, {} {} lease {} wait {}, @{})", show_client(c.session),
                         c.session.sequence, c.connection.value, c.key, c.owner, c.lease_ms.value,
                         c.wait_ms.value, c.now.value);
    }
    std::string operator()(const Release& c) const {
      return fmt::format("Release(client {} seq {}, c{}, {} {}, @{})", show_client(c.session), c.session.sequence,
                         c.connection.value, c.key, c.token.value, c.now.value);
    }
    std::string operator()(const Expire& c) const {
      return fmt::format("Expire({}, {}, @{})", c.key, c.token.value, c.now.value);
    }
    std::string operator()(const Timeout& c) const {
      return fmt::format("Timeout({}, waiter {}, @{})", c.key, c.waiter.value, c.now.value);
    }
    std::string operator()(const Close& c) const {
      return fmt::format("Close(c{}, @{})", c.connection.value, c.now.value);
    }
  };
  std::string text = std::visit(Describer{}, command);
  // The epoch, once a leadership stamped one: `Expire(k, 7, @100 e2)`.
  if (const auto epoch = command_epoch(command); epoch != 0) text.insert(text.size() - 1, fmt::format(" e{}", epoch));
  return text;
}

}  // namespace lockstep::cluster
