# SPDX-License-Identifier: GPL-3.0-or-later
# Integration tests of TUN offloads (packet/offload.hh): TCP super-packets cross the ferry when
# offloads are on (the default) and only MTU-sized packets when MAHIMAHI_OFFLOAD=0; the shells
# that decide per packet still decide per wire packet (loss, the link and its log); what they
# cut is valid TCP; UDP is unaffected. In the test world (world.sh); iperf3's server is the world
# itself, reached from inside the shells at $MAHIMAHI_BASE. PACKET_PROBE is tests/tools/packet_probe.

# Runs iperf3 (ARGS) through `mm-delay 0` with MAHIMAHI_OFFLOAD=$1, probing the shell's devices
# on both sides; prints the probe's lines (inner first).
offload_probe() {  # 0|1 IPERF_ARGS
  port=$(free_port) || return 1
  iperf_server "$port" || return 1
  in_world "$PACKET_PROBE" 'delay-*' -- env MAHIMAHI_OFFLOAD="$1" "$BIN/mm-delay" 0 -- \
    "$PACKET_PROBE" ingress -- sh -c "iperf3 -c \$MAHIMAHI_BASE -p $port $2 -t 2 >/dev/null" 2>&1 | grep '^packet-probe:'
}

# "packet-probe: DEV packets N largest L above-1500 K" -> "N L K"
probe_figures() { awk '{ print $4, $6, $8 }'; }

test_offload_super_packets_cross_the_ferry_and_not_without_offloads() {
  status=0
  for direction in "" -R; do
    on=$(offload_probe 1 "$direction"); off=$(offload_probe 0 "$direction")
    echo "  iperf3 ${direction:-up}, offloads on:"; echo "$on" | sed 's/^/    /'
    echo "  offloads off:"; echo "$off" | sed 's/^/    /'
    [ "$(echo "$on" | wc -l)" = 2 ] && [ "$(echo "$off" | wc -l)" = 2 ] || { fail "a probe printed nothing"; return 1; }
    # On: both devices carry super-packets (far above the 1500-byte MTU), in the data's direction.
    while read -r packets largest above; do
      [ "$packets" -gt 1000 ] && [ "$largest" -gt 15000 ] && [ "$above" -gt 100 ] ||
        { fail "offloads on: expected super-packets on both sides"; status=1; }
    done < <(echo "$on" | probe_figures)
    # Off: nothing larger than the MTU, anywhere.
    while read -r packets largest above; do
      [ "$packets" -gt 1000 ] && [ "$largest" -le 1500 ] && [ "$above" = 0 ] ||
        { fail "offloads off: expected MTU-sized packets only"; status=1; }
    done < <(echo "$off" | probe_figures)
  done
  return $status
}

# The world's TCP counters (TcpOutSegs TcpRetransSegs), absolute.
# (nstat -s: absolute counters, and no history file left in /tmp.)
world_tcp_segments() { in_world nstat -saz TcpOutSegs TcpRetransSegs | awk '$1 == "TcpOutSegs" { o = $2 } $1 == "TcpRetransSegs" { r = $2 } END { print o, r }'; }

