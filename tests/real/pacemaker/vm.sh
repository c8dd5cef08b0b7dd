#!/usr/bin/env bash
# vm.sh I DIR HOOKLOG: PID 1 of test VM vm_I for tests/real/real_pacemaker.sh, started in the
# VM's network namespace by `unshare --mount --uts --pid --fork --mount-proc`: the VM's boot,
# its services and its shutdown. What it mounts stays in its mount namespace (unshare makes
# the mounts private): a VM's own /run (= /var/run), /dev/shm (libqb's IPC), /etc/corosync,
# /var/lib/corosync, /var/lib/pacemaker, /var/log/pacemaker, /etc/hosts (the cluster's names:
# crmsh pings a node before it acts on it) and /etc/resolv.conf (no name server: a lookup
# fails at once instead of timing out), the last six from DIR.
#
# boot: the agent (DIR/agent.sh, when there), then corosync -f, then pacemakerd -f once
#   corosync answers. A boot after a shutdown starts corosync only once the agent started a
#   recover hook (the hook log HOOKLOG has one more "start recover vm_I" line than at the
#   shutdown): the agent is up before the cluster stack, and its recover finds Pacemaker
#   down, the order a slow boot gives (deploy/hooks/pacemaker must wait for it).
# shutdown (the file DIR/halt appears, naming a file FILE; imds-sim's --on-impact start): the
#   agent gets SIGTERM, then the cluster's state as this VM's Pacemaker shows it goes to FILE
#   (crm_mon), then pacemakerd and corosync get SIGTERM, each waited for; then DIR/down
#   appears. The agent goes first: on Azure the event ends only once the VM is back, but
#   imds-sim ends it --complete-after its start, while Pacemaker may still be stopping here;
#   an agent still up would start its recover in the VM going down, and be stopped in it.
#   The file DIR/poweron (the impact's end) boots the VM again.
# Every step goes to DIR/vm.log as "UNIX_TIME what".
set -u
i=$1
D=$2
HOOKLOG=$3
log() { echo "$(date +%s.%N) $*" >>"$D/vm.log"; }

echo "vm_$i" >/proc/sys/kernel/hostname
mount -t tmpfs -o mode=755 tmpfs /run
mkdir -p /run/lock
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount --bind "$D/etc" /etc/corosync
mount --bind "$D/corosync" /var/lib/corosync
mount --bind "$D/pacemaker" /var/lib/pacemaker
mount --bind "$D/log" /var/log/pacemaker
mount --bind "$D/hosts" /etc/hosts
mount --bind "$D/resolv.conf" /etc/resolv.conf
export PCMK_logfile=/var/log/pacemaker/pacemaker.log PCMK_logfacility=none

AGENT="" COROSYNC="" PCMKD="" recovers=-1
# recovers: vm_I's recover hooks started so far (-1: at the first boot, which waits for none)
n_recovers() { grep -c "^start recover vm_$i " "$HOOKLOG" 2>/dev/null || true; }

boot() {
    if [ -x "$D/agent.sh" ]; then
        "$D/agent.sh" &
        AGENT=$!
        log "agent started"
    fi
    if [ "$recovers" -ge 0 ]; then
        local t=0
        while [ "$(n_recovers)" -le "$recovers" ] && [ "$t" -lt 1200 ]; do
            sleep 0.1
            t=$((t + 1))
        done
        log "recover hook started: $(n_recovers) so far"
    fi
    corosync -f >>"$D/corosync.log" 2>&1 &
    COROSYNC=$!
    log "corosync started"
    until corosync-cfgtool -s >/dev/null 2>&1; do sleep 0.1; done
    pacemakerd -f >>"$D/pacemakerd.out" 2>&1 &
    PCMKD=$!
    log "pacemaker started"
}

shutdown() {
    log "shutdown"
    local p
    if [ -n "$AGENT" ]; then
        kill -TERM "$AGENT" 2>/dev/null
        wait "$AGENT" 2>/dev/null
        log "agent stopped"
    fi
    crm_mon -1 --output-as=xml >"$1" 2>&1
    for p in "$PCMKD" "$COROSYNC"; do
        [ -n "$p" ] || continue
        kill -TERM "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    AGENT="" COROSYNC="" PCMKD=""
    recovers=$(n_recovers)
    log "down"
}

while :; do
    boot
    until [ -e "$D/halt" ]; do sleep 0.1; done
    snap=$(cat "$D/halt")
    rm -f "$D/halt"
    shutdown "${snap:-/dev/null}"
    : >"$D/down"
    until [ -e "$D/poweron" ]; do sleep 0.1; done
    rm -f "$D/poweron" "$D/down"
done
