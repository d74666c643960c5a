// Where the etcd lock adapter keeps a lockstep key in etcd, as etcd's own
// lock (clientv3/concurrency.Mutex) lays it out: every acquire of key K puts
// `<prefix>/<K>/<lease id in hex>` under a lease of its own, and the key of
// K with the lowest create revision is the holder; the others wait in
// create-revision order. Plain functions, no IO.
//
// A lockstep key may hold `/` (any printable byte but space), so K is
// escaped (`%` as `%25`, `/` as `%2F`): otherwise the keys under `a/` would
// also be under `a/b/`'s parent, and the waiters of `a` and of `a/b` would
// queue together.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lockstep::etcd_lock {

// `<prefix>/<escaped key>/`: every etcd key of one lockstep key, and no other.
std::string key_prefix(std::string_view prefix, std::string_view key);
// `<key_prefix><lease id, lower-case hex>`.
std::string acquire_key(std::string_view key_prefix, std::int64_t lease);
// The lease id at the end of an acquire key under `key_prefix`, or nothing.
std::optional<std::int64_t> lease_of(std::string_view key_prefix, std::string_view etcd_key);

// etcd leases are whole seconds: the lease asked for, rounded up (etcd may
// still raise it to its minimum TTL, which its answer says).
std::int64_t lease_ttl_s(std::int64_t lease_ms);

}  // namespace lockstep::etcd_lock
