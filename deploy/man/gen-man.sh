#!/bin/sh
# gen-man.sh PROGRAM TEMPLATE OUT VERSION: writes OUT, the man page of PROGRAM: TEMPLATE (the
# hand-written sections) with @SYNOPSIS@ and @OPTIONS@ made from `PROGRAM --help`, which is
# made from the programs' settings tables, and @VERSION@. So the page lists every flag --help
# lists, with the same words and defaults, and a new setting needs no edit here. Run by the
# build (CMakeLists.txt); POSIX sh and awk: any awk (mawk, gawk, busybox awk; the test
# lint_awk runs it with each).
#
# --help's layout, as sc_config_usage (common/sc_config.c) and schedcoordctl print it: usage
# lines up to the first blank line (the SYNOPSIS; an indented line not naming a program goes
# on the line before); then headings (a line at column 0 ending in
# ':'), entries ("  --flag VALUE" or "  command") each followed by its description ("      ..."),
# and paragraphs (other lines at column 0).
set -eu
[ $# -eq 4 ] || {
    echo "usage: gen-man.sh PROGRAM TEMPLATE OUT VERSION" >&2
    exit 2
}
prog=$1 template=$2 out=$3 version=$4
help=$(mktemp)
trap 'rm -f "$help" "$out.tmp"' EXIT
"$prog" --help >"$help" || {
    echo "gen-man.sh: $prog --help exited $?" >&2
    exit 1
}
awk -v helpfile="$help" -v version="$version" '
# troff text: backslashes and hyphens escaped, a leading . or quote neutralised
function esc(s) {
    gsub(/\\/, "\\e", s)
    gsub(/-/, "\\-", s)
    if (s ~ /^[.'"'"']/)
        s = "\\&" s
    return s
}
BEGIN {
    synopsis = ""; options = ""; part = "usage"; para = 0
    while ((getline line < helpfile) > 0) {
        if (part == "usage") {
            if (line == "") { part = "body"; continue }
            sub(/^usage: */, "", line)
            if (line ~ /^ +/ && prog_seen && line !~ /^ +schedcoord/) {
                sub(/^ +/, "", line) # the usage line before goes on
                synopsis = synopsis esc(line) "\n"
                continue
            }
            sub(/^ +/, "", line)
            name = line; sub(/ .*/, "", name)
            rest = substr(line, length(name) + 2)
            synopsis = synopsis (synopsis == "" ? "" : ".br\n") ".B " esc(name) "\n" esc(rest) "\n"
            prog_seen = 1
        } else if (line == "") {
            para = 0
        } else if (line ~ /^      /) {
            sub(/^ +/, "", line)
            options = options esc(line) "\n"
        } else if (line ~ /^  [^ ]/) {
            sub(/^ +/, "", line)
            # "--until-idle[=S]": the flag, then its value. Cut at the first " ", "[" or "="
            # one at a time: a bracket expression holding "[" followed by "=" ("[ [=]") opens
            # an equivalence class "[=...=]" for gawk and busybox awk, which reject the regex.
            item = line; sub(/ .*/, "", item); sub(/=.*/, "", item); sub(/\[.*/, "", item)
            value = substr(line, length(item) + 1); sub(/^ +/, "", value)
            options = options ".TP\n\\fB" esc(item) "\\fR" (value == "" ? "" : " \\fI" esc(value) "\\fR") "\n"
            para = 0
        } else if (line ~ /:$/) {
            sub(/:$/, "", line)
            options = options ".SS " esc(line) "\n"
            para = 0
        } else {
            options = options (para ? "" : ".PP\n") esc(line) "\n"
            para = 1
        }
    }
    if (synopsis == "" || options == "") {
        print "gen-man.sh: no usage line or no option in the help" > "/dev/stderr"
        exit 1
    }
}
$0 == "@SYNOPSIS@" { printf "%s", synopsis; next }
$0 == "@OPTIONS@" { printf "%s", options; next }
{ gsub(/@VERSION@/, version); print }
' "$template" >"$out.tmp"
mv "$out.tmp" "$out"
