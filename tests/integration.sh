# Integration tests: real shells, real clients (ping, iperf3, getent), inside the test world.
# Each test_* function succeeds or fails (printing why); run-all checks for leftovers after each.
# BIN is the directory of the installed (setuid) programs; TEST_USER an ordinary user.

fail() { echo "FAIL: $*"; return 1; }

# awk-based float comparison: check_range NAME VALUE LOW HIGH
check_range() {
  awk -v v="$2" -v lo="$3" -v hi="$4" 'BEGIN { exit !(v >= lo && v <= hi) }' ||
    { echo "FAIL: $1 = $2, expected within [$3, $4]"; return 1; }
  echo "  $1 = $2 (expected [$3, $4])"
}

test_delay_rtt_is_twice_the_delay() {
  set -- $(in_world "$BIN/mm-delay" 20 ping -n -c 30 -i 0.05 -q "$SERVER_IP" | ping_stats)
  [ "$1" = 30 ] || fail "received $1 of 30" || return 1
  # Never early; late only by the ferry's wake-up costs (~0.1 ms here; 0.5 ms allowed).
  check_range "min RTT (ms)" "$2" 40.0 40.5 && check_range "avg RTT (ms)" "$3" 40.0 40.5
}

test_fractional_delay() {
  set -- $(in_world "$BIN/mm-delay" 12.5 ping -n -c 20 -i 0.05 -q "$SERVER_IP" | ping_stats)
  check_range "avg RTT (ms)" "$3" 25.0 25.5 && check_range "min RTT (ms)" "$2" 25.0 25.5
}

# Loss: ping success needs both the request (uplink) and the reply (downlink) to pass.
# Tolerance: 4.5 binomial standard deviations (false alarm odds below 1e-5).
loss_check() {  # NAME N EXPECTED_SUCCESS_PROBABILITY RECEIVED
  awk -v n="$2" -v p="$3" -v r="$4" -v name="$1" 'BEGIN {
    sd = sqrt(n * p * (1 - p)); dev = (r - n * p) / sd
    printf "  %s: received %d of %d, expected %.1f (%.2f sd)\n", name, r, n, n * p, dev
    exit !(dev < 4.5 && dev > -4.5) }' || { echo "FAIL: $1 outside the binomial bound"; return 1; }
}

test_loss_uplink_rate() {
  set -- $(in_world "$BIN/mm-loss" uplink 0.2 ping -n -c 1000 -i 0.002 -W 1 -q "$SERVER_IP" | ping_stats)
  loss_check "uplink 0.2" 1000 0.8 "$1"
}

test_loss_both_directions_in_one_shell() {
  set -- $(in_world "$BIN/mm-loss" uplink 0.1 downlink 0.3 ping -n -c 1000 -i 0.002 -W 1 -q "$SERVER_IP" | ping_stats)
  loss_check "uplink 0.1 downlink 0.3" 1000 0.63 "$1"
}

test_loss_seed_reproduces_drops() {
  a=$(in_world "$BIN/mm-loss" downlink 0.3 --seed 12345 ping -n -c 200 -i 0.002 -W 1 "$SERVER_IP" | grep -o 'icmp_seq=[0-9]*' | tr '\n' ' ')
  b=$(in_world "$BIN/mm-loss" downlink 0.3 --seed 12345 ping -n -c 200 -i 0.002 -W 1 "$SERVER_IP" | grep -o 'icmp_seq=[0-9]*' | tr '\n' ' ')
  c=$(in_world "$BIN/mm-loss" downlink 0.3 --seed 54321 ping -n -c 200 -i 0.002 -W 1 "$SERVER_IP" | grep -o 'icmp_seq=[0-9]*' | tr '\n' ' ')
  [ -n "$a" ] || fail "no replies at all" || return 1
  [ "$a" = "$b" ] || fail "the same seed gave different drops" || return 1
  [ "$a" != "$c" ] || fail "different seeds gave the same drops" || return 1
  echo "  seed 12345 twice: identical $(echo "$a" | wc -w) replies; seed 54321 differs"
}

