----------------------------- MODULE LockServer -----------------------------
(***************************************************************************)
(* Simple mode of the lockstep lock service (docs/protocol.md, "Simple mode",   *)
(* "Time", "Tokens"), one server, in virtual time.                         *)
(*                                                                         *)
(* The state is the one the reference model (model/model.hpp) keeps, cut   *)
(* down to what decides its future, plus what the driver around it knows   *)
(* (which connections are open) and what the last step sent.  The C++      *)
(* explorer (model/explorer.hpp) abstracts the model's state in exactly    *)
(* this way, so that TLC and the explorer count the same distinct states.  *)
(*                                                                         *)
(* Decisions of ours that the seed leaves open, fixed here as in the model: *)
(*  - at one instant, due wait timeouts fire first (in the order the       *)
(*    waiters were queued, over all keys), then the sweep, then requests;  *)
(*  - the sweep visits the expired keys in the order of their holders'     *)
(*    tokens, so the tokens it issues follow that order.                   *)
(*                                                                         *)
(* Bounds (for model checking, not part of the contract): the clock stops  *)
(* at MaxTime; a request is sent only if its wait ends by MaxTime and only *)
(* while it would not issue a token beyond MaxToken (time itself may still *)
(* issue tokens, so that time can always advance); a closed connection     *)
(* never reopens.                                                          *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS
  Keys, Owners, Conns,  \* names (strings) of keys, owners, connections
  Leases,               \* lease_ms values requests may carry (each >= 1)
  Waits,                \* wait_ms values requests may carry (each >= 0)
  SweepMs,              \* the sweep runs at k * SweepMs, k >= 1
  MaxKeys, MaxWaitersPerKey, MaxWaiters,  \* the contract's capacity limits
  MaxTime,              \* bound: the clock never passes it
  MaxToken,             \* bound: requests do not issue tokens beyond it
  LifoHandoff,          \* TRUE injects the bug: a release hands to the newest waiter
  SweepFirst            \* TRUE injects the bug: the sweep runs before due timeouts

ASSUME
  /\ Leases \subseteq Nat \ {0} /\ Waits \subseteq Nat
  /\ SweepMs \in Nat \ {0} /\ MaxTime \in Nat /\ MaxToken \in Nat
  /\ {MaxKeys, MaxWaitersPerKey, MaxWaiters} \subseteq Nat
  /\ LifoHandoff \in BOOLEAN /\ SweepFirst \in BOOLEAN

VARIABLES
  clock,      \* the current instant, in ms
  nextToken,  \* the token the next grant receives (tokens are issued 1, 2, ...)
  nextSweep,  \* the next instant k * SweepMs, k >= 1, at which the sweep runs
  keys,       \* registered key -> [holder, token, expiry]; expired when clock >= expiry
  waiters,    \* every queued request, in queueing order (a key's FIFO queue is its subsequence)
  open,       \* the connections that have not closed
  sent        \* the responses the last step sent, in the order sent

vars == <<clock, nextToken, nextSweep, keys, waiters, open, sent>>

-----------------------------------------------------------------------------
(* Helpers *)

NoOwner == ""   \* the owner field of responses that name none (R, N)
NoToken == 0    \* the token field of responses that carry none (T, B)

Response(kind, c, o, k, t) == [kind |-> kind, conn |-> c, owner |-> o, key |-> k, token |-> t]
Waiter(k, o, l, d, c) == [key |-> k, owner |-> o, lease |-> l, deadline |-> d, conn |-> c]
Entry(o, t, e) == [holder |-> o, token |-> t, expiry |-> e]

\* A key's FIFO queue, head first.
Queue(w, k) == SelectSeq(w, LAMBDA x : x.key = k)

SetKey(f, k, v) == [x \in DOMAIN f \cup {k} |-> IF x = k THEN v ELSE f[x]]
DropKeys(f, ks) == [x \in DOMAIN f \ ks |-> f[x]]

\* The position in w of key k's head waiter, and of its newest one.
HeadIndex(w, k) == CHOOSE i \in 1..Len(w) : w[i].key = k /\ \A j \in 1..(i - 1) : w[j].key # k
LastIndex(w, k) == CHOOSE i \in 1..Len(w) : w[i].key = k /\ \A j \in (i + 1)..Len(w) : w[j].key # k

\* s without the elements at the positions in I, order kept.
RECURSIVE Without(_, _, _)
Without(s, I, i) ==
  IF i > Len(s) THEN <<>>
  ELSE (IF i \in I THEN <<>> ELSE <<s[i]>>) \o Without(s, I, i + 1)

Range(s) == {s[i] : i \in DOMAIN s}
Max(S) == CHOOSE x \in S : \A y \in S : y <= x

-----------------------------------------------------------------------------
(* Time: the wait timeouts and the sweep due at instant t *)

\* Every waiter whose deadline is t is answered T, in queueing order.
Timeouts(t, w) ==
  LET due == SelectSeq(w, LAMBDA x : x.deadline <= t)
  IN [waiters |-> SelectSeq(w, LAMBDA x : x.deadline > t),
      out |-> [i \in 1..Len(due) |-> Response("T", due[i].conn, due[i].owner, due[i].key, NoToken)]]

\* simple mode 8: at nextSweep, every expired key without waiters is deleted and
\* every expired key with waiters goes to its head waiter, keys visited in the
\* order of their holders' tokens (so the new tokens follow that order).
Sweep(t, ks, w, next) ==
  IF t # nextSweep
  THEN [keys |-> ks, waiters |-> w, next |-> next, out |-> <<>>]
  ELSE
    LET expired == {k \in DOMAIN ks : ks[k].expiry <= t}
        handed == {k \in expired : Queue(w, k) # <<>>}
        rank(k) == Cardinality({j \in handed : ks[j].token < ks[k].token})
        order == [r \in 1..Cardinality(handed) |-> CHOOSE k \in handed : rank(k) = r - 1]
        head(k) == Head(Queue(w, k))
    IN [keys |-> [k \in DOMAIN ks \ (expired \ handed) |->
                    IF k \in handed THEN Entry(head(k).owner, next + rank(k), t + head(k).lease)
                    ELSE ks[k]],
        waiters |-> Without(w, {HeadIndex(w, k) : k \in handed}, 1),
        next |-> next + Cardinality(handed),
        out |-> [r \in 1..Len(order) |->
                   Response("A", head(order[r]).conn, head(order[r]).owner, order[r], next + r - 1)]]

\* The clock moves to the next instant and fires what is due there:
\* timeouts, then the sweep (the order docs/protocol.md, "Time", fixes).
Tick ==
  /\ clock < MaxTime
  /\ clock' = clock + 1
  /\ nextSweep' = IF clock + 1 = nextSweep THEN nextSweep + SweepMs ELSE nextSweep
  /\ IF SweepFirst
     THEN LET s == Sweep(clock + 1, keys, waiters, nextToken)
              o == Timeouts(clock + 1, s.waiters)
          IN /\ keys' = s.keys /\ waiters' = o.waiters /\ nextToken' = s.next
             /\ sent' = s.out \o o.out
     ELSE LET o == Timeouts(clock + 1, waiters)
              s == Sweep(clock + 1, keys, o.waiters, nextToken)
          IN /\ keys' = s.keys /\ waiters' = s.waiters /\ nextToken' = s.next
             /\ sent' = o.out \o s.out
  /\ UNCHANGED open

-----------------------------------------------------------------------------
(* Requests, handled at the current instant *)

Reply(r) == /\ sent' = <<r>>
            /\ UNCHANGED <<clock, nextToken, keys, waiters, open>>

Grant(c, k, o, l) ==
  /\ keys' = SetKey(keys, k, Entry(o, nextToken, clock + l))
  /\ nextToken' = nextToken + 1
  /\ sent' = <<Response("A", c, o, k, nextToken)>>
  /\ UNCHANGED <<clock, waiters, open>>

Acquire(c, k, o, l, wt) ==
  /\ c \in open
  /\ clock + wt <= MaxTime
  /\ IF k \notin DOMAIN keys
     THEN IF Cardinality(DOMAIN keys) >= MaxKeys
          THEN Reply(Response("B", c, o, k, NoToken))             \* 5: max_keys
          ELSE Grant(c, k, o, l)                                   \* 1: register
     ELSE IF clock >= keys[k].expiry
     THEN Grant(c, k, o, l)                                        \* 2: take over, waiters stay
     ELSE IF wt = 0
     THEN Reply(Response("T", c, o, k, NoToken))                   \* 3: never queued
     ELSE IF Len(Queue(waiters, k)) >= MaxWaitersPerKey \/ Len(waiters) >= MaxWaiters
     THEN Reply(Response("B", c, o, k, NoToken))                   \* 5: a waiter limit
     ELSE /\ waiters' = Append(waiters, Waiter(k, o, l, clock + wt, c))  \* 4: queued
          /\ sent' = <<>>
          /\ UNCHANGED <<clock, nextToken, keys, open>>

Release(c, k, t) ==
  /\ c \in open
  /\ IF k \in DOMAIN keys /\ keys[k].token = t
     THEN IF Queue(waiters, k) = <<>>
          THEN /\ keys' = DropKeys(keys, {k})                      \* 6: deleted
               /\ sent' = <<Response("R", c, NoOwner, k, t)>>
               /\ UNCHANGED <<clock, nextToken, waiters, open>>
          ELSE LET i == IF LifoHandoff THEN LastIndex(waiters, k) ELSE HeadIndex(waiters, k)
                   w == waiters[i]
               IN /\ keys' = SetKey(keys, k, Entry(w.owner, nextToken, clock + w.lease))
                  /\ waiters' = Without(waiters, {i}, 1)          \* 6: hand-off
                  /\ nextToken' = nextToken + 1
                  /\ sent' = <<Response("R", c, NoOwner, k, t),
                               Response("A", w.conn, w.owner, k, nextToken)>>
                  /\ UNCHANGED <<clock, open>>
     ELSE Reply(Response("N", c, NoOwner, k, t))                  \* 7: not the holder

\* 10: the connection's waiters leave silently; held locks stay.
Close(c) ==
  /\ c \in open
  /\ open' = open \ {c}
  /\ waiters' = SelectSeq(waiters, LAMBDA x : x.conn # c)
  /\ sent' = <<>>
  /\ UNCHANGED <<clock, nextToken, nextSweep, keys>>

\* A request is sent only while it would not issue a token beyond MaxToken.
Request ==
  /\ \/ \E c \in Conns, k \in Keys, o \in Owners, l \in Leases, wt \in Waits : Acquire(c, k, o, l, wt)
     \/ \E c \in Conns, k \in Keys, t \in 1..(nextToken - 1) : Release(c, k, t)
  /\ nextToken' <= MaxToken + 1
  /\ UNCHANGED nextSweep

Init ==
  /\ clock = 0
  /\ nextToken = 1
  /\ nextSweep = SweepMs
  /\ keys = [k \in {} |-> Entry(NoOwner, NoToken, 0)]
  /\ waiters = <<>>
  /\ open = Conns
  /\ sent = <<>>

Next == Request \/ (\E c \in Conns : Close(c)) \/ Tick

Spec == Init /\ [][Next]_vars
\* Time is fair: it keeps advancing (to MaxTime) whatever the clients do.
FairSpec == Spec /\ WF_vars(Tick)

-----------------------------------------------------------------------------
(* Invariants of one state *)

MaxLease == Max(Leases)
TokenBound == MaxToken + 1 + Cardinality(Keys) * MaxTime

TypeOK ==
  /\ clock \in 0..MaxTime
  /\ nextToken \in 1..TokenBound
  /\ nextSweep = (clock \div SweepMs + 1) * SweepMs
  /\ DOMAIN keys \subseteq Keys
  /\ \A k \in DOMAIN keys :
       keys[k] \in [holder : Owners, token : 1..(nextToken - 1), expiry : 1..(MaxTime + MaxLease)]
  /\ \A i \in 1..Len(waiters) :
       waiters[i] \in [key : Keys, owner : Owners, lease : Leases, deadline : 1..MaxTime, conn : Conns]
  /\ open \subseteq Conns
  /\ \A i \in 1..Len(sent) :
       sent[i] \in [kind : {"A", "T", "B", "R", "N"}, conn : Conns, owner : Owners \cup {NoOwner},
                    key : Keys, token : 0..TokenBound]

Grants(s) == {i \in 1..Len(s) : s[i].kind = "A"}

\* One holder per key: a step grants a key at most once, and what it granted is
\* the key's holder afterwards.
AtMostOneHolder ==
  /\ \A i, j \in Grants(sent) : i # j => sent[i].key # sent[j].key
  /\ \A i \in Grants(sent) :
       /\ sent[i].key \in DOMAIN keys
       /\ keys[sent[i].key].token = sent[i].token
       /\ keys[sent[i].key].holder = sent[i].owner

\* No two keys share a token, every token was issued, a step never repeats one.
TokensUnique ==
  /\ \A k, j \in DOMAIN keys : k # j => keys[k].token # keys[j].token
  /\ \A k \in DOMAIN keys : keys[k].token < nextToken
  /\ \A i, j \in Grants(sent) : i # j => sent[i].token # sent[j].token

CapacityRespected ==
  /\ Cardinality(DOMAIN keys) <= MaxKeys
  /\ \A k \in Keys : Len(Queue(waiters, k)) <= MaxWaitersPerKey
  /\ Len(waiters) <= MaxWaiters

\* Nobody waits past the deadline: at it, the waiter has been answered T.
WaitersBeforeDeadline == \A i \in 1..Len(waiters) : waiters[i].deadline > clock

\* Simple mode: an expired key without waiters is gone by the next sweep.
ExpiredKeysSwept ==
  (clock > 0 /\ clock = nextSweep - SweepMs) => \A k \in DOMAIN keys : keys[k].expiry > clock

-----------------------------------------------------------------------------
(* Properties of one step (checked by TLC on every transition) *)

\* What the step sent that answers earlier requests (waiters), as opposed to
\* the answer of the request it handled: all of a Tick, and the hand-off of a
\* Release (after its R or N).
Deferred ==
  IF clock' # clock THEN sent'
  ELSE IF sent' # <<>> /\ sent'[1].kind \in {"R", "N"} THEN Tail(sent')
  ELSE <<>>

CountWaiting(w, c, o, k) == Len(SelectSeq(w, LAMBDA x : x.conn = c /\ x.owner = o /\ x.key = k))
CountAnswers(s, kinds, c, o, k) ==
  Cardinality({i \in 1..Len(s) : s[i].kind \in kinds /\ s[i].conn = c /\ s[i].owner = o /\ s[i].key = k})
Appended(c, o, k) ==
  IF Len(waiters') = Len(waiters) + 1 /\ waiters'[Len(waiters')].conn = c
     /\ waiters'[Len(waiters')].owner = o /\ waiters'[Len(waiters')].key = k
  THEN 1 ELSE 0

\* Tokens strictly increase in the order issued, over all keys.
TokensIncreaseStep ==
  /\ nextToken' >= nextToken
  /\ \A i \in Grants(sent') : sent'[i].token >= nextToken /\ sent'[i].token < nextToken'
  /\ \A i, j \in Grants(sent') : i < j => sent'[i].token < sent'[j].token
  /\ \A k \in DOMAIN keys' :
       \/ keys'[k].token >= nextToken
       \/ k \in DOMAIN keys /\ keys'[k].token = keys[k].token

\* A hand-off (release or sweep) goes to the head of the key's queue, once
\* the waiters due at this instant have timed out; the rest keep their order.
FIFOHandoffStep ==
  LET d == Deferred IN
  \A i \in Grants(d) :
    LET k == d[i].key
        q == SelectSeq(Queue(waiters, k), LAMBDA x : x.deadline > clock')
    IN /\ q # <<>>
       /\ Head(q).conn = d[i].conn /\ Head(q).owner = d[i].owner
       /\ Queue(waiters', k) = Tail(q)

\* A live holder loses its key only by a release with its token.
NoEarlyExpiryStep ==
  \A k \in DOMAIN keys :
    keys[k].expiry > clock' =>
      \/ k \in DOMAIN keys' /\ keys'[k].token = keys[k].token
      \/ \E i \in 1..Len(sent') : sent'[i] = Response("R", sent'[i].conn, NoOwner, k, keys[k].token)

\* Every waiter that leaves its queue while its connection is open is answered
\* exactly once, and no answer goes to a request that was not waiting.
\* (Only the (connection, owner, key) triples the step involves are compared;
\* for every other triple both sides are 0.)
AnsweredAtMostOnceStep ==
  LET d == Deferred
      triples == {<<x.conn, x.owner, x.key>> : x \in Range(waiters) \cup Range(waiters')}
                 \cup {<<x.conn, x.owner, x.key>> : x \in Range(d)}
  IN (waiters' # waiters \/ d # <<>>) =>
       \A t \in triples :
         LET c == t[1]  o == t[2]  k == t[3] IN
         IF c \in open'
         THEN CountWaiting(waiters, c, o, k) + Appended(c, o, k)
                = CountWaiting(waiters', c, o, k) + CountAnswers(d, {"A", "T"}, c, o, k)
         ELSE CountAnswers(d, {"A", "T"}, c, o, k) = 0

\* A waiter is answered A before its deadline or T at it, never otherwise.
AnsweredInTimeStep ==
  LET d == Deferred
      due == SelectSeq(waiters, LAMBDA x : x.deadline <= clock')
      timedOut == SelectSeq(d, LAMBDA x : x.kind = "T")
  IN \A t \in {<<x.conn, x.owner, x.key>> : x \in Range(due)}
             \cup {<<x.conn, x.owner, x.key>> : x \in Range(timedOut)} :
       CountAnswers(timedOut, {"T"}, t[1], t[2], t[3]) = CountWaiting(due, t[1], t[2], t[3])

\* B only when a limit is reached (simple mode 5).
BusyOnlyAtLimitStep ==
  \A i \in 1..Len(sent') :
    sent'[i].kind = "B" =>
      LET k == sent'[i].key IN
      \/ k \notin DOMAIN keys /\ Cardinality(DOMAIN keys) >= MaxKeys
      \/ k \in DOMAIN keys /\ (Len(Queue(waiters, k)) >= MaxWaitersPerKey \/ Len(waiters) >= MaxWaiters)

TokensIncrease == [][TokensIncreaseStep]_vars
FIFOHandoff == [][FIFOHandoffStep]_vars
NoEarlyExpiry == [][NoEarlyExpiryStep]_vars
AnsweredAtMostOnce == [][AnsweredAtMostOnceStep]_vars
AnsweredInTime == [][AnsweredInTimeStep]_vars
BusyOnlyAtLimit == [][BusyOnlyAtLimitStep]_vars

-----------------------------------------------------------------------------
(* Liveness, under FairSpec: every queued request is eventually answered,   *)
(* unless its connection closed (then it left the queue silently).          *)

Queued(c, o, k, d) ==
  \E i \in 1..Len(waiters) :
    waiters[i].conn = c /\ waiters[i].owner = o /\ waiters[i].key = k /\ waiters[i].deadline = d

EveryWaiterAnswered ==
  \A c \in Conns, o \in Owners, k \in Keys, d \in 1..MaxTime :
    Queued(c, o, k, d) ~> (~Queued(c, o, k, d) \/ c \notin open)

=============================================================================
