# SPDX-License-Identifier: GPL-3.0-or-later
# Integration tests of mm-monkey (Monkey See) in the test world (world.sh): a capture whose truth
# is known, made with tcpdump next to a real HTTP server in the world while curl downloads through
# shells of a known delay and rate, then read as an ordinary user. BIN is the directory of the
# installed programs; TEST_USER an ordinary user.

# At least COUNT segments with FIN in CAPTURE.
capture_has_fins() { [ "$(tcpdump -r "$1" 'tcp[tcpflags] & tcp-fin != 0' 2>/dev/null | wc -l)" -ge "$2" ]; }

# Monkey See gives back the path the connections took: mm-delay 20 (40 ms round trip) and a
# 10 Mbit/s link. The truth a packet meets: the handshake's small packets add their own
# serialisation (0.1 ms) to the 40 ms; the bandwidth is the link's rate of IP bytes.
test_monkey_see_gives_back_a_known_paths_rtt_and_bandwidth() {
  local dir=$WORLD_TMP/monkey port status=0 server tcpdump
  mkdir -p "$dir" && chmod 755 "$dir"
  head -c 300000 /dev/urandom > "$dir/blob"
  port=$(free_port) || return 1
  ip netns exec "$WORLD" python3 -m http.server "$port" --bind 0.0.0.0 --directory "$dir" >/dev/null 2>&1 &
  server=$!
  wait_until 10 listening "$WORLD" tcp "$port" || { kill "$server"; fail "no HTTP server"; return 1; }
  ip netns exec "$WORLD" tcpdump -i any --immediate-mode -s 200 -U -w "$dir/server.pcap" "tcp port $port" 2>"$dir/tcpdump.err" &
  tcpdump=$!
  wait_until 10 grep -q 'listening on' "$dir/tcpdump.err" || status=1
  in_world "$BIN/mm-delay" 20 "$BIN/mm-link" rate:10Mbit/s rate:10Mbit/s -- \
    sh -c "for i in 1 2 3; do curl -sf -o /dev/null http://\$MAHIMAHI_BASE:$port/blob || exit 1; done" || status=1
  # Every connection's two FINs written (tcpdump hands packets over as they come), then stopped.
  wait_until 10 capture_has_fins "$dir/server.pcap" 6 || status=1
  kill -INT "$tcpdump"; wait "$tcpdump"
  kill "$server"; wait "$server" 2>/dev/null
  [ "$status" = 0 ] || { fail "the capture or the downloads failed: $(cat "$dir/tcpdump.err")"; return 1; }
  chmod 644 "$dir/server.pcap"
  AS_USER=$TEST_USER in_world "$BIN/mm-monkey" see "$dir/server.pcap" -o - >"$dir/workload" 2>"$dir/summary" ||
    { fail "mm-monkey see failed: $(cat "$dir/summary")"; return 1; }
  cat "$dir/summary"
  [ "$(grep -c '^C' "$dir/workload")" = 3 ] || { fail "not 3 connections: $(cat "$dir/workload")"; return 1; }
  [ "$(grep -c '^E' "$dir/workload")" = 3 ] || { fail "not 3 exchanges: $(cat "$dir/workload")"; return 1; }
  # Each connection: RTT within 5 % of 40 ms, bandwidth within 15 % of 10 Mbit/s, no loss, the
  # response of 300000 bytes (and the headers), an HTTP request, no flag.
  awk -F'\t' '$1 == "C" {
      if ($9 < 40 || $9 > 42) { print "RTT " $9 " ms of connection " $2; bad = 1 }
      if ($12 == "-" || $12 < 8.5 || $12 > 11.5) { print "bandwidth " $12 " Mbit/s of connection " $2; bad = 1 }
      if ($14 != "0.0000") { print "loss " $14 " of connection " $2; bad = 1 }
      if ($32 != "-") { print "flags " $32 " of connection " $2; bad = 1 }
    }
    $1 == "E" && ($9 < 300000 || $9 > 301000 || $12 != 1) { print "exchange: " $0; bad = 1 }
    END { exit bad }' "$dir/workload" || { fail "inferred values off the truth"; return 1; }
  echo "  $(awk -F'\t' '$1 == "C" { printf "RTT %s ms, %s Mbit/s; ", $9, $12 }' "$dir/workload")"
}

# What is not a capture, or is cut short, gives one clear line, and no workload is lost.
test_monkey_see_refuses_what_it_cannot_read_in_one_line() {
  local dir=$WORLD_TMP/monkey-bad out
  mkdir -p "$dir" && chmod 777 "$dir"
  echo "not a capture" > "$dir/text.pcap"
  out=$(AS_USER=$TEST_USER in_world "$BIN/mm-monkey" see "$dir/text.pcap" -o "$dir/w" 2>&1) &&
    { fail "a text file was read: $out"; return 1; }
  [ "$(echo "$out" | wc -l)" = 1 ] && echo "$out" | grep -q 'cannot read capture' || { fail "message: $out"; return 1; }
  out=$(AS_USER=$TEST_USER in_world "$BIN/mm-monkey" see -o "$dir/w2" 2>&1) && { fail "no CAPTURE accepted"; return 1; }
  echo "$out" | grep -q 'see takes one CAPTURE' || { fail "usage message: $out"; return 1; }
}

# The same packets under each link type and file format Monkey reads (tcpdump -i any's Linux
# cooked v2 in microseconds; Ethernet with an 802.1Q tag in nanoseconds; pcapng of raw IP: the
# fuzz target's seeds) give the same workload.
test_monkey_see_reads_every_link_type_and_format_alike() {
  local dir=$WORLD_TMP/monkey-formats f first=
  mkdir -p "$dir" && chmod 777 "$dir"
  for f in linux-cooked-v2.pcap ethernet-vlan-ns.pcap raw-ip.pcapng; do
    AS_USER=$TEST_USER in_world "$BIN/mm-monkey" see "$top/src/fuzz/corpus/capture/$f" -o - 2>"$dir/$f.err" |
      grep -v '^# capture:' >"$dir/$f.workload" || { fail "$f: $(cat "$dir/$f.err")"; return 1; }
    [ "$(grep -c '^C' "$dir/$f.workload")" = 2 ] || { fail "$f: not 2 connections: $(cat "$dir/$f.workload")"; return 1; }
    if [ -z "$first" ]; then
      first=$f
    else
      cmp -s "$dir/$first.workload" "$dir/$f.workload" ||
        { fail "$f differs from $first: $(diff "$dir/$first.workload" "$dir/$f.workload" | head -5)"; return 1; }
    fi
  done
  echo "  3 formats, the same 2 connections"
}
