# SPDX-License-Identifier: GPL-3.0-or-later
# Integration tests of mm-link (rates, traces, queues, logs, --once), mm-trace and the graph
# tools (mm-throughput-graph, mm-delay-graph), and the bounds of their inputs, in the test world
# (world.sh); iperf3's server is the world itself, reached from inside the shells at
# $MAHIMAHI_BASE. BIN is the directory of the installed programs; TEST_USER an ordinary user.

# Ideal TCP goodput through a link of RATE Mbit/s: full-size segments carry 1448 bytes of data
# in 1500-byte IP packets (20 IP + 20 TCP + 12 timestamp option bytes).
ideal_goodput() { awk -v r="$1" 'BEGIN { printf "%.3f", r * 1448 / 1500 }'; }

# iperf3 goodput (Mbit/s, receiver side) through mm-link UP DOWN, steady state (first 2 s omitted).
# Socket buffers are fixed at 2 MB (-w): autotuned ones, with no delay but the queue's, hold
# TCP's standing queue in the link to ~150 KB, about 12 ms at 96 Mbit/s, and a stall of the
# sender or receiver longer than that on a busy 2-core machine left the link idle (full runs
# measured 84.8-91.7 against 92.7, with no retransmission). 2 MB rides through stalls of ~170 ms
# at 96 Mbit/s: what remains is the link's own rate.
link_goodput() {  # UP DOWN up|down SECONDS [extra mm-link options]
  up=$1 down=$2 dir=$3 secs=$4; shift 4
  port=$(free_port) || return 1
  iperf_server "$port" || return 1
  flag=; [ "$dir" = down ] && flag=-R
  # Every shell's outer address is the same (the pool's first /30), so the world's kernel would
  # start this flow with the ssthresh an earlier test's lossy flow left in its TCP metrics cache.
  in_world ip tcp_metrics flush all 2>/dev/null || true
  in_world "$BIN/mm-link" "$up" "$down" "$@" -- sh -c "iperf3 -c \$MAHIMAHI_BASE -p $port $flag -w 2M -O 2 -t $secs -f k" |
    iperf_receiver_mbits
}

test_link_goodput_12_and_96_mbit_both_directions() {
  status=0
  for rate in 12 96; do
    ideal=$(ideal_goodput $rate)
    for dir in up down; do
      if [ $dir = up ]; then g=$(link_goodput rate:${rate}Mbit/s rate:1Gbit/s up 6); else g=$(link_goodput rate:1Gbit/s rate:${rate}Mbit/s down 6); fi
      check_range "$rate Mbit/s $dir goodput (Mbit/s; ideal $ideal)" "$g" \
        "$(awk -v i="$ideal" 'BEGIN { print i * 0.99 }')" "$(awk -v i="$ideal" 'BEGIN { print i * 1.01 }')" || status=1
    done
  done
  return $status
}

test_link_trace_file_matches_rate() {
  # A trace file of one line "1" is 12 Mbit/s, as rate:12Mbit/s is.
  printf '1\n' > "$WORLD_TMP/one.trace"
  g=$(link_goodput "$WORLD_TMP/one.trace" "$WORLD_TMP/one.trace" down 5)
  ideal=$(ideal_goodput 12)
  check_range "goodput through a \"1\" trace (Mbit/s; ideal $ideal)" "$g" "$(awk -v i="$ideal" 'BEGIN { print i * 0.99 }')" \
    "$(awk -v i="$ideal" 'BEGIN { print i * 1.01 }')"
}

test_link_rate_serialises_each_packet_by_its_size() {
  # Ping's 84-byte packets through rate:1.5Mbit/s: 448 us of serialisation each way, 0.9 ms
  # the round trip (plus the ferries' wake-ups). In the original's 1500-byte opportunities
  # (--rate-opportunities, one every 8 ms) each waits for the next: 8 ms on average the round
  # trip, plus the 0.9, and at least 0.9.
  local out
  out=$(in_world "$BIN/mm-link" rate:1.5Mbit/s rate:1.5Mbit/s -- sh -c 'ping -n -c 40 -i 0.03 -q $MAHIMAHI_BASE')
  set -- $(echo "$out" | ping_stats)
  check_range "packets received of 40" "$1" 40 40 || return 1
  check_range "ping RTT min through rate:1.5Mbit/s (ms; serialisation 0.896)" "$2" 0.896 1.6 || return 1
  check_range "ping RTT avg through rate:1.5Mbit/s (ms)" "$3" 0.896 2.5 || return 1
  out=$(in_world "$BIN/mm-link" --rate-opportunities rate:1.5Mbit/s rate:1.5Mbit/s -- \
    sh -c 'ping -n -c 40 -i 0.03 -q $MAHIMAHI_BASE')
  set -- $(echo "$out" | ping_stats)
  check_range "ping RTT avg with --rate-opportunities (ms; about 8 + 0.9)" "$3" 6 17
}

# Shell code that waits (10 s at most) until iperf3's control and data connections to PORT are
# established: from then on it keeps the link's queue full.
loaded_when_connected() {  # PORT
  echo "i=0; until [ \$(ss -Htn state established 'dport = :$1' | wc -l) -ge 2 ] || [ \$i = 200 ]; do sleep 0.05; i=\$((i + 1)); done"
}

