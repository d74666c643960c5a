--------------------------- MODULE ClusterMCleader ---------------------------
\* The instance of LockCluster that ClusterMCleader.cfg checks; its constants are in the config.
EXTENDS LockCluster
=============================================================================
