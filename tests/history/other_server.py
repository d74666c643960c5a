#!/usr/bin/env python3
"""A second lock server, written the plain way, for testing the fuzzer's checker.

It follows docs/protocol.md (simple mode) but shares no code or structure with
lockstep's engine: a dictionary of keys, waiter lists, float clocks read from
time.monotonic(), and asyncio timers that may fire late (--timer-lag-ms adds
lateness on purpose, as a loaded machine does). Like any conforming server,
it first fires what is due by its clock (timeouts, then sweeps) before it
handles a request, so late timers delay only the answers they send.

--bug NAME breaks one rule, so tests can show the fuzzer catches a server it
did not grow up with. The checker must find no violation without --bug.

--shutdown-ms N makes it die slowly, as many servers do: on SIGTERM it goes on
listening, accepting and answering for N ms, then exits at once, resetting
what it had not answered. Started through `sh -c` without `exec`, the shell
exits first: a tester that took the shell's exit for the server's would start
the next one while this one still answers (docs/protocol.md, "Running under
the tools").
"""
import argparse
import asyncio
import os
import re
import signal
import time

BUGS = ("none", "lifo-handoff", "early-expiry", "no-timeout", "stale-release", "sweep-drops-waiters")
NAME = re.compile(rb"^[\x21-\x7e]{1,250}$")
NUMBER = re.compile(rb"^(0|[1-9][0-9]{0,19})$")


class Lock:
    def __init__(self):
        self.owner = b""
        self.token = 0
        self.previous_token = 0
        self.expiry = 0
        self.waiters = []  # [conn, owner, lease, deadline], oldest first