test_link_droptail_drops_and_bounds_delay() {
  log=$WORLD_TMP/droptail.log
  port=$(free_port) || return 1
  iperf_server "$port" || return 1
  out=$(in_world "$BIN/mm-link" rate:12Mbit/s rate:1Gbit/s --uplink-queue=droptail --uplink-queue-args=packets=20 \
        --uplink-log="$log" -- sh -c "iperf3 -c \$MAHIMAHI_BASE -p $port -t 4 >/dev/null &
          $(loaded_when_connected "$port"); ping -n -c 10 -i 0.2 -q \$MAHIMAHI_BASE; wait")
  set -- $(echo "$out" | ping_stats)
  drops=$(awk '$2 == "d" { n += $3 } END { print n + 0 }' "$log")
  maxdelay=$(awk '$2 == "-" && $4 > m { m = $4 } END { print m + 0 }' "$log")
  echo "  $drops packets dropped; largest delay in the log $maxdelay ms; ping RTT under load avg $3 ms"
  [ "$drops" -gt 0 ] || fail "no drops with a 20-packet queue" || return 1
  # 20 queued full-size packets drain in 20 ms at 12 Mbit/s (+1 ms for the packet being sent).
  check_range "largest queueing delay (ms)" "$maxdelay" 1 22 && check_range "ping RTT under load (ms)" "$3" 1 24
}

test_link_once_ends_the_shell_on_time() {
  printf '100\n200\n500\n' > "$WORLD_TMP/half.trace"
  s=$(date +%s%N)
  in_world "$BIN/mm-link" --once "$WORLD_TMP/half.trace" "$WORLD_TMP/half.trace" -- sleep 10 2> "$WORLD_TMP/once.err"; rc=$?
  ms=$(( ($(date +%s%N) - s) / 1000000 ))
  sed 's/^/  stderr: /' "$WORLD_TMP/once.err"
  [ "$rc" = 124 ] || fail "--once exit status $rc, expected 124 (the command did not finish on its own)" || return 1
  grep -q 'the traces ran out (--once): the shell ended sleep; exit status 124' "$WORLD_TMP/once.err" ||
    fail "no line saying why the shell ended" || return 1
  check_range "time until --once ended a 500 ms trace (ms)" "$ms" 500 900
  # A command that ends first keeps its own status.
  in_world "$BIN/mm-link" --once "$WORLD_TMP/half.trace" "$WORLD_TMP/half.trace" -- sh -c 'exit 3'; rc=$?
  [ "$rc" = 3 ] || fail "a command ending before the traces: status $rc, expected 3"
}

test_link_once_ends_what_the_command_started() {
  printf '100\n200\n500\n' > "$WORLD_TMP/half.trace"
  # A pipeline's members and a background job: before, they outlived the shell (reparented to
  # init, in a namespace whose link was gone).
  AS_USER=$TEST_USER in_world "$BIN/mm-link" --once "$WORLD_TMP/half.trace" "$WORLD_TMP/half.trace" -- \
    bash -c 'sleep 33.11 & sleep 31.11 | cat; echo never' > "$WORLD_TMP/once.out" 2> "$WORLD_TMP/once.err"; rc=$?
  sed 's/^/  stderr: /' "$WORLD_TMP/once.err"
  none_sleeping 31.11 33.11 || return 1
  [ "$rc" = 124 ] || fail "exit status $rc, expected 124" || return 1
  ! grep -q never "$WORLD_TMP/once.out" || fail "the command went on after the shell ended it" || return 1
  grep -q -E 'ended [0-9]+ process(es)? that the command left running' "$WORLD_TMP/once.err" ||
    fail "no line naming the processes that were ended"
}

test_link_log_format() {
  log=$WORLD_TMP/fmt.log
  in_world "$BIN/mm-link" rate:12Mbit/s rate:12Mbit/s --downlink-log="$log" -- sh -c 'ping -n -c 3 -i 0.1 -q $MAHIMAHI_BASE >/dev/null'
  head -5 "$log" | sed 's/^/  /'
  grep -q '^# mahimahi mm-link (Downlink) \[rate:12Mbit/s\] > ' "$log" || fail "header" || return 1
  grep -q '^# queue: infinite$' "$log" || fail "queue header" || return 1
  grep -q '^# init timestamp: [0-9]*$' "$log" || fail "init timestamp" || return 1
  bad=$(grep -v '^#' "$log" | grep -v -E '^[0-9]+ (# 1500|\+ [0-9]+|- [0-9]+ [0-9]+|d [0-9]+ [0-9]+)$' | head -3)
  [ -z "$bad" ] || fail "malformed lines: $bad" || return 1
  # Ping replies are 84 bytes; a stray packet (e.g. a late one for a previous shell that had the
  # same address) may also cross the link, and is logged like any other.
  arrivals=$(grep -c ' + 84$' "$log"); departures=$(grep -c -E ' - 84 [0-9]+$' "$log")
  opportunities=$(grep -c ' # 1500' "$log")
  last=$(tail -1 "$log" | cut -d' ' -f1)
  echo "  $arrivals arrivals, $departures departures, $opportunities opportunities over $last ms"
  [ "$arrivals" = 3 ] && [ "$departures" = 3 ] || fail "expected 3 pings' replies in and out" || return 1
  # Every opportunity of a 1-per-ms link is listed, used or not.
  check_range "opportunities per ms" "$(awk -v o="$opportunities" -v l="$last" 'BEGIN { print o / l }')" 0.98 1.0
}

test_link_bad_input() {
  printf '' > "$WORLD_TMP/empty.trace"
  printf '1\n2\nabc\n' > "$WORLD_TMP/word.trace"
  printf '5\n3\n' > "$WORLD_TMP/down.trace"
  printf '0\n' > "$WORLD_TMP/zero.trace"
  printf '1\n' > "$WORLD_TMP/ok.trace"
  chmod 644 "$WORLD_TMP"/*.trace
  ok=$WORLD_TMP/ok.trace
  rc_msg 1 "empty.trace: empty trace" in_world "$BIN/mm-link" "$WORLD_TMP/empty.trace" "$ok" true || return 1
  rc_msg 1 "word.trace:3: \"abc\" is not a non-negative integer" in_world "$BIN/mm-link" "$ok" "$WORLD_TMP/word.trace" true || return 1
  rc_msg 1 "down.trace:2: timestamps must not decrease (3 after 5)" in_world "$BIN/mm-link" "$WORLD_TMP/down.trace" "$ok" true || return 1
  rc_msg 1 "zero.trace:1: the last timestamp must be greater than 0" in_world "$BIN/mm-link" "$WORLD_TMP/zero.trace" "$ok" true || return 1
  rc_msg 1 "cannot read trace /nonexistent.trace: No such file or directory" in_world "$BIN/mm-link" /nonexistent.trace "$ok" true || return 1
  AS_USER=$TEST_USER rc_msg 1 "cannot read trace /etc/shadow: Permission denied" in_world "$BIN/mm-link" /etc/shadow /etc/shadow true || return 1
  AS_USER=$TEST_USER rc_msg 1 "cannot write log /etc/mm.log: Permission denied" in_world "$BIN/mm-link" "$ok" "$ok" --uplink-log=/etc/mm.log true || return 1
  [ ! -e /etc/mm.log ] || fail "a log was created with root's rights" || return 1
  rc_msg 2 "unknown queue \"red\"" in_world "$BIN/mm-link" "$ok" "$ok" --uplink-queue=red true || return 1
  rc_msg 2 "droptail needs a queue limit" in_world "$BIN/mm-link" "$ok" "$ok" --downlink-queue=droptail true || return 1
  rc_msg 2 "codel: target must be more than 0 ms" in_world "$BIN/mm-link" "$ok" "$ok" --uplink-queue=codel --uplink-queue-args=target=0 true || return 1
  rc_msg 2 "\"12Mb\" is not a rate" in_world "$BIN/mm-link" rate:12Mb "$ok" true || return 1
  rc_msg 2 "missing DOWNLINK-TRACE" in_world "$BIN/mm-link" "$ok" || return 1
}

test_link_queue_args_without_a_queue_suggest_one() {
  ok=$WORLD_TMP/ok.trace
  printf '1\n' > "$ok"
  # The default queue is infinite: a limit for it is a mistake the message explains.
  rc_msg 2 "--uplink-queue-args is given but the queue is infinite (--uplink-queue=infinite, the default), which takes no parameters: choose a queue, e.g. --uplink-queue=droptail" \
    in_world "$BIN/mm-link" "$ok" "$ok" --uplink-queue-args=packets=100 true || return 1
  rc_msg 2 "e.g. --downlink-queue=codel" in_world "$BIN/mm-link" "$ok" "$ok" --downlink-queue-args=target=5 true || return 1
  # codel and pie need no parameters: the RFCs' (and a 1000-packet limit), as the log header says.
  log=$WORLD_TMP/aqm-defaults.log
  in_world "$BIN/mm-link" "$ok" "$ok" --uplink-queue=codel --downlink-queue=pie --uplink-log="$log" \
    --downlink-log="$log.down" true || fail "codel and pie without parameters refused" || return 1
  grep -q '^# queue: codel \[packets=1000, target=5, interval=100, ecn=1\]$' "$log" || fail "codel's defaults: $(grep queue "$log")" || return 1
  grep -q '^# queue: pie \[packets=1000, qdelay_ref=15, max_burst=150, ecn=1\]$' "$log.down" || fail "pie's defaults: $(grep queue "$log.down")"
}

# mm-link 12Mbps 12Mbps said only "No such file or directory".
test_link_finds_bare_trace_names() {
  traces=$(dirname "$BIN")/share/mahimahi/traces
  [ -r "$traces/constant-12Mbps" ] || fail "the bundled traces are not installed in $traces" || return 1
  # From a directory without such files: the installed ones.
  (cd "$WORLD_TMP" && in_world "$BIN/mm-link" constant-12Mbps constant-24Mbps -- sh -c 'echo "$MAHIMAHI_SHELL_PREFIX"') \
    > "$WORLD_TMP/prefix.out" || fail "mm-link constant-12Mbps constant-24Mbps failed" || return 1
  # The prompt's tag names each direction's rate or trace.
  grep -qF '[link constant-12Mbps up constant-24Mbps down] ' "$WORLD_TMP/prefix.out" || fail "tag: $(cat "$WORLD_TMP/prefix.out")" || return 1
  prefix=$(in_world "$BIN/mm-link" rate:12Mbps rate:1Gbit/s -- sh -c 'echo "$MAHIMAHI_SHELL_PREFIX"') || return 1
  [ "$prefix" = "[link 12Mbit/s up 1Gbit/s down] " ] || fail "tag of rates: '$prefix'" || return 1
  msg=$(cd "$WORLD_TMP" && in_world "$BIN/mm-link" 12Mbps 12Mbps true 2>&1); rc=$?
  echo "$msg" | sed 's/^/  /'
  [ "$rc" = 1 ] || fail "exit status $rc for a missing trace" || return 1
  echo "$msg" | head -1 | grep -qF "cannot find trace \"12Mbps\": no such file in the current directory, MAHIMAHI_TRACE_PATH (not set) and $traces (the bundled traces); did you mean rate:12Mbit/s or constant-12Mbps?" ||
    fail "message for 12Mbps" || return 1
  echo "$msg" | grep -q "bundled traces: constant-1Mbps constant-3Mbps constant-6Mbps constant-12Mbps constant-24Mbps constant-48Mbps constant-96Mbps constant-1000Mbps$" || fail "bundled names not listed" || return 1
  # MAHIMAHI_TRACE_PATH, read as the user: a directory the user cannot search is not searched
  # (root's rights never read a file for the user).
  mkdir -p "$WORLD_TMP/tracepath" "$WORLD_TMP/rootonly"
  printf '1\n' > "$WORLD_TMP/tracepath/mine.trace"; printf '1\n' > "$WORLD_TMP/rootonly/secret.trace"
  chmod 755 "$WORLD_TMP/tracepath"; chmod 644 "$WORLD_TMP/tracepath/mine.trace"; chmod 700 "$WORLD_TMP/rootonly"
  (cd / && AS_USER=$TEST_USER in_world env MAHIMAHI_TRACE_PATH="/nonexistent:$WORLD_TMP/tracepath" \
    "$BIN/mm-link" mine.trace mine.trace true) || fail "mine.trace not found on MAHIMAHI_TRACE_PATH" || return 1
  (cd / && AS_USER=$TEST_USER rc_msg 1 "cannot find trace \"secret.trace\": no such file in the current directory, MAHIMAHI_TRACE_PATH ($WORLD_TMP/rootonly)" \
    in_world env MAHIMAHI_TRACE_PATH="$WORLD_TMP/rootonly" "$BIN/mm-link" secret.trace secret.trace true)
}

# --help answers a new user's first questions: the short forms of the log options, and where the
# bundled traces are (a line of its own, as mm-link and mm-trace look for bare names there).
test_link_and_mm_trace_help_name_short_options_and_the_trace_directory() {
  local traces help
  traces=$(dirname "$BIN")/share/mahimahi/traces
  help=$("$BIN/mm-link" --help) || fail "mm-link --help failed" || return 1
  echo "$help" | grep -qF -- "-u FILE, --uplink-log=FILE" || fail "mm-link --help does not give -u FILE for --uplink-log" || return 1
  echo "$help" | grep -qF -- "-d FILE, --downlink-log=FILE" || fail "mm-link --help does not give -d FILE for --downlink-log" || return 1
  echo "$help" | grep -qxF "  $traces" || fail "mm-link --help does not name $traces" || return 1
  help=$("$BIN/mm-trace" --help) || fail "mm-trace --help failed" || return 1
  echo "$help" | grep -qxF "  $traces" || fail "mm-trace --help does not name $traces" || return 1
}

# A bundled constant trace lasts 1 to 12 ms: --once with it ends the shell at once. The ferry,
# which reads the traces, says so at the start.
test_link_once_warns_of_short_traces() {
  traces=$(dirname "$BIN")/share/mahimahi/traces
  msg=$(in_world "$BIN/mm-link" --once constant-12Mbps rate:1Gbit/s -- sleep 5 2>&1 >/dev/null)
  echo "$msg" | sed 's/^/  /'
  echo "$msg" | grep -qF "mm-link: warning: --once with a short trace: the uplink trace $traces/constant-12Mbps lasts 1 ms, the downlink trace rate:1Gbit/s lasts 0.012 ms. With --once the shell, and your command with it, ends after 1 ms" ||
    fail "no warning of the short traces" || return 1
  printf '1\n1000\n' > "$WORLD_TMP/second.trace"
  msg=$(in_world "$BIN/mm-link" --once "$WORLD_TMP/second.trace" "$WORLD_TMP/second.trace" -- true 2>&1 >/dev/null)
  ! echo "$msg" | grep -q "short trace" || fail "a warning for 1 s traces: $msg"
}

test_link_cellular_trace_goodput_matches_capacity() {
  # A real LTE trace (120 s, from ../shared/traces/cellular): over one whole period, TCP's
  # goodput must be within 5 % of the trace's mean capacity, less the 3.5 % of header bytes.
  trace=$CELLULAR/ATT-LTE-driving-2016.down
  [ -r "$trace" ] || fail "missing $trace" || return 1
  capacity=$(awk 'END { printf "%.3f", NR * 12000 / $1 / 1000 }' "$trace")
  ideal=$(ideal_goodput "$capacity")
  port=$(free_port) || return 1
  iperf_server "$port" || return 1
  g=$(in_world "$BIN/mm-link" rate:1Gbit/s "$trace" -- sh -c "iperf3 -c \$MAHIMAHI_BASE -p $port -R -t 120 -f k" |
      iperf_receiver_mbits)
  check_range "goodput over 120 s of ATT-LTE-driving-2016.down (Mbit/s; capacity $capacity, ideal $ideal)" "$g" \
    "$(awk -v i="$ideal" 'BEGIN { print i * 0.95 }')" "$(awk -v i="$ideal" 'BEGIN { print i * 1.05 }')"
}

test_plot_tools_draw_logs_and_their_figures_match() {
  log=$WORLD_TMP/plot.log
  port=$(free_port) || return 1
  iperf_server "$port" || return 1
  in_world "$BIN/mm-link" rate:1Gbit/s rate:12Mbit/s --downlink-queue=droptail --downlink-queue-args=packets=30 \
    --downlink-log="$log" -- sh -c "iperf3 -R -c \$MAHIMAHI_BASE -p $port -t 3 >/dev/null"
  grep -q ' d ' "$log" || fail "the log has no drop lines to test with" || return 1
  for out in "$WORLD_TMP/t.svg" "$WORLD_TMP/t.png" "$WORLD_TMP/d.svg" "$WORLD_TMP/d.png"; do rm -f "$out"; done
  summary=$("$BIN/mm-throughput-graph" 100 "$log" -o "$WORLD_TMP/t.svg" 2>&1) || fail "throughput graph (svg): $summary" || return 1
  "$BIN/mm-throughput-graph" 100 "$log" -o "$WORLD_TMP/t.png" 2>/dev/null || fail "throughput graph (png)" || return 1
  "$BIN/mm-delay-graph" "$log" -o "$WORLD_TMP/d.svg" 2>/dev/null || fail "delay graph (svg)" || return 1
  "$BIN/mm-delay-graph" "$log" -o "$WORLD_TMP/d.png" 2>/dev/null || fail "delay graph (png)" || return 1
  "$BIN/mm-throughput-graph" 100 < "$log" 2>/dev/null | grep -q '</svg>' || fail "SVG on standard output" || return 1
  for f in t.svg d.svg; do grep -q '</svg>' "$WORLD_TMP/$f" || fail "$f is not a complete SVG" || return 1; done
  for f in t.png d.png; do
    [ "$(head -c 8 "$WORLD_TMP/$f" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "$f is not a PNG" || return 1
    [ "$(stat -c %s "$WORLD_TMP/$f")" -gt 10000 ] || fail "$f is almost empty" || return 1
  done
  echo "$summary" | sed 's/^/  /'
  # The same figures computed from the log here.
  set -- $(awk '!/^#/ { if (!n++) first = $1; last = $1 }
                $2 == "#" { c += $3 } $2 == "-" { d += $3 } $2 == "d" { drops += $3 }
                END { s = (last - first) / 1000; printf "%.2f %.2f %d", c * 8 / s / 1e6, d * 8 / s / 1e6, drops }' "$log")
  echo "$summary" | grep -q "^Average capacity: $1 Mbits/s" || fail "capacity differs from the log's $1" || return 1
  echo "$summary" | grep -q "^Average throughput: $2 Mbits/s" || fail "throughput differs from the log's $2" || return 1
  echo "$summary" | grep -q "^Dropped packets: $3$" || fail "drops differ from the log's $3" || return 1
  check_range "capacity of a 12 Mbit/s link (Mbit/s)" "$1" 11.9 12.1
  rc=0; msg=$("$BIN/mm-throughput-graph" 100 "$log" -o "$WORLD_TMP/x.jpg" 2>&1) || rc=$?
  [ "$rc" = 2 ] && echo "$msg" | grep -q "must end in .svg or .png" || fail "bad output type accepted ($rc: $msg)"
}

# PNG_FILE's height in pixels (from its IHDR chunk).
png_height() { od -An -tu1 -j20 -N4 "$1" | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4 }'; }

test_plot_tools_say_no_packets_for_a_link_that_carried_nothing() {
  # A real log of a link that carried nothing, and a log of header lines only: figures read
  # "-" and the reason (not "nan ms"), the charts are drawn, exit status 0.
  log=$WORLD_TMP/idle.log
  rm -f "$log"
  # Addresses no earlier shell had: a late packet of an earlier test's connection (the world
  # retransmitting to a shell that has ended) cannot reach this one and cross its idle link.
  in_world env MAHIMAHI_ADDRESS_POOL=100.127.201.0/24 "$BIN/mm-link" rate:12Mbit/s rate:12Mbit/s \
    --downlink-log="$log" -- true || fail "mm-link -- true" || return 1
  grep -q '^# mahimahi mm-link' "$log" || fail "no log header" || return 1
  ! grep -q ' [-+] ' "$log" || fail "packets crossed an idle link" || return 1
  printf '# mahimahi mm-link (Downlink) [rate:12Mbit/s] > h.log\n# base timestamp: 0\n' > "$WORLD_TMP/header-only.log"
  for l in "$log" "$WORLD_TMP/header-only.log"; do
    out=$("$BIN/mm-throughput-graph" 500 "$l" -o "$WORLD_TMP/idle-t.png" 2>&1) || fail "throughput graph of $l: $out" || return 1
    echo "$out" | sed 's/^/  /'
    ! echo "$out" | grep -qi nan || fail "nan in: $out" || return 1
    echo "$out" | grep -q '^95th percentile signal delay: - (no packets delivered)$' || fail "no reason given: $out" || return 1
    out=$("$BIN/mm-delay-graph" "$l" 2>&1 >"$WORLD_TMP/idle-d.svg") || fail "delay graph of $l: $out" || return 1
    ! echo "$out" | grep -qi nan || fail "nan in: $out" || return 1
    grep -q '</svg>' "$WORLD_TMP/idle-d.svg" || fail "no SVG for $l" || return 1
    [ "$(head -c 8 "$WORLD_TMP/idle-t.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "no PNG for $l" || return 1
  done
  : > "$WORLD_TMP/nothing.log"
  rc_msg 1 "nothing.log: empty, not an mm-link log" "$BIN/mm-delay-graph" "$WORLD_TMP/nothing.log" -o "$WORLD_TMP/x.svg"
}

test_plot_tools_title_csv_and_several_logs_on_one_chart() {
  up=$WORLD_TMP/several-up.log down=$WORLD_TMP/several-down.log
  port=$(free_port) || return 1
  iperf_server "$port" || return 1
  in_world "$BIN/mm-link" rate:24Mbit/s rate:12Mbit/s --uplink-log="$up" --downlink-log="$down" \
    -- sh -c "iperf3 -R -c \$MAHIMAHI_BASE -p $port -t 3 >/dev/null"
  grep -q ' - ' "$down" || fail "the downlink log has no departures" || return 1
  csv=$WORLD_TMP/several.csv png=$WORLD_TMP/several.png
  rm -f "$csv" "$png"
  out=$("$BIN/mm-throughput-graph" --title "ACKs and data" 500 "$up" "$down" --label up --label down \
        --csv "$csv" -o "$png" 2>&1) || fail "two logs: $out" || return 1
  echo "$out" | sed 's/^/  /'
  echo "$out" | grep -q '^up:$' && echo "$out" | grep -q '^down:$' || fail "summaries not named: $out" || return 1
  [ "$(head -1 "$csv")" = "log,start_s,end_s,capacity_mbps,ingress_mbps,egress_mbps,dropped_packets,marked_packets" ] ||
    fail "CSV header: $(head -1 "$csv")" || return 1
  [ "$(grep -c '^up,' "$csv")" -ge 6 ] && [ "$(grep -c '^down,' "$csv")" -ge 6 ] || fail "CSV rows: $(cut -d, -f1 "$csv" | uniq -c)" || return 1
  # The binned capacity is the link's: 12 and 24 Mbit/s in every bin.
  for pair in down:12 up:24; do
    awk -F, -v l="${pair%:*}" -v r="${pair#*:}" '$1 == l && ($4 < r * 0.99 || $4 > r * 1.01) { bad = 1; print "  " $0 }
      END { exit bad }' "$csv" || fail "${pair%:*} capacity per bin is not ${pair#*:} Mbit/s" || return 1
  done
  # The egress of the data direction in the CSV adds up to the throughput printed.
  throughput=$(echo "$out" | awk '/^down:$/ { d = 1 } d && /^Average throughput/ { print $3; exit }')
  [ -n "$throughput" ] || fail "no downlink throughput in: $out" || return 1
  binned=$(awk -F, '$1 == "down" { s += $6 * ($3 - $2); if (!n++) a = $2; b = $3 } END { printf "%.2f", s / (b - a) }' "$csv")
  check_range "downlink throughput from the CSV's bins (Mbit/s; printed $throughput)" "$binned" \
    "$(awk -v t="$throughput" 'BEGIN { print t * 0.98 }')" "$(awk -v t="$throughput" 'BEGIN { print t * 1.02 }')" || return 1
  [ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "not a PNG" || return 1
  [ "$(png_height "$png")" -gt 560 ] || fail "no room for the legend below the plot ($(png_height "$png") pixels high)" || return 1
  out=$("$BIN/mm-delay-graph" "$up" "$down" --csv - -o "$WORLD_TMP/several-d.svg" 2>/dev/null) || fail "delay CSV" || return 1
  [ "$(echo "$out" | head -1)" = "log,start_s,end_s,signal_delay_ms,packets,mean_delay_ms,max_delay_ms" ] ||
    fail "delay CSV header: $(echo "$out" | head -1)" || return 1
  echo "$out" | grep -q "^$down,[0-9.]*,[0-9.]*,[0-9.]*,1," || fail "delay CSV has no packet rows for $down" || return 1
  grep -q '</svg>' "$WORLD_TMP/several-d.svg" || fail "delay chart of two logs" || return 1
  # The original's syntax still works: MS-PER-BIN first, SVG on standard output.
  "$BIN/mm-throughput-graph" 500 "$down" 2>/dev/null | grep -q '</svg>' || fail "mm-throughput-graph 500 LOG > out.svg" || return 1
  rc_msg 2 "2 logs but 1 --label; give one --label per LOG, in order, or none" \
    "$BIN/mm-throughput-graph" 500 "$up" "$down" --label up -o "$WORLD_TMP/x.svg" || return 1
  rc_msg 2 "the first argument is MS-PER-BIN, the bin width in ms, not \"$down\"" "$BIN/mm-throughput-graph" "$down"
}

# The pages of mm-webrecord and mm-webreplay (the original's names, installed as links to
# mm-record and mm-replay): man finds them in the installed prefix; make uninstall removes them.
test_man_pages_of_the_web_aliases_install_and_uninstall() {
  manpath=$(dirname "$BIN")/share/man
  for alias in webrecord:record webreplay:replay; do
    page=$(MANPATH=$manpath MANWIDTH=100 man "mm-${alias%:*}" 2>&1) || fail "man mm-${alias%:*}: $page" || return 1
    echo "$page" | grep -q "mm-${alias#*:}, mm-${alias%:*} " || fail "man mm-${alias%:*} shows: $(echo "$page" | head -5)" || return 1
  done
  echo "  man mm-webrecord, man mm-webreplay: the pages of mm-record and mm-replay"
  dest=$WORLD_TMP/destdir
  rm -rf "$dest"
  make -s -C "$MAHIMAHI_BUILD_DIR" install DESTDIR="$dest" >/dev/null 2>&1 || fail "make install DESTDIR" || return 1
  [ -n "$(find "$dest" -name mm-webrecord.1)" ] && [ -n "$(find "$dest" -name mm-webreplay.1)" ] || fail "alias pages not installed" || return 1
  make -s -C "$MAHIMAHI_BUILD_DIR" uninstall DESTDIR="$dest" >/dev/null 2>&1 || fail "make uninstall DESTDIR" || return 1
  left=$(find "$dest" ! -type d)
  rm -rf "$dest"
  [ -z "$left" ] || fail "left after make uninstall: $left"
}

# Rattan's trace files (netem-trace configurations, as its own assets write them) converted by
# mm-trace rattan and played by the shells as an ordinary user: a delay switching between 10 and
# 50 ms every 300 ms gives ping round trips of 20 and 100 ms; a TOML bandwidth pattern becomes an
# mm-link trace of its mean rate; a loss pattern with a shell of its own is named.
test_mm_trace_reads_rattans_traces() {
  local dir=$WORLD_TMP/rattan out rtts
  rm -rf "$dir" && mkdir -p "$dir" && chown "$TEST_USER" "$dir"
  cat > "$dir/delay.json" <<'JSON'
{"RepeatedDelayPatternConfig": {"pattern": [
  {"StaticDelayConfig": {"delay": "10ms", "duration": "300ms"}},
  {"StaticDelayConfig": {"delay": "50ms", "duration": "300ms"}}], "count": 0}}
JSON
  printf '[RepeatedBwPatternConfig]\ncount = 0\n[[RepeatedBwPatternConfig.pattern]]\n[RepeatedBwPatternConfig.pattern.TraceBwConfig]\npattern = [["100ms", ["8Mbps", "16Mbps"]]]\n' > "$dir/bw.toml"
  chmod a+r "$dir"/*
  out=$(AS_USER=$TEST_USER in_world "$BIN/mm-trace" rattan "$dir/delay.json" -o "$dir/delay.trace" 2>&1) ||
    fail "mm-trace rattan: $out" || return 1
  echo "  $out" | head -2
  echo "$out" | grep -q "mm-delay --delay-trace=$dir/delay.trace -- COMMAND" || fail "no command given: $out" || return 1
  rtts=$(AS_USER=$TEST_USER in_world "$BIN/mm-delay" --delay-trace="$dir/delay.trace" -- \
    ping -n -c 48 -i 0.025 "$SERVER_IP" | sed -n 's/.*time=\([0-9.]*\) ms/\1/p')
  echo "$rtts" | awk '{ n++; if ($1 >= 19.8 && $1 < 23) low++; else if ($1 >= 99.8 && $1 < 103) high++ }
    END { printf "  %d round trips: %d near 20 ms, %d near 100 ms\n", n, low, high; exit !(n == 48 && low >= 10 && high >= 10) }' ||
    fail "the round trips do not follow Rattan's delay pattern" || return 1
  out=$("$BIN/mm-trace" rattan "$dir/bw.toml" -o "$dir/bw.trace" 2>&1) || fail "mm-trace rattan (TOML): $out" || return 1
  "$BIN/mm-trace" info "$dir/bw.trace" | grep -q 'mean rate              12.000 Mbit/s' ||
    fail "the TOML pattern's mean rate: $("$BIN/mm-trace" info "$dir/bw.trace")" || return 1
  echo '{"StaticLossConfig": {"loss": [0.02, 0.75], "duration": "10s"}}' > "$dir/loss.json"
  rc_msg 1 "loss.json: StaticLossConfig.loss: a loss that depends on the losses before it ([0.02,0.75]) has no loss trace: held constant, it is a Gilbert model, mm-loss uplink gemodel 0.02 0.25" \
    "$BIN/mm-trace" rattan "$dir/loss.json" || return 1
  rc_msg 2 "name Rattan's configuration .json or .toml" "$BIN/mm-trace" rattan "$dir/bw.trace"
}

test_mm_trace_makes_converts_and_checks() {
  t=$BIN/mm-trace
  [ "$("$t" constant 12Mbit/s)" = 1 ] || fail "12 Mbit/s is not the trace \"1\"" || return 1
  "$t" constant 1Gbit/s -o "$WORLD_TMP/g.trace" || return 1
  out=$("$t" check "$WORLD_TMP/g.trace") || fail "check of a made trace: $out" || return 1
  echo "  $out"
  echo "$out" | grep -q "250 opportunities, period 3.000 ms, 1000.000 Mbit/s" || fail "1 Gbit/s trace wrong" || return 1
  printf 'seconds,mbps\n0,10\n1,20\n2,6\n' | "$t" convert --format=csv - -o "$WORLD_TMP/c.trace" || return 1
  n=$(wc -l < "$WORLD_TMP/c.trace")
  # (10 + 20 + 6) Mbit over 3 s = 36 Mbit = 3000 opportunities of 12000 bit
  [ "$n" = 3000 ] || fail "CSV conversion gave $n opportunities, expected 3000" || return 1
  yes 14.7 | head -n 1000 | awk '{ print $1 * 1000 }' | "$t" convert - -o "$WORLD_TMP/k.trace" || return 1
  n=$(wc -l < "$WORLD_TMP/k.trace")
  [ "$n" = 1225 ] || fail "14.7 Mbit/s for 1 s gave $n opportunities, expected 1225" || return 1
  "$t" info "$CELLULAR/Verizon-LTE-short.up" | sed 's/^/  /'
  "$t" info "$CELLULAR/Verizon-LTE-short.up" | grep -q "mean rate  *5.946 Mbit/s" || fail "info mean rate" || return 1
  printf '1\n2\nx\n' > "$WORLD_TMP/bad.trace"
  msg=$("$t" check "$WORLD_TMP/bad.trace" 2>&1); rc=$?
  [ "$rc" = 1 ] && echo "$msg" | grep -q "bad.trace:3: \"x\" is not a non-negative integer" || fail "check: $rc $msg"
}

# mm-trace info counts and measures the trace as written: the busiest millisecond is the most
# lines of one time, gaps are whole milliseconds between the lines' times.
test_mm_trace_info_figures_are_the_trace_as_written() {
  t=$BIN/mm-trace
  printf '1\n1\n3\n' > "$WORLD_TMP/gap.trace"
  out=$("$t" info "$WORLD_TMP/gap.trace") || return 1
  echo "$out" | sed 's/^/  /'
  echo "$out" | grep -q "^  busiest millisecond    2 opportunities (24.0 Mbit/s)$" || fail "busiest of 1 1 3" || return 1
  echo "$out" | grep -q "^  longest gap            2 ms$" || fail "longest gap of 1 1 3 (the lines' times are 1 and 3)" || return 1
  # Bundled traces by name, as mm-link finds them.
  (cd "$WORLD_TMP" && "$t" info constant-1000Mbps) | grep -q "^  busiest millisecond    84 opportunities (1008.0 Mbit/s)$" ||
    fail "busiest millisecond of constant-1000Mbps" || return 1
  "$t" info rate:1Gbit/s | grep -q "^  busiest millisecond    84 opportunities" || fail "busiest millisecond of rate:1Gbit/s" || return 1
  if [ -r "$CELLULAR/Verizon-LTE-short.down" ]; then  # 16 opportunities at 32171 ms
    "$t" info "$CELLULAR/Verizon-LTE-short.down" | grep -q "^  busiest millisecond    16 opportunities (192.0 Mbit/s)$" ||
      fail "busiest millisecond of Verizon-LTE-short.down" || return 1
  else
    echo "  (skipped the cellular trace: $CELLULAR/Verizon-LTE-short.down is absent)"
  fi
}

# 1 s at 10 Mbit/s then 1 s of nothing is a 2 s trace of 833 opportunities, in every format.
test_mm_trace_convert_keeps_silence_at_the_end() {
  t=$BIN/mm-trace
  for input in "ms-kbps:0 10000\n1000 0\n" "csv:seconds,mbps\n0,10\n1,0\n"; do
    format=${input%%:*}
    out=$(printf "${input#*:}" | "$t" convert --format="$format" - | "$t" info -) || fail "convert --format=$format" || return 1
    echo "$out" | sed 's/^/  /'
    echo "$out" | grep -q "duration (period)  *2.000 s" || fail "$format: the silence at the end was dropped" || return 1
    echo "$out" | grep -q "opportunities  *833 " || fail "$format: opportunities" || return 1
    echo "$out" | grep -q "mean rate  *4.998 Mbit/s" || fail "$format: mean rate" || return 1
    echo "$out" | grep -q "longest gap  *1000 ms" || fail "$format: the outage" || return 1
  done
}

# Bounded input (security finding 6): devices, FIFOs, oversized traces and values are refused
# at once, with one line naming the input, the limit and the fix, in bounded memory.

test_bounds_link_refuses_devices_fifos_and_oversized_traces() {
  ok=$WORLD_TMP/bounds-ok.trace
  printf '1\n' > "$ok"
  printf '1000000000000\n' > "$WORLD_TMP/bounds-huge-value.trace"
  { printf '1\n'; head -c 100000 /dev/zero | tr '\0' 7; printf '\n'; } > "$WORLD_TMP/bounds-long-line.trace"
  printf '1\n' > "$WORLD_TMP/bounds-large.trace"
  truncate -s 129M "$WORLD_TMP/bounds-large.trace"  # sparse: refused by its size, never read
  rm -f "$WORLD_TMP/bounds-nowriter.fifo" "$WORLD_TMP/bounds-zeros.fifo"
  mkfifo -m 666 "$WORLD_TMP/bounds-nowriter.fifo" "$WORLD_TMP/bounds-zeros.fifo"
  chmod 644 "$WORLD_TMP"/bounds-*.trace
  # As the user, with a deadline and 1 GB of address space: an unbounded read would end in
  # bad_alloc or the deadline, not in the message.
  bounds_link() {
    AS_USER=$TEST_USER in_world sh -c '[ "$0" = 0 ] || ulimit -v "$0"; exec timeout 30 "$@"' "$(address_space_kb 1000000)" \
      "$BIN/mm-link" "$@"
  }
  rc_msg 1 "cannot read trace /dev/zero: it is a character device, not a file; name a regular file" \
    bounds_link /dev/zero "$ok" -- true || return 1
  rc_msg 1 "cannot read trace /dev/urandom: it is a character device" bounds_link "$ok" /dev/urandom -- true || return 1
  rc_msg 1 "bounds-huge-value.trace:1: timestamp 1000000000000 is too large: times are at most 2147483647 ms" \
    bounds_link "$WORLD_TMP/bounds-huge-value.trace" "$ok" -- true || return 1
  rc_msg 1 "bounds-long-line.trace:2: line of 100000 characters" \
    bounds_link "$ok" "$WORLD_TMP/bounds-long-line.trace" -- true || return 1
  rc_msg 1 "bounds-large.trace is larger than 128 MiB (the limit); a trace holds at most 10000000 lines" \
    bounds_link "$WORLD_TMP/bounds-large.trace" "$ok" -- true || return 1
  # A FIFO nobody writes to: no wait for a writer.
  rc_msg 1 "bounds-nowriter.fifo: empty trace" bounds_link "$WORLD_TMP/bounds-nowriter.fifo" "$ok" -- true || return 1
  # A FIFO fed from /dev/zero: read up to the limit, then refused.
  timeout 60 sh -c 'exec cat /dev/zero > "$0"' "$WORLD_TMP/bounds-zeros.fifo" 2>/dev/null &
  writer=$!
  rc_msg 1 "bounds-zeros.fifo is larger than 128 MiB (the limit)" \
    bounds_link "$WORLD_TMP/bounds-zeros.fifo" "$ok" -- true; rc=$?
  kill "$writer" 2>/dev/null; wait "$writer" 2>/dev/null
  return $rc
}

test_bounds_mm_trace_and_graph_tools() {
  t=$BIN/mm-trace
  bounds_limited() { sh -c '[ "$0" = 0 ] || ulimit -v "$0"; exec timeout 30 "$@"' "$(address_space_kb 500000)" "$@"; }
  printf '1000000000000\n' > "$WORLD_TMP/bounds-big.trace"
  rc_msg 1 "bounds-big.trace:1: timestamp 1000000000000 is too large: times are at most 2147483647 ms (24.8 days)" \
    bounds_limited "$t" info "$WORLD_TMP/bounds-big.trace" || return 1
  # The longest trace there can be: 21 million 100 ms windows, counted without an array.
  printf '2147483647\n' > "$WORLD_TMP/bounds-longest.trace"
  out=$(bounds_limited "$t" info "$WORLD_TMP/bounds-longest.trace") || fail "info of a 2^31-1 ms trace: $out" || return 1
  echo "$out" | grep -q "duration (period)  *2147483.647 s" || fail "info of a 2^31-1 ms trace: $out" || return 1
  rc_msg 1 "cannot read trace /dev/zero: it is a character device" bounds_limited "$t" check /dev/zero || return 1
  rc_msg 1 "cannot read trace from standard input: it is a character device" \
    sh -c 'exec "$0" check - < /dev/zero' "$t" || return 1
  rc_msg 1 "trace standard input is larger than 128 MiB (the limit)" \
    sh -c 'head -c 200000000 /dev/zero | exec "$0" check -' "$t" || return 1
  rc_msg 1 "standard input:1: rate 1e+300 kbit/s is above 1 Tbit/s" \
    sh -c 'printf "0 1e300\n" | exec "$0" convert --format=ms-kbps -' "$t" || return 1
  rc_msg 1 "standard input:2: time 1e12 ms is past 2147483647 ms (24.8 days)" \
    sh -c 'printf "0 100\n1e12 100\n" | exec "$0" convert --format=ms-kbps -' "$t" || return 1
  rc_msg 1 "the trace would hold more than 10000000 opportunities" \
    sh -c 'printf "0 1e9\n1000 1e9\n" | exec "$0" convert --format=ms-kbps -' "$t" || return 1
  rc_msg 1 "would hold 10288066 opportunities per period, more than the 10000000 a trace can; give mm-link rate:123.456789012Gbit/s" \
    bounds_limited "$t" constant 123456789012bit/s || return 1
  # A day of 1 bit/s after a day of silence: skipped in steps, not 170 million iterations.
  out=$(printf '0 0\n86400000 0.001\n' | bounds_limited "$t" convert --format=ms-kbps - | wc -l)
  [ "$out" = 7 ] || fail "a day of 1 bit/s gave $out opportunities, expected 7" || return 1
  printf '0 # 1500\n90000000 # 1500\n' > "$WORLD_TMP/bounds-long.log"
  rc_msg 1 "its events span 25.0 hours (0 to 90000000 ms), more than the 24 hours the graphs can cover" \
    bounds_limited "$BIN/mm-delay-graph" "$WORLD_TMP/bounds-long.log" -o "$WORLD_TMP/bounds.svg" || return 1
  printf '0 # 1500\n7200000 # 1500\n' > "$WORLD_TMP/bounds-2h.log"
  rc_msg 2 "MS-PER-BIN 0.001 makes more than 1000000 bins of this log's 7200000 ms; use 8 or more" \
    bounds_limited "$BIN/mm-throughput-graph" 0.001 "$WORLD_TMP/bounds-2h.log" -o "$WORLD_TMP/bounds.svg" || return 1
  rc_msg 1 "cannot read log /dev/zero: it is a character device" \
    bounds_limited "$BIN/mm-throughput-graph" 10 /dev/zero -o "$WORLD_TMP/bounds.svg" || return 1
}

# mm-preset as an ordinary user: WebPageTest's Cable (5/1 Mbit/s, 28 ms) gives ping its round
# trip (28 ms, plus the wait for the link's next delivery opportunity each way: a 1500-byte one
# every 12 ms at 1 Mbit/s up, every 2.4 ms at 5 down) and iperf3 its
# downlink rate (ideal 4.83 Mbit/s of goodput); Chromium loads a replayed corpus page behind
# DevTools' Fast 4G (8.1 Mbit/s down, 60 ms) at least 3 round trips slower than without.
test_preset_applies_the_profiles_rates_and_round_trip_as_a_user() {
  local rtt port goodput home=$WORLD_TMP/preset-home
  rtt=$(AS_USER=$TEST_USER in_world "$BIN/mm-preset" wpt:Cable -- ping -n -c 5 -i 0.2 "$SERVER_IP" | ping_stats | cut -d' ' -f2)
  check_range "wpt:cable minimum round trip (ms)" "$rtt" 28 43 || return 1
  port=$(free_port) || return 1
  iperf_server "$port" || return 1
  in_world ip tcp_metrics flush all 2>/dev/null || true
  goodput=$(AS_USER=$TEST_USER in_world "$BIN/mm-preset" wpt:cable -- sh -c "iperf3 -c \$MAHIMAHI_BASE -p $port -R -O 2 -t 6 -f k" |
    iperf_receiver_mbits)
  check_range "wpt:cable downlink goodput (Mbit/s; ideal 4.83)" "$goodput" 4.5 4.9 || return 1
  rc_msg 2 'no profile named "wpt:5g" (mm-preset --list shows them)' "$BIN/mm-preset" wpt:5g true || return 1
  rm -rf "$home" && mkdir -p "$home"  # (run again by the rootless pass)
  cp -r "$world_top/corpus/news" "$home/news"
  chown -R "$TEST_USER" "$home"
  local url; url=$(awk '$1 == "news" { print $2 }' "$world_top/corpus/pages")
  for setting in plain preset; do
    local shell=(); [ "$setting" = preset ] && shell=("$BIN/mm-preset" devtools:fast4g --)
    AS_USER=$TEST_USER in_world env HOME="$home" "$BIN/mm-replay" "$home/news" --ignore-user-agent -- "${shell[@]}" \
      "$BIN/mm-pageload" --no-http2 --runs 2 --csv "$home/$setting.csv" "$url" >/dev/null 2>"$home/err" ||
      fail "$setting load: $(tail -3 "$home/err")" || return 1
  done
  /usr/bin/python3 - "$home" <<'PY'
import csv, statistics, sys
home = sys.argv[1]
plt = {s: statistics.median(float(r["plt_ms"]) for r in csv.DictReader(open(f"{home}/{s}.csv")) if r["status"] == "ok")
       for s in ("plain", "preset")}
print(f"  news: median PLT {plt['plain']:.0f} ms replayed, {plt['preset']:.0f} ms behind devtools:fast4g")
sys.exit(0 if plt["preset"] > plt["plain"] + 3 * 60 else 1)
PY
}

# Link-layer overhead: Ethernet's 38 bytes a packet leave 1448 bytes of data in each 1538 on
# the link; ATM's cells (1500 + 8 bytes in 32 cells of 53) 1448 in 1696. An ordinary user.
test_link_overhead_charges_each_packet_its_framing() {
  local g expected spec status=0
  for spec in ethernet:1538 atm:1696; do
    expected=$(awk -v w="${spec#*:}" 'BEGIN { printf "%.3f", 12 * 1448 / w }')
    g=$(AS_USER=$TEST_USER link_goodput rate:1Gbit/s rate:12Mbit/s down 5 --downlink-overhead="${spec%:*}")
    check_range "goodput down through 12 Mbit/s with --downlink-overhead=${spec%:*} (Mbit/s; ideal $expected)" "$g" \
      "$(awk -v i="$expected" 'BEGIN { print i * 0.99 }')" "$(awk -v i="$expected" 'BEGIN { print i * 1.01 }')" || status=1
  done
  rc_msg 2 "--uplink-overhead: unknown profile \"wifi\"" in_world "$BIN/mm-link" --uplink-overhead=wifi rate:1Mbit/s \
    rate:1Mbit/s true || status=1
  return $status
}
