/*
 * schedcoord's election, decision-log replication, handover and approval fencing, as a
 * Promela model for spin. What it models, what it abstracts away, the properties and how
 * each maps to docs/design.md: tests/model/README.md. How it is checked: check.sh.
 *
 * Three voters (servers 0..2) run Raft with PreVote and CheckQuorum; the leader appends the
 * entries of one abstract event (prepare ordered, each VM's drain done, the approve intent,
 * its answers, a rollback) and acts only on committed entries: it sends (term, index) fenced
 * orders to the agents and POSTs the approval. Proposing (appending), committing (a majority
 * stored it) and acting are separate steps, any other step (a leadership change) possible
 * between them; the leader decides on everything it proposed and acts on what is committed
 * once an entry of its own term is. VM 0 of the event is voter 2's own VM, VM 1 (when NVM is
 * 2) a non-voting member's. Messages may be lost, duplicated and reordered; servers crash and
 * restart with their term, vote and log kept and everything else lost.
 *
 * Configurations (spin -D...):
 *   MAXT, MAXL, NETMAX   bounds: terms, log length, messages in flight
 *   NVM                  VMs in the event: 1 (voter 2's) or 2 (and a non-voter's)
 *   NO_EVENT             no event: the leader appends plain commands (election and log only)
 *   STABLE               leader 0 established, follower 1 keeps hearing it; server 2 restarts,
 *                        is cut off and times out at will: PreVote's promise (no event)
 *   LIVE                 faults bounded, timers abstracted: the event gets approved (below)
 *   CRASHES, DROPS       LIVE's fault budget: crashes, messages lost (1 and 1)
 *   NO_CMD, NO_RESTART   (shortened models) leaders append only their term entry; no restarts
 *   APPROVAL             the approval's answers: leader 0 of term 1 has committed the drain;
 *                        a POST lands at once, late or never, IMDS accepts it (the event
 *                        starts) or answers an error, the answer may be lost (UNKNOWN); an
 *                        intent with a definite error answer may be rolled back
 *   MEMBERS              five servers, one with another member list (digest): election only
 * Broken variants, each expected to be caught:
 *   BROKEN_VOTE          voted_for is not persisted across a restart
 *   BROKEN_NO_PREVOTE    a timed-out server campaigns at once with a new term
 *   BROKEN_COMMIT        the leader commits entries of older terms by counting replicas
 *   BROKEN_ACT_UNCOMMITTED  the leader acts (orders, POST) on an entry as soon as it
 *                        appended it, before it is committed
 *   BROKEN_UNKNOWN_FAILED  (APPROVAL) a POST without an answer is FAILED, not UNKNOWN: the
 *                        event may be rolled back while the POST may still land
 *   BROKEN_ANY_ANSWER    (APPROVAL) an error answer to a later tenure's POST makes the intent
 *                        FAILED, though an earlier tenure's POST may still land
 *   BROKEN_NO_DIGEST     (MEMBERS) members do not compare member lists (digests)
 *   BROKEN_ACT_STALE     a new leader acts before it committed an entry of its own term
 *   BROKEN_NO_FENCE      agents obey orders older than the newest they have seen
 *   BROKEN_STALE_REPORT  a drain report of an older attempt counts for the current one
 *   BROKEN_NO_HANDOVER   (LIVE) the leader whose VM the event names never hands over: it
 *                        waits, as it must not approve its own VM's event, and nothing
 *                        else makes progress while it leads
 *
 * LIVE checks `<> posted` under weak fairness (pan -a -f): progress once faults stop and
 * timers are slow enough for one election to finish, Raft's liveness claim (Raft is not live
 * without them: split votes and timeouts can recur forever). What it assumes (README,
 * "Liveness"):
 *   faults     at most CRASHES crashes, one server down at a time (a majority stays up), a
 *              crashed server restarts or is gone for good; at most DROPS messages lost, no
 *              other loss (a full network is an assertion failure): faults stop
 *   delivery   each server (and the agents) takes its messages first come, first served, and
 *              weak fairness delivers every message to a server that is up; a message to a
 *              server that is down waits for its restart (a delay)
 *   timers     messages and heartbeats are fast next to election timeouts: no timer runs out
 *              while a message is undelivered or a deposed leader still has a heartbeat due,
 *              nor while a live leader (up, of the newest term) exists; leases run out before
 *              anyone campaigns; randomised timeouts let one most up-to-date server time out
 *              alone, and a (pre-)candidate campaigns again before a follower times out
 *   terms      unbounded: MAXT is not a guard in LIVE but an assertion (a campaign past MAXT
 *              fails, telling to make MAXT larger), so the bound never blocks progress
 */

/* MEMBERS: members that disagree on the member list (below): five servers, election only */
#ifdef MEMBERS
#define N 5
#define NO_EVENT
#define NO_CMD
#define NO_RESTART
#else
#define N 3
#endif
/* LIVE's defaults: the smallest bounds that never bind with its default faults (README) */
#ifdef LIVE
#ifndef MAXT
#define MAXT 5
#endif
#ifndef MAXL
#define MAXL 8
#endif
#ifndef NETMAX
#define NETMAX 12
#endif
#endif
#ifndef MAXT
#define MAXT 3
#endif
#ifndef MAXL
#define MAXL 6
#endif
#ifndef NETMAX
#define NETMAX 8
#endif
#ifndef NVM
#define NVM 1
#endif
#if defined(APPROVAL) && (NVM != 1 || defined(LIVE) || defined(STABLE) || defined(NO_EVENT))
#error "APPROVAL is an event of one VM, outside LIVE, STABLE and NO_EVENT"
#endif
/* PreVote and CheckQuorum's lease only restrict when a server campaigns and which requests
 * it answers: a refusal is a message never delivered, a campaign not made is a timer that did
 * not run out. The safety checks leave them out and so cover every behaviour they allow;
 * STABLE and LIVE, which check what they are for, have them (or -DPREVOTE). */
#if defined(STABLE) || defined(LIVE)
#define PREVOTE
#endif
#ifdef BROKEN_NO_PREVOTE
#undef PREVOTE
#endif
#if defined(STABLE) || defined(LIVE) || defined(PREVOTE)
#define LEASE
#endif

/* roles; DOWN: crashed (LIVE only: elsewhere a crash is an instant restart, since a server
 * that is down cannot be told from one that is slow) */
#define DOWN 0
#define FOLLOWER 1
#define PRECAND 2
#define CAND 3
#define LEADER 4

/* log entries: term * 16 + kind */
#define K_TERM 1  /* a new leader's first entry (the design's `term` entry, Raft's no-op) */
#define K_PREP 2  /* prepare_ordered, every VM of the event: an attempt starts */
#define K_DONE0 3 /* hook_progress done, VM 0 (voter 2's own VM) */
#define K_DONE1 4 /* hook_progress done, VM 1 (a non-voting member's VM) */
#define K_RB 5    /* recover_ordered, every VM: the attempt is rolled back */
#define K_APPR 6  /* approval_intent */
#define K_CMD 7   /* NO_EVENT: any other decision */
#define K_AERR 8  /* approval_answer: IMDS answered the leader's POST with an error status */
#define K_AUNK 9  /* approval_answer: no answer (timeout): the POST may still land */
#define ENTRY(t, k) ((t) * 16 + (k))
#define ETERM(e) ((e) >> 4)
#define EKIND(e) ((e) & 15)
#define EVENT_VOTER 2 /* the voter whose VM is in the event */

/* messages, one int each: type 4 bits, from 2, to 2, term 3, a 4, b 4, c 7, d 4 */
#define M_PREVOTE 1    /* term: the one it would take; a, b: last log term and index */
#define M_PREVOTE_R 2  /* a: granted */
#define M_VOTE 3       /* a, b: as M_PREVOTE; d: 1 when the leader asked (TimeoutNow) */
#define M_VOTE_R 4     /* a: granted */
#define M_APP 5        /* a: prev index, b: prev term, c: the entry (0: none), d: commit */
#define M_APP_R 6      /* a: success, b: match index, or the prev index that failed */
#define M_TIMEOUTNOW 7 /* leadership transfer: campaign now */
#define M_ORDER 8      /* to an agent (to: the VM); a: the entry's index, b: 1 prepare, 0 recover */
#define M_REPORT 9     /* from an agent (from: the VM) to the order's sender; a: the attempt */
#ifndef MEMBERS
#define MSG(ty, fr, to, t, a, b, c, d)                                                        \
	((ty) | ((fr) << 4) | ((to) << 6) | ((t) << 8) | ((a) << 11) | ((b) << 15) |             \
	 ((c) << 19) | ((d) << 26))
