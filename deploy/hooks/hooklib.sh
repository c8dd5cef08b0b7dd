# hooklib.sh: what the example hooks of deploy/hooks/ share. Sourced, never run; each hook
# finds it beside its own real path (symlinks resolved): copy it along with a hook.
#
# Settings: the environment, then the settings file $SCHEDCOORD_HOOKS_ENV (default
# /etc/schedcoord/hooks.env; an explicitly named file must exist), a shell fragment of
# NAME=value lines sourced with every variable exported, so that what it sets wins and also
# reaches the hooks of a chain and the commands they run (PATH, KUBECONFIG...). The agent
# gives hooks only PATH, HOME, LANG and its SCHEDCOORD_* variables: the file is how a hook
# run by the agent gets its settings.
#
# Phase (SC_PHASE): the first argument, else SCHEDCOORD_PHASE (set by the agent), else the
# name the hook is called under when it holds "prepare" or "recover" (a symlink
# /etc/schedcoord/prepare -> lb-drain).
#
# Exit statuses of every hook: 0 done, 1 failed, 2 bad settings (named on stderr).

SC_ME=${0##*/}
sc_log() { printf '%s: %s\n' "$SC_ME" "$*" >&2; }
sc_fail() { # MESSAGE: the hook failed
    sc_log "$*"
    exit 1
}
sc_die() { # MESSAGE: a setting is wrong
    sc_log "$*"
    exit 2
}

sc_conf=${SCHEDCOORD_HOOKS_ENV:-/etc/schedcoord/hooks.env}
if [ -n "${SCHEDCOORD_HOOKS_ENV:-}" ] || [ -e "$sc_conf" ]; then
    if [ -d "$sc_conf" ] || ! [ -r "$sc_conf" ]; then
        sc_die "cannot read the settings file $sc_conf (SCHEDCOORD_HOOKS_ENV)"
    fi
    set -a
    # shellcheck disable=SC1090 # the operator's file
    . "$sc_conf"
    set +a
fi

SC_PHASE=${1:-${SCHEDCOORD_PHASE:-}}
if [ -z "$SC_PHASE" ]; then
    case $SC_ME in
    *prepare*) SC_PHASE=prepare ;;
    *recover*) SC_PHASE=recover ;;
    esac
fi
case $SC_PHASE in
prepare | recover) ;;
*) sc_die "phase '$SC_PHASE': prepare or recover (SCHEDCOORD_PHASE, the first argument, or a name holding either)" ;;
esac

# sc_setting NAME DEFAULT: NAME keeps its value, or gets DEFAULT when unset or empty
sc_setting() { eval "$1=\${$1:-\$2}"; }

# sc_num NAME DEFAULT: as sc_setting; the value must be a number (digits, an optional
# fraction: seconds, counts)
sc_num() {
    sc_setting "$1" "$2"
    eval "sc_v=\$$1"
    # shellcheck disable=SC2154 # (set by the eval)
    case $sc_v in
    '' | *[!0-9.]* | *.*.* | .* | *.) sc_die "$1='$sc_v': not a number" ;;
    esac
}

# sc_mul A B: A times B (numbers with fractions)
sc_mul() { awk -v a="$1" -v b="$2" 'BEGIN { print a * b }'; }

# sc_wait SECONDS INTERVAL WHAT CMD...: runs CMD every INTERVAL seconds until it succeeds;
# returns 1, naming WHAT, once at least SECONDS (whole seconds) have passed without success
sc_wait() {
    sc_t=$1 sc_i=$2 sc_what=$3
    shift 3
    sc_end=$(($(date +%s) + ${sc_t%.*}))
    until "$@"; do
        if [ "$(date +%s)" -gt "$sc_end" ]; then
            sc_log "$sc_what: not after $sc_t s"
            return 1
        fi
        sleep "$sc_i"
    done
}

# SCHEDCOORD_PREPARED is 0 in a recover after an impact no prepare hook of ours saw: undo
# nothing then (an operator's own standby, cordon or drained probe stays), only check.
sc_prepared() { [ "${SCHEDCOORD_PREPARED:-1}" != 0 ]; }
