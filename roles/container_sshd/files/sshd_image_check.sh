#!/bin/sh
# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
# Run in the Horovod container by multinode.horovod.container_sshd (docker exec sh -c CODE NAME SSHD):
# prints, as a JSON list, why its image cannot serve key logins for root - no sshd at SSHD, or a locked
# root (sshd without PAM refuses a password field starting with ! even with a valid key). [] when none.
sshd=$1
sep=
printf '['
if [ ! -x "$sshd" ]; then printf '"no %s"' "$sshd"; sep=', '; fi
case "$(getent shadow root | cut -d: -f2)" in
  '!'*) printf '%s"root is locked (its password field starts with !)"' "$sep" ;;
esac
printf ']\n'
