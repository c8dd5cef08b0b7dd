#!/usr/bin/env bash
# The build and the deploy scripts work with any awk (issue 22): Debian's default mawk, gawk
# (installed by many packages, the default of most other distributions; it rejected
# gen-man.sh's "/[ [=].*/" and stopped `cmake --build` at the man pages) and busybox awk.
# Each awk is put first in PATH as `awk` (a directory of its own: the machine's awk
# alternative is left alone) and runs:
#  - deploy/man/gen-man.sh for the three programs: every awk writes the same pages, and each
#    page is valid: no placeholder left, one .TP entry per entry of --help, the SYNOPSIS names
#    the program, and troff renders it without a warning (where groff is installed);
#  - deploy/hooks/hooklib.sh's sc_mul and deploy/azure/render-cloud-init.sh: the same output.
# gawk and busybox come from deploy/install-deps.sh --test.
set -euo pipefail
SC_SRC="${SC_SRC:-$(dirname "$0")/../..}"
SC_BIN="${SC_BIN:-$SC_SRC/build/bin}"
TMP="${SC_TMP:-$(mktemp -d)}"
rm -rf "$TMP"
mkdir -p "$TMP"
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
ok() { echo "ok   $*"; }
PROGS=(schedcoord-agent schedcoord-coordinator schedcoordctl)
for p in "${PROGS[@]}"; do [ -x "$SC_BIN/$p" ] || fail "no $SC_BIN/$p (build first)"; done

# awk_dir NAME: $TMP/NAME/bin/awk runs that awk
AWKS=()
for a in mawk gawk busybox; do
    command -v "$a" >/dev/null || fail "no $a here (deploy/install-deps.sh --test installs it)"
    mkdir -p "$TMP/$a/bin"
    if [ "$a" = busybox ]; then
        printf '#!/bin/sh\nexec busybox awk "$@"\n' >"$TMP/$a/bin/awk"
        chmod +x "$TMP/$a/bin/awk"
        busybox awk 'BEGIN { exit 0 }' || fail "this busybox has no awk applet"
    else
        ln -s "$(command -v "$a")" "$TMP/$a/bin/awk"
    fi
    # the awk that runs is the one meant (its words kept first: `| grep -q` would stop reading
    # at the match, and awk, killed by SIGPIPE, would fail the pipe under pipefail)
    case "$a" in
    gawk) v=$(PATH="$TMP/$a/bin:$PATH" awk --version 2>&1 || true) ;;
    mawk) v=$(PATH="$TMP/$a/bin:$PATH" awk -W version 2>&1 || true) ;;
    busybox) v=$(PATH="$TMP/$a/bin:$PATH" awk --help 2>&1 || true) ;;
    esac
    w=${a/gawk/GNU Awk}
    [[ "$v" == *"${w/busybox/BusyBox}"* ]] ||
        fail "awk in $TMP/$a/bin is not $a: $v"
    AWKS+=("$a")
done

for a in "${AWKS[@]}"; do
    for p in "${PROGS[@]}"; do
        PATH="$TMP/$a/bin:$PATH" sh "$SC_SRC/deploy/man/gen-man.sh" "$SC_BIN/$p" \
            "$SC_SRC/deploy/man/$p.1.in" "$TMP/$a/$p.1" 9.9.9 2>"$TMP/$a/$p.err" ||
            fail "gen-man.sh $p with $a: $(cat "$TMP/$a/$p.err")"
        [ ! -s "$TMP/$a/$p.err" ] || fail "gen-man.sh $p with $a complains: $(cat "$TMP/$a/$p.err")"
        [ -s "$TMP/$a/$p.1" ] || fail "gen-man.sh $p with $a wrote no page"
    done