#define M_TY(m) ((m) & 15)
#define M_FR(m) (((m) >> 4) & 3)
#define M_TO(m) (((m) >> 6) & 3)
#define M_T(m) (((m) >> 8) & 7)
#define M_A(m) (((m) >> 11) & 15)
#define M_B(m) (((m) >> 15) & 15)
#define M_C(m) (((m) >> 19) & 127)
#define M_D(m) (((m) >> 26) & 15)
#else
/* MEMBERS (five servers, logs of at most 7): type 4 bits, from 3, to 3, term 3, a 3, b 3,
 * c 7, d 3 */
#if MAXL > 7
#error "MEMBERS: MAXL at most 7"
#endif
#define MSG(ty, fr, to, t, a, b, c, d)                                                        \
	((ty) | ((fr) << 4) | ((to) << 7) | ((t) << 10) | ((a) << 13) | ((b) << 16) |            \
	 ((c) << 19) | ((d) << 26))
#define M_TY(m) ((m) & 15)
#define M_FR(m) (((m) >> 4) & 7)
#define M_TO(m) (((m) >> 7) & 7)
#define M_T(m) (((m) >> 10) & 7)
#define M_A(m) (((m) >> 13) & 7)
#define M_B(m) (((m) >> 16) & 7)
#define M_C(m) (((m) >> 19) & 127)
#define M_D(m) (((m) >> 26) & 7)
#endif

/* ---- persisted per server (SQLite, synchronous=FULL, before any reply): current_term,
 * voted_for (0: none, else id + 1), the log */
byte term[N];
byte vote[N];
byte llen[N];
byte lg[N * (MAXL + 1)]; /* entry 0 of each log is always 0: term 0 */
#define LOG(i, k) lg[(i) * (MAXL + 1) + (k)]
#define LASTTERM(i) ETERM(LOG(i, llen[i]))

/* ---- volatile per server */
byte role[N];
byte commit[N];
byte grants[N];  /* (pre-)votes received, a bit per server */
byte nxt[N * N]; /* the leader's next index for each peer */
byte mat[N * N]; /* the leader's match index for each peer */
#define NXT(i, j) nxt[(i) * N + (j)]
#define MAT(i, j) mat[(i) * N + (j)]
#define BIT(i) (1 << (i))
#ifndef MEMBERS
#define MAJORITY(i, bits) ((((bits) & 1) + (((bits) >> 1) & 1) + (((bits) >> 2) & 1)) >= 2)
#define VOTER_OK(i, j) 1
#define PEER(i, j) ((i) != (j))
#define NO_DRIFT(i) 1
#else
/* Members that disagree on the member list. Servers 0, 1, 2 and 4 share one --members, whose
 * voters are all five (five fault domains); server 3's list differs (another digest): its
 * voters are itself, server 1 and a member that is not running. Each member counts votes
 * and replicas among the voters of its own list, votes only when it is a voter of its own
 * list and only for a candidate that is one too (sc_elect: "is not a voter"). With the
 * digest check a member refuses every message of a member with another digest (a vote
 * request: with a refusal), and one that hears a voter of its list with another digest does
 * not lead (it steps down and campaigns no more). */
#define DG(i) ((i) == 3)
#define VOTERS(i) (DG(i) -> (BIT(1) | BIT(3)) : 31)
#define NVOTERS(i) (DG(i) -> 3 : 5)
#define ISVOTER(i, j) ((VOTERS(i) >> (j)) & 1)
#define POP5(b) (((b) & 1) + (((b) >> 1) & 1) + (((b) >> 2) & 1) + (((b) >> 3) & 1) + (((b) >> 4) & 1))
#define MAJORITY(i, bits) (2 * POP5((bits) & VOTERS(i)) > NVOTERS(i))
#define VOTER_OK(i, j) (ISVOTER(i, i) && ISVOTER(i, j))
#define PEER(i, j) ((i) != (j) && ISVOTER(i, j))
#ifdef BROKEN_NO_DIGEST
#define DIGEST_DIFFERS(i, j) 0
#else
#define DIGEST_DIFFERS(i, j) (DG(i) != DG(j))
#endif
bit drift[N];             /* heard a voter of its list with another digest: does not lead */
#define NO_DRIFT(i) (!drift[i])
byte actor[MAXT + 1];     /* who acted in each term (id + 1) */
#endif
#ifdef LEASE
bit lease[N]; /* heard from the leader of its term within an election timeout (or leads) */
#define SET_LEASE(i, v) lease[i] = v
#else
#define SET_LEASE(i, v) skip
#endif

/* ---- agents, one per VM of the event: drained (the truth), the newest (term, index) seen */
bit drained[NVM];
byte fence[NVM]; /* term * 16 + index */

/* ---- the network: a set of messages, sorted, no duplicates. Except in LIVE a message
 * stays once sent: it may be delivered any number of times, in any order, or never (loss,
 * duplication, reordering). When NETMAX messages are in flight, a new one is lost. */
int net[NETMAX];
byte nnet;
#ifdef LIVE
#ifndef CRASHES
#define CRASHES 1
#endif
#ifndef DROPS
#define DROPS 1
#endif
byte crashes; /* LIVE's faults so far: crashes, messages lost */
byte drops;
bit gone[N]; /* crashed for good */
#if NETMAX != 12 || MAXL > 10 || MAXL < 6 || MAXL < MAXT + NVM + 2 || MAXT > 6
#error "LIVE needs NETMAX 12, MAXT at most 6, and MAXL from MAXT + NVM + 2 (the log's longest) to 10"
#endif
#endif
/* terms are unbounded in the protocol, bounded here. Outside LIVE a server at MAXT no longer
 * campaigns (the behaviours checked are those within MAXT terms); in LIVE that would be a
 * deadlock that spin reports as lost progress, so the bound is not a guard there: a campaign
 * past MAXT is an assertion failure (become_candidate), which says to make MAXT larger */
#ifdef LIVE
#define TERMS_LEFT(i) 1
#else
#define TERMS_LEFT(i) (term[i] < MAXT)
#endif

/* ---- ghosts: what the properties speak of */
byte gcom[MAXL + 1];      /* the entry committed at each index (0: none yet) */
byte gterm[MAXL + 1];     /* the term of the leader that committed it */
byte leader_of[MAXT + 1]; /* who won each term (id + 1) */
bit posted;               /* an approval POST was made */
#ifdef APPROVAL
/* IMDS: a POST lands (reaches IMDS) at once, late or never; IMDS accepts it (the platform
 * starts the event on its VMs: they must all be drained) or answers an error status; the
 * answer reaches the leader that POSTed, or is lost (a timeout, a delegate that never answers) */
bit started;  /* IMDS accepted a POST: the event started */
byte ps[N];   /* this tenure's POST (volatile): 0 none, 1 sent, 2 sent and timed out, 3 done */
byte pold[N]; /* POSTs of a server's earlier tenures that may still land (at most 2) */
#else
#define started posted /* IMDS starts the event as soon as it is POSTed */
#endif

/* ---- scratch, not part of the state */
hidden int m, sm;
hidden byte k, j, x, y, d, mt, fr, ty, ok;
hidden byte lastprep, lastrb, hasappr, afailed, done0, done1;

/* send(msg): into the set (a copy already in flight: nothing new) */
inline send(msg) {
	sm = msg;
	if
#ifdef LIVE
	/* LIVE: in the order sent (each server takes its messages first come, first served) */
	:: nnet < NETMAX ->
		k = 0;
		do
		:: k < nnet && net[k] != sm -> k++
		:: else -> break
		od;
		if
		:: k == nnet -> net[nnet] = sm; nnet++
		:: else -> skip
		fi
#else
	:: nnet < NETMAX ->
		k = 0;
		do
		:: k < nnet && net[k] < sm -> k++
		:: else -> break
		od;
		if
		:: k < nnet && net[k] == sm -> skip
		:: else ->
			j = nnet;
			do
			:: j > k -> net[j] = net[j - 1]; j--
			:: else -> break
			od;
			net[k] = sm;
			nnet++
		fi
#endif
	:: else ->
#ifdef LIVE
		assert(false) /* LIVE loses only what DROPS allows: make NETMAX larger */
#else
		skip
#endif
	fi
}

/* unsend(slot): the message leaves the network */
inline unsend(s) {
	k = s;
	do
	:: k + 1 < nnet -> net[k] = net[k + 1]; k++
	:: else -> break
	od;
	nnet--;
	net[nnet] = 0
}

#ifdef BROKEN_NO_FENCE
#define FENCE_OFF 1
#else
#define FENCE_OFF 0
#endif

