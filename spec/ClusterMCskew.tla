--------------------------- MODULE ClusterMCskew ---------------------------
\* The instance of LockCluster that ClusterMCskew.cfg checks; its constants are in the config.
EXTENDS LockCluster
=============================================================================
