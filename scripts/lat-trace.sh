#!/bin/sh
# SPDX-License-Identifier: MIT
# Per-hop medians of a strictly sequential ping-pong (ib_send_lat style:
# each iteration one send and one receive each way) from the latency
# traces of one node -- its guests' (VRDMA_LAT_TRACE, libvrdma(7)) and
# its vrdmad's (`vrdmactl trace dump`, vrdmactl(8)) -- and optionally
# the remote node's, after "--".
#
# Usage: lat-trace.sh FILE... [-- REMOTE_FILE...]
#   FILE: guest traces and dom0 dumps of this node, in any order; lines
#   that do not start with "vlt " are skipped (a trace on a program's
#   stderr will do).  Stamps are compared only within a node: the TSC
#   (or CLOCK_MONOTONIC) a node's guests and dom0 share.
#
# The initiator is the guest QP that posted first.  Its posts cut the
# stamps into iterations; within one, each hop's stamp is the first of
# its kind after the previous hop's, and an iteration missing one counts
# for the hops before it only.  A guest's doorbell and dom0's publication
# of a CQE are stamped just after the fact by the side that did it, so
# the other side may act before that stamp: "doorbell -> dom0 pull" or
# "published -> polled" is below 0 in such an iteration.  Two shapes:
#   local path (both guests on this node, backend/local/): the
#     initiator's post, doorbell, dom0's pull, copy into the peer's
#     receive, the peer's CQE written and published, the peer's poll,
#     its post ... back to the initiator's poll of the reply.
#   device path (the peer on another node): post, doorbell, pull, device
#     post, then the reply's device completion, CQE, publication, poll;
#     the remote node's files give its own turnaround (device completion
#     ... device post), and wire time both ways is the difference.
# Prints each hop's median in microseconds and its number of samples.
set -u
me=lat-trace
case ${1:---} in
--) echo "usage: $me FILE... [-- REMOTE_FILE...]" >&2; exit 2 ;;
esac
remote=0
for f in "$@"; do
	[ "$f" = -- ] && remote=1
	[ "$f" = -- ] || [ -r "$f" ] || { echo "$me: cannot read $f" >&2; exit 2; }
done

# "NODE vlt side kind clock ...", A this node, B the remote one, sorted
# by node, then clock
node=A
for f in "$@"; do
	if [ "$f" = -- ]; then
		node=B
		continue
	fi
	awk -v nd=$node '$1 == "vlt" { print nd, $0 }' "$f"
done | sort -s -k1,1 -k5,5n | awk -v me="$me" -v REMOTE=$remote '
function fail(msg) { print me ": " msg > "/dev/stderr"; bad = 1; exit 1 }

