--------------------------- MODULE ClusterMCsession ---------------------------
\* The instance of LockCluster that ClusterMCsession.cfg checks; its constants are in the config.
EXTENDS LockCluster
=============================================================================
