-------------------------- MODULE TraceLockCluster --------------------------
(***************************************************************************)
(* Trace validation of cluster mode: the behaviours of LockCluster that    *)
(* follow one recorded run of the cluster simulator, step by step.         *)
(*                                                                         *)
(* `lockstep trace-to-tla` turns a cluster trace (sim/trace/TRACE.md,      *)
(* "Cluster traces") into a copy of this module whose constant Trace is    *)
(* defined as the run's events in order, each a tuple whose first element  *)
(* names what happened (see "The events" below).  A state of this spec is  *)
(* a state of LockCluster plus `i`, the number of events explained so far, *)
(* and a few variables that follow what the implementation adds to the     *)
(* spec (below).                                                           *)
(* From each state at most one step can be taken:                          *)
(*  - Explain: event i+1 happens, as the LockCluster action it is an       *)
(*    instance of, with the parameters it recorded, and what the action    *)
(*    computes equals what the implementation recorded (the entry          *)
(*    committed, the responses of an apply, the state of the key after     *)
(*    it, what a leader's heap proposed);                                  *)
(*  - Advance: before a proposal, global time and the proposer's clock     *)
(*    move to the event's (a sequence of LockCluster's Tick and ClockTick  *)
(*    steps, so every clock must stay within MaxSkew of global time);      *)
(*  - Done: a self-loop at the end that prints "trace-done".               *)
(* So TLC walks a single path: the trace is valid when it reaches the end  *)
(* of Trace, and invalid at the first event that no step explains: a path  *)
(* that ends early is walked again printing each event it explains, and    *)
(* the one after the last printed is the culprit (TraceLocateNext).        *)
(*                                                                         *)
(* Each event and the LockCluster action it is an instance of:             *)
(*   Elect    a node won an election, with the uncommitted entries of its  *)
(*            log: ElectWith (a prefix of some node's uncommitted entries) *)
(*   Send     a client's next request: SendWith (its last one finished,   *)
(*            or given up: NextRequestWith), or another request under its *)
(*            last number: ReuseWith                                       *)
(*   GiveUp   a client stops waiting for its request, unanswered (the node *)
(*            closed its connection): no action of LockCluster; it may     *)
(*            send its next request before the last is finished            *)
(*   HeapDue  a leader asked its deadline heap what is due at its clock:   *)
(*            Tick and ClockTick to that instant, then a check against its *)
(*            applied state, no action of LockCluster (the heap is not a   *)
(*            variable there; below)                                       *)
(*   Propose  a leader proposed a request (ProposeRequestWith) or one of   *)
(*            the commands its heap yielded (ProposeDueWith)               *)
(*   Commit   the first node applied a log entry: CommitNext of the        *)
(*            leader of the newest term, whose oldest uncommitted entry it *)
(*            must be                                                      *)
(*   Apply    a node applied the next committed entry: ApplyNext           *)
(*   Restore  a node installed a snapshot: ApplyNext up to its index       *)
(*   Restart  a node crashed and started again from its durable snapshot:  *)
(*            not an action of LockCluster, which has no crashes (below)   *)
(*   Reply    a node sent a response: not an action (LockCluster has no    *)
(*            messages); it must be one its last apply produced            *)
(*                                                                         *)
(* What the implementation adds, and this spec follows in variables of its *)
(* own:                                                                    *)
(*  - responses: LockCluster does not model them; `Out` computes what an   *)
(*    apply answers from the same state and entry as `Apply`, a retried    *)
(*    request is answered from its session (with `Outcomes`, each          *)
(*    request's answer where the trace first shows it, checked against     *)
(*    `Out` there) or, below the session window, E, and so is another      *)
(*    request under an applied number (`Requests`: what each request       *)
(*    first committed asked); `lastOut` is what a node's last apply        *)
(*    produced, which is all it may send;                                  *)
(*  - the heap's in-flight set (`flight`): what a leader's heap yielded    *)
(*    since it became leader and has not applied since.  The heap yields   *)
(*    everything due on its applied state that is not in flight (and       *)
(*    again what the driver reported lost), so at a HeapDue every due      *)
(*    deadline is yielded or in flight, and a request is proposed only     *)
(*    when every due deadline is in flight or among the leader's           *)
(*    uncommitted entries (LockCluster's "requests after what is due",     *)
(*    with the heap's record of what it proposed);                         *)
(*  - crashes: a restarted node's lock state is the committed state at the *)
(*    index of its durable snapshot (`kept` holds the committed states     *)
(*    that some snapshot restores), and it applies on from there.          *)
(***************************************************************************)
EXTENDS LockCluster, TLC

CONSTANT SessionWindow   \* requests kept per client: older retries are answered E
CONSTANT Trace           \* the run's events (see the module comment)
CONSTANT Outcomes        \* client -> the answers to its requests, by seq (below)
CONSTANT Requests        \* client -> what its requests asked, by seq (below)

VARIABLES
  i,        \* how many events of Trace have been explained
  flight,   \* node -> Ids its heap yielded since it became leader, not applied by it since
  batch,    \* node -> what its heap yielded at its last HeapDue and it has not proposed yet
  lastOut,  \* node -> the responses of its last apply
  kept,     \* position -> the committed state after that many entries (those a snapshot restores)
  gaveUp    \* the clients that gave their outstanding request up

traceVars == <<vars, i, flight, batch, lastOut, kept, gaveUp>>
extraVars == <<flight, batch, lastOut, kept, gaveUp>>

HasNext == i < Len(Trace)
Ev == Trace[i + 1]

(***************************************************************************)
(* The events, by position (sim/trace/cluster_tla.cpp writes them):        *)
(*   <<"Elect", n, entries>>                                               *)
(*   <<"Send", c, entry>>   <<"GiveUp", c>>                                *)
(*   <<"HeapDue", n, now, clock, entries>>                                 *)
(*   <<"Propose", n, now, clock, entry>>                                   *)
(*   <<"Commit", entry, keep>>     keep: a snapshot restores this position *)
(*   <<"Apply", n, responses, view>>                                       *)
(*   <<"Restore", n, position>>  <<"Restart", n, position>>                *)
(*   <<"Reply", n, response>>                                              *)
(* An entry is <<type, client, seq, key, lease, wait, token, time, by,     *)
(* epoch>>, LockCluster's Entry by position (epoch: the term, counted as   *)
(* this spec counts elections); a response <<kind, client, seq, key,       *)
(* token>> (the request it answers; "" and 0 where it has none); the view  *)
(* of a key <<holder, token, expiry, queue>>, with <<client, seq>> per     *)
(* waiter in queue order (<<"", 0, 0, <<>>>> when the key is free).        *)
(* `now` is global time plus MaxSkew: the simulator's node clocks read     *)
(* global time plus an error in [0, 2 * MaxSkew].                          *)
(*                                                                         *)
(* Outcomes[c][q] is the response that answered request q of client c,     *)
(* taken by the converter from the first Apply that produced it (which this *)
(* spec checks against Out), NoOutcome for a request never answered.  A    *)
(* retry is answered with it: as a constant, not a variable, since TLC     *)
(* normalizes every variable's value at every state, and the answers of a  *)
(* long run number thousands.  Requests[c][q] is Asked of the first        *)
(* committed request q of client c (<<>> for none): a request under that   *)
(* number that asks otherwise is answered E.                               *)
(***************************************************************************)
EvKind == Ev[1]
AsEntry(x) == Entry(x[1], x[2], x[3], x[4], x[5], x[6], x[7], x[8], x[9], x[10])
AsEntries(xs) == [j \in 1..Len(xs) |-> AsEntry(xs[j])]
Ids(es) == {Id(es[j]) : j \in 1..Len(es)}

-----------------------------------------------------------------------------
(* Responses, which LockCluster does not model *)

Resp(kind, c, seq, k, tok) == <<kind, c, seq, k, tok>>
NoOutcome == Resp("", NoClient, 0, "", 0)

\* What HandOff(s, k, t) answers: T to the due waiters it removes, in queue
\* order (nothing to the detached ones, whose connections are gone), then A
\* to the new holder.
HandOffOut(s, k, t) ==
  LET w == s.waiters
      h == FirstLiveOf(w, k, t, GhostGrant)
      due == SelectSeq([j \in 1..Len(w) |-> <<j, w[j]>>],
                       LAMBDA p : p[2].key = k /\ (h = 0 \/ p[1] < h) /\ Attached(p[2]))
  IN [j \in 1..Len(due) |-> Resp("T", due[j][2].client, due[j][2].seq, k, 0)]
     \o (IF h = 0 THEN <<>> ELSE <<Resp("A", w[h].client, w[h].seq, k, s.nextToken)>>)

\* Whether e asks what the request its client first committed under its
\* number asked.
AsFirstAsked(e) ==
  ~(e.client \in DOMAIN Requests /\ e.seq <= Len(Requests[e.client])
    /\ Requests[e.client][e.seq] # <<>> /\ Requests[e.client][e.seq] # Asked(e))

\* A request its session already applied: below the window E, still queued
\* nothing (its answer comes when it is granted or times out), otherwise the
\* response that answered it.
RetryOut(s, e) ==
  IF e.seq + SessionWindow <= s.sessions[e.client].seq THEN <<Resp("E", e.client, e.seq, "", 0)>>
  ELSE IF ~AsFirstAsked(e) THEN <<Resp("E", e.client, e.seq, "", 0)>>
  ELSE IF \E j \in 1..Len(s.waiters) : s.waiters[j].client = e.client /\ s.waiters[j].seq = e.seq THEN <<>>
  ELSE IF e.client \in DOMAIN Outcomes /\ e.seq <= Len(Outcomes[e.client])
          /\ Outcomes[e.client][e.seq] # NoOutcome
       THEN <<Outcomes[e.client][e.seq]>>
  ELSE <<Resp("no outcome recorded", e.client, e.seq, "", 0)>>

\* The responses of Apply(s, e, _) at time t, in the order they are sent.
Out(s0, e, t) ==
  LET k == e.key
      s == Prepared(s0, e, t)  \* a newer epoch's entry detaches first
  IN
  CASE e.type = "Acquire" ->
         IF ~Executes(s, e) THEN RetryOut(s, e)
         ELSE IF k \in DOMAIN s.keys /\ e.wait = 0 THEN <<Resp("T", e.client, e.seq, k, 0)>>
         ELSE IF Busy(s, k) THEN <<Resp("B", e.client, e.seq, k, 0)>>
         ELSE IF k \notin DOMAIN s.keys THEN <<Resp("A", e.client, e.seq, k, s.nextToken)>>
         ELSE <<>>
    [] e.type = "Release" ->
         IF ~Executes(s, e) THEN RetryOut(s, e)
         ELSE IF HolderOf(s, k, e.token) THEN <<Resp("R", e.client, e.seq, k, e.token)>> \o HandOffOut(s, k, t)
         ELSE <<Resp("N", e.client, e.seq, k, e.token)>>
    [] e.type = "Expire" ->
         IF k \in DOMAIN s.keys /\ (ExpireWithoutTokenCheck \/ s.keys[k].token = e.token)
         THEN HandOffOut(s, k, t) ELSE <<>>
    [] e.type = "Timeout" ->
         \* A detached waiter leaves unanswered.
         LET gone == SelectSeq(s.waiters, LAMBDA x :
                       x.key = k /\ x.client = e.client /\ x.seq = e.seq /\ x.deadline <= t /\ Attached(x))
         IN [j \in 1..Len(gone) |-> Resp("T", e.client, e.seq, k, 0)]


\* Key k in lock state s, as the trace shows it.
KeyView(s, k) ==
  IF k \in DOMAIN s.keys
  THEN LET q == Queue(s.waiters, k)
       IN <<s.keys[k].holder, s.keys[k].token, s.keys[k].expiry, [j \in 1..Len(q) |-> <<q[j].client, q[j].seq>>]>>
  ELSE <<NoClient, 0, 0, <<>>>>

-----------------------------------------------------------------------------
(* The steps *)

\* Global time and node n's clock move to t and c: Tick until now = t
\* (carrying along the clocks that would fall behind), then ClockTick(n)
\* until clock[n] = c; possible exactly when neither goes back and c is
\* within Drift of t.
TimeTo(n, t, c) ==
  /\ now <= t /\ t <= MaxTime
  /\ clock[n] <= c
  /\ c <= t + Drift /\ t <= c + Drift
  /\ now' = t
  /\ clock' = [m \in Nodes |-> IF m = n THEN c ELSE Max(clock[m], t - Drift)]

\* Before a Propose: its time, as a step of its own, since the proposal's
\* stamp is the clock ProposeRequestWith and ProposeDueWith read.
Advance ==
  /\ HasNext
  /\ EvKind = "Propose"
  /\ <<now, clock[Ev[2]]>> # <<Ev[3], Ev[4]>>
  /\ TimeTo(Ev[2], Ev[3], Ev[4])
  /\ UNCHANGED <<term, leading, pending, log, applied, replica, committed, request, granted, released,
                 executed, listens, i, extraVars>>

History == <<granted, released, executed, listens>>

DoElect ==
  /\ EvKind = "Elect"
  /\ ElectWith(Ev[2], AsEntries(Ev[3]))
  /\ flight' = [flight EXCEPT ![Ev[2]] = {}]
  /\ batch' = [batch EXCEPT ![Ev[2]] = <<>>]
  /\ UNCHANGED <<lastOut, kept, gaveUp>>

DoSend ==
  /\ EvKind = "Send"
  /\ LET c == Ev[2]
         r == AsEntry(Ev[3])
     IN \/ SendWith(c, r)
        \/ c \in gaveUp /\ NextRequestWith(c, r)
        \/ ReuseWith(c, r)
  /\ gaveUp' = gaveUp \ {Ev[2]}
  /\ UNCHANGED <<flight, batch, lastOut, kept>>

DoGiveUp ==
  /\ EvKind = "GiveUp"
  /\ request[Ev[2]].type # "None"
  /\ gaveUp' = gaveUp \cup {Ev[2]}
  /\ UNCHANGED vars
  /\ UNCHANGED <<flight, batch, lastOut, kept>>

\* Every deadline due on n's applied state at its clock has its Id in ids.
Remembered(n, ids) == \A d \in DueSet(replica[n], clock[n], n) : Id(d[4]) \in ids

\* A heap check moves time to its instant itself (it reads the clock only
\* through the event: what is due at it).
DoHeapDue ==
  /\ EvKind = "HeapDue"
  /\ LET n == Ev[2]
         c == Ev[4]
         es == AsEntries(Ev[5])
         D == DueSet(replica[n], c, n)
     IN /\ leading[n] > 0
        /\ InHeapOrderAt(D, es)
        /\ \A d \in D : Id(d[4]) \in Ids(es) \cup flight[n]
        /\ TimeTo(n, Ev[3], c)
        /\ flight' = [flight EXCEPT ![n] = @ \cup Ids(es)]
        /\ batch' = [batch EXCEPT ![n] = es]
  /\ UNCHANGED <<term, leading, pending, log, applied, replica, committed, request, History>>
  /\ UNCHANGED <<lastOut, kept, gaveUp>>

DoPropose ==
  /\ EvKind = "Propose"
  /\ LET n == Ev[2]
         e == AsEntry(Ev[5])
     IN /\ now = Ev[3] /\ clock[n] = Ev[4]
        /\ IF IsRequest(e)
           THEN /\ e = [request[e.client] EXCEPT !.time = clock[n], !.by = n, !.epoch = leading[n]]
                /\ Remembered(n, Proposed(n) \cup flight[n])
                /\ ProposeRequestWith(n, e.client)
                /\ UNCHANGED batch
           ELSE /\ \E j \in 1..Len(batch[n]) :
                     /\ batch[n][j] = e
                     /\ batch' = [batch EXCEPT ![n] = SubSeq(@, j + 1, Len(@))]
                /\ ProposeDueWith(n, <<e>>)
  /\ UNCHANGED <<flight, lastOut, kept, gaveUp>>

DoCommit ==
  /\ EvKind = "Commit"
  /\ LET e == AsEntry(Ev[2]) IN
     /\ \E n \in Nodes : pending[n] # <<>> /\ Head(pending[n]) = e /\ CommitNext(n)
  /\ kept' = IF Ev[3] THEN SetKey(kept, Len(log'), committed') ELSE kept
  /\ UNCHANGED <<now, clock, term, leading, applied, replica, request, History>>
  /\ UNCHANGED <<flight, batch, lastOut, gaveUp>>

DoApply ==
  /\ EvKind = "Apply"
  /\ LET n == Ev[2]
         s == replica[n]
         e == log[applied[n] + 1]
     IN /\ ApplyNext(n)
        /\ Ev[3] = Out(s, e, At(s, e, clock[n]))
        /\ Ev[4] = KeyView(replica'[n], e.key)
        /\ lastOut' = [lastOut EXCEPT ![n] = Ev[3]]
        /\ flight' = [flight EXCEPT ![n] = @ \ {Id(e)}]
  /\ UNCHANGED <<batch, kept, gaveUp>>

\* A snapshot installed (Restore, which ApplyNext steps up to its position
\* would reach as well) or a restart from the durable snapshot (Restart: the
\* node's lock state goes back to it).
DoRestore ==
  /\ EvKind \in {"Restore", "Restart"}
  /\ LET n == Ev[2]
         p == Ev[3]
     IN /\ p \in DOMAIN kept
        /\ EvKind = "Restore" => p >= applied[n]
        /\ applied' = [applied EXCEPT ![n] = p]
        /\ replica' = [replica EXCEPT ![n] = kept[p]]
        /\ lastOut' = [lastOut EXCEPT ![n] = <<>>]
  /\ UNCHANGED <<now, clock, term, leading, pending, log, committed, request, History>>
  /\ UNCHANGED <<flight, batch, kept, gaveUp>>

\* An R, N or E on the wire does not say which request of its client it
\* answers: its trace record has seq 0, and any of that client's matches.
DoReply ==
  /\ EvKind = "Reply"
  /\ LET x == Ev[3] IN
       \E r \in Range(lastOut[Ev[2]]) :
         r[1] = x[1] /\ r[2] = x[2] /\ (x[3] = 0 \/ r[3] = x[3]) /\ r[4] = x[4] /\ r[5] = x[5]
  /\ UNCHANGED vars
  /\ UNCHANGED extraVars

Explain ==
  /\ HasNext
  /\ \/ DoElect \/ DoSend \/ DoGiveUp \/ DoHeapDue \/ DoPropose \/ DoCommit \/ DoApply \/ DoRestore \/ DoReply
  /\ i' = i + 1

TraceNext == Explain \/ Advance

Done ==
  /\ ~HasNext
  /\ PrintT(<<"trace-done", i, now>>)
  /\ UNCHANGED traceVars

TraceInit ==
  /\ now = 0
  /\ clock = [n \in Nodes |-> 0]
  /\ term = 0
  /\ leading = [n \in Nodes |-> 0]
  /\ pending = [n \in Nodes |-> <<>>]
  /\ log = <<>>
  /\ applied = [n \in Nodes |-> 0]
  /\ replica = [n \in Nodes |-> InitState]
  /\ committed = InitState
  /\ request = [c \in Clients |-> [NoRequest EXCEPT !.client = c]]
  \* The history variables serve LockCluster's properties, which model
  \* checking covers; trace validation leaves them empty.
  /\ granted = [t \in {} |-> 0]
  /\ released = {}
  /\ executed = [x \in {} |-> 0]
  /\ listens = [c \in {} |-> 0]
  /\ i = 0
  /\ flight = [n \in Nodes |-> {}]
  /\ batch = [n \in Nodes |-> <<>>]
  /\ lastOut = [n \in Nodes |-> <<>>]
  /\ kept = [p \in {0} |-> InitState]
  /\ gaveUp = {}

\* Two next-state relations: TraceSpecNext first, TraceLocateNext only for a
\* path that ended early, printing each event it explains; the event after
\* the last one printed is the first that no step explains.  (Not a Stuck
\* action as in TraceLockServer: TLC evaluates ENABLED without keeping the
\* values of LET definitions, which makes some of these steps take
\* exponential time there.)
TraceSpecNext == TraceNext \/ Done
TraceLocateNext ==
  \/ Explain /\ PrintT(<<"trace-explained", i + 1, now>>)
  \/ Advance
  \/ Done

TraceSpec == TraceInit /\ [][TraceLocateNext]_traceVars

\* Each state is one of a single path, told apart by how far it got: TLC
\* fingerprints this instead of the whole state (the log grows with the
\* run).
TraceView == <<i, now, clock>>

\* LockCluster's TokensUniqueIn, in a form linear in the state: no two keys
\* share a token and every held token was issued.  Checked on the committed
\* state: every replica goes through the committed states (the same Apply
\* of the same log, or a restore of one).
TokensUniqueLinear(s) ==
  /\ Cardinality({s.keys[k].token : k \in DOMAIN s.keys}) = Cardinality(DOMAIN s.keys)
  /\ \A k \in DOMAIN s.keys : s.keys[k].token < s.nextToken

TraceInvariant == TokensUniqueLinear(committed)
=============================================================================
