# SPDX-License-Identifier: GPL-3.0-or-later
# Integration tests of ECN: the link queues marking CE instead of dropping (codel, fq_codel,
# pie), the log's mark lines, and the shells' --tcp-ecn option, in the test world (world.sh), as
# an ordinary user. iperf3's server is the world itself, reached at $MAHIMAHI_BASE; this host
# allows only reno and bbr in a namespace (BBR ignores ECN): the senders use reno.

# A counter of the world namespace's /proc/net/netstat, e.g. IpExt InCEPkts.
world_netstat() {  # GROUP NAME
  ip netns exec "$WORLD" awk -v g="$1:" -v f="$2" \
    '$1 == g && !n { for (i = 2; i <= NF; i++) c[$i] = i; n = 1; next } $1 == g { print $(c[f]); exit }' /proc/net/netstat
}

test_tcp_ecn_option_sets_the_shells_namespace_and_those_inside() {
  local out mode
  for mode in on:1 accept:2 off:0; do
    out=$(AS_USER=$TEST_USER in_world "$BIN/mm-delay" --tcp-ecn="${mode%:*}" 0 cat /proc/sys/net/ipv4/tcp_ecn) ||
      fail "mm-delay --tcp-ecn=${mode%:*}" || return 1
    [ "$out" = "${mode#*:}" ] || fail "--tcp-ecn=${mode%:*}: tcp_ecn $out, expected ${mode#*:}" || return 1
  done
  # Shells inside take the mode of the one they start in (a new namespace would have 2).
  out=$(AS_USER=$TEST_USER in_world "$BIN/mm-link" --tcp-ecn=on rate:12Mbit/s rate:12Mbit/s -- \
    "$BIN/mm-delay" 1 "$BIN/mm-loss" uplink 0 cat /proc/sys/net/ipv4/tcp_ecn)
  [ "$out" = 1 ] || fail "nested in --tcp-ecn=on: tcp_ecn $out" || return 1
  out=$(AS_USER=$TEST_USER in_world "$BIN/mm-delay" --tcp-ecn=on 0 "$BIN/mm-delay" --tcp-ecn=off 0 cat /proc/sys/net/ipv4/tcp_ecn)
  [ "$out" = 0 ] || fail "an inner --tcp-ecn=off: tcp_ecn $out" || return 1
  # mm-replay: the namespace of its servers and the command.
  local home=$WORLD_TMP/ecn-home
  rm -rf "$home" && mkdir -p "$home" && chown "$TEST_USER" "$home"
  out=$(AS_USER=$TEST_USER in_world env HOME="$home" "$BIN/mm-replay" --tcp-ecn=on "$top/recordings/demo-site" \
    cat /proc/sys/net/ipv4/tcp_ecn)
  [ "$out" = 1 ] || fail "mm-replay --tcp-ecn=on: tcp_ecn $out" || return 1
  # The world's own setting is untouched.
  [ "$(in_world cat /proc/sys/net/ipv4/tcp_ecn)" = 2 ] || fail "the world's tcp_ecn changed" || return 1
  rc_msg 2 "--tcp-ecn must be on (TCP asks for ECN and accepts it), accept" in_world "$BIN/mm-delay" --tcp-ecn=yes 0 true
}

