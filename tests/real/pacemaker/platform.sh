#!/bin/sh
# platform.sh DIR start|end VM EventType EventId: imds-sim's --on-impact for
# tests/real/real_pacemaker.sh (DIR, the test's TMP, given on the --on-impact command line).
# start: the VM shuts down (tests/real/pacemaker/vm.sh: the agent, then the cluster's state as
#   the VM's Pacemaker shows it goes to DIR/impact.VM.EventId.xml, then pacemakerd and
#   corosync) and this waits until it is down (60 s at most), as a reboot's shutdown would be
#   done before the host's maintenance.
# end: the VM boots again (vm.sh: the agent first, corosync and Pacemaker once its recover
#   started).
# Each step goes to DIR/platform.log as "UNIX_TIME PHASE VM EventId".
dir=$1 phase=$2 vm=$3 id=$5
d=$dir/node_${vm#vm_}
log() { echo "$(date +%s.%N) $1 $vm $id" >>"$dir/platform.log"; }
if [ "$phase" = start ]; then
    echo "$dir/impact.$vm.$id.xml" >"$d/halt.new"
    mv "$d/halt.new" "$d/halt"
    log start
    i=0
    until [ -e "$d/down" ] || [ "$i" -ge 600 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    log down
else
    log end
    : >"$d/poweron"
fi
