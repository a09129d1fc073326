# SPDX-License-Identifier: GPL-3.0-or-later
# Integration tests of mm-paths (per-peer paths, packet/peer_paths.hh) in the test world
# (world.sh): peers are addresses of the world's loopback, each on its own path, reached by ping
# and iperf3 from inside the shell (a client inside, servers outside) and from the world into
# the shell (a server inside, clients outside: Monkey Do's way round). As an ordinary user.

PEER_A=198.51.100.11 PEER_B=198.51.100.12 PEER_C=198.51.100.13

paths_peers_add() { for a in $PEER_A $PEER_B $PEER_C; do in_world ip addr add "$a/32" dev lo || return 1; done; }
paths_peers_remove() { for a in $PEER_A $PEER_B $PEER_C; do in_world ip addr del "$a/32" dev lo 2>/dev/null; done; true; }

# "received avg" of ping -c COUNT to ADDRESS, from the ping output on standard input.
ping_avg() { ping_stats | awk '{ print $1, $3 }'; }

test_paths_each_peer_at_its_own_delay() {
  # A peer's own line, a prefix's line for the rest of the /24, and nothing for the world's
  # own address: RTTs 60 (30 each way), 50 (5 out, 45 back), 20 (the prefix) and about 0.
  local file=$WORLD_TMP/delays.paths status=0
  paths_peers_add || { paths_peers_remove; fail "could not add the peers' addresses"; return 1; }
  printf '# peers\n%s delay=30\n198.51.100.0/24 delay=10  # the rest\n' "$PEER_A" > "$file"
  chmod 644 "$file"
  out=$(AS_USER=$TEST_USER in_world "$BIN/mm-paths" "$file" --path="$PEER_B delay=5,45" -- sh -c \
    "for a in $PEER_A $PEER_B $PEER_C \$MAHIMAHI_BASE; do ping -n -c 10 -i 0.05 -q \$a; done")
  paths_peers_remove
  i=0
  for range in "59.5 63" "49.5 53" "19.5 23" "0 3"; do
    i=$((i + 1))
    set -- $(echo "$out" | awk -v n="$i" '/packets transmitted/ { k++ } k == n' | ping_avg)
    [ "${1:-0}" = 10 ] || { fail "ping $i: ${1:-0} of 10 replies"; status=1; continue; }
    check_range "RTT to peer $i (ms)" "$2" $range || status=1
  done
  return $status
}

test_paths_each_peer_at_its_own_rate_at_once() {
  # Two uploads at once, to a peer on a 20 Mbit/s path and one on a 5 Mbit/s path: each gets its
  # own rate (less TCP/IP headers), and neither's backlog holds up the other.
  local status=0 pa pb dir=$WORLD_TMP/paths-rates
  mkdir -p "$dir" && chmod 777 "$dir"
  paths_peers_add || { paths_peers_remove; fail "could not add the peers' addresses"; return 1; }
  pa=$(free_port) && iperf_server "$pa" && pb=$(free_port) && iperf_server "$pb" || { paths_peers_remove; return 1; }
  out=$(AS_USER=$TEST_USER in_world "$BIN/mm-paths" --path="$PEER_A delay=10 rate=20Mbit/s" \
    --path="$PEER_B delay=10 rate=5Mbit/s" -- sh -c \
    "iperf3 -c $PEER_A -p $pa -t 4 -f k > \$0.a & iperf3 -c $PEER_B -p $pb -t 4 -f k > \$0.b; wait; cat \$0.a; echo ==; cat \$0.b" \
    "$dir/iperf")
  paths_peers_remove
  a=$(echo "$out" | sed -n '1,/^==$/p' | iperf_receiver_mbits)
  b=$(echo "$out" | sed -n '/^==$/,$p' | iperf_receiver_mbits)
  check_range "goodput on the 20 Mbit/s path (Mbit/s)" "${a:-0}" 17 20 || status=1
  check_range "goodput on the 5 Mbit/s path (Mbit/s)" "${b:-0}" 4.2 5 || status=1
  return $status
}

test_paths_each_peer_loses_its_own() {
  # 10 % lost toward peer A only; nothing toward B. 600 pings each: A's loss within 5-16 %
  # (binomial, 4.5 standard deviations), B's none.
  local status=0
  paths_peers_add || { paths_peers_remove; fail "could not add the peers' addresses"; return 1; }
  out=$(AS_USER=$TEST_USER in_world "$BIN/mm-paths" --path="$PEER_A loss=0.1,0" --path="$PEER_B delay=1" -- sh -c \
    "ping -n -c 600 -i 0.002 -W 1 -q $PEER_A; ping -n -c 600 -i 0.002 -W 1 -q $PEER_B")
  paths_peers_remove
  set -- $(echo "$out" | awk '/packets transmitted/ { k++ } k == 1' | ping_avg)
  check_range "pings lost toward peer A (%)" "$(awk -v r="${1:-0}" 'BEGIN { printf "%.1f", 100 * (600 - r) / 600 }')" 5 16 ||
    status=1
  set -- $(echo "$out" | awk '/packets transmitted/ { k++ } k == 2' | ping_avg)
  [ "${1:-0}" = 600 ] || { fail "peer B: ${1:-0} of 600 replies"; status=1; }
  return $status
}

