#!/usr/bin/env bash
# Fills deploy/azure/cloud-init.yaml for one VM and prints it (the VM's custom data):
#   render-cloud-init.sh DEB_URI MEMBERS KEYRING_FILE KEY_FILE > vm_0.yaml
#   az vm create ... --custom-data vm_0.yaml
# KEYRING_FILE: the "NAME PUBLIC" lines of every VM; KEY_FILE: this VM's key pair file
# (schedcoordctl keygen). install.sh goes in whole: the VM needs nothing else but the package.
set -euo pipefail
[ $# -eq 4 ] || {
    sed -n '3p' "$0" | sed 's/^# *//' >&2
    exit 2
}
here=$(dirname "$0")
for f in "$3" "$4"; do [ -r "$f" ] || { echo "render-cloud-init.sh: cannot read $f" >&2; exit 2; }; done
awk -v f="$here/install.sh" '/@INSTALL_SH@/ { while ((getline l < f) > 0) print (l == "" ? "" : "      " l); next } { print }' \
    "$here/cloud-init.yaml" |
    sed -e "s|@DEB_URI@|$1|" -e "s|@MEMBERS@|$2|" -e "s|@KEYRING_B64@|$(base64 -w0 "$3")|" \
        -e "s|@KEY_B64@|$(base64 -w0 "$4")|"
