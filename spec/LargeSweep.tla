---------------------------- MODULE LargeSweep ----------------------------
\* The instance of LockServer that LargeSweep.cfg checks; its constants are in the config.
EXTENDS LockServer
=============================================================================