test_intermittent_drops_while_off() {
  # 0.2 s on, 0.2 s off, pings every 10 ms for 4 s: half are sent while the uplink is off.
  set -- $(in_world "$BIN/mm-intermittent" uplink 0.2 0.2 ping -n -c 400 -i 0.01 -W 1 -q "$SERVER_IP" | ping_stats)
  check_range "received of 400" "$1" 170 230
}

test_onoff_drops_some_and_passes_some() {
  # Mean 0.1 s on, 0.3 s off: about a quarter get through over 4 s (about 10 cycles).
  set -- $(in_world "$BIN/mm-onoff" downlink 0.1 0.3 --seed 3 ping -n -c 400 -i 0.01 -W 1 -q "$SERVER_IP" | ping_stats)
  check_range "received of 400" "$1" 20 250
}

test_nested_six_deep_mixing_kinds() {
  out=$(in_world "$BIN/mm-delay" 2 "$BIN/mm-loss" uplink 0 "$BIN/mm-delay" 3 "$BIN/mm-intermittent" downlink 1000 1 \
        "$BIN/mm-onoff" uplink 1000 0.001 --seed 1 "$BIN/mm-delay" 5 -- \
        sh -c 'echo "base=$MAHIMAHI_BASE"; echo "prefix=$MAHIMAHI_SHELL_PREFIX"; ping -n -c 5 -i 0.1 -q '"$SERVER_IP")
  echo "$out" | sed 's/^/  /'
  echo "$out" | grep -qx 'base=100.64.0.1' || fail "MAHIMAHI_BASE is not the outermost shell's address" || return 1
  echo "$out" | grep -qF 'prefix=[delay 2 ms] [loss up=0] [delay 3 ms] [intermittent (down) on=1000s off=1s] [onoff (up) on=1000s off=0.001s] [delay 5 ms] ' ||
    fail "prefix wrong" || return 1
  set -- $(echo "$out" | ping_stats)
  [ "$1" = 5 ] || fail "received $1 of 5" || return 1
  check_range "avg RTT (ms)" "$3" 20.0 21.5
}

test_base_address_reaches_the_outer_host() {
  set -- $(in_world "$BIN/mm-delay" 1 "$BIN/mm-delay" 1 sh -c 'ping -n -c 3 -i 0.1 -q $MAHIMAHI_BASE' | ping_stats)
  [ "$1" = 3 ] || fail "MAHIMAHI_BASE unreachable from a nested shell"
}

test_exit_status_propagates() {
  in_world "$BIN/mm-delay" 0 sh -c 'exit 7'; [ $? = 7 ] || fail "exit 7 not propagated" || return 1
  in_world "$BIN/mm-delay" 0 "$BIN/mm-loss" uplink 0 sh -c 'exit 42'; [ $? = 42 ] || fail "nested exit 42 not propagated" || return 1
  in_world "$BIN/mm-delay" 0 sh -c 'kill -TERM $$'; [ $? = 143 ] || fail "death by SIGTERM not reported as 143" || return 1
  in_world "$BIN/mm-delay" 0 true; [ $? = 0 ] || fail "true did not give 0" || return 1
  in_world "$BIN/mm-delay" 0 /nonexistent/program 2>/dev/null; [ $? = 127 ] || fail "missing command not 127" || return 1
  echo "  7, 42, 143, 0 and 127 propagated"
}

test_ordinary_user_through_setuid() {
  uid=$(id -u "$TEST_USER")
  out=$(AS_USER=$TEST_USER in_world "$BIN/mm-delay" 1 sh -c 'id -u; id -g; grep -E "^Cap(Eff|Prm)" /proc/self/status; ping -n -c 2 -i 0.1 -q '"$SERVER_IP")
  echo "$out" | sed 's/^/  /'
  [ "$(echo "$out" | sed -n 1p)" = "$uid" ] || fail "command did not run with the user's uid" || return 1
  echo "$out" | grep -q "CapEff:.*0000000000000000" || fail "command has capabilities" || return 1
  echo "$out" | grep -q "CapPrm:.*0000000000000000" || fail "command has permitted capabilities" || return 1
  set -- $(echo "$out" | ping_stats)
  [ "$1" = 2 ] || fail "ping as the user failed"
}

