---------------------------- MODULE MCsweep ----------------------------
\* The instance of LockServer that MCsweep.cfg checks; its constants are in the config.
EXTENDS LockServer
=============================================================================