done
for p in "${PROGS[@]}"; do
    for a in "${AWKS[@]}"; do
        cmp -s "$TMP/mawk/$p.1" "$TMP/$a/$p.1" ||
            fail "$p.1 differs between mawk and $a: $(diff "$TMP/mawk/$p.1" "$TMP/$a/$p.1" | head -10)"
    done
    page="$TMP/mawk/$p.1"
    ! grep -q '@[A-Z]*@' "$page" || fail "$p.1 keeps a placeholder: $(grep '@[A-Z]*@' "$page")"
    grep -q '^\.TH .*"schedcoord 9\.9\.9"' "$page" || fail "$p.1 has no .TH with the version"
    grep -q "^\.B $(echo "$p" | sed 's/-/\\\\-/g')\$" "$page" || fail "$p.1: SYNOPSIS does not name $p"
    "$SC_BIN/$p" --help >"$TMP/$p.help"
    # one .TP more than the template's per entry of --help (a line "  --flag ..." or
    # "  command" after the usage lines), each naming the flag alone in bold: "--until-idle[=S]"
    # gives \fB\-\-until\-idle\fR (sed, not awk: this checks awk)
    sed '1,/^$/d' "$TMP/$p.help" | sed -n 's/^  \([^ =[][^ =[]*\).*/\1/p' >"$TMP/$p.entries"
    want=$(($(wc -l <"$TMP/$p.entries") + $(grep -c '^\.TP$' "$SC_SRC/deploy/man/$p.1.in" || true)))
    got=$(grep -c '^\.TP$' "$page")
    [ "$want" -gt 0 ] && [ "$got" -eq "$want" ] || fail "$p.1 has $got .TP entries, expected $want"
    grep -A1 '^\.TP$' "$page" >"$TMP/$p.tp"
    while read -r e; do
        grep -qF "\fB${e//-/\\-}\fR" "$TMP/$p.tp" || fail "$p.1 has no entry \\fB$e\\fR"
    done <"$TMP/$p.entries"
    if command -v groff >/dev/null; then
        w=$(groff -man -Tutf8 -ww -z "$page" 2>&1) || fail "groff $p.1: $w"
        [ -z "$w" ] || fail "groff warns about $p.1: $w"
    fi
done
ok "gen-man.sh: ${AWKS[*]} write the same pages for ${PROGS[*]}; each has one entry per --help entry$(command -v groff >/dev/null && echo ', and troff renders it without a warning')"

# The other awk programs of deploy/: the same output with each awk.
: >"$TMP/hooks.env" # hooklib.sh reads no settings of this machine
for a in "${AWKS[@]}"; do
    SCHEDCOORD_HOOKS_ENV="$TMP/hooks.env" SCHEDCOORD_PHASE=prepare \
        HOOKLIB="$SC_SRC/deploy/hooks/hooklib.sh" PATH="$TMP/$a/bin:$PATH" \
        bash -c '. "$HOOKLIB" && sc_mul 1.5 20 && sc_mul 0.25 3 && sc_mul 7 0' >"$TMP/$a/mul.out" ||
        fail "hooklib.sh sc_mul with $a"
    echo "n1 pub1" >"$TMP/keyring"
    echo "key" >"$TMP/key"
    PATH="$TMP/$a/bin:$PATH" bash "$SC_SRC/deploy/azure/render-cloud-init.sh" file:///x.deb \
        vm_0=tcp://10.0.0.4:7700/0 "$TMP/keyring" "$TMP/key" >"$TMP/$a/cloud-init.yaml" ||
        fail "render-cloud-init.sh with $a"
done
[ "$(paste -sd' ' "$TMP/mawk/mul.out")" = "30 0.75 0" ] || fail "sc_mul with mawk: $(cat "$TMP/mawk/mul.out")"
grep -q '^      ' "$TMP/mawk/cloud-init.yaml" || fail "render-cloud-init.sh put no install.sh in"
for a in "${AWKS[@]}"; do
    cmp -s "$TMP/mawk/mul.out" "$TMP/$a/mul.out" || fail "sc_mul differs with $a: $(cat "$TMP/$a/mul.out")"
    cmp -s "$TMP/mawk/cloud-init.yaml" "$TMP/$a/cloud-init.yaml" || fail "render-cloud-init.sh differs with $a"
done
ok "hooklib.sh sc_mul and render-cloud-init.sh: the same output with ${AWKS[*]}"
echo "lint_awk: all passed"