test_ferry_runs_as_the_user_and_command_cannot_regain_root() {
  out=$(AS_USER=$TEST_USER in_world "$BIN/mm-delay" 0 sh -c '
    for p in $(pgrep -x mm-delay); do echo "proc $(stat -c %U /proc/$p) $(cat /proc/$p/status | awk "/^Uid/{print \$2,\$3,\$4}")"; done
    ip link add x type bridge 2>&1 | head -1')
  echo "$out" | sed 's/^/  /'
  # Two mm-delay processes: the supervisor (root: it removes the NAT rules at the end) and the ferry (the user).
  uid=$(id -u "$TEST_USER")
  echo "$out" | grep -q "proc .* $uid $uid $uid" || fail "no ferry running as the user" || return 1
  echo "$out" | grep -qi "not permitted" || fail "the user's command could change the network"
}

test_parallel_shells_each_see_their_own_delay() {
  dir=$(mktemp -d)
  for d in 5 10 15 20 25 30 35 40; do
    in_world "$BIN/mm-delay" "$d" ping -n -c 20 -i 0.05 -q "$SERVER_IP" > "$dir/$d" &
  done
  wait
  ok=0
  for d in 5 10 15 20 25 30 35 40; do
    set -- $(ping_stats < "$dir/$d")
    check_range "delay $d: avg RTT (ms)" "$3" $((2 * d)) $((2 * d)).6 && [ "$1" = 20 ] && ok=$((ok + 1))
  done
  rm -rf "$dir"
  [ "$ok" = 8 ] || fail "$((8 - ok)) of 8 parallel shells wrong"
}

test_dns_works_and_crosses_the_link() {
  out=$(in_world "$BIN/mm-delay" 100 sh -c 's=$(date +%s%N); getent hosts server.test; e=$(date +%s%N); echo "ms=$(( (e - s) / 1000000 ))"')
  echo "$out" | sed 's/^/  /'
  echo "$out" | grep -q "^$SERVER_IP *server.test" || fail "server.test did not resolve" || return 1
  ms=$(echo "$out" | sed -n 's/^ms=//p')
  check_range "lookup time through a 200 ms RTT (ms)" "$ms" 200 2000
}

test_ferry_is_idle_without_traffic() {
  # The command's parent is the shell's supervisor; the ferry is the supervisor's other child.
  ticks=$(in_world "$BIN/mm-delay" 10 sh -c '
    ferry=$(pgrep -x -P $PPID mm-delay)
    t0=$(awk "{print \$14 + \$15}" /proc/$ferry/stat); sleep 2; t1=$(awk "{print \$14 + \$15}" /proc/$ferry/stat)
    echo $((t1 - t0))')
  check_range "ferry CPU ticks (1/100 s) in 2 s idle" "$ticks" 0 1
}

# Runs COMMAND, which must exit with EXPECTED_RC and say FRAGMENT in the first line of its errors.
rc_msg() {  # EXPECTED_RC FRAGMENT COMMAND...
  want=$1 frag=$2; shift 2
  msg=$("$@" 2>&1 >/dev/null); rc=$?
  [ "$rc" = "$want" ] || { echo "FAIL: '$*' exited $rc, expected $want ($msg)"; return 1; }
  echo "$msg" | head -1 | grep -qF -- "$frag" || { echo "FAIL: '$*' said: $msg"; return 1; }
  echo "  $* -> $rc: $(echo "$msg" | head -1)"
}

test_bad_input_is_rejected_clearly() {
  rc_msg 2 "DELAY-MS must be a number, not \"abc\"" in_world "$BIN/mm-delay" abc true || return 1
  rc_msg 2 "must not be negative" in_world "$BIN/mm-delay" -5 true || return 1
  rc_msg 2 "missing DELAY-MS" in_world "$BIN/mm-delay" || return 1
  rc_msg 2 "unknown option \"--bogus\"" in_world "$BIN/mm-delay" --bogus 5 true || return 1
  rc_msg 2 "between 0 and 1" in_world "$BIN/mm-loss" uplink 1.5 true || return 1
  rc_msg 2 "unknown direction \"sideways\"" in_world "$BIN/mm-loss" sideways 0.1 true || return 1
  rc_msg 2 "missing loss rate" in_world "$BIN/mm-loss" uplink || return 1
  rc_msg 2 "must not both be 0" in_world "$BIN/mm-onoff" uplink 0 0 true || return 1
  rc_msg 2 "MAHIMAHI_ADDRESS_POOL" in_world env MAHIMAHI_ADDRESS_POOL=10.0.0.1/8 "$BIN/mm-delay" 1 true || return 1
  cp "$BIN/mm-delay" "$WORLD_TMP/mm-delay-plain" && chmod 755 "$WORLD_TMP/mm-delay-plain"
  rc_msg 1 "needs root's rights" env AS_USER="$TEST_USER" sh -c '. '"$LIB"'; WORLD='"$WORLD"' in_world '"$WORLD_TMP"'/mm-delay-plain 1 true' || return 1
  rc_msg 1 "no_new_privs is set" ip netns exec "$WORLD" setpriv --no-new-privs --reuid="$TEST_USER" --regid="$TEST_USER" \
    --init-groups -- "$BIN/mm-delay" 1 true || return 1
  rc_msg 0 "Usage: mm-delay DELAY-MS" sh -c "'$BIN/mm-delay' --help >&2" || return 1
  rc_msg 0 "mm-loss (mahimahi)" sh -c "'$BIN/mm-loss' --version >&2" || return 1
}

test_address_pool_can_be_moved() {
  out=$(in_world env MAHIMAHI_ADDRESS_POOL=10.200.0.0/16 "$BIN/mm-delay" 0 "$BIN/mm-delay" 0 sh -c 'echo $MAHIMAHI_BASE; ip -o -4 addr show dev ingress')
  echo "$out" | sed 's/^/  /'
  echo "$out" | grep -qx "10.200.0.1" || fail "pool not used for the outer shell" || return 1
  echo "$out" | grep -q "inet 10.200.0.6 peer 10.200.0.5" || fail "nested shell did not take the next free /30"
}

test_signals_end_the_shell_cleanly() {
  ip netns exec "$WORLD" "$BIN/mm-delay" 0 sleep 30 &  # ip execs in place: $! is the shell
  shell=$! p0=$!
  sleep 0.5
  kill -TERM "$p0"
  wait "$shell"; rc=$?
  [ "$rc" = 143 ] || fail "SIGTERM to the shell gave $rc, expected 143 (the command's death by SIGTERM)" || return 1
  echo "  SIGTERM to the shell: command ended, exit 143"
}

process_state() { awk '{print $3}' "/proc/$1/stat" 2>/dev/null; }

test_job_control_stop_and_continue() {
  ip netns exec "$WORLD" "$BIN/mm-delay" 0 sleep 30 &  # ip execs in place: $! is the shell
  shell=$! p0=$!
  wait_until 10 pgrep -x -P "$p0" sleep >/dev/null || { kill -TERM "$p0"; wait "$shell"; fail "the command never started"; return 1; }
  cmd=$(pgrep -x -P "$p0" sleep)
  # SIGSTOP, not SIGTSTP: the kernel discards SIGTSTP in an orphaned process group, which the
  # suite's is when it was started in the background of a shell that has exited.
  kill -STOP "$cmd"
  wait_until 5 sh -c "[ \"\$(awk '{print \$3}' /proc/$p0/stat)\" = T ]" ||
    { s0=$(process_state "$p0"); kill -CONT "$p0"; kill -TERM "$p0"; wait "$shell"; fail "shell did not stop with its command (state $s0)"; return 1; }
  kill -CONT "$p0"
  wait_until 5 sh -c "[ \"\$(awk '{print \$3}' /proc/$cmd/stat)\" != T ]" ||
    { kill -TERM "$p0"; wait "$shell"; fail "command still stopped after the shell was continued"; return 1; }
  s1=$(process_state "$cmd")
  kill -TERM "$p0"; wait "$shell"
  echo "  command stopped -> shell stopped (T); shell continued -> command continued ($s1)"
}

test_kill9_leftovers_are_removed_by_next_start() {
  ip netns exec "$WORLD" "$BIN/mm-delay" 0 sleep 30 &  # ip execs in place: $! is the shell
  shell=$! p0=$!
  sleep 0.5
  kill -9 "$p0"; wait "$shell" 2>/dev/null
  sleep 0.3
  before=$(in_world nft list tables | grep -c mahimahi_)
  in_world "$BIN/mm-delay" 0 true || fail "a new shell failed after kill -9" || return 1
  after=$(in_world nft list tables | grep -c mahimahi_)
  echo "  NAT tables: $before after kill -9, $after after the next start"
  [ "$after" = 0 ] || fail "stale NAT table not removed"
}

test_dns_through_a_loopback_resolver_udp_and_tcp() {
  # The world's resolver moves to 127.0.0.53 (as systemd-resolved's), unreachable from inside a
  # namespace unless the shell relays it. use-vc makes the C library ask over TCP.
  in_world /usr/sbin/dnsmasq --keep-in-foreground --no-resolv --no-hosts --address=/loop.test/10.1.2.3 --local=/#/ \
    --listen-address=127.0.0.53 --bind-interfaces --user=root -C /dev/null --log-facility=/dev/null --pid-file= &
  dns=$!
  printf 'nameserver 127.0.0.53\n' > "$WORLD_TMP/resolv-udp"
  printf 'nameserver 127.0.0.53\noptions use-vc\n' > "$WORLD_TMP/resolv-tcp"
  sleep 0.3
  status=0
  for transport in udp tcp; do
    out=$(AS_USER=$TEST_USER in_world_with_resolv "$WORLD_TMP/resolv-$transport" "$BIN/mm-delay" 50 sh -c \
      's=$(date +%s%N); getent hosts loop.test; e=$(date +%s%N); echo "ms=$(( (e - s) / 1000000 ))"')
    echo "$out" | sed "s/^/  $transport: /"
    echo "$out" | grep -q '^10.1.2.3 *loop.test' || { echo "FAIL: no answer over $transport"; status=1; continue; }
    check_range "$transport lookup time through a 100 ms RTT (ms)" "$(echo "$out" | sed -n 's/^ms=//p')" 100 1500 || status=1
  done
  kill "$dns"; wait "$dns" 2>/dev/null
  return $status
}

# ----- mm-link -----

# Ideal TCP goodput through a link of RATE Mbit/s: full-size segments carry 1448 bytes of data
# in 1500-byte IP packets (20 IP + 20 TCP + 12 timestamp option bytes).
ideal_goodput() { awk -v r="$1" 'BEGIN { printf "%.3f", r * 1448 / 1500 }'; }

# iperf3 goodput (Mbit/s, receiver side) through mm-link UP DOWN, steady state (first 2 s omitted).
link_goodput() {  # UP DOWN up|down SECONDS [extra mm-link options]
  up=$1 down=$2 dir=$3 secs=$4; shift 4
  port=$((5400 + RANDOM % 500))
  in_world iperf3 -s -1 -D -p "$port" >/dev/null
  for _ in $(seq 50); do in_world ss -ltn | grep -q ":$port " && break; sleep 0.05; done
  flag=; [ "$dir" = down ] && flag=-R
  in_world "$BIN/mm-link" "$up" "$down" "$@" -- sh -c "iperf3 -c \$MAHIMAHI_BASE -p $port $flag -O 2 -t $secs -f k" |
    awk '/receiver/ { for (i = 1; i < NF; i++) if ($(i + 1) == "Kbits/sec") printf "%.3f\n", $i / 1000 }'
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

test_link_droptail_drops_and_bounds_delay() {
  log=$WORLD_TMP/droptail.log
  port=$((5400 + RANDOM % 500))
  in_world iperf3 -s -1 -D -p "$port" >/dev/null; sleep 0.2
  out=$(in_world "$BIN/mm-link" rate:12Mbit/s rate:1Gbit/s --uplink-queue=droptail --uplink-queue-args=packets=20 \
        --uplink-log="$log" -- sh -c "iperf3 -c \$MAHIMAHI_BASE -p $port -t 4 >/dev/null & sleep 1; ping -n -c 10 -i 0.2 -q \$MAHIMAHI_BASE; wait")
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
  in_world "$BIN/mm-link" --once "$WORLD_TMP/half.trace" "$WORLD_TMP/half.trace" -- sleep 10; rc=$?
  ms=$(( ($(date +%s%N) - s) / 1000000 ))
  [ "$rc" = 0 ] || fail "--once exit status $rc, expected 0" || return 1
  check_range "time until --once ended a 500 ms trace (ms)" "$ms" 500 900
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
  rc_msg() {
    want=$1 frag=$2; shift 2
    msg=$("$@" 2>&1 >/dev/null); rc=$?
    [ "$rc" = "$want" ] || { echo "FAIL: '$*' exited $rc, expected $want ($msg)"; return 1; }
    echo "$msg" | head -1 | grep -qF -- "$frag" || { echo "FAIL: '$*' said: $msg"; return 1; }
    echo "  -> $rc: $(echo "$msg" | head -1)"
  }
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
  rc_msg 2 "codel needs target=MS" in_world "$BIN/mm-link" "$ok" "$ok" --uplink-queue=codel --uplink-queue-args=packets=10 true || return 1
  rc_msg 2 "\"12Mb\" is not a rate" in_world "$BIN/mm-link" rate:12Mb "$ok" true || return 1
  rc_msg 2 "missing DOWNLINK-TRACE" in_world "$BIN/mm-link" "$ok" || return 1
  rc_msg 2 "live graphs (--meter-*) are not available" in_world "$BIN/mm-link" "$ok" "$ok" --meter-all true || return 1
}

test_link_cellular_trace_goodput_matches_capacity() {
  # A real LTE trace (120 s, from ../shared/traces/cellular): over one whole period, TCP's
  # goodput must be within 5 % of the trace's mean capacity, less the 3.5 % of header bytes.
  trace=$CELLULAR/ATT-LTE-driving-2016.down
  [ -r "$trace" ] || fail "missing $trace" || return 1
  capacity=$(awk 'END { printf "%.3f", NR * 12000 / $1 / 1000 }' "$trace")
  ideal=$(ideal_goodput "$capacity")
  port=$((5400 + RANDOM % 500))
  in_world iperf3 -s -1 -D -p "$port" >/dev/null; sleep 0.2
  g=$(in_world "$BIN/mm-link" rate:1Gbit/s "$trace" -- sh -c "iperf3 -c \$MAHIMAHI_BASE -p $port -R -t 120 -f k" |
      awk '/receiver/ { for (i = 1; i < NF; i++) if ($(i + 1) == "Kbits/sec") printf "%.3f\n", $i / 1000 }')
  check_range "goodput over 120 s of ATT-LTE-driving-2016.down (Mbit/s; capacity $capacity, ideal $ideal)" "$g" \
    "$(awk -v i="$ideal" 'BEGIN { print i * 0.95 }')" "$(awk -v i="$ideal" 'BEGIN { print i * 1.05 }')"
}

test_plot_tools_draw_logs_and_their_figures_match() {
  log=$WORLD_TMP/plot.log
  port=$((5400 + RANDOM % 500))
  in_world iperf3 -s -1 -D -p "$port" >/dev/null; sleep 0.2
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
  bounds_link() { AS_USER=$TEST_USER in_world sh -c 'ulimit -v 1000000; exec timeout 30 "$@"' sh "$BIN/mm-link" "$@"; }
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
  bounds_limited() { sh -c 'ulimit -v 500000; exec timeout 30 "$@"' sh "$@"; }
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
