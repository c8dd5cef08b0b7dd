#!/usr/bin/env bash
# schedcoord on an Azure VM: the Custom Script Extension / cloud-init step of the templates in
# this folder (availability-set.json, scale-set.json, cloud-init.yaml). It
#  1. installs the package: `dpkg -i` (with --root DIR: `dpkg-deb -x` into DIR instead);
#  2. asks IMDS (compute metadata) for this VM's name, the one the daemons take too;
#  3. writes /etc/schedcoord/schedcoord.conf from the package's example (members, keyring, key,
#     hooks; no name: the same file on every VM), /etc/schedcoord/keyring and
#     /etc/schedcoord/NAME.key (mode 0600);
#  4. enables and starts the coordinator and the agent when DIR is / and systemd runs.
# Running it again with the same inputs writes the same files. Bad input exits 2, naming it.
#
# Inputs (a flag, or the environment variable in brackets):
#   --deb PATH|URL          the schedcoord .deb (SC_DEB)
#   --members LIST          NAME=HOST:PORT,... the same list, in the same order, on every VM
#                           (SC_MEMBERS)
#   --keyring-b64 B64       base64 of the keyring: one "NAME PUBLIC" line per member, as
#                           `schedcoordctl keygen` prints them (SC_KEYRING_B64)
#   --key-b64 B64           base64 of THIS VM's key pair file (SC_KEY_B64), or
#   --keys-b64 B64          base64 of "NAME BASE64_OF_KEY_FILE" lines, one per member: the VM
#                           keeps its own (SC_KEYS_B64; the scale set, one profile for all)
#   --prepare-hook PATH     (SC_PREPARE_HOOK, default /etc/schedcoord/prepare)
#   --recover-hook PATH     (SC_RECOVER_HOOK, default /etc/schedcoord/recover); a default hook
#                           that does not exist yet is the package's logging example
#   --imds-url URL          (SC_IMDS_URL, default http://169.254.169.254)
#   --root DIR              install into DIR instead of / (SC_ROOT); nothing is started
#   --help
set -euo pipefail

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
}
bad() {
    echo "install.sh: $*" >&2
    exit 2
}
say() { echo "install.sh: $*"; }

DEB=${SC_DEB:-}
MEMBERS=${SC_MEMBERS:-}
KEYRING_B64=${SC_KEYRING_B64:-}
KEY_B64=${SC_KEY_B64:-}
KEYS_B64=${SC_KEYS_B64:-}
PREPARE=${SC_PREPARE_HOOK:-/etc/schedcoord/prepare}
RECOVER=${SC_RECOVER_HOOK:-/etc/schedcoord/recover}
IMDS=${SC_IMDS_URL:-http://169.254.169.254}
ROOT=${SC_ROOT:-/}
while [ $# -gt 0 ]; do
    case "$1" in
    --help | -h)
        usage
        exit 0
        ;;
    --deb | --members | --keyring-b64 | --key-b64 | --keys-b64 | --prepare-hook | --recover-hook | --imds-url | --root)
        [ $# -ge 2 ] || bad "$1 needs a value"
        case "$1" in
        --deb) DEB=$2 ;;
        --members) MEMBERS=$2 ;;
        --keyring-b64) KEYRING_B64=$2 ;;
        --key-b64) KEY_B64=$2 ;;
        --keys-b64) KEYS_B64=$2 ;;
        --prepare-hook) PREPARE=$2 ;;
        --recover-hook) RECOVER=$2 ;;
        --imds-url) IMDS=$2 ;;
        --root) ROOT=$2 ;;
        esac
        shift 2
        ;;
    *) bad "unknown argument '$1' (--help lists them)" ;;
    esac
done

# --- the inputs, all checked before anything is written
[ -n "$DEB" ] || bad "no package: --deb PATH|URL"
[ -n "$MEMBERS" ] || bad "no members: --members NAME=HOST:PORT,..."
IFS=, read -r -a M <<<"$MEMBERS"
for m in "${M[@]}"; do
    [[ "$m" =~ ^[A-Za-z0-9._-]+=[^=:,]+:[0-9]+$ ]] || bad "members: '$m' is not NAME=HOST:PORT"
done
[ -n "$KEYRING_B64" ] || bad "no keyring: --keyring-b64 B64"
KEYRING=$(printf '%s' "$KEYRING_B64" | base64 -d 2>/dev/null) || bad "keyring: not base64"
for m in "${M[@]}"; do
    grep -q "^${m%%=*} " <<<"$KEYRING" || bad "keyring: no public key for member ${m%%=*}"
