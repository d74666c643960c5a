---------------------------- MODULE MCsweeporder ----------------------------
\* The instance of LockServer that MCsweeporder.cfg checks; its constants are in the config.
EXTENDS LockServer
=============================================================================
