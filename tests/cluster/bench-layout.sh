# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# Sourced by the Xen cluster's benchmarks (bench-matrix.sh, suite-xlat.sh)
# after xen-pair.sh: the CPU layouts of a 2-CPU node, Xen's CPU seconds
# of a node's domains, and one perftest run between the nodes with both.
# A caller sets mx_res, the file node a's records go to.
#
# Each node has two physical CPUs (QEMU -smp 2) and dom0 two vCPUs:
#   shared  everything on CPU 0: dom0's vCPUs, domu1, the native perftest
#           (what a 1-CPU node is: a polling program takes the CPU that
#           vrdmad and rxe need)
#   split   dom0's vCPU 0 and everything of dom0 (vrdmad, rxe's softirqs,
#           the NICs' interrupts, the suite) on CPU 0; domu1 on CPU 1,
#           and the native perftest on dom0's vCPU 1, alone on CPU 1:
#           the program on a CPU of its own and the RDMA stack on the
#           other, on both sides alike.  (rxe runs a native program's
#           sends in its own system calls, on CPU 1; vrdma's on CPU 0.)
# shellcheck disable=SC2154  # NODE, D1 come from the dom0 /init

# The conditions every figure is taken under (scripts/cluster/xen-run.sh
# puts the host's on the kernel command line).
HOSTCPUS=$(sed -n 's/.*vrdma\.hostcpus=\([0-9]*\).*/\1/p' /proc/cmdline)
HOSTLOAD=$(sed -n 's/.*vrdma\.hostload=\([0-9.]*\).*/\1/p' /proc/cmdline)
# Two nodes of two vCPUs each are four QEMU threads: on fewer host cores
# a "CPU of its own" is a thread that still waits for a core.
mx_conditions() {
	echo "== each node: 2 CPUs, QEMU TCG on a host of ${HOSTCPUS:-?} cores (load ${HOSTLOAD:-?} at boot)"
	[ "${HOSTCPUS:-0}" -ge 4 ] ||
		echo "== (fewer than 4 host cores for the nodes' 4 vCPUs: a layout's own CPU is not a core of its own)"
}

# mx_layout NAME: pin the domains and dom0's processes for NAME; PT_PIN
# is the native perftest's prefix.
mx_layout() {
	case $1 in
	shared)
		xl vcpu-pin Domain-0 all 0 >/dev/null
		xl vcpu-pin "$D1" all 0 >/dev/null
		PT_PIN="taskset -c 0 "
		;;
	split)
		xl vcpu-pin Domain-0 0 0 >/dev/null
		xl vcpu-pin Domain-0 1 1 >/dev/null
		xl vcpu-pin "$D1" all 1 >/dev/null
		PT_PIN="taskset -c 1 "
		;;
	esac
	# Everything dom0 runs now (vrdmad, xenstored, this shell and what it
	# starts) to vCPU 0, and the interrupts there too; per-CPU kernel
	# threads refuse, as they should.
	for _p in /proc/[0-9]*; do
		taskset -ap 1 "${_p#/proc/}" >/dev/null 2>&1
	done
	for _i in /proc/irq/*/smp_affinity; do
		echo 1 >"$_i" 2>/dev/null
	done
	echo "layout $1 on $NODE:"
	xl vcpu-list | awk 'NR == 1 || $1 == "Domain-0" || $1 == "domu1"'
}

# mx_cpu: "DOM0 DOMU1" CPU seconds so far, from Xen.
mx_cpu() {
	xl list | awk '$1 == "Domain-0" { a = $NF } $1 == "domu1" { b = $NF }
		END { printf "%s %s\n", a + 0, b + 0 }'
}

# mx_one SIDE TEST SIZE ITERS LAYOUT MODE REP: one perftest run between
# the nodes; a records "TEST SIZE MODE LAYOUT SIDE REP VALUE D0A DUA D0B
# DUB" (VALUE MB/s or us typical, "-" if none; CPU seconds the run took
# in each domain of each node).
mx_one() {
	mx_side=$1 mx_t=$2 mx_s=$3 mx_n=$4
	mx_tag=mx-$5-$6-$7-$1-$2-$3
	mx_e=
	[ "$6" = event ] && mx_e=-e
	[ "$mx_side" = native ] && mx_pair=pt_pair || mx_pair=pv_pair
	mx_v=-
	for mx_try in 1 2 3; do
		mx_c0=$(mx_cpu)
		mx_ok=0
		# shellcheck disable=SC2086  # the mode's flag, or none
		$mx_pair $mx_t -s $mx_s -n $mx_n $mx_e && mx_ok=1
		mx_c1=$(mx_cpu)
		mx_again=0
		if [ "$NODE" = a ]; then
			mx_col=4
			[ "$mx_t" = send_lat ] && mx_col=5
			[ $mx_ok = 1 ] && mx_v=$(pt_row | awk -v c=$mx_col '{ print $c }')
			echo "$PT_OUT" | grep -q 'Correlation coefficient' && { mx_v=-; [ $mx_try -lt 3 ] && mx_again=1; }
			cl_tell "$mx_tag-$mx_try again $mx_again" 60
			cl_await "$mx_tag-$mx_try-cpu" 60 && mx_cb=${CL_MSG#* } || mx_cb="- -"
		else
			cl_await "$mx_tag-$mx_try" 120 && [ "${CL_MSG##* }" = 1 ] && mx_again=1
			cl_tell "$mx_tag-$mx_try-cpu $(echo "$mx_c0 $mx_c1" | awk '{ print $3 - $1, $4 - $2 }')" 60
		fi
		[ $mx_again = 1 ] || break
		echo "$mx_tag: perftest could not calibrate its clock (try $mx_try), again"
	done
	if [ $mx_ok = 1 ]; then vt_pass "$mx_tag-$NODE"; else vt_fail "$mx_tag-$NODE"; fi
	[ "$NODE" = a ] || return 0
	echo "$mx_c0 $mx_c1" | awk -v k="$2 $3 $6 $5 $1 $7 ${mx_v:--}" -v cb="$mx_cb" \
		'{ printf "%s %.1f %.1f %s\n", k, $3 - $1, $4 - $2, cb }' >>$mx_res
}