# Reno with ECN through a 12 Mbit/s link whose queue is QUEUE (ARGS); prints "goodput marks
# drops ce median_delay p95_delay" (Mbit/s, packets, packets, packets the receiver counted CE,
# ms in the queue and on the link after the first 2 s).
ecn_reno_run() {  # TCP-ECN QUEUE ARGS
  local dir=$WORLD_TMP/ecn port ce0 ce1 goodput
  rm -rf "$dir" && mkdir -p "$dir" && chown "$TEST_USER" "$dir"
  port=$(free_port) || return 1
  iperf_server "$port" || return 1
  in_world ip tcp_metrics flush all 2>/dev/null || true
  ce0=$(world_netstat IpExt InCEPkts)
  goodput=$(AS_USER=$TEST_USER in_world "$BIN/mm-delay" --tcp-ecn="$1" 20 "$BIN/mm-link" rate:12Mbit/s rate:1Gbit/s \
    --uplink-queue="$2" --uplink-queue-args="$3" --uplink-log="$dir/up.log" -- \
    sh -c "iperf3 -c \$MAHIMAHI_BASE -p $port -C reno -t ${ECN_SECONDS:-10} -f k" | iperf_receiver_mbits)
  ce1=$(world_netstat IpExt InCEPkts)
  local counts delays
  counts=$(awk '$1 !~ /^#/ && $2 == "m" { m += $3 } $1 !~ /^#/ && $2 == "d" { d += $3 } END { print m + 0, d + 0 }' "$dir/up.log")
  delays=$(awk '$1 ~ /^#/ { next } first == "" && $2 == "+" { first = $1 } $2 == "-" && $1 >= first + 2000 { print $4 }' \
    "$dir/up.log" | sort -n | awk '{ d[NR] = $1 } END { print d[int(NR / 2) + 1], d[int(NR * 0.95) + 1] }')
  echo "$goodput $counts $((ce1 - ce0)) $delays"
}

test_codel_marks_reno_with_ecn_instead_of_dropping() {
  local goodput marks drops ce median p95
  # ECN on, 40 ms of round trip (mm-delay 20 around the link): CoDel marks instead of dropping,
  # the receiver sees every mark, and the queue stays near CoDel's target (5 ms; the log's
  # delays include the 1 ms on the link): a single Reno flow halves its window at each mark and
  # the queue empties between them (the median), so the link is not always busy.
  set -- $(ecn_reno_run on codel "")
  goodput=$1 marks=$2 drops=$3 ce=$4 median=$5 p95=$6
  echo "  ECN on: $goodput Mbit/s, $marks marked, $drops dropped, $ce CE at the receiver, delay median $median p95 $p95 ms"
  [ "$marks" -gt 5 ] || fail "codel marked $marks packets" || return 1
  [ "$drops" = 0 ] || fail "codel dropped $drops packets of an ECN flow" || return 1
  [ "$ce" = "$marks" ] || fail "the receiver counted $ce CE packets, the log $marks marks" || return 1
  check_range "goodput (Mbit/s)" "$goodput" 8 11.7 || return 1
  check_range "p95 delay (ms)" "$p95" 1 20 || return 1
  # ECN off: the same flow gets drops and no marks.
  set -- $(ecn_reno_run off codel "")
  echo "  ECN off: $1 Mbit/s, $2 marked, $3 dropped, $4 CE at the receiver, delay median $5 p95 $6 ms"
  [ "$2" = 0 ] && [ "$4" = 0 ] && [ "$3" -gt 5 ] || fail "without ECN: $2 marks, $3 drops, $4 CE" || return 1
  # ecn=0 in the queue: drops although the flow is ECN-capable.
  set -- $(ecn_reno_run on codel "ecn=0")
  echo "  queue ecn=0: $1 Mbit/s, $2 marked, $3 dropped"
  [ "$2" = 0 ] && [ "$3" -gt 5 ] || fail "codel ecn=0: $2 marks, $3 drops" || return 1
}

# A udp-flow receiver (tests/tools/udp_flow.cc) in the world on PORT, its report into FILE;
# sets FLOW_RECEIVER to its pid.
flow_receiver_start() {  # PORT FILE [LATE-MS]
  ip netns exec "$WORLD" "$UDP_FLOW" receive "$1" ${3:+"$3"} > "$2" 2>&1 &
  FLOW_RECEIVER=$!
  wait_until 10 listening "$WORLD" udp "$1" || { echo "udp-flow receiver on port $1 did not start" >&2; return 1; }
}
# Ends it; prints its report's "received N ce C delay_p50_ms A delay_p99_ms B late L late_ce M"
# as "N C A B L M".
# Called in a command substitution (a subshell, which cannot wait for the receiver): waits for
# the report's line instead.
flow_receiver_report() {  # FILE
  kill -TERM "$FLOW_RECEIVER"
  wait_until 10 grep -q '^received ' "$1" ||
    { echo "the udp-flow receiver said: $(cat "$1")" >&2; echo "0 0 0 0 0 0"; return 1; }
  awk '{ print $2, $4, $6, $8, $10, $12 }' "$1"
}