/* gc(): drop the messages whose delivery could change nothing (terms, fences and a leader's
 * match indexes only grow; a server is candidate and leader at most once a term), and the
 * requests whose only effect would be an answer that is dead on arrival. Loss is allowed
 * anyway: this merges states that differ only by dead letters. */
#define DEAD(mm)                                                                              \
	((M_TY(mm) == M_ORDER && M_T(mm) * 16 + M_A(mm) < fence[M_TO(mm)] && !FENCE_OFF) ||      \
	 (M_TY(mm) != M_ORDER && M_TY(mm) != M_REPORT && M_TY(mm) != M_APP &&                      \
	  M_TY(mm) != M_PREVOTE && M_T(mm) < term[M_TO(mm)]) ||                                    \
	 (M_TY(mm) == M_PREVOTE_R && M_T(mm) == term[M_TO(mm)]) ||                                 \
	 (M_TY(mm) == M_VOTE_R && M_T(mm) == term[M_TO(mm)] &&                                     \
	  (role[M_TO(mm)] != CAND || !M_A(mm) || (grants[M_TO(mm)] & BIT(M_FR(mm))))) ||           \
	 (M_TY(mm) == M_APP_R && M_T(mm) == term[M_TO(mm)] &&                                      \
	  (role[M_TO(mm)] != LEADER || M_B(mm) <= MAT(M_TO(mm), M_FR(mm)))) ||                     \
	 (M_TY(mm) == M_APP && M_T(mm) < term[M_TO(mm)] && term[M_FR(mm)] >= term[M_TO(mm)]) ||   \
	 (M_TY(mm) == M_APP && M_T(mm) == term[M_TO(mm)] && APP_SEEN(mm)) ||                      \
	 (M_TY(mm) == M_PREVOTE && M_T(mm) <= term[M_FR(mm)] && term[M_TO(mm)] <= term[M_FR(mm)]) || \
	 (M_TY(mm) == M_VOTE && M_T(mm) == term[M_TO(mm)] && vote[M_TO(mm)] != 0 &&               \
	  (M_T(mm) != term[M_FR(mm)] || role[M_FR(mm)] != CAND)))
/* an append that changes nothing at its follower any more: its entry (if any) is stored,
 * the commit index it carries is known, the leader has counted the answer already */
#ifdef LEASE
#define APP_LEASE(mm) lease[M_TO(mm)]
#else
#define APP_LEASE(mm) 1
#endif
#define APP_SEEN(mm)                                                                          \
	((M_C(mm) == 0 || (llen[M_TO(mm)] > M_A(mm) && LOG(M_TO(mm), M_A(mm) + 1) == M_C(mm))) &&  \
	 M_D(mm) <= commit[M_TO(mm)] && APP_LEASE(mm) &&                                          \
	 (role[M_FR(mm)] != LEADER || term[M_FR(mm)] != M_T(mm) ||                                 \
	  M_A(mm) + (M_C(mm) != 0) <= MAT(M_FR(mm), M_TO(mm))))
inline gc() {
	j = 0;
	do
	:: j < nnet ->
		if
		:: DEAD(net[j]) -> unsend(j)
		:: else -> j++
		fi
	:: else -> break
	od;
	skip
}

/* a log ending at (lt, li) is at least as up to date as i's */
#define LOGOK(i, lt, li) ((lt) > LASTTERM(i) || ((lt) == LASTTERM(i) && (li) >= llen[i]))

/* the leader acts (orders, POST) only once it has committed an entry of its own term:
 * before that its commit index may lag behind what earlier leaders committed */
#ifdef BROKEN_ACT_STALE
#define CURRENT(i) (commit[i] > 0)
#else
#define CURRENT(i) (commit[i] > 0 && ETERM(LOG(i, commit[i])) == term[i])
#endif

/* Raft's commit rule: the leader counts replicas of entries of its own term only */
#ifdef BROKEN_COMMIT
#define COUNTABLE(i, x) 1
#else
#define COUNTABLE(i, x) (ETERM(LOG(i, x)) == term[i])
#endif

/* a drain report counts for the attempt it was ordered for, and only the current one */
#ifdef BROKEN_STALE_REPORT
#define REPORT_COUNTS(a) 1
#else
#define REPORT_COUNTS(a) ((a) == lastprep)
#endif

/* forget(i): what only a candidate or a leader keeps (so that states do not differ by
 * leftovers nobody reads) */
inline forget(i) {
	grants[i] = 0;
#ifdef APPROVAL
	/* a POST of this tenure still in flight may land: nobody awaits its answer any more */
	pold[i] = pold[i] + (ps[i] == 1 || ps[i] == 2);
	ps[i] = 0;
#endif
	y = 0;
	do
	:: y < N -> NXT(i, y) = 0; MAT(i, y) = 0; y++
	:: else -> break
	od;
	skip
}

inline become_follower(i, t) {
	printf("S%d: term %d, follower\n", i, t);
#ifdef STABLE
	assert(i != 0 || role[i] != LEADER); /* the healthy leader is never deposed */
#endif
	term[i] = t;
	vote[i] = 0;
	role[i] = FOLLOWER;
	forget(i);
	SET_LEASE(i, 0)
}

inline broadcast_vote(i, ty_, transfer) {
	y = 0;
	do
	:: y < N ->
		if
		:: PEER(i, y) -> send(MSG(ty_, i, y, term[i] + (ty_ == M_PREVOTE), LASTTERM(i), llen[i], 0,
		                          transfer))
		:: else -> skip
		fi;
		y++
	:: else -> break
	od;
	skip /* a d_step may not end on a loop's break */
}

inline become_candidate(i, transfer) {
#ifdef LIVE
	assert(term[i] < MAXT); /* LIVE never runs out of terms: make MAXT larger */
#endif
	term[i]++;
	printf("S%d: candidate, term %d (TimeoutNow: %d)\n", i, term[i], transfer);
	vote[i] = i + 1; /* persisted before any vote request leaves */
	role[i] = CAND;
	grants[i] = BIT(i);
	SET_LEASE(i, 0);
	broadcast_vote(i, M_VOTE, transfer)
}

/* campaign(i): the election timer ran out; with PreVote, ask first whether a majority would
 * vote, without raising the term */
inline campaign(i) {
	SET_LEASE(i, 0);
	forget(i);
#ifndef PREVOTE
	become_candidate(i, 0)
#else
	role[i] = PRECAND;
	printf("S%d: pre-candidate for term %d\n", i, term[i] + 1);
	grants[i] = BIT(i);
	broadcast_vote(i, M_PREVOTE, 0)
#endif
}

/* leader completeness: an entry committed in a term is in the log of every leader of a
 * later term */
inline check_complete(i) {
	y = 1;
	do
	:: y <= MAXL ->
		assert(gcom[y] == 0 || gterm[y] >= term[i] || (y <= llen[i] && LOG(i, y) == gcom[y]));
		y++
	:: else -> break
	od;
	skip
}

inline become_leader(i) {
#ifndef MEMBERS
	assert(leader_of[term[i]] == 0 || leader_of[term[i]] == i + 1); /* one leader a term */
#endif
	leader_of[term[i]] = i + 1;
	printf("S%d: LEADER of term %d, log length %d\n", i, term[i], llen[i]);
	check_complete(i);
	role[i] = LEADER;
	SET_LEASE(i, 1);
	forget(i);
	y = 0;
	do
	:: y < N && y != i -> NXT(i, y) = llen[i] + 1; y++
	:: y < N && y == i -> y++
	:: else -> break
	od;
	if
	:: llen[i] < MAXL -> llen[i]++; LOG(i, llen[i]) = ENTRY(term[i], K_TERM)
	:: else -> skip
	fi
}

/* set_commit(i, c): i learns its log is committed up to c; state machine safety: every
 * member commits the same entry at an index */
inline set_commit(i, c) {
	y = commit[i] + 1;
	do
	:: y <= c ->
		if
		:: role[i] == LEADER && gcom[y] == 0 -> gcom[y] = LOG(i, y); gterm[y] = term[i]
		:: else -> assert(gcom[y] == LOG(i, y))
		fi;
		y++
	:: else -> break
	od;
	printf("S%d: commit %d\n", i, c);
	commit[i] = c
}

#ifndef MEMBERS
#define STORED_BY_MAJORITY(i, x)                                                              \
	((1 + (MAT(i, 0) >= x && i != 0) + (MAT(i, 1) >= x && i != 1) + (MAT(i, 2) >= x && i != 2)) >= 2)
