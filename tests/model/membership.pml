/*
 * schedcoord's membership changes (issue 21), as a Promela model for spin: configuration
 * entries in the replicated log, one change at a time. What it models, what it abstracts
 * away and the figures: tests/model/README.md ("Membership changes"). Checked by check.sh.
 *
 * Four servers. The initial configuration makes servers 0, 1 and 2 voters and server 3 a
 * non-voter (etcd's learner) that has joined and follows the log. Leader 0 of term 1 has
 * committed its term entry, which every server stored. From there on, any leader may
 * propose a configuration entry — one change: a caught-up non-voter promoted, or a voter
 * removed (itself too) — and servers time out and campaign. Raft without PreVote and
 * CheckQuorum (they only withhold votes and campaigns: leaving them out covers every
 * behaviour they allow); messages lost, duplicated and reordered.
 *
 * The configuration in force at a server is the latest configuration entry in its log,
 * committed or not (Raft dissertation §4.1, hashicorp/raft's "latest" configuration): it
 * takes effect when appended (the leader) or stored (a follower), and a server whose entry is
 * replaced by a newer leader's goes back to the configuration before it. A server counts
 * votes and replicas among the voters of the configuration in force for it; it campaigns
 * only while it is a voter of it. Any server grants a vote (once a term, to a log at least as
 * up to date): the candidate's count decides whether it counts. The leader replicates to
 * every server; a leader that removed itself counts the others only, and steps down once the
 * entry is committed (Raft §4.2.2).
 *
 * One change at a time: a leader proposes a configuration entry only when the one in force
 * for it is committed (a majority of any two configurations one change apart overlap) and an
 * entry of its own term is committed (its configuration is then one no earlier leader can
 * still be adding an uncommitted change to: Ongaro, raft-dev, 2015). A voter is removed only
 * when at least three remain (the coordinator never goes below three voters by itself); a
 * non-voter is promoted only once it stored every entry the leader has (caught up).
 *
 * Properties (assertions):
 *   one leader a term       at most one server wins each term
 *   committed, never lost   every leader of a later term holds every committed entry, and a
 *                           follower never replaces one; every server that commits an index
 *                           commits the same entry
 *   commit quorum           when a leader commits an index, the servers that hold the entry
 *                           (truly: their logs, not the leader's view) are a majority of the
 *                           voters of the configuration in force for the leader
 *
 * Configurations (spin -D...):
 *   MAXT, MAXL, NETMAX      bounds: terms, log length, messages in flight
 *   RESTART                 servers restart (term, vote and log kept, the rest lost)
 *   REACH                   an assertion where a leader that removed itself steps down:
 *                           spin must reach it (a promotion committed, then the removal),
 *                           which shows the checked runs are not vacuous
 * Broken variant, expected to be caught:
 *   BROKEN_TWO_CHANGES      a leader proposes a change while its previous one is not
 *                           committed: two changes in flight, two configurations whose
 *                           majorities need not overlap
 */

#define N 4
#ifndef MAXT
#define MAXT 2
#endif
#ifndef MAXL
#define MAXL 4
#endif
#ifndef NETMAX
#define NETMAX 4
#endif
#if MAXT > 7 || MAXL > 15
#error "MAXT at most 7, MAXL at most 15"
#endif

#define FOLLOWER 1
#define CAND 2
#define LEADER 3

/* log entries: term * 32 + kind; a configuration entry's kind is K_CONF + its voters */
#define K_TERM 1  /* a new leader's first entry (the design's `term` entry) */
#define K_CONF 16 /* a configuration: 16 + the voters, a bit per server */
#define ENTRY(t, k) ((t) * 32 + (k))
#define ETERM(e) ((e) >> 5)
#define EKIND(e) ((e) & 31)
#define ISCONF(e) (EKIND(e) >= K_CONF)
#define CMASK(e) (EKIND(e) & 15)
#define C0 7 /* the initial configuration: voters 0, 1 and 2; server 3 a non-voter */

