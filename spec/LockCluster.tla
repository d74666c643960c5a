----------------------------- MODULE LockCluster -----------------------------
(***************************************************************************)
(* Cluster mode of the lockstep lock service (docs/protocol.md, "Cluster mode", *)
(* "Cluster semantics in conformance vectors"): the lock state machine     *)
(* replicated over a consensus log, with a clock per node.                 *)
(*                                                                         *)
(* The log is abstract.  There are terms, at most one leader elected per   *)
(* term, and one committed prefix `log` that every node applies in order.  *)
(* A node that was elected keeps believing it leads after a newer term     *)
(* began (a stale leader): it can still propose, but only the leader of    *)
(* the newest term commits.  A new leader may adopt uncommitted entries of *)
(* an earlier one and commit them later.  This allows more than Raft does  *)
(* (an adopted entry can land after entries Raft would have put after it), *)
(* so what holds here holds over Raft.                                     *)
(*                                                                         *)
(* Time.  `now` is global time, which no node reads.  Every node has its   *)
(* own clock, which only moves forward and stays within MaxSkew of `now`.  *)
(* A leader stamps every entry it proposes with its own clock; applying an *)
(* entry reads no clock: its time is the entry's stamp, raised to the      *)
(* latest time the lock state applied (the state's own `clock`), so that   *)
(* time in the replicated state never goes back when a new leader's clock  *)
(* is behind the old one's.                                                *)
(*                                                                         *)
(* The leader's deadline heap is the set of deadlines of its applied       *)
(* state (holders' expiries, waiters' deadlines): a new leader rebuilds it *)
(* from its applied state, and applying an entry keeps it so.  When the    *)
(* leader's clock reaches deadlines, it proposes, at that instant, what is *)
(* due, by instant (at one instant Timeouts, in queueing order, before     *)
(* Expires, in token order), and only then client requests.                *)
(*                                                                         *)
(* Cluster rules (docs/protocol.md): a key is held until its Expire commits     *)
(* (no take-over in place); Expire(key, token) checks the token (still the *)
(* holder's: hand to the head waiter with a new token, or delete; else     *)
(* nothing); Timeout(key, waiter) removes a waiter whose deadline passed.  *)
(* A hand-off at time t (Release or Expire) goes down the key's queue:     *)
(* waiters whose deadline is <= t are due at t, and due Timeouts come      *)
(* first, so they leave (answered T; their own Timeout entries then find   *)
(* nothing) until the first waiter not yet due gets the key.               *)
(*                                                                         *)
(* Sessions (Raft dissertation, 6.3): a client has one request outstanding *)
(* at a time, numbered 1, 2, ...; any leader may propose it, any number of *)
(* times (retries after a timeout or a leader change).  The applied state  *)
(* keeps each client's last applied number, with what that request asked,  *)
(* and skips a command that is not newer: a retry of the same request, or  *)
(* another request reusing the number (a client run again with its id;     *)
(* ReuseSeq lets clients do it), which is refused (E) and changes nothing. *)
(*                                                                         *)
(* No ghost grants (docs/protocol.md, "Waiters and leader changes").  Every *)
(* entry carries the term of the leader that proposed it (`epoch`); the    *)
(* lock state's epoch is the highest applied.  A waiter belongs to the     *)
(* epoch of the entry that queued it, or of the retry that last found it   *)
(* queued: that leader's node holds the client's connection, and a node    *)
(* that stops leading closes it.  When the state's epoch passes a waiter's *)
(* it is detached (at that entry's time): never granted (a hand-off drops  *)
(* it), dropped by its Timeout, which a leader proposes Grace after the    *)
(* detachment, and attached again by a retry of its request under the      *)
(* state's epoch.  NoGhostGrant checks, from the committed log alone, that  *)
(* a hand-off goes only to a client whose latest committed copy of its     *)
(* request was proposed in the newest epoch committed.                      *)
(*                                                                         *)
(* Lease safety, the bound.  Let S = MaxSkew: |clock[n] - now| <= S for    *)
(* every node at every instant.  A grant with expiry e, stamped by node g, *)
(* is believed live by its holder from the moment it commits until g's     *)
(* clock reaches e (unless the holder released it).  Then two grants of a  *)
(* key are both live for less than 2*S instants of global time:            *)
(*   - the later grant needs the earlier token gone from the applied       *)
(*     state, by its Release (then the earlier one is not live) or by      *)
(*     Expire(key, token), proposed by some leader whose clock was >= e,   *)
(*     so at global time >= e - S, and committed no earlier;               *)
(*   - the earlier grant is live only while clock[g] < e, and clock[g] >=  *)
(*     now - S, so only while now < e + S.                                 *)
(* Overlap instants lie in [e - S, e + S - 1]: LeaseSafety checks that, at *)
(* any instant when two grants of a key are live, now < start + 2*S, start *)
(* being the later grant's commit instant.  With S = 0 no two grants of a  *)
(* key are ever live at once.                                              *)
(*                                                                         *)
(* Capacity limits are as in simple mode: an Acquire that would register   *)
(* a key beyond MaxKeys, or queue beyond MaxWaitersPerKey or MaxWaiters,   *)
(* is answered B and changes nothing but its session.                      *)
(*                                                                         *)
(* Bounds (for model checking only): global time stops at MaxTime, there   *)
(* are at most MaxTerm terms, a proposal keeps every leader's log (log     *)
(* plus its uncommitted entries) within MaxLog entries, a client sends at  *)
(* most MaxSeq requests, a leader proposes nothing it has among its        *)
(* uncommitted entries, nor a request it has applied, and a client         *)
(* releases only tokens it was granted.  Each action below is its rule     *)
(* (`...With`), which trace validation checks the implementation against   *)
(* (TraceLockCluster.tla), conjoined with those bounds.  Not modelled      *)
(* here: Close (as in simple mode, spec/LockServer.tla).                   *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets, TLC

CONSTANTS
  Nodes,       \* the replicas
  Keys,        \* key names
  Clients,     \* client ids; a client is also the owner its requests name
  Leases,      \* lease_ms values requests may carry (each >= 1)
  Waits,       \* wait_ms values requests may carry (each >= 0)
  MaxKeys, MaxWaitersPerKey, MaxWaiters,  \* the contract's capacity limits
  MaxSkew,     \* S: every node's clock stays within S of global time
  MaxTime,     \* bound: global time stops there
  MaxTerm,     \* bound: at most this many elections
  MaxLog,      \* bound: no leader's log grows beyond this many entries
  MaxSeq,      \* bound: a client sends at most this many requests
  Grace,       \* a leader drops a detached waiter this long after its detachment
  ReuseSeq,    \* clients may send another request under their last number
  ExpireWithoutTokenCheck,  \* bug: applying Expire(key, token) ignores the token
  SkewBeyondBound,          \* bug: clocks drift up to MaxSkew + 1 from global time
  ApplyReadsClock,          \* bug: apply stamps times with the applying node's clock
  NoSessionCheck,           \* bug: apply re-executes a retried request
  GhostGrant                \* bug: a hand-off grants a detached waiter

ASSUME
  /\ Nodes # {} /\ Keys # {} /\ Clients # {}
  /\ Leases \subseteq Nat \ {0} /\ Waits \subseteq Nat
  /\ {MaxKeys, MaxWaitersPerKey, MaxWaiters} \subseteq Nat
  /\ {MaxSkew, MaxTime, MaxTerm, MaxLog, MaxSeq, Grace} \subseteq Nat
  /\ {ReuseSeq, ExpireWithoutTokenCheck, SkewBeyondBound, ApplyReadsClock, NoSessionCheck, GhostGrant}
       \subseteq BOOLEAN

VARIABLES
  now,        \* global time, in ms; no node reads it
  clock,      \* node -> its clock, in ms
  term,       \* the newest term (0: no election yet)
  leading,    \* node -> the term it believes it leads, 0 if none
  pending,    \* node -> the entries it proposed or adopted, not committed, in order
  log,        \* the committed prefix of the log
  applied,    \* node -> how many entries of `log` it has applied
  replica,    \* node -> its lock state: log[1..applied[n]] applied in order
  committed,  \* the lock state of the whole committed log (what clients can have seen)
  request,    \* client -> its outstanding (or last) request
  granted,    \* history: token -> [key, owner, expiry, by, start, index] of its grant
  released,   \* history: the tokens whose Release committed
  executed,   \* history: <<client, seq>> -> how many times it took effect
  listens     \* history: client -> the epoch of the latest committed copy of its request

vars == <<now, clock, term, leading, pending, log, applied, replica, committed, request,
          granted, released, executed, listens>>

-----------------------------------------------------------------------------
(* Helpers *)

NoClient == ""  \* the client field of entries that name none (Expire)
NoToken == 0    \* the token field of entries that carry none

Range(s) == {s[i] : i \in DOMAIN s}
Max(a, b) == IF a >= b THEN a ELSE b
SetKey(f, k, v) == [x \in DOMAIN f \cup {k} |-> IF x = k THEN v ELSE f[x]]
DropKey(f, k) == [x \in DOMAIN f \ {k} |-> f[x]]

\* A key's FIFO queue, head first.
Queue(w, k) == SelectSeq(w, LAMBDA x : x.key = k)

RECURSIVE Without(_, _, _)
Without(s, I, i) ==
  IF i > Len(s) THEN <<>>
  ELSE (IF i \in I THEN <<>> ELSE <<s[i]>>) \o Without(s, I, i + 1)

\* Entries of the log.  Every field is present in every entry, so that any
\* two entries compare; `time` is the proposer's clock, `by` the proposer,
\* `epoch` the term it led when it proposed (0 for a request not proposed).
Entry(type, c, seq, k, l, wt, tok, t, n, ep) ==
  [type |-> type, client |-> c, seq |-> seq, key |-> k, lease |-> l, wait |-> wt,
   token |-> tok, time |-> t, by |-> n, epoch |-> ep]

\* What identifies a command, whatever stamped it.
Id(e) == <<e.type, e.client, e.seq, e.key, e.token>>

IsRequest(e) == e.type \in {"Acquire", "Release"}

\* What a request asks, whoever sent or stamped it: a retry asks the same.
Asked(e) == <<e.type, e.key, e.lease, e.wait, e.token>>

\* Requests a client may send (seq is filled in when it is sent).
NoRequest == Entry("None", NoClient, 0, "", 0, 0, NoToken, 0, "", 0)

-----------------------------------------------------------------------------
(* The replicated lock state machine.  Apply reads no clock, only the entry and the state. *)

Holder(c, tok, e) == [holder |-> c, token |-> tok, expiry |-> e]
\* A waiter's `detached` is <<>> while attached, <<t>> once detached at t.
Waiter(k, c, seq, l, d, ep, det) ==
  [key |-> k, client |-> c, seq |-> seq, lease |-> l, deadline |-> d, epoch |-> ep, detached |-> det]

\* `clock` is the latest time applied: time in the lock state never goes
\* back (LogCabin's cluster time), whatever the order of the stamps.
NoSession == [seq |-> 0, asked |-> <<>>]
InitState == [keys |-> [k \in {} |-> Holder(NoClient, NoToken, 0)],
              waiters |-> <<>>,
              nextToken |-> 1,
              sessions |-> [c \in Clients |-> NoSession],
              clock |-> 0,
              epoch |-> 0]

\* The time an entry is applied at: its stamp, raised to the state's clock
\* (the bug: the applier's clock).
At(s, e, clk) == IF ApplyReadsClock THEN clk ELSE Max(s.clock, e.time)

Attached(x) == x.detached = <<>>

\* The position in w of key k's first waiter whose deadline is after t and
\* that is attached (with `ghosts`, the bug, attached or not), or 0.
FirstLiveOf(w, k, t, ghosts) ==
  LET live == {i \in 1..Len(w) : w[i].key = k /\ w[i].deadline > t /\ (ghosts \/ Attached(w[i]))}
  IN IF live = {} THEN 0 ELSE CHOOSE i \in live : \A j \in live : i <= j
FirstLive(w, k, t) == FirstLiveOf(w, k, t, FALSE)

\* Hand key k on at time t: going down its queue, waiters due by t leave
\* (timed out), and detached ones (silently), until the first attached one
\* that is not due gets the key (new token, its lease from t); with none,
\* the key is deleted.  Waiters behind the new holder stay, due, detached
\* or not: their Timeouts come.
HandOff(s, k, t) ==
  LET w == s.waiters
      i == FirstLiveOf(w, k, t, GhostGrant)
      gone == {j \in 1..Len(w) : w[j].key = k /\ (i = 0 \/ j <= i)}
  IN IF i = 0
     THEN [s EXCEPT !.keys = DropKey(s.keys, k), !.waiters = Without(w, gone, 1)]
     ELSE [s EXCEPT !.keys = SetKey(s.keys, k, Holder(w[i].client, s.nextToken, t + w[i].lease)),
                    !.waiters = Without(w, gone, 1),
                    !.nextToken = s.nextToken + 1]

\* A request takes effect unless its session already applied it.
Executes(s, e) == IsRequest(e) /\ (NoSessionCheck \/ s.sessions[e.client].seq < e.seq)

\* Another request under the number of the client's last applied one (not
\* a retry of it); clients reuse only their last number.
IsReuse(s, e) == e.seq = s.sessions[e.client].seq /\ Asked(e) # s.sessions[e.client].asked

\* The state as entry e finds it at time t: the clock raised to t, and, if
\* e is of a newer epoch, that epoch, every older waiter detached at t.
Prepared(s, e, t) ==
  LET ep == Max(s.epoch, e.epoch)
  IN [s EXCEPT !.clock = Max(s.clock, t), !.epoch = ep,
               !.waiters = [j \in 1..Len(s.waiters) |->
                              IF s.waiters[j].epoch < ep /\ Attached(s.waiters[j])
                              THEN [s.waiters[j] EXCEPT !.detached = <<t>>] ELSE s.waiters[j]]]

\* A retry of a request still queued: its waiter belongs to the retry's
\* epoch, attached again if that is the state's (a stale leader's retry
\* leaves it detached).
Reattach(s, e, t) ==
  [s EXCEPT !.waiters = [j \in 1..Len(s.waiters) |->
     LET x == s.waiters[j] IN
     IF x.client = e.client /\ x.seq = e.seq
     THEN [x EXCEPT !.epoch = e.epoch,
                    !.detached = IF e.epoch >= s.epoch THEN <<>> ELSE IF Attached(x) THEN <<t>> ELSE x.detached]
     ELSE x]]

HolderOf(s, k, tok) == k \in DOMAIN s.keys /\ s.keys[k].token = tok

\* An Acquire of key k is answered B: k is new and MaxKeys keys are
\* registered, or it would queue beyond a waiter limit.
Busy(s, k) ==
  IF k \notin DOMAIN s.keys THEN Cardinality(DOMAIN s.keys) >= MaxKeys
  ELSE Len(Queue(s.waiters, k)) >= MaxWaitersPerKey \/ Len(s.waiters) >= MaxWaiters

Apply(s, e, clk) ==
  LET t == At(s, e, clk)
      k == e.key
      s0 == Prepared(s, e, t)
      s1 == [s0 EXCEPT !.sessions[e.client] = [seq |-> e.seq, asked |-> Asked(e)]]
  IN CASE e.type = "Acquire" ->
            IF ~Executes(s, e)
            THEN IF IsReuse(s, e) THEN s0 ELSE Reattach(s0, e, t)  \* E, or a retry
            ELSE IF k \in DOMAIN s.keys /\ e.wait = 0 THEN s1             \* answered T
            ELSE IF Busy(s, k) THEN s1                                   \* answered B
            ELSE IF k \notin DOMAIN s.keys
            THEN [s1 EXCEPT !.keys = SetKey(s.keys, k, Holder(e.client, s.nextToken, t + e.lease)),
                            !.nextToken = s.nextToken + 1]
            ELSE [s1 EXCEPT !.waiters = Append(s0.waiters,
                                               Waiter(k, e.client, e.seq, e.lease, t + e.wait, e.epoch,
                                                      IF e.epoch < s0.epoch THEN <<t>> ELSE <<>>))]
       [] e.type = "Release" ->
            IF ~Executes(s, e) THEN s0
            ELSE IF HolderOf(s, k, e.token) THEN HandOff(s1, k, t)      \* R
            ELSE s1                                                     \* N
       [] e.type = "Expire" ->
            IF k \in DOMAIN s.keys /\ (ExpireWithoutTokenCheck \/ s.keys[k].token = e.token)
            THEN HandOff(s0, k, t)
            ELSE s0                                                     \* a stale Expire
       [] e.type = "Timeout" ->
            \* Due (answered T), or detached (dropped silently); else it stays.
            [s0 EXCEPT !.waiters = SelectSeq(s0.waiters, LAMBDA x :
                ~(x.key = k /\ x.client = e.client /\ x.seq = e.seq /\ (x.deadline <= t \/ ~Attached(x))))]

-----------------------------------------------------------------------------
(* Clocks *)

\* How far a clock may be from global time (the bug lets it go one further).
Drift == IF SkewBeyondBound THEN MaxSkew + 1 ELSE MaxSkew

\* Global time advances; a clock that would fall more than Drift behind is
\* carried along (clocks never go back).
Tick ==
  /\ now < MaxTime
  /\ now' = now + 1
  /\ clock' = [n \in Nodes |-> IF clock[n] < now + 1 - Drift THEN now + 1 - Drift ELSE clock[n]]
  /\ UNCHANGED <<term, leading, pending, log, applied, replica, committed, request,
                 granted, released, executed, listens>>

\* A node's clock advances, never more than Drift ahead of global time.
ClockTick(n) ==
  /\ clock[n] < now + Drift
  /\ clock' = [clock EXCEPT ![n] = @ + 1]
  /\ UNCHANGED <<now, term, leading, pending, log, applied, replica, committed, request,
                 granted, released, executed, listens>>

-----------------------------------------------------------------------------
(* The abstract consensus log *)

\* Bound: the entries in the log and among every node's uncommitted entries.
RECURSIVE PendingCount(_)
PendingCount(N) == IF N = {} THEN 0 ELSE LET n == CHOOSE n \in N : TRUE IN Len(pending[n]) + PendingCount(N \ {n})
InFlight == Len(log) + PendingCount(Nodes)

\* Entries a new leader may hold uncommitted: a prefix of what some node
\* (maybe itself) had proposed or adopted and not committed.
Adoptable(p) == \E m \in Nodes : Len(p) <= Len(pending[m]) /\ SubSeq(pending[m], 1, Len(p)) = p

\* The rule: n wins the election of a new term with the uncommitted entries
\* p.  Earlier leaders keep believing they lead.
ElectWith(n, p) ==
  /\ Adoptable(p)
  /\ term' = term + 1
  /\ leading' = [leading EXCEPT ![n] = term + 1]
  /\ pending' = [pending EXCEPT ![n] = p]
  /\ UNCHANGED <<now, clock, log, applied, replica, committed, request, granted, released, executed, listens>>

Elect(n) ==
  /\ term < MaxTerm
  /\ \E m \in Nodes : \E i \in 0..Len(pending[m]) :
       /\ InFlight - Len(pending[n]) + i <= MaxLog
       /\ ElectWith(n, SubSeq(pending[m], 1, i))

\* A leader proposes no command again that is among its uncommitted entries.
\* One it committed and has not applied yet it may propose again: its heap
\* is that of its applied state (a new leader rebuilds it from there), and
\* a client retries wherever it likes.  The token check and the sessions
\* make such duplicates harmless.
Proposed(n) == {Id(e) : e \in Range(pending[n])}

\* The rule: the leader of the newest term commits its oldest uncommitted
\* entry, which the committed state applies at the entry's own time.
CommitNext(n) ==
  /\ leading[n] = term /\ term > 0
  /\ pending[n] # <<>>
  /\ log' = Append(log, Head(pending[n]))
  /\ pending' = [pending EXCEPT ![n] = Tail(@)]
  /\ committed' = Apply(committed, Head(pending[n]), Head(pending[n]).time)

\* The history variables record what a commit means for clients: a new
\* grant (and when it became visible), a release, a request executed.
Commit(n) ==
  /\ CommitNext(n)
  /\ LET e == Head(pending[n])
         s == committed'
         grants == {k \in DOMAIN s.keys : s.keys[k].token = committed.nextToken}
     IN /\ granted' = IF grants = {} THEN granted
                      ELSE LET k == CHOOSE k \in grants : TRUE
                           IN SetKey(granted, committed.nextToken,
                                     [key |-> k, owner |-> s.keys[k].holder, expiry |-> s.keys[k].expiry,
                                      by |-> e.by, start |-> now, index |-> Len(log')])
        /\ released' = IF e.type = "Release" /\ Executes(committed, e) /\ HolderOf(committed, e.key, e.token)
                       THEN released \cup {e.token} ELSE released
        /\ executed' = IF Executes(committed, e)
                       THEN [executed EXCEPT ![<<e.client, e.seq>>] = @ + 1] ELSE executed
        \* A copy of the client's outstanding request: the client waits on the
        \* connection of the leader that proposed it.
        /\ listens' = IF IsRequest(e) /\ e.seq = request[e.client].seq /\ Asked(e) = Asked(request[e.client])
                      THEN [listens EXCEPT ![e.client] = e.epoch] ELSE listens
  /\ UNCHANGED <<now, clock, term, leading, applied, replica, request>>

\* A node applies the next committed entry.
ApplyNext(n) ==
  /\ applied[n] < Len(log)
  /\ applied' = [applied EXCEPT ![n] = @ + 1]
  /\ replica' = [replica EXCEPT ![n] = Apply(@, log[applied[n] + 1], clock[n])]
  /\ UNCHANGED <<now, clock, term, leading, pending, log, committed, request, granted, released,
                 executed, listens>>

-----------------------------------------------------------------------------
(* The leader: deadlines and requests *)

\* When a waiter is due for its Timeout: its deadline, or, detached, the
\* earlier of that and its detachment plus Grace (the leader drops it then).
DueAt(x) == IF Attached(x) THEN x.deadline ELSE IF x.deadline <= x.detached[1] + Grace THEN x.deadline
                                               ELSE x.detached[1] + Grace

\* Deadlines as <<instant, 0 (Timeout) or 1 (Expire), queue position or
\* token, entry>>, in the heap's order: by instant; at one instant Timeouts
\* (in queueing order) before Expires (in token order).
Before(a, b) == a[1] < b[1] \/ (a[1] = b[1] /\ (a[2] < b[2] \/ (a[2] = b[2] /\ a[3] <= b[3])))
RECURSIVE Sorted(_)
Sorted(S) == IF S = {} THEN <<>>
             ELSE LET m == CHOOSE x \in S : \A y \in S : Before(x, y)
                  IN <<m[4]>> \o Sorted(S \ {m})

\* The leader's heap, as it stands: every deadline of state s due at clock c
\* (waiters' deadlines, holders' expiries), with the Timeout or Expire entry
\* that acts on it, stamped c by n.
DueSet(s, c, n) ==
  LET timeouts == {<<DueAt(s.waiters[j]), 0, j,
                     Entry("Timeout", s.waiters[j].client, s.waiters[j].seq, s.waiters[j].key,
                           0, 0, NoToken, c, n, leading[n])>> :
                   j \in {j \in 1..Len(s.waiters) : DueAt(s.waiters[j]) <= c}}
      expires == {<<s.keys[k].expiry, 1, s.keys[k].token,
                    Entry("Expire", NoClient, 0, k, 0, 0, s.keys[k].token, c, n, leading[n])>> :
                  k \in {k \in DOMAIN s.keys : s.keys[k].expiry <= c}}
  IN timeouts \cup expires

\* The entries due on n's heap, in the heap's order.
DueAll(n) == Sorted(DueSet(replica[n], clock[n], n))

\* Due, less what n has among its uncommitted entries.
Due(n) == SelectSeq(DueAll(n), LAMBDA e : Id(e) \notin Proposed(n))

\* es holds entries of the deadlines D, each once, in the heap's order: a
\* subsequence of Sorted(D), checked without sorting all of D.
InHeapOrderAt(D, es) ==
  LET at == [j \in 1..Len(es) |-> {d \in D : d[4] = es[j]}]
  IN /\ \A j \in 1..Len(es) : at[j] # {}
     /\ \A j \in 1..(Len(es) - 1) :
          LET a == CHOOSE d \in at[j] : TRUE
              b == CHOOSE d \in at[j + 1] : TRUE
          IN a # b /\ Before(a, b)

\* es holds entries due on n's heap, in the heap's order.
InHeapOrder(n, es) == InHeapOrderAt(DueSet(replica[n], clock[n], n), es)

Fits(n, es) == InFlight + Len(es) <= MaxLog

\* A leader proposes while it leads the newest term, or while a newer leader
\* can still be elected (and adopt what it proposed).  After the last
\* election a stale leader's proposals could never commit: the bound stops
\* them, since they could change nothing but its own uncommitted entries.
MayPropose(n) == leading[n] > 0 /\ (leading[n] = term \/ term < MaxTerm)

\* The rule: a leader (maybe stale) proposes due entries of its heap, in its
\* heap's order.
ProposeDueWith(n, es) ==
  /\ leading[n] > 0
  /\ es # <<>>
  /\ InHeapOrder(n, es)
  /\ pending' = [pending EXCEPT ![n] = @ \o es]
  /\ UNCHANGED <<now, clock, term, leading, log, applied, replica, committed, request, granted,
                 released, executed, listens>>

\* It proposes everything due on its clock at once that it has not among its
\* uncommitted entries.
ProposeDue(n) ==
  /\ MayPropose(n)
  /\ Fits(n, Due(n))
  /\ ProposeDueWith(n, Due(n))

\* The rule: a leader (maybe stale) proposes a client's request, stamped with
\* its clock; a client that retries reaches any leader.
ProposeRequestWith(n, c) ==
  /\ leading[n] > 0
  /\ request[c].type # "None"
  /\ pending' = [pending EXCEPT ![n] = Append(@, [request[c] EXCEPT !.time = clock[n], !.by = n,
                                                                     !.epoch = leading[n]])]
  /\ UNCHANGED <<now, clock, term, leading, log, applied, replica, committed, request, granted,
                 released, executed, listens>>

\* A leader proposes a request its applied state has not applied; or a retry
\* of one still waiting there that belongs to an older epoch than its own
\* (the client retries on the new leader, which attaches it again); or a
\* request reusing an applied number for another one (refused when applied).
NotApplied(n, e) ==
  LET s == replica[n] IN
  \/ s.sessions[e.client].seq < e.seq
  \/ \E j \in 1..Len(s.waiters) :
       s.waiters[j].client = e.client /\ s.waiters[j].seq = e.seq /\ s.waiters[j].epoch < leading[n]
  \/ ReuseSeq /\ e.seq = s.sessions[e.client].seq /\ Asked(e) # s.sessions[e.client].asked

\* Requests come after what is due at the instant.
ProposeRequest(n, c) ==
  LET e == [request[c] EXCEPT !.time = clock[n], !.by = n, !.epoch = leading[n]] IN
  /\ MayPropose(n)
  /\ NotApplied(n, e)
  /\ Id(e) \notin Proposed(n)
  /\ Due(n) = <<>>
  /\ Fits(n, <<e>>)
  /\ ProposeRequestWith(n, c)

-----------------------------------------------------------------------------
(* Clients *)

\* A client's request is finished once it was applied and the client does not
\* wait in a queue any more (it got A or T).
Finished(c) ==
  /\ committed.sessions[c].seq >= request[c].seq
  /\ \A i \in 1..Len(committed.waiters) : committed.waiters[i].client # c

\* The rule: a client sends its next request r (numbered one above its last).
NextRequestWith(c, r) ==
  /\ r.type \in {"Acquire", "Release"} /\ r.client = c /\ r.seq = request[c].seq + 1
  /\ r.time = 0 /\ r.by = "" /\ r.epoch = 0
  /\ request' = [request EXCEPT ![c] = r]
  /\ UNCHANGED <<now, clock, term, leading, pending, log, applied, replica, committed, granted,
                 released, executed, listens>>

\* The rule: a client sends its next request once the last is finished.
\* (NextRequestWith alone is a client that gave its last one up: the trace
\* spec's, which follows the simulator's clients that do.)
SendWith(c, r) == Finished(c) /\ NextRequestWith(c, r)

\* The rule: a client sends another request r under the number of its last
\* one, once that is finished (a program run twice with one client id).
ReuseWith(c, r) ==
  /\ Finished(c)
  /\ request[c].seq > 0
  /\ r.type \in {"Acquire", "Release"} /\ r.client = c /\ r.seq = request[c].seq
  /\ Asked(r) # Asked(request[c])
  /\ r.time = 0 /\ r.by = "" /\ r.epoch = 0
  /\ request' = [request EXCEPT ![c] = r]
  /\ UNCHANGED <<now, clock, term, leading, pending, log, applied, replica, committed, granted,
                 released, executed, listens>>

\* An Acquire, or a Release of a token it was granted (maybe one it no
\* longer holds).
Send(c) ==
  LET seq == request[c].seq + 1 IN
  /\ seq <= MaxSeq
  /\ \/ \E k \in Keys, l \in Leases, wt \in Waits :
          SendWith(c, Entry("Acquire", c, seq, k, l, wt, NoToken, 0, "", 0))
     \/ \E tok \in DOMAIN granted :
          /\ granted[tok].owner = c
          /\ SendWith(c, Entry("Release", c, seq, granted[tok].key, 0, 0, tok, 0, "", 0))

\* Another Acquire, or a Release of a token it was granted, under its last
\* number.
Reuse(c) ==
  LET seq == request[c].seq IN
  /\ ReuseSeq
  /\ \/ \E k \in Keys, l \in Leases, wt \in Waits :
          ReuseWith(c, Entry("Acquire", c, seq, k, l, wt, NoToken, 0, "", 0))
     \/ \E tok \in DOMAIN granted :
          /\ granted[tok].owner = c
          /\ ReuseWith(c, Entry("Release", c, seq, granted[tok].key, 0, 0, tok, 0, "", 0))

-----------------------------------------------------------------------------

Init ==
  /\ now = 0
  /\ clock \in [Nodes -> 0..Drift]
  /\ term = 0
  /\ leading = [n \in Nodes |-> 0]
  /\ pending = [n \in Nodes |-> <<>>]
  /\ log = <<>>
  /\ applied = [n \in Nodes |-> 0]
  /\ replica = [n \in Nodes |-> InitState]
  /\ committed = InitState
  /\ request = [c \in Clients |-> [NoRequest EXCEPT !.client = c]]
  /\ granted = [t \in {} |-> 0]
  /\ released = {}
  /\ executed = [x \in Clients \X (1..MaxSeq) |-> 0]
  /\ listens = [c \in Clients |-> 0]

Next ==
  \/ Tick
  \/ \E n \in Nodes : ClockTick(n) \/ Elect(n) \/ Commit(n) \/ ApplyNext(n) \/ ProposeDue(n)
  \/ \E n \in Nodes, c \in Clients : ProposeRequest(n, c)
  \/ \E c \in Clients : Send(c) \/ Reuse(c)

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* Invariants of one state *)

MaxLease == CHOOSE l \in Leases : \A x \in Leases : x <= l
MaxWait == CHOOSE w \in Waits : \A x \in Waits : x <= w
TimeBound == MaxTime + Drift

LockStateOK(s) ==
  /\ DOMAIN s.keys \subseteq Keys
  /\ \A k \in DOMAIN s.keys :
       s.keys[k] \in [holder : Clients, token : 1..(s.nextToken - 1), expiry : 0..(TimeBound + MaxLease)]
  /\ \A i \in 1..Len(s.waiters) :
       /\ s.waiters[i] \in [key : Keys, client : Clients, seq : 1..MaxSeq, lease : Leases,
                            deadline : 0..(TimeBound + MaxWait), epoch : 0..MaxTerm,
                            detached : {<<>>} \cup [1..1 -> 0..TimeBound]]
       \* Detached exactly when of an older epoch than the state's.
       /\ s.waiters[i].epoch <= s.epoch
       /\ Attached(s.waiters[i]) <=> s.waiters[i].epoch = s.epoch
  /\ s.nextToken \in 1..(MaxLog + 1)
  /\ \A c \in Clients : s.sessions[c].seq \in 0..MaxSeq
  /\ s.clock \in 0..TimeBound
  /\ s.epoch \in 0..MaxTerm

TypeOK ==
  /\ now \in 0..MaxTime
  /\ \A n \in Nodes : clock[n] \in 0..TimeBound
  /\ term \in 0..MaxTerm
  /\ leading \in [Nodes -> 0..term]
  /\ Len(log) <= MaxLog
  /\ \A n \in Nodes : Len(pending[n]) <= MaxLog
  /\ applied \in [Nodes -> 0..Len(log)]
  /\ \A n \in Nodes : LockStateOK(replica[n])
  /\ LockStateOK(committed)
  /\ DOMAIN granted = 1..(committed.nextToken - 1)
  /\ released \subseteq DOMAIN granted
  /\ listens \in [Clients -> 0..MaxTerm]

\* Replicas that applied the same prefix hold the same lock state, and a
\* replica that applied the whole log holds the committed state.
ReplicasAgree ==
  /\ \A n, m \in Nodes : applied[n] = applied[m] => replica[n] = replica[m]
  /\ \A n \in Nodes : applied[n] = Len(log) => replica[n] = committed

\* In every lock state no two keys share a token, and every held token was
\* issued by it.
TokensUniqueIn(s) ==
  /\ \A k, j \in DOMAIN s.keys : k # j => s.keys[k].token # s.keys[j].token
  /\ \A k \in DOMAIN s.keys : s.keys[k].token < s.nextToken

\* Tokens are unique and increase in the order their grants commit, across
\* leader changes: the counter is part of the replicated state.
TokensUnique ==
  /\ TokensUniqueIn(committed)
  /\ \A n \in Nodes : TokensUniqueIn(replica[n])
  /\ \A t1, t2 \in DOMAIN granted : t1 < t2 => granted[t1].index < granted[t2].index

\* No Expire is proposed before its proposer's clock reaches the expiry: every
\* Expire entry, committed or not, carries a time >= its token's expiry.
ExpireNotEarly ==
  \A e \in Range(log) \cup UNION {Range(pending[n]) : n \in Nodes} :
    e.type = "Expire" => e.token \in DOMAIN granted /\ e.time >= granted[e.token].expiry

\* A grant is live from its commit until the clock of the leader that
\* stamped it reaches its expiry, unless its holder released it.
Live(t) == t \notin released /\ clock[granted[t].by] < granted[t].expiry

\* Lease safety in global time: two grants of a key are both live only for
\* less than 2 * MaxSkew instants after the later one committed.
LeaseSafety ==
  \A t1, t2 \in DOMAIN granted :
    (t1 < t2 /\ granted[t1].key = granted[t2].key /\ Live(t1) /\ Live(t2))
      => now < granted[t2].start + 2 * MaxSkew

\* A retried request takes effect at most once.
AppliedAtMostOnce == \A x \in DOMAIN executed : executed[x] <= 1

-----------------------------------------------------------------------------
(* Properties of one step: every apply, at a replica or at commit *)

\* The step that takes lock state s to s2 by applying entry e at time t.
\* No take-over in place: a key's holder changes (or the key goes) only by a
\* Release or an Expire that carries the holder's token.
NoTakeoverOK(s, s2, e) ==
  \A k \in DOMAIN s.keys :
    (k \notin DOMAIN s2.keys \/ s2.keys[k].token # s.keys[k].token) =>
      e.type \in {"Release", "Expire"} /\ e.key = k /\ e.token = s.keys[k].token

\* A queue as the requests in it, in order.
QueueIds(q) == [j \in 1..Len(q) |-> <<q[j].client, q[j].seq>>]

\* FIFO: a key changing hands goes, with a new token, to the first waiter of
\* its queue not due at t and attached (once e's epoch detached what it
\* detaches), the waiters before it left and the rest keep their order; a
\* key is deleted only when no waiter is attached and not due at t.
FIFOHandoffOK(s, s2, e, t) ==
  \A k \in DOMAIN s.keys :
    LET q == Queue(Prepared(s, e, t).waiters, k)
        i == FirstLive(q, k, t)
    IN (k \notin DOMAIN s2.keys \/ s2.keys[k].token # s.keys[k].token) =>
         IF k \in DOMAIN s2.keys
         THEN /\ i > 0
              /\ s2.keys[k].holder = q[i].client
              /\ s2.keys[k].token >= s.nextToken
              /\ QueueIds(Queue(s2.waiters, k)) = QueueIds(SubSeq(q, i + 1, Len(q)))
         ELSE i = 0

\* Every apply step, at a replica or at commit, satisfies Check(s, s2, e, t).
EveryApply(Check(_, _, _, _)) ==
  /\ \A n \in Nodes :
       applied'[n] = applied[n] + 1 =>
         LET e == log[applied'[n]] IN Check(replica[n], replica'[n], e, At(replica[n], e, clock[n]))
  /\ Len(log') = Len(log) + 1 =>
       LET e == log'[Len(log')] IN Check(committed, committed', e, At(committed, e, e.time))

NoTakeoverStep == EveryApply(LAMBDA s, s2, e, t : NoTakeoverOK(s, s2, e))
FIFOHandoffStep == EveryApply(LAMBDA s, s2, e, t : FIFOHandoffOK(s, s2, e, t))

\* No ghost grants: a hand-off (a Release or an Expire committing) gives a
\* key only to a client whose latest committed copy of its request came
\* from the newest epoch committed, whose leader's node holds the
\* connection the client waits on (a node that stops leading closes its
\* waiters' connections).  Judged from the log alone (`listens`), not from
\* the waiters' own bookkeeping.
NoGhostGrantStep ==
  Len(log') = Len(log) + 1 =>
    LET e == log'[Len(log')]
    IN e.type \in {"Release", "Expire"} =>
         \A k \in DOMAIN committed'.keys :
           (k \notin DOMAIN committed.keys \/ committed'.keys[k].token # committed.keys[k].token) =>
             listens[committed'.keys[k].holder] = committed'.epoch

\* The token counter never goes back, on any replica.
TokensIncreaseStep ==
  /\ committed'.nextToken >= committed.nextToken
  /\ \A n \in Nodes : replica'[n].nextToken >= replica[n].nextToken

NoTakeover == [][NoTakeoverStep]_vars
FIFOHandoff == [][FIFOHandoffStep]_vars
TokensIncrease == [][TokensIncreaseStep]_vars
NoGhostGrant == [][NoGhostGrantStep]_vars

=============================================================================
