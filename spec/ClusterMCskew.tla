--------------------------- MODULE ClusterMCskew ---------------------------
\* The instance of LockCluster that ClusterMCskew.cfg checks; its constants are in the config.
EXTENDS LockCluster

\* Nodes and clients are interchangeable.  (Here, not in LockCluster: TLC
\* evaluates every constant definition of a module it loads, and trace
\* validation instantiates LockCluster with dozens of clients.)
Symmetry == Permutations(Nodes) \cup Permutations(Clients)
=============================================================================