/* messages, one int each: type 4 bits, from 2, to 2, term 3, a 4, b 4, c 8 */
#define M_VOTE 1   /* a, b: last log term and index */
#define M_VOTE_R 2 /* a: granted */
#define M_APP 3    /* a: prev index, b: prev term, c: the entry (0: none) */
#define M_APP_R 4  /* a: success, b: match index, or the prev index that failed */
#define MSG(ty, fr, to, t, a, b, c)                                                           \
	((ty) | ((fr) << 4) | ((to) << 6) | ((t) << 8) | ((a) << 11) | ((b) << 15) | ((c) << 19))
#define M_TY(m) ((m) & 15)
#define M_FR(m) (((m) >> 4) & 3)
#define M_TO(m) (((m) >> 6) & 3)
#define M_T(m) (((m) >> 8) & 7)
#define M_A(m) (((m) >> 11) & 15)
#define M_B(m) (((m) >> 15) & 15)
#define M_C(m) (((m) >> 19) & 255)

/* ---- persisted per server: current_term, voted_for (0: none, else id + 1), the log */
byte term[N];
byte vote[N];
byte llen[N];
byte lg[N * (MAXL + 1)]; /* entry 0 of each log is always 0: term 0 */
#define LOG(i, k) lg[(i) * (MAXL + 1) + (k)]
#define LASTTERM(i) ETERM(LOG(i, llen[i]))

/* ---- derived from the log (a function of it: no states of their own): the configuration in
 * force, the latest in the log, and its index (0: the initial one) */
byte cf[N];
byte cfi[N];
#define BIT(i) (1 << (i))
#define VOTER(i) ((cf[i] >> (i)) & 1)
#define POP4(b) (((b) & 1) + (((b) >> 1) & 1) + (((b) >> 2) & 1) + (((b) >> 3) & 1))
/* bits hold a majority of the voters of configuration c */
#define MAJ(bits, c) (2 * POP4((bits) & (c)) > POP4(c))

/* ---- volatile per server */
byte role[N];
byte commit[N];
byte grants[N];  /* votes received, a bit per server */
byte nxt[N * N]; /* the leader's next index for each peer */
byte mat[N * N]; /* the leader's match index for each peer */
#define NXT(i, j) nxt[(i) * N + (j)]
#define MAT(i, j) mat[(i) * N + (j)]

/* ---- the network: a set of messages, sorted, no duplicates. A message stays once sent: it
 * may be delivered any number of times, in any order, or never (loss, duplication,
 * reordering). When NETMAX messages are in flight, a new one is lost. */
int net[NETMAX];
byte nnet;

/* ---- ghosts: what the properties speak of */
byte gcom[MAXL + 1];      /* the entry committed at each index (0: none yet) */
byte gterm[MAXL + 1];     /* the term of the leader that committed it */
byte leader_of[MAXT + 1]; /* who won each term (id + 1) */

/* ---- scratch, not part of the state */
hidden int m, sm;
hidden byte k, j, x, y, d, mt, fr, ty, ok;

/* send(msg): into the set (a copy already in flight: nothing new) */
inline send(msg) {
	sm = msg;
	if
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
	:: else -> skip
	fi
}

inline unsend(s) {
	k = s;
	do
	:: k + 1 < nnet -> net[k] = net[k + 1]; k++
	:: else -> break
	od;
	nnet--;
	net[nnet] = 0
}

/* gc(): drop the messages whose delivery could change nothing (terms and a leader's match
 * indexes only grow; a server is candidate and leader at most once a term). Loss is allowed
 * anyway: this merges states that differ only by dead letters. */
#define APP_SEEN(mm)                                                                          \
	((M_C(mm) == 0 || (llen[M_TO(mm)] > M_A(mm) && LOG(M_TO(mm), M_A(mm) + 1) == M_C(mm))) &&  \
	 role[M_TO(mm)] == FOLLOWER &&                                                            \
	 (role[M_FR(mm)] != LEADER || term[M_FR(mm)] != M_T(mm) ||                                 \
	  M_A(mm) + (M_C(mm) != 0) <= MAT(M_FR(mm), M_TO(mm))))
