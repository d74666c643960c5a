// The fixture both adapter tests derive from (etcd_lock_test.cpp,
// redis_lock_test.cpp): each test runs its own adapter process under a key
// prefix of its own, on a free port, and talks to it over TCP. The
// adapter's log is kept for a failed test (its path is in the failure's
// message through log_tail) and removed after a passing one.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "client/line_socket.hpp"
#include "live/process.hpp"
#include "tests/adapters/line_client.hpp"

namespace lockstep::adapter_tests {

class AdapterFixture : public ::testing::Test {
 protected:
  explicit AdapterFixture(std::string program) : program_(std::move(program)) {}

  void SetUp() override {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    prefix_ = fmt::format("test-{}", test->name());
    log_path_ = fmt::format("{}/{}-{}.log", ::testing::TempDir(), program_, test->name());
  }
  void TearDown() override {
    if (adapter_) adapter_->stop();
    if (!HasFailure()) std::remove(log_path_.c_str());
  }

  // Picks the adapter's port (port_), then starts what `command` makes of it.
  template <typename Command>
  void start_process(const Command& command) {
    const auto port = client::pick_free_port();
    ASSERT_TRUE(port);
    port_ = *port;
    auto started = live::ServerProcess::start(command(), log_path_);
    ASSERT_TRUE(started);
    adapter_ = std::make_unique<live::ServerProcess>(std::move(*started));
  }

  client::LineSocket connect() {
    auto socket = client::LineSocket::connect("127.0.0.1", port_, 10s);
    EXPECT_TRUE(socket) << (adapter_ ? adapter_->log_tail() : "");
    return std::move(*socket);
  }

  std::string program_;
  std::string prefix_;
  std::string log_path_;
  std::uint16_t port_ = 0;
  std::unique_ptr<live::ServerProcess> adapter_;
};

}  // namespace lockstep::adapter_tests
