// The simple-mode server's durable storage: what survives its crash. It
// persists one thing, the engine's token mark, so that a restarted server
// never reissues a token. Writes are synchronous (done when write returns),
// which is what "persist before send" needs. (The Raft and cluster modes
// give each node a disk of its own that loses unsynced writes:
// sim/raft/storage.hpp.)
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace lockstep::sim {

class DurableStorage {
 public:
  void write(const std::string& name, std::uint64_t value) {
    values_[name] = value;
    ++writes_;
  }
  std::uint64_t read(const std::string& name) const {
    const auto found = values_.find(name);
    return found == values_.end() ? 0 : found->second;
  }
  std::uint64_t writes() const { return writes_; }

 private:
  std::map<std::string, std::uint64_t> values_;
  std::uint64_t writes_ = 0;
};

}  // namespace lockstep::sim
