// What the adapter tests share (etcd_lock_test.cpp, redis_lock_test.cpp): a
// conversation in lockstep's line protocol with an adapter over TCP, and the
// fields of its answers.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "client/line_socket.hpp"

namespace lockstep::adapter_tests {

using namespace std::chrono_literals;

inline std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= line.size()) {
    const auto space = line.find(' ', start);
    out.push_back(line.substr(start, space == std::string::npos ? std::string::npos : space - start));
    if (space == std::string::npos) break;
    start = space + 1;
  }
  return out;
}

inline std::uint64_t token_of(const std::string& grant) { return std::stoull(fields(grant).at(1)); }

// `A <token> <owner> <key>`, a grant to `owner` of `key`.
inline void expect_grant(const std::string& line, const std::string& owner, const std::string& key) {
  const auto words = fields(line);
  ASSERT_EQ(words.size(), 4u) << line;
  EXPECT_EQ(words[0], "A") << line;
  EXPECT_EQ(words[2], owner) << line;
  EXPECT_EQ(words[3], key) << line;
}

// The next line, or "(nothing)" when none came within `patience`, or
// "(closed)" when the adapter closed the connection.
inline std::string next(client::LineSocket& socket, std::chrono::milliseconds patience = 10s) {
  std::string answer;
  switch (socket.read_line(answer, patience)) {
    case client::LineSocket::Status::line:
      return answer;
    case client::LineSocket::Status::timeout:
      return "(nothing)";
    case client::LineSocket::Status::closed:
      break;
  }
  return "(closed)";
}

inline std::string ask(client::LineSocket& socket, const std::string& line, std::chrono::milliseconds patience = 10s) {
  EXPECT_TRUE(socket.send_line(line));
  return next(socket, patience);
}

inline bool silent(client::LineSocket& socket, std::chrono::milliseconds patience) {
  std::string answer;
  return socket.read_line(answer, patience) == client::LineSocket::Status::timeout;
}

}  // namespace lockstep::adapter_tests