#else
#define STORED(i, j, x) (ISVOTER(i, j) && ((j) == (i) || MAT(i, j) >= x))
#define STORED_BY_MAJORITY(i, x)                                                              \
	(2 * (STORED(i, 0, x) + STORED(i, 1, x) + STORED(i, 2, x) + STORED(i, 3, x) +               \
	      STORED(i, 4, x)) > NVOTERS(i))
#endif
inline advance_commit(i) {
	x = llen[i];
	do
	:: x > commit[i] ->
		if
		:: STORED_BY_MAJORITY(i, x) && COUNTABLE(i, x) -> set_commit(i, x); break
		:: else -> x--
		fi
	:: else -> break
	od;
	skip
}

/* An error answer is definite for the POST it answers. The intent is FAILED (it may be
 * rolled back) only when that POST is the only one that may land: the one its own leader
 * made, in the intent's term (a leader POSTs once a tenure; a later leader, which cannot know
 * whether an earlier POST landed, POSTs again and its error answer says nothing of the
 * earlier POST). Anything else leaves it open: an intent without an answer (INTENT), a
 * timeout (UNKNOWN, K_AUNK), a later tenure's error. */
#ifdef BROKEN_ANY_ANSWER
#define DEFINITE(i, y) 1
#else
#define DEFINITE(i, y) (ETERM(LOG(i, y)) == ETERM(LOG(i, hasappr)))
#endif
/* what i's log says of the event: the newest prepare and rollback, the approve intent,
 * where each VM's drain of the current attempt was logged */
inline scan_event(i) {
	lastprep = 0; lastrb = 0; hasappr = 0; afailed = 0; done0 = 0; done1 = 0;
	y = 1;
	do
	:: y <= llen[i] ->
		if
		:: EKIND(LOG(i, y)) == K_PREP -> lastprep = y; done0 = 0; done1 = 0; hasappr = 0
		:: EKIND(LOG(i, y)) == K_RB -> lastrb = y; done0 = 0; done1 = 0
		:: EKIND(LOG(i, y)) == K_DONE0 -> done0 = y
		:: EKIND(LOG(i, y)) == K_DONE1 -> done1 = y
		:: EKIND(LOG(i, y)) == K_APPR -> hasappr = y; afailed = 0
		:: EKIND(LOG(i, y)) == K_AERR && hasappr > 0 && DEFINITE(i, y) -> afailed = 1
		:: else -> skip
		fi;
		y++
	:: else -> break
	od;
	skip
}
#define APPR_OPEN (hasappr > 0 && !afailed)
/* the leader acts on its entry x only once x is committed and an entry of its own term is
 * (BROKEN_ACT_UNCOMMITTED: as soon as it proposed x) */
#ifdef BROKEN_ACT_UNCOMMITTED
#define ACT_OK(i, x) ((x) > 0)
#else
#define ACT_OK(i, x) ((x) > 0 && (x) <= commit[i] && CURRENT(i))
#endif
#if NVM == 2
#define ALL_DONE_COMMITTED(i) (done0 > 0 && done1 > 0 && done0 <= commit[i] && done1 <= commit[i])
#else
#define ALL_DONE_COMMITTED(i) (done0 > 0 && done0 <= commit[i])
#endif
#define ATTEMPT_OPEN (lastprep > lastrb)

/* act_on(i, x): leader i acts (an order, the POST) on its entry x: the entry is committed (a
 * majority stored it: never acted on when only proposed) and i is the leader of its term (at
 * most one acting leader per term) */
inline act_on(i, x) {
	assert(x > 0 && gcom[x] == LOG(i, x)); /* acts only on a committed entry */
	assert(leader_of[term[i]] == i + 1)
}

inline append(i, kind) {
	llen[i]++;
	LOG(i, llen[i]) = ENTRY(term[i], kind);
	printf("S%d: append %d = (term %d, kind %d)\n", i, llen[i], term[i], kind)
}

/* approval fencing at the POST of the intent at ix: the committed log holds, before it, a
 * prepare and then every VM's drain with no rollback after it; and every VM is drained */
inline check_approval(ix) {
	x = 0; y = 1; d = 0; mt = 0;
	do
	:: y < ix ->
		if
		:: EKIND(gcom[y]) == K_PREP -> x = 1; d = 0; mt = 0
		:: EKIND(gcom[y]) == K_RB -> x = 0; d = 0; mt = 0
		:: EKIND(gcom[y]) == K_DONE0 -> d = x
		:: EKIND(gcom[y]) == K_DONE1 -> mt = x
		:: else -> skip
		fi;
		y++
	:: else -> break
	od;
	assert(EKIND(gcom[ix]) == K_APPR && d && (mt || NVM == 1));
	assert(drained[0] && drained[NVM - 1])
}

/* ---- server i receives message msg */
inline recv(i, msg) {
	ty = M_TY(msg); fr = M_FR(msg); mt = M_T(msg);
	printf("S%d <- S%d: type %d term %d a %d b %d c %d d %d\n", i, fr, ty, mt, M_A(msg), M_B(msg),
	       M_C(msg), M_D(msg));
	ok = 1;
#ifdef MEMBERS
	/* another digest: refused (a vote request with a refusal, which carries this member's
	 * digest); a voter of this member's list that has another digest: it does not lead */
	if
	:: DIGEST_DIFFERS(i, fr) ->
		ok = 0;
		printf("S%d: refuses S%d: members differ\n", i, fr);
		if
		:: ty == M_VOTE -> send(MSG(M_VOTE_R, i, fr, term[i], 0, 0, 0, 0))
		:: else -> skip
		fi;
		if
		:: ISVOTER(i, fr) ->
			drift[i] = 1;
			if
			:: role[i] == CAND || role[i] == LEADER -> role[i] = FOLLOWER; forget(i)
			:: else -> skip
			fi
		:: else -> skip
		fi
	:: else -> skip
	fi;
#endif
	if
	:: !ok -> skip
	:: ty == M_REPORT -> skip /* from an agent: no term of its own */
	:: mt > term[i] ->
		if
#ifdef LEASE
		/* CheckQuorum: a server that hears a live leader (or leads) ignores a campaign for
		 * a newer term, unless the leader itself asked for it (TimeoutNow) */
		:: (ty == M_PREVOTE || ty == M_VOTE) && lease[i] && !(ty == M_VOTE && M_D(msg)) ->
			ok = 0
#endif
		:: ty == M_PREVOTE -> skip
		:: ty == M_PREVOTE_R && M_A(msg) -> skip
		:: else -> become_follower(i, mt)
		fi
	:: mt < term[i] ->
		ok = 0;
		if
		/* tell a deposed leader, or an outdated pre-candidate, of the newer term */
		:: ty == M_APP -> send(MSG(M_APP_R, i, fr, term[i], 0, 0, 0, 0))
		:: ty == M_PREVOTE -> send(MSG(M_PREVOTE_R, i, fr, term[i], 0, 0, 0, 0))
		:: else -> skip
		fi
	:: else -> skip
	fi;
	if
	:: !ok -> skip
	:: ty == M_PREVOTE ->
		if
		:: mt > term[i] && LOGOK(i, M_A(msg), M_B(msg)) ->
			send(MSG(M_PREVOTE_R, i, fr, mt, 1, 0, 0, 0))
		:: else -> send(MSG(M_PREVOTE_R, i, fr, term[i], 0, 0, 0, 0))
		fi
	:: ty == M_PREVOTE_R ->
		if
		:: role[i] == PRECAND && M_A(msg) && mt == term[i] + 1 ->
			grants[i] = grants[i] | BIT(fr);
			if
			:: MAJORITY(i, grants[i]) -> become_candidate(i, 0)
			:: else -> skip
			fi
		:: else -> skip
		fi
	:: ty == M_VOTE ->
		ok = ((vote[i] == 0 || vote[i] == fr + 1) && LOGOK(i, M_A(msg), M_B(msg)) && VOTER_OK(i, fr));
		if
		:: ok -> vote[i] = fr + 1 /* persisted before the reply leaves */
		:: else -> skip
		fi;
		send(MSG(M_VOTE_R, i, fr, term[i], ok, 0, 0, 0))
	:: ty == M_VOTE_R ->
		if
		:: role[i] == CAND && M_A(msg) ->
			grants[i] = grants[i] | BIT(fr);
			if
			:: MAJORITY(i, grants[i]) -> become_leader(i)
			:: else -> skip
			fi
		:: else -> skip
		fi
	:: ty == M_APP ->
#ifndef MEMBERS
		assert(role[i] != LEADER); /* (one leader a term) */
#endif
		if
		:: role[i] != FOLLOWER -> role[i] = FOLLOWER; forget(i)
		:: else -> skip
		fi;
		SET_LEASE(i, 1);
		x = M_A(msg); /* prev index */
		if
		:: x > llen[i] || ETERM(LOG(i, x)) != M_B(msg) ->
			send(MSG(M_APP_R, i, fr, term[i], 0, x, 0, 0))
		:: else ->
			if
			:: M_C(msg) == 0 -> skip
			:: llen[i] > x && LOG(i, x + 1) == M_C(msg) -> x++
			:: else ->
				assert(x + 1 > commit[i]); /* a committed entry is never overwritten */
				y = x + 1;
				do
				:: y <= llen[i] ->
					/* nothing is dropped but by a leader of a later term (superseded) */
					assert(ETERM(LOG(i, y)) < mt);
					LOG(i, y) = 0;
					y++
				:: else -> break
				od;
				LOG(i, x + 1) = M_C(msg);
				printf("S%d: store %d = (term %d, kind %d) from S%d\n", i, x + 1,
				       ETERM(M_C(msg)), EKIND(M_C(msg)), fr);
				llen[i] = x + 1;
				x++
			fi;
			if
			:: M_D(msg) > commit[i] && x > commit[i] ->
				d = x;
				if
				:: M_D(msg) < d -> d = M_D(msg)
				:: else -> skip
				fi;
				set_commit(i, d)
			:: else -> skip
			fi;
			send(MSG(M_APP_R, i, fr, term[i], 1, x, 0, 0))
		fi
	:: ty == M_APP_R ->
		if
		:: role[i] == LEADER && M_A(msg) && M_B(msg) > MAT(i, fr) ->
			MAT(i, fr) = M_B(msg);
			NXT(i, fr) = M_B(msg) + 1;
			advance_commit(i)
		:: role[i] == LEADER && !M_A(msg) && M_B(msg) > MAT(i, fr) && M_B(msg) < NXT(i, fr) ->
			NXT(i, fr) = M_B(msg)
		:: else -> skip
		fi
	:: ty == M_TIMEOUTNOW ->
		if
		:: role[i] == FOLLOWER && TERMS_LEFT(i) -> become_candidate(i, 1)
		:: else -> skip
		fi
	:: ty == M_REPORT ->
		/* an agent's drain of attempt M_A is done: logged once, for the current attempt */
		if
		:: role[i] == LEADER && llen[i] < MAXL ->
			scan_event(i);
			if
			:: ATTEMPT_OPEN && !hasappr && REPORT_COUNTS(M_A(msg)) ->
				if
				:: fr == 0 && done0 == 0 -> append(i, K_DONE0)
				:: fr == 1 && done1 == 0 -> append(i, K_DONE1)
				:: else -> skip
				fi
			:: else -> skip
			fi
		:: else -> skip
		fi
	:: else -> skip
	fi;
	gc()
}

