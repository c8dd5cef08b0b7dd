#!/usr/bin/env bash
# State kept across bad things: a corrupt coordinator store or agent state (not a database, a
# database from the future, a directory in its place, a state dir that is a file, unreadable
# files when not root) -> a clear error at start naming the file and the problem, exit
# non-zero, nothing overwritten. A second daemon on the same state directory is refused (it
# would overwrite the first one's state) and the first keeps its state and keeps running.
. "${SC_SRC:-$(dirname "$0")/../..}/tests/lib/common.sh"

# refused WHAT PATTERN PROGRAM ARGS...: exits by itself non-zero (not a crash) naming the problem
refused() {
    local what=$1 pat=$2 rc=0
    shift 2
    timeout 30 "$@" >"$TMP/out" 2>"$TMP/err" </dev/null || rc=$?
    [ "$rc" -ne 124 ] || fail "$what: still running (it started on bad state)"
    [ "$rc" -ne 0 ] || fail "$what: exit 0"
    [ "$rc" -lt 128 ] || fail "$what: killed by signal $((rc - 128)): $(tail -5 "$TMP/err")"
    ! grep -q 'AddressSanitizer\|runtime error' "$TMP/err" || fail "$what: sanitizer report"
    grep -Eq -- "$pat" "$TMP/err" || fail "$what: message does not match /$pat/: $(tail -3 "$TMP/err")"
}

sc_sim_start --vms 2 --fault-domains 1
CP=$(free_ports 1 "$SC_LO")
CO=(--name vm_0 --imds-url "$B/vm_0" --members "vm_0=$SC_LO:$CP" --insecure)
AG=(--name vm_1 --imds-url "$B/vm_1" --members "vm_0=$SC_LO:$CP" --insecure
    --prepare-hook /bin/true --recover-hook /bin/true --standalone-after 600)

for who in coordinator agent; do
    if [ $who = coordinator ]; then
        P=("$BIN/schedcoord-coordinator" "${CO[@]}"); db=coordinator.db
    else
        P=("$BIN/schedcoord-agent" "${AG[@]}"); db=agent.db
    fi
    d="$TMP/$who-garbage"
    mkdir -p "$d"
    head -c 8192 /dev/urandom >"$d/$db"
    sum=$(md5sum <"$d/$db")
    refused "$who: random bytes as $db" "$db: .*file is not a database" "${P[@]}" --state-dir "$d"
    [ "$(md5sum <"$d/$db")" = "$sum" ] || fail "$who: the corrupt $db was overwritten"
    [ ! -e "$d/$db-wal" ] || [ ! -s "$d/$db-wal" ] || fail "$who: wrote a WAL next to the corrupt $db"

    d="$TMP/$who-text"
    mkdir -p "$d"
    for i in $(seq 100); do echo "this is not a database, line $i"; done >"$d/$db"
    sum=$(md5sum <"$d/$db")
    refused "$who: a text file as $db" "$db: .*file is not a database" "${P[@]}" --state-dir "$d"
    [ "$(md5sum <"$d/$db")" = "$sum" ] || fail "$who: the text $db was overwritten"

    d="$TMP/$who-future"
    mkdir -p "$d"
    sqlite3 "$d/$db" 'PRAGMA user_version = 9999; CREATE TABLE t(x);'
    sum=$(md5sum <"$d/$db")
    refused "$who: a store from a newer version" "$db.*(9999|newer)" "${P[@]}" --state-dir "$d"
    [ "$(md5sum <"$d/$db")" = "$sum" ] || fail "$who: the newer $db was modified"

    d="$TMP/$who-dirdb"
    mkdir -p "$d/$db"
    refused "$who: $db is a directory" "$db.*is a directory" "${P[@]}" --state-dir "$d"

    : >"$TMP/$who-file"
    refused "$who: state dir is a regular file" "$who-file.*(not a directory|Not a directory)" \
        "${P[@]}" --state-dir "$TMP/$who-file"
    [ ! -s "$TMP/$who-file" ] || fail "$who: wrote into the regular file given as state dir"

    refused "$who: state dir's parent missing" "$TMP/missing/deeper.*No such file" \
        "${P[@]}" --state-dir "$TMP/missing/deeper"

    if [ "$(id -u)" -ne 0 ]; then # root reads and writes anything: nothing to test there
        d="$TMP/$who-perm"
        mkdir -p "$d"
        "${P[@]}" --state-dir "$d" --help >/dev/null
        sqlite3 "$d/$db" 'CREATE TABLE t(x);'
        chmod 000 "$d/$db"
        refused "$who: $db unreadable" "$db.*(unable to open|readonly|permission|Permission)" \
            "${P[@]}" --state-dir "$d"
        chmod 600 "$d/$db"
        chmod 500 "$d"
        refused "$who: state dir read-only" "(unable to open|readonly|permission|Permission|lock)" \
            "${P[@]}" --state-dir "$d"
        chmod 700 "$d"
        ok "$who: unreadable store, read-only state dir refused"
    fi
    ok "$who: corrupt, foreign, newer, misplaced state refused at start naming the file; nothing overwritten"