test_offload_loss_is_decided_per_wire_packet() {
  # A bulk download through mm-loss downlink 0.01: the world's sender retransmits about 1 % of
  # the segments it sends, with offloads as without. Were a super-packet dropped or kept whole,
  # losses would come 40 segments at a time and the rate would be far from 1 %. Paced at 300
  # Mbit/s so that no queue overflows add losses of their own. The receiver inside the shell
  # gets every byte (iperf3's counts agree) and no segment with a bad checksum.
  status=0
  for offload in 1 0; do
    port=$(free_port) || return 1
    iperf_server "$port" || return 1
    in_world ip tcp_metrics flush all 2>/dev/null || true
    set -- $(world_tcp_segments)
    out=$(in_world env MAHIMAHI_OFFLOAD=$offload "$BIN/mm-loss" downlink 0.01 -- sh -c \
      "iperf3 -c \$MAHIMAHI_BASE -p $port -R -b 300M -n 150M -J | grep -E '\"bytes\":'; nstat -saz TcpInCsumErrors TcpExtTCPCsumErrors 2>/dev/null")
    set -- $(world_tcp_segments) "$1" "$2"
    sent=$(( $1 - $3 )); retransmitted=$(( $2 - $4 ))
    rate=$(awk -v r="$retransmitted" -v s="$sent" 'BEGIN { printf "%.3f", 100 * r / s }')
    echo "  MAHIMAHI_OFFLOAD=$offload: $retransmitted of $sent segments retransmitted ($rate %)"
    check_range "retransmitted (% of segments, offloads $offload)" "$rate" 0.6 2.0 || status=1
    # iperf3 -J: the last two "bytes" are the sender's and the receiver's totals. The receiver got
    # every byte asked for (150 MiB) and no more than was sent. How far past -n the sender goes is
    # iperf3's own affair, not the shell's: with -R the server keeps sending until the client's
    # stop crosses back, and its count has run from part of a 128 KiB block (157417472 sent,
    # 157415272 received, with ASan) to 3.5 MB past (160.8 MB, a full suite on both cores).
    totals=$(echo "$out" | grep -o '"bytes":[[:space:]]*[0-9]*' | grep -o '[0-9]*$' | tail -2 | tr '\n' ' ')
    set -- $totals
    [ $# = 2 ] && [ "$2" -ge 157286400 ] && [ "$2" -le "$1" ] ||
      { fail "byte counts (sent, received): $totals"; status=1; }
    errors=$(echo "$out" | awk '$1 ~ /CsumErrors/ { n += $2 } END { print n + 0 }')
    [ "$errors" = 0 ] || { fail "$errors checksum errors inside the shell"; status=1; }
  done
  return $status
}

test_offload_link_log_lists_wire_packets_at_their_opportunities() {
  # Super-packets go into the link, wire packets come out: every arrival and departure in the
  # log is at most 1500 bytes, each departure is at an opportunity, and by any millisecond no
  # more bytes have left than the opportunities until then could carry (1500 bytes each).
  log=$WORLD_TMP/offload-up.log
  port=$(free_port) || return 1
  iperf_server "$port" || return 1
  in_world env MAHIMAHI_OFFLOAD=1 "$BIN/mm-link" rate:12Mbit/s rate:1Gbit/s --uplink-log="$log" -- \
    sh -c "iperf3 -c \$MAHIMAHI_BASE -p $port -t 3 >/dev/null" || { fail "iperf3 through mm-link"; return 1; }
  awk '$2 == "-" { n++; if ($3 > max) max = $3; if ($3 > 1500) big++; out[$1] += $3 }
       $2 == "+" { if ($3 > 1500) bigin++ }
       $2 == "#" { opp[$1]++; if ($1 > last) last = $1 }
       END {
         for (t = 0; t <= last; t++) {
           capacity += 1500 * opp[t]; sent += out[t]
           if (out[t] > 0 && !opp[t]) off++
           if (sent > capacity) ahead++
         }
         printf "  %d departures, largest %d bytes; over 1500 bytes: %d in, %d out; %d departures off an opportunity, %d ms ahead of capacity\n", n, max, bigin, big, off, ahead
         exit !(n > 2000 && max <= 1500 && big == 0 && bigin == 0 && off == 0 && ahead == 0) }' "$log" ||
    fail "the log's departures are not wire packets at their opportunities"
}

test_offload_udp_crosses_the_shells_unchanged() {
  # UDP takes the path it always took (no offload applies to it): every datagram of a steady
  # 20 Mbit/s stream arrives, through a delay and a loss shell of rate 0, with offloads on.
  port=$(free_port) || return 1
  iperf_server "$port" || return 1
  out=$(in_world env MAHIMAHI_OFFLOAD=1 "$BIN/mm-delay" 1 "$BIN/mm-loss" uplink 0 -- \
    sh -c "iperf3 -c \$MAHIMAHI_BASE -p $port -u -b 20M -l 1400 -t 2 -f k" | grep receiver)
  echo "  $out"
  lost=$(echo "$out" | grep -o '[0-9]*/[0-9]*' | tail -1)
  [ -n "$lost" ] || { fail "no receiver line"; return 1; }
  check_range "datagrams lost (of ${lost#*/})" "${lost%/*}" 0 2
}

test_offload_variable_and_verbose() {
  rc_msg 2 "MAHIMAHI_OFFLOAD must be 0" in_world env MAHIMAHI_OFFLOAD=yes "$BIN/mm-delay" 0 true || return 1
  # 1 asks for offloads and says why if the kernel refuses; this one has them: nothing to say.
  out=$(in_world env MAHIMAHI_OFFLOAD=1 "$BIN/mm-delay" 0 true 2>&1)
  [ -z "$out" ] || fail "unexpected output: $out" || return 1
  # --verbose says which path the shell took, in every kind of packet shell.
  out=$(in_world "$BIN/mm-delay" 0 --verbose "$BIN/mm-loss" --verbose uplink 0 \
        "$BIN/mm-link" --verbose rate:1Gbit/s rate:1Gbit/s -- true 2>&1)
  echo "$out" | sed 's/^/  /'
  [ "$(echo "$out" | grep -c ': TUN offloads on (checksum, TCP/IPv4 segmentation')" = 3 ] ||
    fail "expected a line from each of the three shells" || return 1
  out=$(in_world env MAHIMAHI_OFFLOAD=0 "$BIN/mm-onoff" --verbose uplink 1000 0 true 2>&1)
  [ "$out" = "mm-onoff: TUN offloads off (MAHIMAHI_OFFLOAD=0): one packet per read and write" ] ||
    fail "MAHIMAHI_OFFLOAD=0 --verbose: $out"
}

# Sends 1000 datagrams of 1200 bytes, 10 per send() with UDP_SEGMENT, through SHELL... with
# MAHIMAHI_OFFLOAD=$1, probing the inner device; prints the probe's line and the receiver's.
udp_gso_through() {  # 0|1 SHELL...
  offload=$1; shift
  port=$((6000 + RANDOM % 500))
  # Started without in_world's function, so that $! is the receiver itself (ip execs it).
  ip netns exec "$WORLD" "$UDP_GSO" receive "$port" > "$WORLD_TMP/udp-received" & receiver=$!
  wait_until 10 grep -q listening "$WORLD_TMP/udp-received" || { fail "receiver not listening"; return 1; }
  in_world env MAHIMAHI_OFFLOAD="$offload" "$@" -- "$PACKET_PROBE" ingress -- \
    sh -c "exec '$UDP_GSO' send \$MAHIMAHI_BASE $port 1000 1200 10" 2>&1 | grep '^packet-probe:'
  # The shell has exited: all it carried is in the receiver's socket.
  kill -TERM "$receiver"; wait "$receiver"
  grep '^received' "$WORLD_TMP/udp-received"
}

test_offload_udp_segmentation_is_cut_per_datagram() {
  # A program sending with UDP_SEGMENT: with offloads the shell's device takes 10-datagram
  # super-packets (12 KB), without them 1228-byte datagrams. mm-delay carries all 1000;
  # mm-loss with a seed drops exactly the datagrams it drops without offloads (the same
  # decisions for the same arrival sequence), about 30 % of them.
  status=0
  set -- $(udp_gso_through 1 "$BIN/mm-delay" 0 | tr '\n' ' ')
  echo "  mm-delay 0, offloads: probe: $*"
  [ "$6" -gt 10000 ] && [ "${10}" = 1000 ] || { fail "expected super-packets in and 1000 datagrams out"; status=1; }
  # The same decisions need the same arrival sequence: a packet of the kernel's own that crosses
  # the shell among the datagrams (seen once: 1002 packets where 1000 were sent) shifts the
  # seeded draws. Such a pair is run again (at most three times), saying so.
  local attempt on_count off_count
  for attempt in 1 2 3; do
    on=$(udp_gso_through 1 "$BIN/mm-loss" uplink 0.3 --seed 7 | tr '\n' ' ')
    off=$(udp_gso_through 0 "$BIN/mm-loss" uplink 0.3 --seed 7 | tr '\n' ' ')
    on_count=$(echo "$on" | awk '{ print $4 }') off_count=$(echo "$off" | awk '{ print $4 }')
    [ "$on_count" = 100 ] && [ "$off_count" = 1000 ] && break
    echo "  attempt $attempt: $on_count and $off_count packets crossed the shell, not 100 and 1000: again"
  done
  echo "  mm-loss uplink 0.3 --seed 7, offloads: $on"
  echo "  the same, MAHIMAHI_OFFLOAD=0:         $off"
  set -- $on; on_largest=$6 on_received=${10} on_digest=${12}
  set -- $off; off_largest=$6 off_received=${10} off_digest=${12}
  [ "$on_largest" -gt 10000 ] && [ "$off_largest" -le 1500 ] || { fail "probe sizes"; status=1; }
  [ "$on_digest" = "$off_digest" ] || { fail "different datagrams dropped with and without offloads"; status=1; }
  loss_check "uplink 0.3" 1000 0.7 "$on_received" || status=1
  return $status
}