class Server:
    def __init__(self, args):
        self.args = args
        self.start = time.monotonic()
        self.keys = {}
        self.waiting = 0
        # Tokens above anything an earlier run of this process issued.
        self.next_token = time.time_ns() // 1000 * 16
        self.swept_through = 0
        self.timer = None

    def now(self):
        return int((time.monotonic() - self.start) * 1000)

    def fire_due(self):
        now = self.now()
        # Timeouts and sweeps in instant order; at one instant, timeouts first.
        while True:
            deadline = min((w[3] for lock in self.keys.values() for w in lock.waiters), default=None)
            sweep = (self.swept_through // self.args.sweep_ms + 1) * self.args.sweep_ms
            if deadline is not None and deadline <= now and deadline <= sweep:
                self.time_out(deadline)
            elif sweep <= now:
                self.sweep(sweep)
                self.swept_through = sweep
            else:
                break
        self.arm(now)

    def time_out(self, instant):
        for key, lock in list(self.keys.items()):
            due = [w for w in lock.waiters if w[3] == instant]
            for w in due:
                lock.waiters.remove(w)
                self.waiting -= 1
                if self.args.bug != "no-timeout":
                    w[0].send(b"T %s %s" % (w[1], key))

    def sweep(self, instant):
        for key in sorted(self.keys, key=lambda k: self.keys[k].token):
            lock = self.keys[key]
            if lock.expiry > instant:
                continue
            if lock.waiters and self.args.bug == "sweep-drops-waiters":
                for w in lock.waiters:
                    w[0].send(b"T %s %s" % (w[1], key))
                self.waiting -= len(lock.waiters)
                lock.waiters = []
            if lock.waiters:
                self.hand_off(key, lock, instant)
            else:
                del self.keys[key]

    def issue(self):
        self.next_token += 1
        return self.next_token

    def grant(self, key, lock, conn, owner, lease, now):
        lock.previous_token, lock.token = lock.token, self.issue()
        lock.owner, lock.expiry = owner, now + lease
        if self.args.bug == "early-expiry":
            lock.expiry = now + max(1, lease * 3 // 4)
        conn.send(b"A %d %s %s" % (lock.token, owner, key))

    def hand_off(self, key, lock, now):
        waiter = lock.waiters.pop(-1 if self.args.bug == "lifo-handoff" else 0)
        self.waiting -= 1
        self.grant(key, lock, waiter[0], waiter[1], waiter[2], now)

    def arm(self, now):
        deadlines = [w[3] for lock in self.keys.values() for w in lock.waiters]
        sweep = (self.swept_through // self.args.sweep_ms + 1) * self.args.sweep_ms
        due = min(deadlines + [sweep])
        if self.timer:
            self.timer.cancel()
        delay = max(0, due - now) + self.args.timer_lag_ms
        self.timer = asyncio.get_running_loop().call_later(delay / 1000, self.fire_due)

    def request(self, conn, line):
        self.fire_due()
        now = self.now()
        fields = line.split(b" ")
        if fields[0] == b"A" and len(fields) == 5 and NAME.match(fields[1]) and NAME.match(fields[2]) \
                and NUMBER.match(fields[3]) and NUMBER.match(fields[4]):
            lease, wait = int(fields[3]), int(fields[4])
            if 1 <= lease <= self.args.max_lease_ms and wait <= self.args.max_wait_ms:
                return self.acquire(conn, fields[1], fields[2], lease, wait, now)
        if fields[0] == b"R" and len(fields) == 3 and NAME.match(fields[1]) and NUMBER.match(fields[2]):
            token = int(fields[2])
            if 1 <= token < 2**64:
                return self.release(conn, fields[1], token, now)
        conn.send(b"E malformed")

    def acquire(self, conn, key, owner, lease, wait, now):
        lock = self.keys.get(key)
        if lock is None:
            if len(self.keys) >= self.args.max_keys:
                return conn.send(b"B %s %s" % (owner, key))
            lock = self.keys[key] = Lock()
            return self.grant(key, lock, conn, owner, lease, now)
        if lock.expiry <= now:
            return self.grant(key, lock, conn, owner, lease, now)
        if wait == 0:
            return conn.send(b"T %s %s" % (owner, key))
        if len(lock.waiters) >= self.args.max_waiters_per_key or self.waiting >= self.args.max_waiters:
            return conn.send(b"B %s %s" % (owner, key))
        lock.waiters.append([conn, owner, lease, now + wait])
        self.waiting += 1
        self.arm(now)

    def release(self, conn, key, token, now):
        lock = self.keys.get(key)
        holds = lock is not None and (token == lock.token or
                                      (self.args.bug == "stale-release" and token == lock.previous_token))
        if not holds:
            return conn.send(b"N %d %s" % (token, key))
        conn.send(b"R %d %s" % (token, key))
        if lock.waiters:
            self.hand_off(key, lock, now)
        else:
            del self.keys[key]

    def drop(self, conn):
        self.fire_due()
        for lock in self.keys.values():
            kept = [w for w in lock.waiters if w[0] is not conn]
            self.waiting -= len(lock.waiters) - len(kept)
            lock.waiters = kept


class Connection(asyncio.Protocol):
    def __init__(self, server):
        self.server = server
        self.buffer = b""
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport

    def send(self, line):
        if self.transport is not None:
            self.transport.write(line + b"\n")

    def data_received(self, data):
        self.buffer += data
        while self.transport is not None:
            end = self.buffer.find(b"\n")
            if end < 0:
                if len(self.buffer) > self.server.args.max_line_bytes:
                    self.too_long()
                return
            line, self.buffer = self.buffer[:end], self.buffer[end + 1:]
            if len(line) > self.server.args.max_line_bytes:
                return self.too_long()
            self.server.request(self, line)

    def too_long(self):
        self.send(b"E line too long")
        self.transport.close()
        self.connection_lost(None)

    def connection_lost(self, exc):
        if self.transport is not None:
            self.transport = None
            self.server.drop(self)


async def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    for name, default in (("max-keys", 1_000_000), ("max-waiters-per-key", 1024), ("max-waiters", 1_000_000),
                          ("sweep-ms", 5000), ("max-lease-ms", 86_400_000), ("max-wait-ms", 86_400_000),
                          ("max-line-bytes", 1024), ("timer-lag-ms", 0), ("shutdown-ms", 0)):
        parser.add_argument("--" + name, type=int, default=default)
    parser.add_argument("--bug", choices=BUGS, default="none")
    args = parser.parse_args()
    server = Server(args)
    loop = asyncio.get_running_loop()
    listener = await loop.create_server(lambda: Connection(server), "127.0.0.1", args.port)
    server.arm(server.now())
    if args.shutdown_ms > 0:
        loop.add_signal_handler(signal.SIGTERM, lambda: loop.call_later(args.shutdown_ms / 1000, os._exit, 0))
    async with listener:
        await listener.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