/* ---- an agent receives an order, fenced by (term, index) */
inline agent_recv(msg) {
	x = M_FR(msg); /* the sender */
	y = M_TO(msg); /* the VM */
	d = M_T(msg) * 16 + M_A(msg);
	if
	:: d >= fence[y] || FENCE_OFF ->
		if
		:: d > fence[y] -> fence[y] = d
		:: else -> skip
		fi;
		if
		:: M_B(msg) ->
			printf("VM%d: prepare (term %d, index %d) from S%d: drained\n", y, M_T(msg), M_A(msg), x);
			drained[y] = 1;
			send(MSG(M_REPORT, y, x, M_T(msg), M_A(msg), 0, 0, 0))
		:: else ->
			printf("VM%d: recover (term %d, index %d) from S%d\n", y, M_T(msg), M_A(msg), x);
			assert(!started); /* no VM of an event that started is put back in service */
			drained[y] = 0
		fi
	:: else -> skip /* older than what it has seen: refused */
	fi;
	gc()
}

/* restart: everything but term, vote and log is lost */
inline reset(i) {
	printf("S%d: restart\n", i);
	commit[i] = 0;
	SET_LEASE(i, 0);
	forget(i);
#ifdef BROKEN_VOTE
	vote[i] = 0; /* voted_for kept in memory only */
#endif
	skip
}

/* ---- which steps each configuration allows */
#if defined(STABLE)
/* leader 0 keeps hearing a majority (no CheckQuorum step-down) and follower 1 keeps hearing
 * 0 (its lease never runs out); 0 and 1 never crash; server 2 does anything */
#define TIMEOUT_OK(i) (!lease[i])
#define LEASE_EXPIRY_OK(i) ((i) == 2)
#define RESTART_OK(i) ((i) == 2)
#elif defined(LIVE)
/* Timers are abstracted as a fair scheduler would see them (header; README, "Liveness"):
 *  - messages are fast next to timers: a timer runs out only when every message to a server
 *    that is up (or to an agent) has been delivered or lost;
 *  - heartbeats get through while there is a live leader (up, and of the newest term among
 *    the servers up), so nobody's election timer runs out then;
 *  - without one, the leases run out first (a lease is one election timeout, a campaign
 *    waits a randomised one to two), and then a server whose log is as up to date as every
 *    other up server's times out (randomised timeouts: one of those eventually goes first),
 *    or campaigns again if it did already.
 * A leader sends what would change something (an append its peer lacks, a heartbeat to a
 * peer of a newer term), one at a time to each peer; orders the same way. */
#define UP(i) (role[i] != DOWN)
#define NEWEST(i) ((!UP(0) || term[0] <= term[i]) && (!UP(1) || term[1] <= term[i]) &&          \
                   (!UP(2) || term[2] <= term[i]))
#define LIVE_LEADER ((role[0] == LEADER && NEWEST(0)) || (role[1] == LEADER && NEWEST(1)) ||      \
                     (role[2] == LEADER && NEWEST(2)))
#define FRESH(i, j) (!UP(j) || LASTTERM(i) > LASTTERM(j) ||                                    \
                     (LASTTERM(i) == LASTTERM(j) && llen[i] >= llen[j]))
#define MOST_UP_TO_DATE(i) (FRESH(i, 0) && FRESH(i, 1) && FRESH(i, 2))
#define NO_LEASE(i) (!UP(i) || role[i] == LEADER || !lease[i])
/* a message of type t from a to b in flight (NETMAX is 12 in LIVE) */
#define IS(s, t, a, b) (s < nnet && M_TY(net[s]) == t && M_FR(net[s]) == a && M_TO(net[s]) == b)
#define INFL(t, a, b) (IS(0, t, a, b) || IS(1, t, a, b) || IS(2, t, a, b) || IS(3, t, a, b) ||     \
                       IS(4, t, a, b) || IS(5, t, a, b) || IS(6, t, a, b) || IS(7, t, a, b) ||     \
                       IS(8, t, a, b) || IS(9, t, a, b) || IS(10, t, a, b) || IS(11, t, a, b))
#define PENDING(s) (s < nnet && (M_TY(net[s]) == M_ORDER || UP(M_TO(net[s]))))
#define QUIET (!(PENDING(0) || PENDING(1) || PENDING(2) || PENDING(3) || PENDING(4) || PENDING(5) || \
                 PENDING(6) || PENDING(7) || PENDING(8) || PENDING(9) || PENDING(10) || PENDING(11)))
#define SEND_APP_OK(i, p)                                                                     \
	((MAT(i, p) < llen[i] || term[p] > term[i]) && !INFL(M_APP, i, p) && !INFL(M_APP_R, p, i))
/* a deposed leader that does not know it yet would still send its heartbeats, which are
 * answered with the newer term, long before anyone's election timer runs out */
#define HB_DUE(i) (UP(i) && role[i] == LEADER &&                                               \
                   ((i != 0 && SEND_APP_OK(i, 0)) || (i != 1 && SEND_APP_OK(i, 1)) ||          \
                    (i != 2 && SEND_APP_OK(i, 2))))
#define SLOW_TIMERS (QUIET && !HB_DUE(0) && !HB_DUE(1) && !HB_DUE(2))
#define CAMPAIGNS(i) (UP(i) && (role[i] == PRECAND || role[i] == CAND) && MOST_UP_TO_DATE(i))
#define TIMEOUT_OK(i)                                                                         \
	(!LIVE_LEADER && NO_LEASE(0) && NO_LEASE(1) && NO_LEASE(2) && SLOW_TIMERS &&                \
	 MOST_UP_TO_DATE(i) && (role[i] != FOLLOWER || !(CAMPAIGNS(0) || CAMPAIGNS(1) || CAMPAIGNS(2))))
