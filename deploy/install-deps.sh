#!/usr/bin/env bash
# Installs what schedcoord needs to build, test and run its demo on Debian 12, and nothing
# that is already there. Idempotent; needs root (or sudo) only when something is missing.
#   deploy/install-deps.sh            build + run dependencies
#   deploy/install-deps.sh --test     also what the test suite uses (clang, spin, curl, ...)
set -euo pipefail

pkgs=(build-essential cmake pkg-config libcurl4-openssl-dev libjson-c-dev libzmq3-dev
      libsqlite3-dev libmicrohttpd-dev libsodium-dev sqlite3 curl python3 procps)
if [[ "${1:-}" == "--test" ]]; then
  pkgs+=(clang libclang-rt-14-dev spin jq python3-requests python3-zmq clang-format iproute2 psmisc
    systemd dpkg-dev python3-prometheus-client man-db
    # the man pages built with gawk and busybox awk too (lint_awk)
    gawk busybox
    # tests/real (ctest -L real): a Pacemaker cluster (crm_mon, cibadmin: pacemaker-cli-utils;
    # ocf:pacemaker:Dummy: pacemaker-resource-agents), iptables for lb-drain; real_patroni
    pacemaker pacemaker-cli-utils pacemaker-resource-agents corosync crmsh iptables
    patroni etcd-server postgresql-15 python3-psycopg2)
fi

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