# stream s: its clocks in order, S[s, 1..N[s]]
function add(s, t) { S[s, ++N[s]] = t }
# the first clock of stream s at or after t and before end, or -1
function first(s, t, end,    lo, hi, mid) {
	lo = 1; hi = N[s] + 0
	if (hi < 1) return -1
	while (lo < hi) {
		mid = int((lo + hi) / 2)
		if (S[s, mid] < t) lo = mid + 1; else hi = mid
	}
	if (S[s, lo] < t || S[s, lo] >= end) return -1
	return S[s, lo]
}
function qsort(a, l, r,    i, last, t) {
	if (l >= r) return
	t = a[l]; a[l] = a[int((l + r) / 2)]; a[int((l + r) / 2)] = t
	last = l
	for (i = l + 1; i <= r; i++)
		if (a[i] < a[l]) { last++; t = a[last]; a[last] = a[i]; a[i] = t }
	t = a[l]; a[l] = a[last]; a[last] = t
	qsort(a, l, last - 1); qsort(a, last + 1, r)
}
# hop h: a sample of d clock ticks on node nd
function sample(h, nd, d) { V[h, ++NV[h]] = d / HZ[nd] * 1e6 }
function median(h,    i, n, a) {
	n = NV[h] + 0
	if (!n) return -1
	for (i = 1; i <= n; i++) a[i] = V[h, i]
	qsort(a, 1, n)
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function hop(h, label) { HOPS[++NH] = h; LABEL[h] = label }
function show(h,    m) {
	m = median(h)
	if (m < 0) printf "%-58s %10s %6d\n", LABEL[h], "-", 0
	else printf "%-58s %10.3f %6d\n", LABEL[h], m, NV[h]
}

{
	nd = $1; sd = $3; k = $4; t = $5 + 0; qpn = $6
	if (k == "hz") {
		# dom0 rules: the guests on the node read the same counter
		if (sd == "dom0" || !(nd in HZ)) { HZ[nd] = $5 + 0; HOW[nd] = sd " " $6 }
		next
	}
	delete kv
	for (i = 8; i <= NF; i++)
		if ((p = index($i, "=")) > 0) kv[substr($i, 1, p - 1)] = substr($i, p + 1)
	if (sd == "guest") {
		if (k == "cqe") add(nd "|g|cqe|" qpn "|" kv["op"], t)
		else add(nd "|g|" k "|" qpn, t)
		if (k == "post") {
			POSTS[nd, qpn]++
			if (!((nd, qpn) in FIRST)) { FIRST[nd, qpn] = t; QPS[nd] = QPS[nd] " " qpn }
		}
	} else if (sd == "dom0") {
		if (k == "pub" || k == "kick") add(nd "|d|" k "|" kv["dom"], t)
		else if (k == "cqe") add(nd "|d|cqe|" qpn "|" kv["op"], t)
		else add(nd "|d|" k "|" qpn, t)
		if (k == "copy" && !((nd, qpn) in TO)) { TO[nd, qpn] = kv["to"]; TODOM[nd, qpn] = kv["dom"] }
		if ((k == "pull" || k == "dpost") && !((nd, qpn) in DOM)) DOM[nd, qpn] = kv["dom"]
	}
}

# The initiator on node nd: the QP whose first post came first.
function initiator(nd,    n, q, i, best) {
	n = split(QPS[nd], q, " ")
	best = ""
	for (i = 1; i <= n; i++)
		if (best == "" || FIRST[nd, q[i]] < FIRST[nd, best]) best = q[i]
	return best
}

# One chain over stamps of node nd for every iteration (the anchor
# stream ST[1]'"'"'s stamps, each until the next): hop i is ST[i] ->
# ST[i+1].  Between them a side stamp SIDE[i] that its own thread takes
# after the step it stands for, so the next step may come before it: a
# guest'"'"'s doorbell (dom0 pulls once the WR is published) or dom0'"'"'s
# publication of a CQE (the guest polls once it is published); its
# second hop may be below 0.  Then maybe a kick KICK[i], between the
# side stamp and ST[i+1].
function chain(nd, n,    na, k, i, t, prev, end, st, kt, done) {
	na = N[ST[1]] + 0
	for (k = 1; k <= na; k++) {
		prev = S[ST[1], k]
		end = k < na ? S[ST[1], k + 1] : 1e300
		T[1] = prev
		done = 1
		for (i = 2; i <= n; i++) {
			t = first(ST[i], prev, end)
			if (t < 0) break
			sample(nd "|" i - 1, nd, t - prev)
			st = (i - 1) in SIDE ? first(SIDE[i - 1], prev, 1e300) : -1
			if (st >= 0) {
				sample(nd "|" i - 1 "s1", nd, st - prev)
				sample(nd "|" i - 1 "s2", nd, t - st)
				kt = (i - 1) in KICK ? first(KICK[i - 1], st, t) : -1
				if (kt >= 0) {
					sample(nd "|" i - 1 "k1", nd, kt - st)
					sample(nd "|" i - 1 "k2", nd, t - kt)
				}
			}
			T[i] = prev = t
			done++
		}
		if (done == n) {
			FULL[nd]++
			sample(nd "|rt", nd, T[n] - T[1])
		}
	}
	ITER[nd] = na
}

# The chains: "g" guest, "d" dom0 stamps; Qx, Qy the QPs, Dx, Dy their
# guests.  A post'"'"'s side stamp is its doorbell, a CQE'"'"'s (":D" its
# guest) its publication, then a kick.
function steps(nd, list, x, y, dx, dy,    n, st, i, s, g) {
	delete ST; delete SIDE; delete KICK
	n = split(list, st, " ")
	for (i = 1; i <= n; i++) {
		s = st[i]
		sub(/Qx/, x, s); sub(/Qy/, y, s); sub(/Dx/, dx, s); sub(/Dy/, dy, s)
		if ((g = index(s, ":")) > 0) {
			SIDE[i] = nd "|d|pub|" substr(s, g + 1)
			KICK[i] = nd "|d|kick|" substr(s, g + 1)
			s = substr(s, 1, g - 1)
		}
		ST[i] = nd "|" s
		if (s ~ /^g\|post\|/) SIDE[i] = nd "|g|bell|" substr(s, 8)
	}
	return n
}

function bell_hops(h, who) {
	hop(h "s1", who " post_send: entry -> doorbell")
	hop(h "s2", who " doorbell -> dom0 pull")
}

# CQE written -> published -> polled (-> kicked)
function cqe_hops(h, who, prefix) {
	hop(h "s1", prefix "CQE -> published to " who)
	hop(h "s2", prefix "published -> " who " polled it")
	hop(h "k1", prefix "  of which, when kicked: published -> kick " who)
	hop(h "k2", prefix "  ... kick -> " who " polled it")
}

# device post -> the send'"'"'s device completion (its ack) of QP q
function ack(nd, q,    k, na, p, a, end) {
	na = N[nd "|d|dpost|" q] + 0
	for (k = 1; k <= na; k++) {
		p = S[nd "|d|dpost|" q, k]
		end = k < na ? S[nd "|d|dpost|" q, k + 1] : 1e300
		a = first(nd "|d|dsend|" q, p, end)
		if (a >= 0) sample(nd "|ack", nd, a - p)
	}
}

# The remote node: its device completion of our message -> its guest ->
# its device post of the reply, anchored on its device completions.
function remote(    y, dy, m3, mt) {
	y = initiator("B")
	if (y == "") fail("no guest post stamps in the remote node'"'"'s files")
	dy = DOM["B", y]
	chain("B", steps("B", "d|drecv|Qy d|cqe|Qy|recv:Dy g|cqe|Qy|recv g|post|Qy d|pull|Qy " \
			 "d|dpost|Qy", "", y, "", dy))
	Y = "remote QP " y
	hop("B|1", "  remote: device completion -> CQE in " Y "'"'"'s CQ")
	cqe_hops("B|2", Y, "  remote: ")
	hop("B|3", "  remote: polled -> post_send (program)")
	bell_hops("B|4", "  remote:")
	hop("B|5", "  remote: dom0 pull -> device post")
	hop("B|rt", "  remote turnaround: device completion -> device post")
	m3 = median("A|3"); mt = median("B|rt")
	if (m3 >= 0 && mt >= 0) wire = m3 - mt
}

END {
	if (bad) exit 1
	if (!("A" in HZ)) fail("no \"vlt ... hz\" header line in this node'"'"'s files")
	x = initiator("A")
	if (x == "") fail("no guest post stamps in this node'"'"'s files (VRDMA_LAT_TRACE set?)")
	X = "QP " x
	if (("A", x) in TO) {
		# local path: both guests here
		y = TO["A", x]; dy = TODOM["A", x]
		if (!(("A", y) in TO)) fail("QP " y " never sent back to QP " x)
		dx = TODOM["A", y]
		chain("A", steps("A", "g|post|Qx d|pull|Qx d|copy|Qx d|cqe|Qy|recv:Dy g|cqe|Qy|recv " \
				 "g|post|Qy d|pull|Qy d|copy|Qy d|cqe|Qx|recv:Dx g|cqe|Qx|recv",
				 x, y, dx, dy))
		Y = "QP " y
		bell_hops("A|1", X)
		hop("A|2", "dom0 pull -> copy into " Y "'"'"'s receive")
		hop("A|3", "copy -> CQE in " Y "'"'"'s CQ")
		cqe_hops("A|4", Y, "")
		hop("A|5", Y " polled -> " Y " post_send (program)")
		bell_hops("A|6", Y)
		hop("A|7", "dom0 pull -> copy into " X "'"'"'s receive")
		hop("A|8", "copy -> CQE in " X "'"'"'s CQ")
		cqe_hops("A|9", X, "")
		hop("A|rt", "round trip: " X " post -> reply polled")
		printf "%s: local path, QP %s (dom %s) <-> QP %s (dom %s); clock %.1f MHz (%s)\n",
		       me, x, dx, y, dy, HZ["A"] / 1e6, HOW["A"]
	} else if (N["A|d|dpost|" x] > 0) {
		dx = DOM["A", x]
		chain("A", steps("A", "g|post|Qx d|pull|Qx d|dpost|Qx d|drecv|Qx d|cqe|Qx|recv:Dx " \
				 "g|cqe|Qx|recv", x, "", dx, ""))
		ack("A", x)
		bell_hops("A|1", X)
		hop("A|2", "dom0 pull -> device post")
		hop("A|3", "device post -> reply'"'"'s device completion (wire + remote)")
		hop("A|ack", "  (device post -> send'"'"'s device completion)")
		hop("A|4", "device completion -> CQE in " X "'"'"'s CQ")
		cqe_hops("A|5", X, "")
		hop("A|rt", "round trip: " X " post -> reply polled")
		printf "%s: device path, this node QP %s (dom %s); clock %.1f MHz (%s)\n",
		       me, x, dx, HZ["A"] / 1e6, HOW["A"]
		if ("B" in HZ) remote()
	} else {
		fail("no dom0 stamps (copy or dpost) for QP " x ": the dom0 dump of the same node?")
	}
	printf "%-58s %10s %6s\n", "hop", "median_us", "n"
	for (i = 1; i <= NH; i++) show(HOPS[i])
	printf "%s: %d iterations, %d complete\n", me, ITER["A"], FULL["A"]
	if ("B" in HZ) printf "%s: remote: %d iterations, %d complete\n", me, ITER["B"], FULL["B"]
	if (wire != "") printf "%-58s %10.3f\n", "wire, both ways (less the remote turnaround)", wire
	# A budget of no whole iteration says nothing: fail, as a run would.
	if (!FULL["A"]) fail("no complete iteration on this node")
	if (REMOTE && !FULL["B"]) fail("no complete iteration in the remote node'"'"'s files")
}
'
