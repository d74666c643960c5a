#include "impl/raft/register.hpp"

#include <string>

#include "impl/assert.hpp"

namespace lockstep::raft {

void AppendOnlyRegister::apply(const Entry& entry) {
  LOCKSTEP_ASSERT(entry.index == applied_ + 1);  // entries arrive in order, none skipped
  applied_ = entry.index;
  if (entry.kind == EntryKind::command) values_.push_back({entry.index, entry.data});
}

// The format is "index:length:data" per value, so any data survives.
std::string AppendOnlyRegister::snapshot_through(Index index) const {
  LOCKSTEP_ASSERT(index <= applied_);
  std::string out = std::to_string(index) + ";";
  for (const auto& v : values_) {
    if (v.index > index) break;
    out += std::to_string(v.index) + ":" + std::to_string(v.data.size()) + ":" + v.data;
  }
  return out;
}

void AppendOnlyRegister::restore(const Snapshot& snapshot) {
  values_.clear();
  const std::string& text = snapshot.data;
  std::size_t at = text.find(';');
  LOCKSTEP_ASSERT(at != std::string::npos);
  applied_ = std::stoull(text.substr(0, at));
  LOCKSTEP_ASSERT(applied_ == snapshot.index);
  ++at;
  while (at < text.size()) {
    const auto colon = text.find(':', at);
    const auto second = text.find(':', colon + 1);
    LOCKSTEP_ASSERT(colon != std::string::npos && second != std::string::npos);
    Value v;
    v.index = std::stoull(text.substr(at, colon - at));
    const auto length = std::stoull(text.substr(colon + 1, second - colon - 1));
    v.data = text.substr(second + 1, length);
    values_.push_back(std::move(v));
    at = second + 1 + length;
  }
}

}  // namespace lockstep::raft