#define DEAD(mm)                                                                              \
	((M_TY(mm) != M_APP && M_T(mm) < term[M_TO(mm)]) ||                                       \
	 (M_TY(mm) == M_VOTE_R && M_T(mm) == term[M_TO(mm)] &&                                     \
	  (role[M_TO(mm)] != CAND || !M_A(mm) || (grants[M_TO(mm)] & BIT(M_FR(mm))))) ||           \
	 (M_TY(mm) == M_APP_R && M_T(mm) == term[M_TO(mm)] &&                                      \
	  (role[M_TO(mm)] != LEADER || M_B(mm) <= MAT(M_TO(mm), M_FR(mm)))) ||                     \
	 (M_TY(mm) == M_APP && M_T(mm) < term[M_TO(mm)] && term[M_FR(mm)] >= term[M_TO(mm)]) ||   \
	 (M_TY(mm) == M_APP && M_T(mm) == term[M_TO(mm)] && APP_SEEN(mm)) ||                      \
	 (M_TY(mm) == M_VOTE && M_T(mm) == term[M_TO(mm)] && vote[M_TO(mm)] != 0 &&               \
	  (M_T(mm) != term[M_FR(mm)] || role[M_FR(mm)] != CAND)))
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

/* conf_of(i): i's log changed: the configuration in force is its latest */
inline conf_of(i) {
	cf[i] = C0;
	cfi[i] = 0;
	y = 1;
	do
	:: y <= llen[i] ->
		if
		:: ISCONF(LOG(i, y)) -> cf[i] = CMASK(LOG(i, y)); cfi[i] = y
		:: else -> skip
		fi;
		y++
	:: else -> break
	od;
	skip
}

/* a log ending at (lt, li) is at least as up to date as i's */
#define LOGOK(i, lt, li) ((lt) > LASTTERM(i) || ((lt) == LASTTERM(i) && (li) >= llen[i]))

inline forget(i) {
	grants[i] = 0;
	y = 0;
	do
	:: y < N -> NXT(i, y) = 0; MAT(i, y) = 0; y++
	:: else -> break
	od;
	skip
}

inline become_follower(i, t) {
	printf("S%d: term %d, follower\n", i, t);
	term[i] = t;
	vote[i] = 0;
	role[i] = FOLLOWER;
	forget(i)
}