test_dualpi2_l4s_udp_beside_reno() {
  local dir=$WORLD_TMP/dualpi2 tcp_port udp_port out reno status marks
  rm -rf "$dir" && mkdir -p "$dir" && chown "$TEST_USER" "$dir"
  tcp_port=$(free_port) && iperf_server "$tcp_port" || return 1
  udp_port=$(free_port) && flow_receiver_start "$udp_port" "$dir/udp" || return 1
  in_world ip tcp_metrics flush all 2>/dev/null || true
  # A smooth UDP flow marking ECT(1) (L4S) at half of a 48 Mbit/s link's rate, beside a Reno
  # flow without ECN (the classic queue), 4 ms of round trip. The L4S packets' queueing delay
  # includes the rest of the classic packet on the link when they arrive, and for one in ten
  # one more (the round robin's turn for classic traffic): 0.25 ms each at 48 Mbit/s, 1 ms at
  # 12 Mbit/s, where mm-link's opportunities also come only every millisecond.
  out=$(AS_USER=$TEST_USER in_world "$BIN/mm-delay" 2 "$BIN/mm-link" rate:48Mbit/s rate:1Gbit/s \
    --uplink-queue=dualpi2 --uplink-log="$dir/mix.log" -- sh -c "
      '$UDP_FLOW' send \$MAHIMAHI_BASE $udp_port 24 1000 10 1 &
      iperf3 -C reno -c \$MAHIMAHI_BASE -p $tcp_port -t 10 -f k; wait")
  reno=$(echo "$out" | iperf_receiver_mbits)
  set -- $(flow_receiver_report "$dir/udp")
  marks=$(awk '$1 !~ /^#/ && $2 == "m" { n += $3 } END { print n + 0 }' "$dir/mix.log")
  echo "  Reno $reno Mbit/s; L4S UDP: $1 received, $2 with CE ($marks marks in the log), queueing delay p50 $3 ms, p99 $4 ms"
  check_range "Reno's goodput beside L4S UDP at 24 Mbit/s (Mbit/s; 40 % of the link is 19.2)" "$reno" 19.2 24.8 ||
    return 1
  # 10 s of 24 Mbit/s in 1028-byte IP packets: 29183 datagrams.
  [ "$1" -gt 29000 ] || fail "only $1 of the 29183 L4S datagrams arrived" || return 1
  check_range "L4S queueing delay p99 (ms)" "$4" 0 2 || return 1
  # Reno's packets are not ECN-capable: every mark is one of the L4S flow's.
  [ "$2" = "$marks" ] && [ "$2" -gt 0 ] || fail "$2 CE at the receiver, $marks marks in the log" || return 1
  # Alone at one and a half times the link's rate, the L4S queue builds: the datagrams that
  # waited more than the 1 ms step leave marked. Seen from the receiver, those over 2 ms beyond
  # the fastest trip (the step, an opportunity of the link's, and a margin for the machine's own
  # delays outside the queue, which the unit tests do not have: there every one is marked).
  udp_port=$(free_port) && flow_receiver_start "$udp_port" "$dir/alone" 2 || return 1
  AS_USER=$TEST_USER in_world "$BIN/mm-link" rate:48Mbit/s rate:1Gbit/s --uplink-queue=dualpi2 -- \
    sh -c "'$UDP_FLOW' send \$MAHIMAHI_BASE $udp_port 72 1000 2 1"; status=$?
  set -- $(flow_receiver_report "$dir/alone")
  [ "$status" = 0 ] || fail "the shell of the L4S flow alone exited $status" || return 1
  echo "  L4S UDP alone at 72 Mbit/s: $1 received, $2 with CE; $5 waited over 2 ms, $6 of them with CE"
  [ "$5" -gt 1000 ] && [ "$((1000 * $6))" -ge "$((999 * $5))" ] ||
    fail "the step: $6 of the $5 late datagrams marked (at least 99.9 %)" || return 1
}
