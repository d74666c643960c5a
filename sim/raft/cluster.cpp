// The Raft cluster with the append-only register, for the random Raft
// simulator and the scenario interpreter; the lock service's instantiation
// is in sim/cluster/replica.cpp.
#include "sim/raft/cluster_impl.hpp"

namespace lockstep::sim {

template class RaftClusterOf<raft::AppendOnlyRegister>;

}  // namespace lockstep::sim
