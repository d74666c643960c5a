// The Raft cluster with the lock service's node as its state machine.
#include "sim/cluster/replica.hpp"

#include "sim/raft/cluster_impl.hpp"

namespace lockstep::sim {

template class RaftClusterOf<NodeReplica>;

}  // namespace lockstep::sim