done
[ -n "$KEY_B64$KEYS_B64" ] || bad "no key pair: --key-b64 B64 or --keys-b64 B64"
[ -d "$ROOT" ] || bad "root: $ROOT is not a directory"
for h in "$PREPARE" "$RECOVER"; do
    [[ "$h" == /* ]] || bad "hook: '$h' is not an absolute path"
done

if [[ "$DEB" =~ ^https?:// ]]; then
    TMPD=$(mktemp -d)
    trap 'rm -rf "$TMPD"' EXIT
    curl -fsSL --retry 5 -o "$TMPD/schedcoord.deb" "$DEB" || bad "package: cannot download $DEB"
    DEB=$TMPD/schedcoord.deb
fi
[ -r "$DEB" ] || bad "package: cannot read $DEB"
dpkg-deb -f "$DEB" Package >/dev/null 2>&1 || bad "package: $DEB is not a Debian package"

# --- this VM's name, from IMDS (the daemons ask the same question)
compute=$(curl -fsS --retry 10 --retry-connrefused --max-time 10 -H Metadata:true \
    "$IMDS/metadata/instance/compute?api-version=2021-02-01") ||
    bad "imds: no compute metadata at $IMDS"
NAME=$(jq -r '.name // empty' <<<"$compute")
[ -n "$NAME" ] || bad "imds: the compute metadata has no name"
printf '%s\n' "${M[@]}" | grep "^$NAME=" >/dev/null || bad "members: this VM ($NAME) is not one of them"

if [ -n "$KEY_B64" ]; then
    KEY=$(printf '%s' "$KEY_B64" | base64 -d 2>/dev/null) || bad "key: not base64"
else
    KEYS=$(printf '%s' "$KEYS_B64" | base64 -d 2>/dev/null) || bad "keys: not base64"
    k=$(awk -v n="$NAME" '$1 == n { print $2 }' <<<"$KEYS")
    [ -n "$k" ] || bad "keys: no key pair for this VM ($NAME)"
    KEY=$(printf '%s' "$k" | base64 -d 2>/dev/null) || bad "keys: $NAME's key pair is not base64"
fi
{ grep -q '^public = ' <<<"$KEY" && grep -q '^secret = ' <<<"$KEY"; } ||
    bad "key: not a key pair file of schedcoordctl keygen (no public/secret line)"
pub=$(sed -n 's/^public = //p' <<<"$KEY")
grep -qxF "$NAME $pub" <<<"$KEYRING" || bad "key: $NAME's public key is not the keyring's"

# --- 1. the package
if [ "$ROOT" = / ]; then
    dpkg -i "$DEB" >/dev/null || { apt-get -y -f install && dpkg -i "$DEB"; } ||
        bad "package: dpkg -i $DEB failed"
else
    dpkg-deb -x "$DEB" "$ROOT" || bad "package: dpkg-deb -x $DEB $ROOT failed"
fi
EXAMPLES=$(cd "$ROOT" && find . -path '*/share/doc/schedcoord/examples' -type d | head -1)
[ -n "$EXAMPLES" ] || bad "package: no examples folder in $DEB"
EXAMPLES=$ROOT/${EXAMPLES#./}

# --- 3. the files; each written only when its content changes
ETC=$ROOT/etc/schedcoord
mkdir -p "$ETC"
chmod 755 "$ETC"
put() { # FILE MODE < CONTENT
    local t
    t=$(mktemp "$1.XXXXXX")
    cat >"$t"
    chmod "$2" "$t"
    if cmp -s "$t" "$1"; then rm -f "$t"; else mv -f "$t" "$1"; fi
    chmod "$2" "$1"
}
sed -e "s|^members = .*|members = $MEMBERS|" \
    -e "s|^imds-url = .*|imds-url = $IMDS|" \
    -e "s|^keys = .*|keys = /etc/schedcoord/keyring|" \
    -e "s|^key = .*|key = /etc/schedcoord/{name}.key|" \
    -e "s|^prepare-hook = .*|prepare-hook = $PREPARE|" \
    -e "s|^recover-hook = .*|recover-hook = $RECOVER|" \
    "$EXAMPLES/schedcoord.conf" | put "$ETC/schedcoord.conf" 644
printf '%s\n' "$KEYRING" | put "$ETC/keyring" 644
printf '%s\n' "$KEY" | put "$ETC/$NAME.key" 600
for h in prepare recover; do
    p=$PREPARE
    [ $h = prepare ] || p=$RECOVER
    if [ "$p" = /etc/schedcoord/$h ] && [ ! -e "$ETC/$h" ]; then
        put "$ETC/$h" 755 <"$EXAMPLES/hooks/$h"
        say "$h hook: the package's example (it only logs): replace /etc/schedcoord/$h"
    fi
done
say "$NAME: /etc/schedcoord/schedcoord.conf, keyring and $NAME.key written under $ROOT"

# --- 4. the units
if [ "$ROOT" != / ]; then
    say "--root $ROOT: units not enabled nor started"
elif [ ! -d /run/systemd/system ]; then
    say "systemd is not running here: units not enabled nor started"
else
    systemctl daemon-reload
    systemctl enable schedcoord-coordinator.service schedcoord-agent.service
    systemctl restart schedcoord-coordinator.service schedcoord-agent.service
    say "schedcoord-coordinator and schedcoord-agent enabled and started"
fi