inline become_candidate(i) {
	term[i]++;
	printf("S%d: candidate, term %d, voters %d\n", i, term[i], cf[i]);
	vote[i] = i + 1; /* persisted before any vote request leaves */
	role[i] = CAND;
	forget(i);
	grants[i] = BIT(i);
	y = 0;
	do
	:: y < N ->
		if
		:: y != i -> send(MSG(M_VOTE, i, y, term[i], LASTTERM(i), llen[i], 0))
		:: else -> skip
		fi;
		y++
	:: else -> break
	od;
	skip
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
	assert(leader_of[term[i]] == 0 || leader_of[term[i]] == i + 1); /* one leader a term */
	leader_of[term[i]] = i + 1;
	printf("S%d: LEADER of term %d, voters %d, log length %d\n", i, term[i], cf[i], llen[i]);
	check_complete(i);
	role[i] = LEADER;
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

/* holds(j, i, x): j's log holds i's entry at x (the truth, not what i believes) */
#define HOLDS(j, i, x) (llen[j] >= (x) && LOG(j, x) == LOG(i, x))
#define HOLDERS(i, x)                                                                         \
	(HOLDS(0, i, x) * 1 + HOLDS(1, i, x) * 2 + HOLDS(2, i, x) * 4 + HOLDS(3, i, x) * 8)

/* set_commit(i, c): leader i commits its log up to c; every leader commits the same entry at
 * an index, and the servers holding it are a majority of i's configuration */
inline set_commit(i, c) {
	assert(MAJ(HOLDERS(i, c), cf[i])); /* the commit's quorum is one of the configuration */
	y = commit[i] + 1;
	do
	:: y <= c ->
		if
		:: gcom[y] == 0 -> gcom[y] = LOG(i, y); gterm[y] = term[i]
		:: else -> assert(gcom[y] == LOG(i, y)) /* the same entry at an index */
		fi;
		y++
	:: else -> break
	od;
	printf("S%d: commit %d\n", i, c);
	commit[i] = c;
	/* a leader that removed itself steps down once the change is committed */
	if
	:: !VOTER(i) && cfi[i] <= commit[i] ->
		printf("S%d: removed, steps down\n", i);
#ifdef REACH
		assert(false); /* reached: a promotion, then a leader's removal of itself, committed */
#endif
		role[i] = FOLLOWER;
		forget(i)
	:: else -> skip
	fi
}

/* the voters of i's configuration that stored x (the leader counts itself once it is one) */
#define STORED(i, j, x) ((j) == (i) || MAT(i, j) >= (x))
#define STORED_BITS(i, x)                                                                     \
	(STORED(i, 0, x) * 1 + STORED(i, 1, x) * 2 + STORED(i, 2, x) * 4 + STORED(i, 3, x) * 8)
/* Raft's commit rule: the leader counts replicas of entries of its own term only */
inline advance_commit(i) {
	x = llen[i];
	do
	:: x > commit[i] ->
		if
		:: MAJ(STORED_BITS(i, x), cf[i]) && ETERM(LOG(i, x)) == term[i] -> set_commit(i, x); break
		:: else -> x--
		fi
	:: else -> break
	od;
	skip
}

/* the leader may propose a change: an entry of its term is committed, and the configuration
 * in force for it is (BROKEN_TWO_CHANGES: whether it is or not) */
#define CURRENT(i) (commit[i] > 0 && ETERM(LOG(i, commit[i])) == term[i])
#ifdef BROKEN_TWO_CHANGES
#define CHANGE_OK(i) (role[i] == LEADER && llen[i] < MAXL && CURRENT(i))
#else
#define CHANGE_OK(i) (role[i] == LEADER && llen[i] < MAXL && CURRENT(i) && cfi[i] <= commit[i])
#endif
/* promote p: a non-voter that stored everything the leader has */
#define PROMOTE_OK(i, p) ((p) != (i) && !((cf[i] >> (p)) & 1) && MAT(i, p) == llen[i])
/* remove voter v (the leader itself too) while at least three remain */
#define REMOVE_OK(i, v) (((cf[i] >> (v)) & 1) && POP4(cf[i]) > 3)

inline propose(i, conf) {
	llen[i]++;
	LOG(i, llen[i]) = ENTRY(term[i], K_CONF + (conf));
	printf("S%d: propose %d = voters %d (was %d)\n", i, llen[i], conf, cf[i]);
	conf_of(i);
	advance_commit(i) /* a voter removed: what the others stored may be a majority now */
}

/* ---- server i receives message msg */
inline recv(i, msg) {
	ty = M_TY(msg); fr = M_FR(msg); mt = M_T(msg);
	printf("S%d <- S%d: type %d term %d a %d b %d c %d\n", i, fr, ty, mt, M_A(msg), M_B(msg), M_C(msg));
	ok = 1;
	if
	:: mt > term[i] -> become_follower(i, mt)
	:: mt < term[i] ->
		ok = 0;
		if
		:: ty == M_APP -> send(MSG(M_APP_R, i, fr, term[i], 0, 0, 0)) /* the newer term */
		:: else -> skip
		fi
	:: else -> skip
	fi;
	if
	:: !ok -> skip
	:: ty == M_VOTE ->
		/* any server votes; the candidate counts the voters of its configuration */
		ok = ((vote[i] == 0 || vote[i] == fr + 1) && LOGOK(i, M_A(msg), M_B(msg)));
		if
		:: ok -> vote[i] = fr + 1 /* persisted before the reply leaves */
		:: else -> skip
		fi;
		send(MSG(M_VOTE_R, i, fr, term[i], ok, 0, 0))
	:: ty == M_VOTE_R ->
		if
		:: role[i] == CAND && M_A(msg) ->
			grants[i] = grants[i] | BIT(fr);
			if
			:: MAJ(grants[i], cf[i]) -> become_leader(i)
			:: else -> skip
			fi
		:: else -> skip
		fi
	:: ty == M_APP ->
		assert(role[i] != LEADER); /* (one leader a term) */
		if
		:: role[i] != FOLLOWER -> role[i] = FOLLOWER; forget(i)
		:: else -> skip
		fi;
		x = M_A(msg); /* prev index */
		if
		:: x > llen[i] || ETERM(LOG(i, x)) != M_B(msg) ->
			send(MSG(M_APP_R, i, fr, term[i], 0, x, 0))
		:: else ->
			if
			:: M_C(msg) == 0 -> skip
			:: llen[i] > x && LOG(i, x + 1) == M_C(msg) -> x++
			:: else ->
				y = x + 1;
				do
				:: y <= llen[i] ->
					/* a committed entry is never replaced; nothing is dropped but by a
					 * leader of a later term */
					assert(gcom[y] == 0 || LOG(i, y) != gcom[y]);
					assert(ETERM(LOG(i, y)) < mt);
					LOG(i, y) = 0;
					y++
				:: else -> break
				od;
				LOG(i, x + 1) = M_C(msg);
				printf("S%d: store %d = (term %d, kind %d) from S%d\n", i, x + 1,
				       ETERM(M_C(msg)), EKIND(M_C(msg)), fr);
				llen[i] = x + 1;
				x++;
				conf_of(i)
			fi;
			send(MSG(M_APP_R, i, fr, term[i], 1, x, 0))
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
	:: else -> skip
	fi;
	gc()
}

/* send_app(i, p): append entries (one, or none) to peer p from its next index */
inline send_app(i, p) {
	x = NXT(i, p) - 1;
	d = 0;
	if
	:: x < llen[i] -> d = LOG(i, x + 1)
	:: else -> skip
	fi;
	send(MSG(M_APP, i, p, term[i], x, ETERM(LOG(i, x)), d))
}

#define DELIVER(s) :: d_step { s < nnet && M_TO(net[s]) == me -> m = net[s]; recv(me, m) }
#define SEND_APP(p) :: d_step { role[me] == LEADER && me != p -> send_app(me, p) }
#define PROMOTE(p) :: d_step { CHANGE_OK(me) && PROMOTE_OK(me, p) -> propose(me, cf[me] | BIT(p)) }
#define REMOVE(v) :: d_step { CHANGE_OK(me) && REMOVE_OK(me, v) -> propose(me, cf[me] & ~BIT(v)) }

proctype server(byte me) {
end:
	do
	/* the election timer runs out (a leader's too: CheckQuorum, then a campaign); only a voter
	 * of its configuration campaigns */
	:: d_step { term[me] < MAXT && VOTER(me) -> become_candidate(me); gc() }
#ifdef RESTART
	:: d_step { role[me] = FOLLOWER; commit[me] = 0; forget(me); gc() }
#endif
	/* replication, and heartbeats */
	SEND_APP(0)
	SEND_APP(1)
	SEND_APP(2)
	SEND_APP(3)
	/* membership: one change a configuration entry */
	PROMOTE(0)
	PROMOTE(1)
	PROMOTE(2)
	PROMOTE(3)
	REMOVE(0)
	REMOVE(1)
	REMOVE(2)
	REMOVE(3)
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
	od
}

init {
	d_step {
		/* leader 0 of term 1 (voted by 0, 1 and 2), its term entry stored by every server and
		 * committed; server 3 a non-voter of the initial configuration, caught up */
		k = 0;
		do
		:: k < N ->
			term[k] = 1; llen[k] = 1; LOG(k, 1) = ENTRY(1, K_TERM); role[k] = FOLLOWER;
			cf[k] = C0; cfi[k] = 0;
			NXT(0, k) = 2; MAT(0, k) = 1;
			k++
		:: else -> break
		od;
		vote[0] = 1; vote[1] = 1; vote[2] = 1;
		NXT(0, 0) = 0; MAT(0, 0) = 0;
		role[0] = LEADER;
		commit[0] = 1;
		leader_of[1] = 1;
		gcom[1] = ENTRY(1, K_TERM);
		gterm[1] = 1;
		k = 0
	}
	atomic {
		run server(0); run server(1); run server(2); run server(3);
		skip
	}
}
