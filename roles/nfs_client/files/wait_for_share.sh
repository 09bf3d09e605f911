#!/bin/sh
# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
# wait_for_share.sh TIMEOUT DELAY OPTIONS SOURCE MOUNTPOINT   (role nfs_client, tasks/wait.yml)
#
# Waits until SOURCE (server:/path) can be mounted with OPTIONS, at most TIMEOUT seconds: mounts it
# read-only at a scratch directory and unmounts it again, every DELAY seconds until that works. This
# is what the real mount needs and nothing more, so it works for NFSv4-only servers too (no rpcbind
# or mountd on the network, where `showmount` fails), and a refusal ("access denied") is reported as
# the server gave it. Already mounted at MOUNTPOINT: nothing to wait for.
# Prints "mounted" or "already mounted"; else exits 1 with mount's last error on stderr.
set -u
timeout=$1 delay=$2 options=$3 source=$4 mountpoint=$5

if awk -v src="$source" -v dst="$mountpoint" \
    '$1 == src && $2 == dst && $3 ~ /^nfs4?$/ { found = 1 } END { exit !found }' /proc/mounts; then
  echo "already mounted"
  exit 0
fi

scratch=$(mktemp -d /run/nfs-client-wait.XXXXXX) || exit 2
trap 'umount "$scratch" 2>/dev/null; rmdir "$scratch" 2>/dev/null' EXIT
deadline=$(($(date +%s) + timeout))
error="no attempt was made"
while :; do
  left=$((deadline - $(date +%s)))
  [ "$left" -ge 1 ] || left=1
  # retry=0: mount.nfs gives up on the first failure instead of retrying for 2 minutes; timeout
  # bounds an attempt against a server that drops packets.
  if error=$(timeout "$left" mount -t nfs -o "$options,ro,retry=0" "$source" "$scratch" 2>&1); then
    umount "$scratch"
    echo "mounted"
    exit 0
  fi
  [ -n "$error" ] || error="mount did not finish within ${timeout}s"
  left=$((deadline - $(date +%s)))
  [ "$left" -ge 1 ] || break
  sleep $((delay < left ? delay : left))
done
printf '%s\n' "$error" >&2
exit 1
