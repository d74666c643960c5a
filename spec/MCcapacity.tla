---------------------------- MODULE MCcapacity ----------------------------
\* The instance of LockServer that MCcapacity.cfg checks; its constants are in the config.
EXTENDS LockServer
=============================================================================
