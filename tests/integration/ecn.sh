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
