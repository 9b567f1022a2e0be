#!/bin/sh
# SPDX-License-Identifier: MIT
# mpirun's launcher between the rigs' domUs (installed there as
# /usr/bin/vrdma-rig-rsh; --mca plm_rsh_agent vrdma-rig-rsh): called as
# ssh would be, "vrdma-rig-rsh [OPTIONS] HOST WORDS...", it runs WORDS by
# the shell of HOST's launch port (domu-init.sh: busybox nc -ll -e sh on
# MPI_RSH_PORT) with their stdout and stderr coming back here, as ssh
# does: the remote orted lives as long as the connection.  The rigs'
# guest network is a private bridge inside QEMU, hence no keys; the
# domUs of a real cluster have their own ssh.
while [ $# -gt 0 ]; do
	case $1 in
	# ssh's options mean nothing here; these take an argument
	-[bcDEeFIiJLlmOopQRSWw]) shift 2 ;;
	-*) shift ;;
	*) break ;;
	esac
done
[ $# -ge 2 ] || { echo "usage: vrdma-rig-rsh HOST COMMAND..." >&2; exit 2; }
host=$1
shift
# WORDS may be a subshell, "( ... )", which exec cannot take: the remote
# shell runs them (its stderr joined to the connection: nc -e gives it
# only stdout), prints their exit status on a line of its own and exits;
# that status is this one's, as ssh's is (255: no status came, the
# connection failed or broke).  nc -w bounds the connect only: a launch
# that hangs is mpirun's timeout to end.
printf 'exec 2>&1\n%s\necho "@vrdma-rig-rsh-exit $?"\nexit\n' "$*" |
	nc -w 10 "$host" "${MPI_RSH_PORT:-2222}" |
	awk '
		/^@vrdma-rig-rsh-exit [0-9]+$/ { rc = $2; got = 1; next }
		{ print; fflush() }
		END { exit got ? rc : 255 }'
rc=$?
[ $rc = 255 ] && echo "vrdma-rig-rsh: $host: no exit status (no connection, or it broke)" >&2
exit $rc
