// The TLA+ modules that trace validation needs, built into the binary so that
// `lockstep sim --validate-trace` works from any directory with only a
// tla2tools.jar beside it. The text is spec/*.tla as of the build.
#pragma once

namespace lockstep::tlc {

extern const char* const lock_server_tla;         // spec/LockServer.tla
extern const char* const trace_lock_server_tla;   // spec/TraceLockServer.tla
extern const char* const lock_cluster_tla;        // spec/LockCluster.tla
extern const char* const trace_lock_cluster_tla;  // spec/TraceLockCluster.tla

}  // namespace lockstep::tlc