# The shell's inner address, written by the command inside into FILE.
paths_inner_known() { [ -s "$1" ]; }

test_paths_server_inside_clients_outside_each_on_its_path() {
  # Monkey Do's way round: what runs inside is the server, the peers are its clients. Pings
  # from each client address of the world to the shell's inner address take that client's path.
  local dir=$WORLD_TMP/paths-inside status=0 shell
  mkdir -p "$dir" && chmod 777 "$dir"
  paths_peers_add || { paths_peers_remove; fail "could not add the peers' addresses"; return 1; }
  # The command inside writes its address, then waits (60 s at most) for the test to be done.
  AS_USER=$TEST_USER in_world "$BIN/mm-paths" --path="$PEER_A delay=15" --path="$PEER_B delay=40,0" -- sh -c \
    'ip -o -4 addr show dev ingress | awk "{ sub(\"/.*\", \"\", \$4); print \$4 }" > "$0/inner.new" &&
     mv "$0/inner.new" "$0/inner"; i=0
     while [ ! -e "$0/done" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done' "$dir" &
  shell=$!
  wait_until 20 paths_inner_known "$dir/inner" || { touch "$dir/done"; wait "$shell"; paths_peers_remove; fail "no inner address"; return 1; }
  inner=$(cat "$dir/inner")
  for pair in "$PEER_A 29.5 33" "$PEER_B 39.5 43"; do
    set -- $pair
    set -- $(in_world ping -n -c 10 -i 0.05 -q -I "$1" "$inner" | ping_avg) "$2" "$3"
    [ "${1:-0}" = 10 ] || { fail "ping from $pair: ${1:-0} of 10 replies"; status=1; continue; }
    check_range "RTT from a client outside (ms)" "$2" "$3" "$4" || status=1
  done
  touch "$dir/done"
  wait "$shell" || { fail "mm-paths exited $?"; status=1; }
  paths_peers_remove
  return $status
}

test_paths_bad_input() {
  local bad=$WORLD_TMP/bad.paths
  printf '198.51.100.11 delay=10\n198.51.100.12 dleay=10\n' > "$bad"
  printf '198.51.100.11 delay=10\n198.51.100.11 rate=1Mbit/s\n' > "$bad.twice"
  printf '198.51.100.11 rate=fast\n' > "$bad.rate"
  chmod 644 "$bad" "$bad.twice" "$bad.rate"
  rc_msg 2 'missing PATHS-FILE' in_world "$BIN/mm-paths" &&
    rc_msg 2 '--path: "x" is not an IPv4 address' in_world "$BIN/mm-paths" --path='x delay=1' true &&
    rc_msg 2 '--path: "delay" is no setting' in_world "$BIN/mm-paths" --path='198.51.100.11 delay 2' true &&
    rc_msg 2 'is not a loss probability' in_world "$BIN/mm-paths" --path='198.51.100.11 loss=2' true &&
    rc_msg 1 "$bad line 2: unknown setting \"dleay\"" in_world "$BIN/mm-paths" "$bad" true &&
    rc_msg 1 "$bad.twice line 2: the peer of line 1 again" in_world "$BIN/mm-paths" "$bad.twice" true &&
    rc_msg 1 "$bad.rate line 1: \"fast\" is not a rate" in_world "$BIN/mm-paths" "$bad.rate" true &&
    rc_msg 1 'cannot read paths file' in_world "$BIN/mm-paths" "$WORLD_TMP/no-such.paths" true
}

test_paths_command_tcp_settings_stay_in_the_shell() {
  # --tcp-...: the command's namespace gets the initial window on its default route and its own
  # slow start after idle; the world's are untouched. A server inside with an initial window of
  # 10 sends 12 KB to a client outside 100 ms away in one round trip; with 1, in three or more
  # (1, 2, 4, ... segments; the client's receive window, 10 segments at first, limits neither).
  local before status=0 port dir=$WORLD_TMP/paths-tcp
  mkdir -p "$dir" && chmod 777 "$dir" && head -c 12000 /dev/zero > "$dir/blob"
  before=$(in_world cat /proc/sys/net/ipv4/tcp_slow_start_after_idle)
  out=$(AS_USER=$TEST_USER in_world "$BIN/mm-paths" --path="$WORLD_IP delay=50" --tcp-initial-window=40 \
    --tcp-slow-start-after-idle=off -- sh -c 'ip route show default; cat /proc/sys/net/ipv4/tcp_slow_start_after_idle')
  echo "$out" | sed 's/^/  /'
  echo "$out" | grep -q '^default via .* initcwnd 40' || { fail "no initcwnd 40 on the default route"; status=1; }
  [ "$(echo "$out" | tail -1)" = 0 ] || { fail "slow start after idle is not off"; status=1; }
  [ "$(in_world cat /proc/sys/net/ipv4/tcp_slow_start_after_idle)" = "$before" ] || { fail "the world's changed"; status=1; }
  for window in 10 1; do
    port=$(free_port) || return 1
    # The server inside writes its address and serves one download; the shell ends once the
    # test is done with it (its packets in flight would go with it).
    # (The world reaches the shell from the outer device's address: every peer, 0.0.0.0/0.)
    AS_USER=$TEST_USER in_world "$BIN/mm-paths" --path="0.0.0.0/0 delay=50" --tcp-initial-window=$window -- sh -c \
      'a=$(ip -o -4 addr show dev ingress | awk "{ sub(\"/.*\", \"\", \$4); print \$4 }")
       python3 -c "import http.server as h, functools, sys
s = h.HTTPServer((sys.argv[1], int(sys.argv[2])), functools.partial(h.SimpleHTTPRequestHandler, directory=sys.argv[3]))
open(sys.argv[3] + \"/where\", \"w\").write(sys.argv[1])
s.handle_request()" "$a" "$1" "$2"; i=0
       while [ ! -e "$2/done" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done' sh "$port" "$dir" 2>/dev/null &
    wait_until 10 test -s "$dir/where" || { fail "no server inside"; status=1; break; }
    t=$(in_world curl -s -m 10 -o /dev/null -w '%{time_starttransfer} %{time_total}' "http://$(cat "$dir/where"):$port/blob")
    touch "$dir/done"
    wait
    rm -f "$dir/where" "$dir/done"
    ms=$(echo "$t" | awk '{ printf "%.0f", ($2 - $1) * 1000 }')
    echo "  initial window $window: the 12 KB after its first byte in $ms ms"
    if [ "$window" = 10 ]; then check_range "transfer (ms), window 10" "$ms" 0 60 || status=1
    else check_range "transfer (ms), window 1" "$ms" 150 1000 || status=1; fi
  done
  rc_msg 2 '--tcp-initial-window takes a number of segments from 1 to 1024' \
    in_world "$BIN/mm-paths" --path="$WORLD_IP delay=1" --tcp-initial-window=0 true || status=1
  return $status
}

test_paths_capture_is_the_commands_view() {
  # --capture: pings from inside to a peer 25 ms away each way. In the capture every echo request
  # is stamped when it left the command and its reply when it came back: 50 ms apart, as the
  # command's own ping measured; tcpdump reads the file (it is a pcap), and an existing file is
  # refused before anything runs.
  local dir=$WORLD_TMP/paths-capture status=0 gaps
  mkdir -p "$dir" && chmod 777 "$dir"
  paths_peers_add || { paths_peers_remove; fail "could not add the peers' addresses"; return 1; }
  out=$(AS_USER=$TEST_USER in_world "$BIN/mm-paths" --path="$PEER_A delay=25" --capture="$dir/ping.pcap" -- \
    ping -n -c 20 -i 0.05 -q "$PEER_A")
  set -- $(echo "$out" | ping_avg)
  [ "${1:-0}" = 20 ] || { fail "${1:-0} of 20 replies"; status=1; }
  # Request-to-reply gaps from the capture (tcpdump's own reading of its times).
  gaps=$(tcpdump -n -tt -r "$dir/ping.pcap" icmp 2>/dev/null | awk '
    / echo request/ { for (i = 1; i <= NF; i++) if ($i ~ /^seq/) { s = $(i + 1); sent[s] = $1 } }
    / echo reply/ { for (i = 1; i <= NF; i++) if ($i ~ /^seq/) { s = $(i + 1); if (s in sent) { n++; sum += $1 - sent[s]; if ($1 - sent[s] < min || n == 1) min = $1 - sent[s] } } }
    END { if (n) printf "%d %.2f %.2f\n", n, 1000 * sum / n, 1000 * min }')
  set -- $gaps
  [ "${1:-0}" = 20 ] || { fail "the capture holds ${1:-0} of 20 request/reply pairs"; status=1; }
  check_range "request-to-reply in the capture, mean (ms)" "${2:-0}" 49.9 53 || status=1
  check_range "request-to-reply in the capture, least (ms)" "${3:-0}" 49.9 52 || status=1
  AS_USER=$TEST_USER rc_msg 1 "--capture $dir/ping.pcap already exists" in_world "$BIN/mm-paths" \
    --path="$PEER_A delay=1" --capture="$dir/ping.pcap" -- true || status=1
  paths_peers_remove
  return $status
}