#define LEASE_EXPIRY_OK(i) (!LIVE_LEADER && SLOW_TIMERS)
/* the log holds at most one entry of each event kind (no rollback): where it is */
#define AT(i, n, kind) (EKIND(LOG(i, n)) == kind) * n
#if MAXL >= 7
#define AT7(i, kind) + AT(i, 7, kind)
#else
#define AT7(i, kind)
#endif
#if MAXL >= 8
#define AT8(i, kind) + AT(i, 8, kind)
#else
#define AT8(i, kind)
#endif
#if MAXL >= 9
#define AT9(i, kind) + AT(i, 9, kind)
#else
#define AT9(i, kind)
#endif
#if MAXL >= 10
#define AT10(i, kind) + AT(i, 10, kind)
#else
#define AT10(i, kind)
#endif
#define POS(i, kind)                                                                          \
	(AT(i, 1, kind) + AT(i, 2, kind) + AT(i, 3, kind) + AT(i, 4, kind) + AT(i, 5, kind) +       \
	 AT(i, 6, kind) AT7(i, kind) AT8(i, kind) AT9(i, kind) AT10(i, kind))
#define COMMITTED(i, kind) (POS(i, kind) > 0 && POS(i, kind) <= commit[i])
#if NVM == 2
#define DRAINS_COMMITTED(i) (COMMITTED(i, K_DONE0) && COMMITTED(i, K_DONE1))
#else
#define DRAINS_COMMITTED(i) COMMITTED(i, K_DONE0)
#endif
/* the transfer goes to the first voter outside the event that is a follower of the leader's
 * term and can campaign, one at a time (if it fails, it times out and the leader, still
 * leading, tries again) */
#define TARGET_OK(p) (role[p] == FOLLOWER && term[p] == term[EVENT_VOTER])
#define TRANSFERRING ((UP(0) && INFL(M_TIMEOUTNOW, EVENT_VOTER, 0)) ||                          \
                      (UP(1) && INFL(M_TIMEOUTNOW, EVENT_VOTER, 1)) ||                          \
                      (UP(0) && term[0] > term[EVENT_VOTER]) || (UP(1) && term[1] > term[EVENT_VOTER]))
#define TRANSFER_OK(p) (TARGET_OK(p) && (p == 0 || !TARGET_OK(0)) && !TRANSFERRING)
/* an order the agent would not refuse (a refusal tells the sender of the newer term) */
#define ORDER_OK(i, v) (term[i] * 16 + POS(i, K_PREP) >= fence[v])
#else
/* time is abstracted away: any timer may run out at any moment, a leader's too (CheckQuorum
 * steps it down, then it campaigns: one step here) */
#define TIMEOUT_OK(i) 1
#define RESTART_OK(i) 1
#endif
#ifndef LIVE
#define SEND_APP_OK(i, p) 1
#define PREP_OK 1
#define RB_OK 1
#define TRANSFER_OK(p) 1
#define ORDER_OK(i, v) 1
#endif

/* deliver the message in slot s; outside LIVE it stays in the network */
#ifdef LIVE
#define TAKE(s) unsend(s)
#else
#define TAKE(s) skip
#endif
#define ME(s) (s < nnet && M_TY(net[s]) != M_ORDER && M_TO(net[s]) == me)
#define ORD(s) (s < nnet && M_TY(net[s]) == M_ORDER)
#ifdef LIVE
/* LIVE: first come, first served, so that weak fairness delivers every message */
#define FIRST_ME0 (1)
#define FIRST_ME1 (!ME(0))
#define FIRST_ME2 (!ME(0) && !ME(1))
#define FIRST_ME3 (!ME(0) && !ME(1) && !ME(2))
#define FIRST_ME4 (!ME(0) && !ME(1) && !ME(2) && !ME(3))
#define FIRST_ME5 (!ME(0) && !ME(1) && !ME(2) && !ME(3) && !ME(4))
#define FIRST_ME6 (!ME(0) && !ME(1) && !ME(2) && !ME(3) && !ME(4) && !ME(5))
#define FIRST_ME7 (!ME(0) && !ME(1) && !ME(2) && !ME(3) && !ME(4) && !ME(5) && !ME(6))
#define FIRST_ME8 (!ME(0) && !ME(1) && !ME(2) && !ME(3) && !ME(4) && !ME(5) && !ME(6) && !ME(7))
#define FIRST_ME9 (!ME(0) && !ME(1) && !ME(2) && !ME(3) && !ME(4) && !ME(5) && !ME(6) && !ME(7) && !ME(8))
#define FIRST_ME10 (!ME(0) && !ME(1) && !ME(2) && !ME(3) && !ME(4) && !ME(5) && !ME(6) && !ME(7) && !ME(8) && !ME(9))
#define FIRST_ME11 (!ME(0) && !ME(1) && !ME(2) && !ME(3) && !ME(4) && !ME(5) && !ME(6) && !ME(7) && !ME(8) && !ME(9) && !ME(10))
#define FIRST_ORD0 (1)
#define FIRST_ORD1 (!ORD(0))
#define FIRST_ORD2 (!ORD(0) && !ORD(1))
#define FIRST_ORD3 (!ORD(0) && !ORD(1) && !ORD(2))
#define FIRST_ORD4 (!ORD(0) && !ORD(1) && !ORD(2) && !ORD(3))
#define FIRST_ORD5 (!ORD(0) && !ORD(1) && !ORD(2) && !ORD(3) && !ORD(4))
#define FIRST_ORD6 (!ORD(0) && !ORD(1) && !ORD(2) && !ORD(3) && !ORD(4) && !ORD(5))
#define FIRST_ORD7 (!ORD(0) && !ORD(1) && !ORD(2) && !ORD(3) && !ORD(4) && !ORD(5) && !ORD(6))
#define FIRST_ORD8 (!ORD(0) && !ORD(1) && !ORD(2) && !ORD(3) && !ORD(4) && !ORD(5) && !ORD(6) && !ORD(7))
#define FIRST_ORD9 (!ORD(0) && !ORD(1) && !ORD(2) && !ORD(3) && !ORD(4) && !ORD(5) && !ORD(6) && !ORD(7) && !ORD(8))
#define FIRST_ORD10 (!ORD(0) && !ORD(1) && !ORD(2) && !ORD(3) && !ORD(4) && !ORD(5) && !ORD(6) && !ORD(7) && !ORD(8) && !ORD(9))
#define FIRST_ORD11 (!ORD(0) && !ORD(1) && !ORD(2) && !ORD(3) && !ORD(4) && !ORD(5) && !ORD(6) && !ORD(7) && !ORD(8) && !ORD(9) && !ORD(10))
#define FIRST(s) FIRST_ME##s
#define FIRST_ORDER(s) FIRST_ORD##s
#else
#define FIRST(s) 1
#define FIRST_ORDER(s) 1
#endif
#define DELIVER(s) :: d_step { ME(s) && role[me] != DOWN && FIRST(s) -> m = net[s]; TAKE(s); recv(me, m) }
#define DROP(s)                                                                               \
	:: d_step { s < nnet && M_TY(net[s]) != M_ORDER && M_TO(net[s]) == me && drops < DROPS ->   \
		printf("lost: %d\n", net[s]); unsend(s); drops++ }
#define DROP_ORDER(s)                                                                         \
	:: d_step { s < nnet && M_TY(net[s]) == M_ORDER && drops < DROPS ->                         \
		printf("lost: %d\n", net[s]); unsend(s); drops++ }
#define DELIVER_ORDER(s)                                                                      \
	:: d_step { ORD(s) && FIRST_ORDER(s) -> m = net[s]; TAKE(s); agent_recv(m) }

/* followers learn the commit index from the leader's messages (FOLLOWER_COMMIT): it shows
 * that they apply only committed entries, and that a new leader's commit index may lag */
#ifdef FOLLOWER_COMMIT
#define AE_COMMIT(i) commit[i]
#else
#define AE_COMMIT(i) 0
#endif
/* send_app(i, p): append entries (one, or none) to peer p from its next index */
inline send_app(i, p) {
	x = NXT(i, p) - 1;
	d = 0;
	if
	:: x < llen[i] -> d = LOG(i, x + 1)
	:: else -> skip
	fi;
	send(MSG(M_APP, i, p, term[i], x, ETERM(LOG(i, x)), d, AE_COMMIT(i)))
}

#ifdef LIVE
/* crash(i): i is down; everything but term, vote and log is lost */
inline crash(i) {
	printf("S%d: down\n", i);
	role[i] = DOWN;
	commit[i] = 0;
	lease[i] = 0;
	forget(i);
	crashes++
}

#endif
#define CAN_APPEND(i) (role[i] == LEADER && llen[i] < MAXL)

