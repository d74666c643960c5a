#include "impl/cluster/bugs.hpp"

#include <array>

namespace lockstep::cluster {

namespace {

constexpr std::array catalogue{
    ClusterBugDescription{ClusterBug::expire_without_token_check, "expire-without-token-check",
                          "a late Expire takes the key from whoever holds it now, not only from the token it names"},
    ClusterBugDescription{ClusterBug::heap_not_rebuilt, "heap-not-rebuilt",
                          "a new leader keeps its old deadline heap, so deadlines applied while it followed never fire"},
    ClusterBugDescription{ClusterBug::session_reapply, "session-reapply",
                          "a retried Acquire is applied a second time instead of answered from its session"},
};

}  // namespace

std::span<const ClusterBugDescription> cluster_bug_catalogue() { return catalogue; }

std::optional<ClusterBug> cluster_bug_from_name(std::string_view name) {
  if (name == "none") return ClusterBug::none;
  for (const auto& entry : catalogue) {
    if (entry.name == name) return entry.bug;
  }
  return std::nullopt;
}

std::string_view cluster_bug_name(ClusterBug bug) {
  for (const auto& entry : catalogue) {
    if (entry.bug == bug) return entry.name;
  }
  return "none";
}

}  // namespace lockstep::cluster
