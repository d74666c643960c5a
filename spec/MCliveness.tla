---------------------------- MODULE MCliveness ----------------------------
\* The instance of LockServer that MCliveness.cfg checks; its constants are in the config.
EXTENDS LockServer
=============================================================================