proctype server(byte me) {
end:
	do
	/* the election timer runs out */
	:: d_step { role[me] != DOWN && TERMS_LEFT(me) && TIMEOUT_OK(me) && NO_DRIFT(me) -> campaign(me); gc() }
#ifdef LEASE
	/* it runs out before the server campaigns: the lease is gone */
	:: d_step { lease[me] && role[me] != LEADER && LEASE_EXPIRY_OK(me) -> lease[me] = 0 }
#endif
#if !defined(LIVE) && !defined(NO_RESTART)
	/* a restart */
	:: d_step { RESTART_OK(me) -> role[me] = FOLLOWER; reset(me); gc() }
#endif
	/* replication, and heartbeats */
#ifndef MEMBERS
	:: d_step { role[me] == LEADER && me != 0 && SEND_APP_OK(me, 0) -> send_app(me, 0) }
	:: d_step { role[me] == LEADER && me != 1 && SEND_APP_OK(me, 1) -> send_app(me, 1) }
	:: d_step { role[me] == LEADER && me != 2 && SEND_APP_OK(me, 2) -> send_app(me, 2) }
#else
	:: d_step { role[me] == LEADER && PEER(me, 0) -> send_app(me, 0) }
	:: d_step { role[me] == LEADER && PEER(me, 1) -> send_app(me, 1) }
	:: d_step { role[me] == LEADER && PEER(me, 2) -> send_app(me, 2) }
	:: d_step { role[me] == LEADER && PEER(me, 3) -> send_app(me, 3) }
	:: d_step { role[me] == LEADER && PEER(me, 4) -> send_app(me, 4) }
	/* it acts (orders, approvals) once its term's entry is committed: at most one a term */
	:: d_step { role[me] == LEADER && CURRENT(me) && actor[term[me]] != me + 1 ->
		printf("S%d: acts in term %d\n", me, term[me]);
		assert(actor[term[me]] == 0); /* at most one acting leader per term */
		actor[term[me]] = me + 1
	}
#endif
#if (defined(NO_EVENT) || defined(STABLE)) && !defined(NO_CMD)
	:: d_step { CAN_APPEND(me) -> append(me, K_CMD) }
#elif defined(NO_EVENT) || defined(STABLE)
#elif defined(LIVE)
	/* the planner, without rollbacks; the same steps as below, with exact guards */
	:: d_step { CAN_APPEND(me) && POS(me, K_PREP) == 0 -> append(me, K_PREP) }
	:: d_step {
		CAN_APPEND(me) && POS(me, K_PREP) > 0 && POS(me, K_APPR) == 0 && DRAINS_COMMITTED(me) &&
		me != EVENT_VOTER -> append(me, K_APPR)
	}
#ifndef BROKEN_NO_HANDOVER
	:: d_step {
		role[me] == LEADER && me == EVENT_VOTER && POS(me, K_PREP) > 0 && !posted &&
		DRAINS_COMMITTED(me) && MAT(me, 0) == llen[me] && TRANSFER_OK(0) ->
		send(MSG(M_TIMEOUTNOW, me, 0, term[me], 0, 0, 0, 0))
	}
	:: d_step {
		role[me] == LEADER && me == EVENT_VOTER && POS(me, K_PREP) > 0 && !posted &&
		DRAINS_COMMITTED(me) && MAT(me, 1) == llen[me] && TRANSFER_OK(1) ->
		send(MSG(M_TIMEOUTNOW, me, 1, term[me], 0, 0, 0, 0))
	}
#endif
	:: d_step {
		role[me] == LEADER && CURRENT(me) && COMMITTED(me, K_PREP) && POS(me, K_DONE0) == 0 &&
		!INFL(M_ORDER, me, 0) && !INFL(M_REPORT, 0, me) && ORDER_OK(me, 0) ->
		act_on(me, POS(me, K_PREP));
		send(MSG(M_ORDER, me, 0, term[me], POS(me, K_PREP), 1, 0, 0))
	}
#if NVM == 2
	:: d_step {
		role[me] == LEADER && CURRENT(me) && COMMITTED(me, K_PREP) && POS(me, K_DONE1) == 0 &&
		!INFL(M_ORDER, me, 1) && !INFL(M_REPORT, 1, me) && ORDER_OK(me, 1) ->
		act_on(me, POS(me, K_PREP));
		send(MSG(M_ORDER, me, 1, term[me], POS(me, K_PREP), 1, 0, 0))
	}
#endif
	:: d_step {
		role[me] == LEADER && !posted && COMMITTED(me, K_APPR) && CURRENT(me) &&
		me != EVENT_VOTER ->
		act_on(me, POS(me, K_APPR));
		printf("S%d: POST approval\n", me);
		posted = 1;
		check_approval(POS(me, K_APPR))
	}
	/* faults: a crash (at most CRASHES, one server down at a time: a majority stays up),
	 * after which the server comes back or is gone for good; a message to it lost */
	:: d_step { UP(0) && UP(1) && UP(2) && crashes < CRASHES -> crash(me) }
	:: d_step { UP(0) && UP(1) && UP(2) && crashes < CRASHES -> crash(me); gone[me] = 1 }
	:: d_step { role[me] == DOWN && !gone[me] -> role[me] = FOLLOWER; printf("S%d: up\n", me) }
	DROP(0)
	DROP(1)
	DROP(2)
	DROP(3)
	DROP(4)
	DROP(5)
	DROP(6)
	DROP(7)
	DROP(8)
	DROP(9)
	DROP(10)
	DROP(11)
#elif !defined(STABLE)
	/* The planner decides on the leader's whole log: what it proposed counts as decided (a
	 * pipeline: it need not wait for a commit to decide the next step); it acts (orders, the
	 * POST) only on what is committed, in separate steps, with any other step (a leadership
	 * change) possible between proposing, committing and acting. */
	/* prepare every VM of the event (a first attempt, or after a rollback) */
	:: d_step { CAN_APPEND(me) && PREP_OK -> scan_event(me);
		if
		:: !APPR_OPEN && !ATTEMPT_OPEN -> append(me, K_PREP)
		:: else -> skip
		fi
	}
	/* a prepare hook failed, or the event changed: the attempt is rolled back, unless an
	 * approval is open (an intent without a definite answer: its POST may still land) */
	:: d_step { CAN_APPEND(me) && RB_OK -> scan_event(me);
		if
		:: !APPR_OPEN && ATTEMPT_OPEN -> append(me, K_RB)
		:: else -> skip
		fi
	}
	/* every drain of the attempt committed: the approve intent (again, after a failed one);
	 * but when the event includes the leader's own VM, leadership first goes to an
	 * up-to-date voter outside it */
	:: d_step { role[me] == LEADER -> scan_event(me);
		if
		:: !APPR_OPEN && ATTEMPT_OPEN && ALL_DONE_COMMITTED(me) && llen[me] < MAXL &&
		   me != EVENT_VOTER ->
			append(me, K_APPR);
#ifdef APPROVAL
			ps[me] = 0; /* a new intent: POSTed once in this tenure too */
#endif
			skip
		:: !APPR_OPEN && ATTEMPT_OPEN && ALL_DONE_COMMITTED(me) && me == EVENT_VOTER &&
		   MAT(me, 0) == llen[me] && TRANSFER_OK(0) ->
			send(MSG(M_TIMEOUTNOW, me, 0, term[me], 0, 0, 0, 0))
		:: !APPR_OPEN && ATTEMPT_OPEN && ALL_DONE_COMMITTED(me) && me == EVENT_VOTER &&
		   MAT(me, 1) == llen[me] && TRANSFER_OK(1) ->
			send(MSG(M_TIMEOUTNOW, me, 1, term[me], 0, 0, 0, 0))
#ifdef APPROVAL
		/* a committed open intent it inherited: POSTed by a voter outside the event too */
		:: APPR_OPEN && ACT_OK(me, hasappr) && me == EVENT_VOTER && MAT(me, 0) == llen[me] ->
			send(MSG(M_TIMEOUTNOW, me, 0, term[me], 0, 0, 0, 0))
		:: APPR_OPEN && ACT_OK(me, hasappr) && me == EVENT_VOTER && MAT(me, 1) == llen[me] ->
			send(MSG(M_TIMEOUTNOW, me, 1, term[me], 0, 0, 0, 0))
#endif
		:: else -> skip
		fi
	}
	/* act on what is committed: the newest prepare or rollback, as an order to each VM */
	:: d_step { role[me] == LEADER -> scan_event(me);
		x = lastprep;
		if
		:: lastrb > x -> x = lastrb
		:: else -> skip
		fi;
		if
		:: ACT_OK(me, x) && ORDER_OK(me, 0) ->
			act_on(me, x);
			send(MSG(M_ORDER, me, 0, term[me], x, x == lastprep, 0, 0))
		:: else -> skip
		fi;
#if NVM == 2
		if
		:: ACT_OK(me, x) && ORDER_OK(me, 1) ->
			act_on(me, x);
			send(MSG(M_ORDER, me, 1, term[me], x, x == lastprep, 0, 0))
		:: else -> skip
		fi;
#endif
		skip
	}
#ifdef APPROVAL
	/* the approval POST of a committed open intent, once a tenure (again after a timeout or
	 * a lost answer only in a later tenure: the new leader does not know whether the old one's
	 * POST landed); it may land at once, late, or never (agents(): IMDS) */
	:: d_step { role[me] == LEADER && ps[me] == 0 && pold[me] < 2 -> scan_event(me);
		if
		:: APPR_OPEN && ACT_OK(me, hasappr) && me != EVENT_VOTER -> /* (handover: above) */
			act_on(me, hasappr);
			printf("S%d: POST approval (intent at %d)\n", me, hasappr);
			posted = 1;
			ps[me] = 1;
			check_approval(hasappr)
		:: else -> skip
		fi
	}
	/* no answer within the timeout: the POST may still land, the approval is UNKNOWN (it
	 * stays open: no rollback) */
	:: d_step { role[me] == LEADER && ps[me] == 1 && llen[me] < MAXL ->
		ps[me] = 2;
#ifdef BROKEN_UNKNOWN_FAILED
		append(me, K_AERR)
#else
		append(me, K_AUNK)
#endif
	}
#else
	/* the approval POST: a committed approve intent (IMDS starts the event at once) */
	:: d_step { role[me] == LEADER && !posted -> scan_event(me);
		if
		:: hasappr > 0 && ACT_OK(me, hasappr) ->
			act_on(me, hasappr);
			assert(me != EVENT_VOTER); /* handover: never approves its own VM's event */
			printf("S%d: POST approval (intent at %d)\n", me, hasappr);
			posted = 1;
			check_approval(hasappr)
		:: else -> skip
		fi
	}
#endif
#endif
	/* receive a message */
	DELIVER(0)
	DELIVER(1)
	DELIVER(2)
	DELIVER(3)
#if NETMAX > 4
	DELIVER(4)
#endif
#if NETMAX > 5
	DELIVER(5)
#endif
#if NETMAX > 6
	DELIVER(6)
#endif
#if NETMAX > 7
	DELIVER(7)
#endif
#if NETMAX > 8
	DELIVER(8)
#endif
#if NETMAX > 9
	DELIVER(9)
#endif
#if NETMAX > 10
	DELIVER(10)
#endif
#if NETMAX > 11
	DELIVER(11)
#endif
#if NETMAX > 12
	DELIVER(12)
#endif
#if NETMAX > 13
	DELIVER(13)
#endif
#if NETMAX > 14
	DELIVER(14)
#endif
#if NETMAX > 15
	DELIVER(15)
#endif
	od
}

