#!/usr/bin/env python3
"""Every line the daemons log (sc_log) must be one logfmt record:
    [TIMESTAMP PROGRAM ]level=L msg="..." key=value key="quoted \\" value" ...
so that a quote, backslash or newline in text that came from outside (an IMDS error body, a
peer's reason) cannot end a value early, invent a field or start a new line.
    logfmt_check.py FILE...   -> exit 1 naming each bad line; prints the number of records.
Lines that are not sc_log records (usage errors printed before logging starts, sanitizer
reports) are not this checker's business and are skipped."""
import re
import sys

HEAD = re.compile(r'^(?:<\d>|\d{4}-\d\d-\d\dT[0-9:.]+Z \S+ )level=(debug|info|notice|warn|err) ')
QUOTED = r'"(?:[^"\\\x00-\x1f]|\\["\\nrt]|\\x[0-9a-f]{2})*"'
FIELD = re.compile(r'[a-z_][a-z0-9_]*=(?:' + QUOTED + r'|[^\s"]*)')
MSG = re.compile(r'msg=' + QUOTED)

bad = records = 0
for path in sys.argv[1:]:
    with open(path, encoding='utf-8', errors='replace') as f:
        for no, line in enumerate(f, 1):
            line = line.rstrip('\n')
            m = HEAD.match(line)
            if not m:
                continue
            records += 1
            rest = line[m.end():]
            mm = MSG.match(rest)
            ok = mm is not None
            pos = mm.end() if mm else 0
            while ok and pos < len(rest):
                if rest[pos] != ' ':
                    ok = False
                    break
                fm = FIELD.match(rest, pos + 1)
                if not fm or fm.end() == pos + 1:
                    ok = False
                    break
                pos = fm.end()
            if not ok:
                bad += 1
                print(f'{path}:{no}: not one logfmt record (from column {pos + m.end()}): {line}')
print(f'{records} log records checked, {bad} bad')
sys.exit(1 if bad else 0)