done

# A second daemon on a state directory in use: refused, naming the holder; the first one is
# untouched (same term, same control socket, still running).
"$BIN/schedcoord-coordinator" "${CO[@]}" --state-dir "$TMP/c1" 2>"$TMP/c1.err" &
C1=$!
PIDS+=($C1)
for _ in $(seq 100); do "$BIN/schedcoordctl" --state-dir "$TMP/c1" status >/dev/null 2>&1 && break; sleep 0.1; done
term1=$("$BIN/schedcoordctl" --state-dir "$TMP/c1" status --json | jq .term)
CO2=(--name vm_0 --imds-url "$B/vm_0" --members "vm_0=$SC_LO:$(free_ports 1 "$SC_LO")" --insecure)
refused "second coordinator" "c1 is in use by another process \(pid $C1," \
    "$BIN/schedcoord-coordinator" "${CO2[@]}" --state-dir "$TMP/c1"
kill -0 $C1 || fail "first coordinator died"
[ "$("$BIN/schedcoordctl" --state-dir "$TMP/c1" status --json | jq .term)" = "$term1" ] ||
    fail "the first coordinator's term changed (the second one took the store)"
ok "second coordinator on the same state dir refused naming the first's pid; the first keeps its term and socket"

"$BIN/schedcoord-agent" "${AG[@]}" --state-dir "$TMP/a1" 2>"$TMP/a1.err" &
A1=$!
PIDS+=($A1)
for _ in $(seq 100); do grep -q 'agent started' "$TMP/a1.err" && break; sleep 0.1; done
grep -q 'agent started' "$TMP/a1.err" || fail "agent did not start: $(tail -3 "$TMP/a1.err")"
# a hook run "in progress" in the first agent's state: a second agent opening this state would
# mark it interrupted
sqlite3 "$TMP/a1/agent.db" "INSERT INTO runs(event, phase, attempt, state, origin, term, started_ms) VALUES ('probe-ev', 'prepare', 1, 'started', 'order', 1, 1)" ||
    fail "cannot write the probe run (schema changed?)"
refused "second agent" "a1 is in use by another process \(pid $A1," \
    "$BIN/schedcoord-agent" "${AG[@]}" --state-dir "$TMP/a1"
kill -0 $A1 || fail "first agent died"
st=$(sqlite3 "$TMP/a1/agent.db" "SELECT state FROM runs WHERE event = 'probe-ev'")
[ "$st" = started ] || fail "the second agent changed the first one's running hook to '$st'"
ok "second agent on the same state dir refused naming the first's pid; the first's runs untouched"

# Both stop cleanly and a later start takes the lock again (released on exit).
kill $C1 $A1
wait $C1 || fail "coordinator exit status $?"
wait $A1 || fail "agent exit status $?"
PIDS=("${PIDS[0]}")
timeout 60 "$BIN/schedcoord-coordinator" "${CO[@]}" --state-dir "$TMP/c1" 2>"$TMP/c1b.err" &
C1=$!
PIDS+=($C1)
for _ in $(seq 100); do "$BIN/schedcoordctl" --state-dir "$TMP/c1" status >/dev/null 2>&1 && break; sleep 0.1; done
t=$("$BIN/schedcoordctl" --state-dir "$TMP/c1" status --json | jq .term)
[ "$t" -eq $((term1 + 1)) ] || fail "restart after a clean stop: term $t, expected $((term1 + 1))"
ok "lock released on exit: the restart takes the next term"
