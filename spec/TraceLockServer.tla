-------------------------- MODULE TraceLockServer --------------------------
(***************************************************************************)
(* Trace validation: the behaviours of LockServer that follow one recorded *)
(* run of the simulator, step by step.                                     *)
(*                                                                         *)
(* `lockstep trace-to-tla` turns a simulator trace (sim/trace/TRACE.md)    *)
(* into a copy of this module whose constant Trace is defined as the run's *)
(* server steps, in order, each a tuple whose first element names the      *)
(* LockServer action it claims to be (Acquire, Release, Close, Tick) and   *)
(* whose other elements are its instant, its parameters and the responses  *)
(* observed, by position ("The events" below: a tuple is half as long as a *)
(* record, and TLC parses a long trace in about half the time).  A state   *)
(* of this spec is a state of LockServer plus `i`, the number of trace     *)
(* events explained so far.  From each state exactly one step can be       *)
(* taken:                                                                  *)
(*  - Explain: event i+1 happens, as the LockServer action it names, with  *)
(*    its parameters, at its instant, and the action sends exactly the     *)
(*    responses recorded (`sent'` = the event's `out`);                    *)
(*  - Idle: one of LockServer's own Tick steps before the event's instant, *)
(*    which must send nothing (the simulator ticks the server at every     *)
(*    instant where something is due, so an instant that fires something  *)
(*    the trace does not show is a step the server did not take);          *)
(*  - Stuck / Done: a self-loop that prints where the behaviour stopped    *)
(*    (Stuck only in the second, locating pass: see TraceLocateNext).      *)
(* So TLC walks a single path: the trace is valid when the path reaches    *)
(* the end of Trace ("trace-done"), and invalid at the first event that no *)
(* LockServer step explains ("trace-stuck" with that event's number).      *)
(*                                                                         *)
(* One step is not a LockServer action: Restart.  The server process died *)
(* and a fresh one started from its durable token mark (docs/protocol.md,       *)
(* "Tokens").  All lock state is gone; the clock of the world goes on, and *)
(* so do the sweep instants; tokens must go on increasing.                 *)
(***************************************************************************)
EXTENDS LockServer, TLC

CONSTANT Trace   \* the run's server steps (see the module comment)

VARIABLE i       \* how many events of Trace have been explained

traceVars == <<vars, i>>

HasNext == i < Len(Trace)
Ev == Trace[i + 1]

(***************************************************************************)
(* The events, by position (sim/trace/tla.cpp writes them):                *)
(*   <<"Acquire", t, conn, key, owner, lease, wait, out>>                  *)
(*   <<"Release", t, conn, key, token, out>>                               *)
(*   <<"Close", t, conn, out>>                                             *)
(*   <<"Tick", t, sweep, deleted, out>>   sweep: the sweep ran at t        *)
(*   <<"Restart", t, first_token, out>>                                    *)
(* and each response of `out` is <<kind, conn, owner, key, token>>, the    *)
(* fields of LockServer's Response in order ("" and 0 where it has none).  *)
(***************************************************************************)
EvKind == Ev[1]
EvT == Ev[2]
EvOut == Ev[Len(Ev)]
AsResponse(r) == Response(r[1], r[2], r[3], r[4], r[5])
EvSent == [j \in 1..Len(EvOut) |-> AsResponse(EvOut[j])]

\* The last instant an Idle tick may reach before event Ev: a Tick event is
\* itself the step to its instant; a request is handled at its instant, which
\* the clock must have reached.
IdleUntil == IF EvKind = "Tick" THEN EvT - 1 ELSE EvT

Idle ==
  /\ HasNext
  /\ EvKind # "Restart"
  /\ clock < IdleUntil
  /\ Tick
  /\ sent' = <<>>
  /\ UNCHANGED i

\* The keys a step removed (a sweep's deletions, a release's).
Removed == DOMAIN keys \ DOMAIN keys'

DoAcquire ==
  /\ EvKind = "Acquire"
  /\ clock = EvT
  /\ Acquire(Ev[3], Ev[4], Ev[5], Ev[6], Ev[7])
  /\ UNCHANGED nextSweep

DoRelease ==
  /\ EvKind = "Release"
  /\ clock = EvT
  /\ Release(Ev[3], Ev[4], Ev[5])
  /\ UNCHANGED nextSweep

DoClose ==
  /\ EvKind = "Close"
  /\ clock = EvT
  /\ Close(Ev[3])

\* At a sweep instant (Ev[3]), Ev[4] is the number of keys the sweep deleted.
DoTick ==
  /\ EvKind = "Tick"
  /\ clock + 1 = EvT
  /\ Tick
  /\ Ev[3] => Cardinality(Removed) = Ev[4]

\* Not a LockServer action: the server restarted (see the module comment).
DoRestart ==
  /\ EvKind = "Restart"
  /\ clock <= EvT
  /\ Ev[3] >= nextToken
  /\ clock' = EvT
  /\ nextToken' = Ev[3]
  /\ nextSweep' = (EvT \div SweepMs + 1) * SweepMs
  /\ keys' = [k \in {} |-> Entry(NoOwner, NoToken, 0)]
  /\ waiters' = <<>>
  /\ sent' = <<>>
  /\ UNCHANGED open

Explain ==
  /\ HasNext
  /\ \/ DoAcquire \/ DoRelease \/ DoClose \/ DoTick \/ DoRestart
  /\ sent' = EvSent
  /\ i' = i + 1

TraceNext == Explain \/ Idle

\* No LockServer step explains event i + 1: say so once, and stop there.
Stuck ==
  /\ HasNext
  /\ ~ENABLED TraceNext
  /\ PrintT(<<"trace-stuck", i + 1, clock>>)
  /\ UNCHANGED traceVars

Done ==
  /\ ~HasNext
  /\ PrintT(<<"trace-done", i, clock>>)
  /\ UNCHANGED traceVars

TraceInit == Init /\ i = 0

\* Two next-state relations.  TraceSpecNext, checked first (with TLC's
\* -deadlock), has no Stuck: evaluating ENABLED at every state costs as much
\* as the step itself, and most traces are valid.  A path that ends without
\* "trace-done" is then checked again with TraceLocateNext, whose Stuck names
\* the event.
TraceSpecNext == TraceNext \/ Done
TraceLocateNext == TraceNext \/ Stuck \/ Done

TraceSpec == TraceInit /\ [][TraceLocateNext]_traceVars

\* Each state is one of a single path, told apart by how far it got (every
\* step moves i or the clock): TLC fingerprints this instead of the whole
\* state, which holds hundreds of keys.
TraceView == <<i, clock>>

\* The state invariants of LockServer that do not depend on its model-
\* checking bounds hold on every state the trace reaches.  Two are written
\* again in forms linear in the state, since a run holds hundreds of keys
\* and waiters where the model-checking configs hold a few (the quadratic
\* originals made TLC 5 times slower on a 400-key trace):
\*  - TokensUnique: distinct tokens, counted with a set, and only after a
\*    step that sent an A: every step that gives a key a token sends its A
\*    (AtMostOneHolder, checked at every state, ties the two), and any other
\*    step only removes tokens or raises nextToken, so the property carries
\*    over to the states in between (on a 641-key trace the check at every
\*    state cost a quarter of TLC's time);
\*  - CapacityRespected: the global bounds only.  The per-key bound needs no
\*    check here: only Acquire adds a waiter, and it answers B instead once
\*    the key's queue is full, so a trace that queues past the limit has an
\*    event no step explains.
TraceTokensUnique ==
  /\ Cardinality({keys[k].token : k \in DOMAIN keys}) = Cardinality(DOMAIN keys)
  /\ \A k \in DOMAIN keys : keys[k].token < nextToken
  /\ \A m, n \in Grants(sent) : m # n => sent[m].token # sent[n].token

TraceCapacityRespected ==
  /\ Cardinality(DOMAIN keys) <= MaxKeys
  /\ Len(waiters) <= MaxWaiters

TraceInvariant ==
  /\ AtMostOneHolder
  /\ Grants(sent) # {} => TraceTokensUnique
  /\ TraceCapacityRespected
  /\ WaitersBeforeDeadline
  /\ ExpiredKeysSwept
=============================================================================
