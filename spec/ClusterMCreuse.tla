---------------------------- MODULE ClusterMCreuse ----------------------------
\* The instance of LockCluster that ClusterMCreuse.cfg checks; its constants are in the config.
EXTENDS LockCluster

\* Clients are interchangeable (one node).
Symmetry == Permutations(Clients)
=============================================================================