#ifdef APPROVAL
/* a POST reaches IMDS, which accepts it (acc: the platform starts the event, on VMs that must
 * all be drained) or, before the event started, answers an error status (nothing happens);
 * once it started, a POST is a repeat, answered 200 */
inline land(acc) {
	if
	:: acc && !started ->
		printf("IMDS: POST accepted: the event starts\n");
		assert(drained[0] && drained[NVM - 1]); /* never on a VM put back in service */
		started = 1
	:: else -> skip
	fi
}
/* this tenure's POST of leader s lands; the answer reaches s, at once or after its timeout
 * (then logged all the same: an HTTP status is definite for that POST), or it is lost (after
 * the timeout, which logged UNKNOWN: the lost answer of a POST not yet timed out is the
 * timeout first) */
#define LAND(s, acc)                                                                          \
	:: d_step { (ps[s] == 1 || ps[s] == 2) && (acc || !started) ->                            \
		land(acc); ps[s] = 3;                                                                 \
		if                                                                                    \
		:: !acc && llen[s] < MAXL -> append(s, K_AERR)                                        \
		:: else -> skip                                                                       \
		fi }
#define LAND_LOST(s, acc) :: d_step { ps[s] == 2 && (acc || !started) -> land(acc); ps[s] = 3 }
/* a POST of an earlier tenure of s lands: nobody awaits its answer */
#define LAND_OLD(s, acc) :: d_step { pold[s] > 0 && (acc || !started) -> pold[s]--; land(acc) }
#endif

proctype agents() {
end:
	do
#ifdef APPROVAL
	LAND(0, 1)
	LAND(0, 0)
	LAND(1, 1)
	LAND(1, 0)
	LAND_LOST(0, 1)
	LAND_LOST(0, 0)
	LAND_LOST(1, 1)
	LAND_LOST(1, 0)
	LAND_OLD(0, 1)
	LAND_OLD(0, 0)
	LAND_OLD(1, 1)
	LAND_OLD(1, 0)
#endif
#ifdef LIVE
	DROP_ORDER(0)
	DROP_ORDER(1)
	DROP_ORDER(2)
	DROP_ORDER(3)
	DROP_ORDER(4)
	DROP_ORDER(5)
	DROP_ORDER(6)
	DROP_ORDER(7)
	DROP_ORDER(8)
	DROP_ORDER(9)
	DROP_ORDER(10)
	DROP_ORDER(11)
#endif
	DELIVER_ORDER(0)
	DELIVER_ORDER(1)
	DELIVER_ORDER(2)
	DELIVER_ORDER(3)
#if NETMAX > 4
	DELIVER_ORDER(4)
#endif
#if NETMAX > 5
	DELIVER_ORDER(5)
#endif
#if NETMAX > 6
	DELIVER_ORDER(6)
#endif
#if NETMAX > 7
	DELIVER_ORDER(7)
#endif
#if NETMAX > 8
	DELIVER_ORDER(8)
#endif
#if NETMAX > 9
	DELIVER_ORDER(9)
#endif
#if NETMAX > 10
	DELIVER_ORDER(10)
#endif
#if NETMAX > 11
	DELIVER_ORDER(11)
#endif
#if NETMAX > 12
	DELIVER_ORDER(12)
#endif
#if NETMAX > 13
	DELIVER_ORDER(13)
#endif
#if NETMAX > 14
	DELIVER_ORDER(14)
#endif
#if NETMAX > 15
	DELIVER_ORDER(15)
#endif
	od
}

#ifdef LIVE
/* progress: with a majority up and the faults above, the event is approved */
ltl approved { <> posted }
#endif

init {
	d_step {
#ifdef STABLE
		/* leader 0 of term 1, its first entry committed everywhere, 1 and 2 follow it */
		k = 0;
		do
		:: k < N ->
			term[k] = 1; vote[k] = 1; llen[k] = 1; LOG(k, 1) = ENTRY(1, K_TERM);
			commit[k] = 1; role[k] = FOLLOWER; lease[k] = 1;
			NXT(0, k) = 2; MAT(0, k) = 1;
			k++
		:: else -> break
		od;
		role[0] = LEADER;
		leader_of[1] = 1;
		gcom[1] = ENTRY(1, K_TERM);
#elif defined(APPROVAL)
		/* leader 0 of term 1 has committed the prepare and VM 0's drain, which every server
		 * stored (entries 1 to 3); VM 0 is drained, by the order of (term 1, index 2) */
		k = 0;
		do
		:: k < N ->
			term[k] = 1; vote[k] = 1; llen[k] = 3; role[k] = FOLLOWER;
			LOG(k, 1) = ENTRY(1, K_TERM); LOG(k, 2) = ENTRY(1, K_PREP); LOG(k, 3) = ENTRY(1, K_DONE0);
			k++
		:: else -> break
		od;
		role[0] = LEADER;
		commit[0] = 3;
		NXT(0, 1) = 4; NXT(0, 2) = 4; MAT(0, 1) = 3; MAT(0, 2) = 3;
		leader_of[1] = 1;
		k = 1;
		do
		:: k <= 3 -> gcom[k] = LOG(0, k); gterm[k] = 1; k++
		:: else -> break
		od;
		drained[0] = 1;
		fence[0] = 1 * 16 + 2;
#else
		role[0] = FOLLOWER; role[1] = FOLLOWER; role[2] = FOLLOWER;
#ifdef MEMBERS
		role[3] = FOLLOWER; role[4] = FOLLOWER;
#endif
#endif
		k = 0
	}
	atomic {
		run server(0); run server(1); run server(2);
#ifdef MEMBERS
		run server(3); run server(4);
#endif
#if !defined(NO_EVENT) && !defined(STABLE)
		run agents();
#endif
		skip
	}
}
