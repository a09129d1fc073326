# SPDX-License-Identifier: GPL-3.0-or-later
# Rootless shells (src/shell/rootless.hh): the programs installed without their setuid bits, run
# by the test user, who has no root's rights at all. tests/run-all's rootless pass runs these
# (rootless_test_*) and some of the other tests again, with BIN pointing at such a copy
# (rootless_pass_begin) and what the kernel needs for an ordinary user set as Debian has it
# (/dev/net/tun usable by all; in the world, ICMP sockets for all, which pasta uses for ping),
# each put back after (rootless_pass_end).

# Copies the programs of $1 (an installed bin directory) without their setuid bits into $2.
rootless_copy() {  # FROM TO
  mkdir -p "$2" && cp -a "$1"/mm-* "$2"/ && chmod u-s "$2"/mm-* && chmod 755 "$2" || return 1
  ! find "$2" -perm -4000 | grep -q . || { echo "setuid bits left in $2" >&2; return 1; }
}

rootless_pass_begin() {
  ROOTLESS_TUN_MODE=$(stat -c %a /dev/net/tun) && chmod 0666 /dev/net/tun || return 1
  ROOTLESS_PING_RANGE=$(in_world cat /proc/sys/net/ipv4/ping_group_range | tr '\t' ' ')
  in_world sysctl -qw net.ipv4.ping_group_range="0 2147483647"
}

rootless_pass_end() {
  [ -z "${ROOTLESS_TUN_MODE:-}" ] || chmod "$ROOTLESS_TUN_MODE" /dev/net/tun
  [ -z "${ROOTLESS_PING_RANGE:-}" ] || in_world sysctl -qw net.ipv4.ping_group_range="$ROOTLESS_PING_RANGE"
  ROOTLESS_TUN_MODE= ROOTLESS_PING_RANGE=
}

# As the test user, in the world, with the copy first in PATH.
as_rootless_user() { AS_USER=$TEST_USER in_world env PATH="$BIN:$PATH" "$@"; }

# The test user's rootless state (lock files): none may be left after a shell.
rootless_lock_files() { ls /tmp/mahimahi-"$(id -u "$TEST_USER")"/ 2>/dev/null || true; }

rootless_test_shells_nest_as_the_user_without_capabilities() {
  local out uid; uid=$(id -u "$TEST_USER")
  out=$(as_rootless_user "$BIN/mm-delay" 10 "$BIN/mm-delay" 5 "$BIN/mm-loss" uplink 0 "$BIN/mm-onoff" uplink 100 0.001 \
    "$BIN/mm-intermittent" downlink 100 0.5 -- sh -c 'id -u; grep CapEff /proc/self/status; echo "prefix $MAHIMAHI_SHELL_PREFIX"
      ping -c 5 -i 0.2 -q 10.77.0.2 | tail -1; ping -c 3 -i 0.2 -q "$MAHIMAHI_BASE" | tail -1
      curl -sS -o /dev/null -w "curl %{http_code}\n" http://c.test/' 2>&1) || fail "nested rootless shells: $out" || return 1
  echo "$out" | sed 's/^/  /'
  [ "$(echo "$out" | sed -n 1p)" = "$uid" ] || fail "the command's uid is not $uid" || return 1
  echo "$out" | grep -q "CapEff:.*0000000000000000" || fail "the command has capabilities" || return 1
  echo "$out" | grep "^prefix " | grep -q "^prefix \[delay 10 ms\] \[delay 5 ms\] \[loss up=0\] \[.*\] \[.*\] $" ||
    fail "the five shells' prefix" || return 1
  echo "$out" | grep -q "^curl 200" || fail "curl through the way out" || return 1
  # The delays add up (30 ms), to the world's server through pasta and to MAHIMAHI_BASE alike.
  local rtts; rtts=$(echo "$out" | awk -F'[/ ]' '/^rtt/ { print $7 }')
  [ "$(echo "$rtts" | wc -l)" = 2 ] || fail "ping: $out" || return 1
  for rtt in $rtts; do check_range "min round trip through the nested shells (ms)" "$rtt" 29.9 34 || return 1; done
  [ -z "$(rootless_lock_files)" ] || fail "lock files left: $(rootless_lock_files)"
}

rootless_test_way_out_reaches_the_host_and_publishes_nothing() {
  local port out; port=$(free_port) || return 1
  iperf_server "$port" || return 1
  # MAHIMAHI_BASE leads to the host's servers, as with the setuid shells; the link shapes it.
  out=$(as_rootless_user "$BIN/mm-link" constant-12Mbps constant-12Mbps -- sh -c \
    "iperf3 -c \$MAHIMAHI_BASE -p $port -t 3 -f k" 2>&1) || fail "iperf3 to MAHIMAHI_BASE: $out" || return 1
  check_range "goodput through a rootless mm-link to the host (Mbit/s)" "$(echo "$out" | iperf_receiver_mbits)" 9 12.1 ||
    return 1
  # A port the command listens on is not published on the host (pasta -t none -u none).
  local mark=$WORLD_TMP/rootless-port
  mkdir -p "$mark" && chown "$TEST_USER" "$mark"
  as_rootless_user "$BIN/mm-delay" 0 -- sh -c "python3 -m http.server 5899 --bind 0.0.0.0 >/dev/null 2>&1 & p=\$!
      for i in \$(seq 100); do ss -ltnH 'sport = :5899' | grep -q . && break; sleep 0.05; done
      curl -s -m 2 -o /dev/null -w 'inside %{http_code}' http://127.0.0.1:5899/ > $mark/listening
      for i in \$(seq 200); do [ -e $mark/checked ] && break; sleep 0.05; done; kill \$p" > "$mark/out" 2>&1 &
  wait_until 10 grep -qs inside "$mark/listening" || fail "the command did not listen: $(cat "$mark/out")" || return 1
  local inside seen; inside=$(cat "$mark/listening")
  # (The server stays up until the host has tried: the command waits for "checked".)
  seen=$(in_world curl -s -m 1 -o /dev/null -w '%{http_code}' "http://$WORLD_IP:5899/")
  touch "$mark/checked"
  wait
  [ "$inside" = "inside 200" ] || fail "inside the shell: $inside" || return 1
  [ "$seen" = 000 ] || fail "the host reached the command's port 5899 ($seen)" || return 1
  echo "  MAHIMAHI_BASE reaches the host's iperf3; the command's port is not on the host"
}

rootless_test_dns_through_a_loopback_resolver() {
  # (127.0.0.153: a loopback address no other test's resolver takes.)
  local out dns; printf 'nameserver 127.0.0.153\n' > "$WORLD_TMP/rootless-resolv"
  in_world /usr/sbin/dnsmasq --keep-in-foreground --listen-address=127.0.0.153 --bind-interfaces --no-resolv \
    --server="$SERVER_IP" --user=root -C /dev/null --log-facility=/dev/null --pid-file= &
  dns=$!
  wait_until 10 listening "$WORLD" udp 53 || { kill "$dns"; wait "$dns" 2>/dev/null; fail "no resolver"; return 1; }
  out=$(AS_USER=$TEST_USER in_world_with_resolv "$WORLD_TMP/rootless-resolv" "$BIN/mm-delay" 20 "$BIN/mm-delay" 5 -- \
    sh -c 'getent hosts server.test && curl -sS -o /dev/null -w "curl %{http_code}\n" http://c.test/' 2>&1)
  kill "$dns"; wait "$dns" 2>/dev/null
  echo "$out" | grep -q "^$SERVER_IP *server.test" && echo "$out" | grep -q "^curl 200" ||
    fail "names through a resolver on the host's loopback: $out" || return 1
  echo "  a resolver on 127.0.0.153 answers through two nested shells and pasta"
}

rootless_test_record_through_the_way_out_then_replay() {
  local home=$WORLD_TMP/rootless-rec dir out
  dir=$home/rec
  mkdir -p "$home" && chown "$TEST_USER" "$home"
  as_rootless_user env HOME="$home" MAHIMAHI_CA_DIR="$home/ca" SSL_CERT_FILE="$ORIGIN_CA" \
    "$BIN/mm-record" "$dir" -- sh -c "curl -sf -o /dev/null --cacert $home/ca/ca.pem https://b.test/style.css &&
      curl -sf -o /dev/null http://a.test/index.html" || fail "rootless mm-record" || return 1
  [ "$(ls "$dir" | wc -l)" = 2 ] || fail "recorded: $(ls "$dir")" || return 1
  [ "$(stat -c %U "$dir")" = "$TEST_USER" ] || fail "the recording is not the user's" || return 1
  out=$(as_rootless_user env HOME="$home" MAHIMAHI_CA_DIR="$home/ca" "$BIN/mm-replay" "$dir" "$BIN/mm-delay" 20 -- sh -c \
    "curl -sS -o /dev/null -w '%{http_code} %{time_total}\n' --cacert $home/ca/ca.pem https://b.test/style.css
     curl -sS -o /dev/null -w '%{http_code} %{time_total}\n' http://a.test/index.html
     grep CapEff /proc/self/status" 2>&1) || fail "rootless replay: $out" || return 1
  [ "$(echo "$out" | grep -c '^200 ')" = 2 ] || fail "replayed: $out" || return 1
  echo "$out" | grep -q "CapEff:.*0000000000000000" || fail "the command has capabilities" || return 1
  echo "  recorded 2 pairs through pasta, replayed both inside a nested mm-delay"
}

rootless_test_pageload_and_sweep_as_the_user() {
  pageload_pages || return 1
  local out=$WORLD_TMP/rootless-pl
  mkdir -p "$out" && chown "$TEST_USER" "$out"
  as_rootless_user env HOME="$out" "$BIN/mm-delay" 20 -- "$BIN/mm-pageload" --ca "$ORIGIN_CA" --runs 1 \
    --csv "$out/loads.csv" https://a.test/chain.html > "$out/summary" 2> "$out/err" ||
    fail "rootless mm-pageload: $(cat "$out/err")" || return 1
  grep -q "https://a.test/chain.html: 1 of 1 ok" "$out/summary" || fail "summary: $(cat "$out/summary")" || return 1
  sweep_recording || return 1
  local home; home=$(sweep_home)
  sweep_run --recording "$home/rec" --rates 25 --rtts 40 --runs 1 --timeout 40 --out "$home/res-rootless" \
    2>"$home/rootless.err" || fail "rootless mm-sweep: $(tail -5 "$home/rootless.err")" || return 1
  [ "$(grep -c ',ok,' "$home/res-rootless/loads.csv")" = 2 ] || fail "loads: $(cat "$home/res-rootless/loads.csv")" || return 1
  # A command sweep with a server: in a rootless mm-delay 0 of its own, the runs' shells inside.
  sweep_run --server 'iperf3 -s -1 -p $MM_SWEEP_PORT' --command 'iperf3 -c $MAHIMAHI_BASE -p $MM_SWEEP_PORT -t 2' \
    --rates 24 --runs 1 --out "$home/res-rootless-cc" 2>"$home/rootless-cc.err" ||
    fail "rootless command sweep: $(tail -5 "$home/rootless-cc.err")" || return 1
  grep -q "run 1: ok, uplink 2[0-9]\.[0-9]* Mbit/s" "$home/rootless-cc.err" ||
    fail "rootless command sweep: $(cat "$home/rootless-cc.err")" || return 1
  sweep_left_nothing || return 1
  echo "  mm-pageload in a rootless mm-delay, and rootless mm-sweeps of page loads and of iperf3: every load and run ok"
}

rootless_test_live_graphs_and_logs() {
  with_xvfb rootless_graphs
}
rootless_graphs() {
  local dir port; dir=$(user_dir rootless)
  port=$(free_port) || return 1
  iperf_server "$port" || return 1
  as_x_user "$BIN/mm-link" rate:12Mbit/s rate:12Mbit/s --meter-downlink --downlink-log="$dir/down.log" -- \
    "$BIN/mm-meter" --meter-output="$dir/meter" -- sh -c "iperf3 -c \$MAHIMAHI_BASE -p $port -R -t 4 >/dev/null &
     $(grab_when_drawn "[link 12Mbit/s up 12Mbit/s down] downlink" "$dir/link.png" 200 10)
     wait" || fail "rootless mm-link with a live graph" || return 1
  set -- $("$XPROBE" pixels "$dir/link.png" c=$CAPACITY_FILL i=$INGRESS_LINE e=$EGRESS_LINE)
  [ "$2" -ge 1000 ] && [ "${12}" -ge 200 ] || fail "the window: capacity $2 px, traffic out ${12} px" || return 1
  set -- $("$XPROBE" pixels "$dir/meter/downlink.png" c=$CAPACITY_FILL i=$INGRESS_LINE e=$EGRESS_LINE)
  [ "$7" -ge 100 ] || fail "mm-meter's graph lacks the traffic ($7 px)" || return 1
  "$BIN/mm-throughput-graph" 500 "$dir/down.log" > "$dir/down.svg" 2> "$dir/summary" || fail "the graph tool" || return 1
  grep -q "Average throughput" "$dir/summary" || fail "summary: $(cat "$dir/summary")" || return 1
  echo "  mm-link's live graph drew capacity and traffic, mm-meter's file the traffic; the log's graph: $(grep 'Average throughput' "$dir/summary")"
}

rootless_test_kill9_leaves_nothing() {
  as_rootless_user "$BIN/mm-delay" 10 -- sleep 60 &
  wait_until 10 pgrep -u "$TEST_USER" -x sleep >/dev/null || fail "the command did not start" || return 1
  local supervisor; supervisor=$(pgrep -u "$TEST_USER" -o -x mm-delay) || fail "no supervisor" || return 1
  pgrep -u "$TEST_USER" -f pasta >/dev/null || fail "no pasta while the shell runs" || return 1
  kill -9 "$supervisor"
  wait
  wait_until 10 sh -c "! pgrep -u $TEST_USER >/dev/null" || fail "left: $(pgrep -a -u "$TEST_USER")" || return 1
  # Its lock file (it had no time to remove it) goes with the next rootless shell's start.
  [ -n "$(rootless_lock_files)" ] || echo "  (no lock file was left)"
  as_rootless_user "$BIN/mm-delay" 0 true || fail "the next shell" || return 1
  [ -z "$(rootless_lock_files)" ] || fail "lock files left: $(rootless_lock_files)" || return 1
  echo "  SIGKILL of the supervisor: the command, pasta and the monitor are gone; the next shell removed its lock file"
}

rootless_test_the_kernel_says_no_in_one_message() {
  local out status
  # /dev/net/tun as this machine has it (0600): before anything is made, the setting is named.
  chmod 0600 /dev/net/tun
  out=$(as_rootless_user "$BIN/mm-delay" 10 -- true 2>&1); status=$?
  chmod 0666 /dev/net/tun
  [ "$status" = 1 ] && echo "$out" | grep -q "you may not open /dev/net/tun (mode 0600).*chmod 0666 /dev/net/tun.*setuid" ||
    fail "tun refused: $status '$out'" || return 1
  [ "$(echo "$out" | wc -l)" = 1 ] || fail "more than one line: $out" || return 1
  # User namespaces switched off (user.max_user_namespaces, a setting of each user namespace:
  # switched off in a throwaway one).
  out=$(AS_USER=$TEST_USER in_world unshare --user --map-root-user sh -c \
    "echo 0 > /proc/sys/user/max_user_namespaces && MAHIMAHI_ROOTLESS=1 $BIN/mm-delay 10 -- true" 2>&1); status=$?
  [ "$status" = 1 ] && echo "$out" | grep -q "user namespaces are switched off (user.max_user_namespaces = 0).*sysctl" ||
    fail "max_user_namespaces=0: $status '$out'" || return 1
  # /proc/sys read-only, as container engines mount it (in a throwaway mount namespace).
  out=$(in_world unshare --mount sh -c "mount --bind -o ro /proc/sys /proc/sys &&
    setpriv --reuid=$TEST_USER --regid=$TEST_USER --init-groups -- $BIN/mm-delay 10 -- true" 2>&1); status=$?
  [ "$status" = 1 ] && echo "$out" | grep -q "/proc/sys is mounted read-only.*unmask=/proc/sys.*systempaths=unconfined" &&
    [ "$(echo "$out" | wc -l)" = 1 ] || fail "read-only /proc/sys: $status '$out'" || return 1
  # The choices of the environment.
  out=$(as_rootless_user env MAHIMAHI_ROOTLESS=0 "$BIN/mm-delay" 10 -- true 2>&1); status=$?
  [ "$status" = 1 ] && echo "$out" | grep -q "needs root's rights with MAHIMAHI_ROOTLESS=0" || fail "ROOTLESS=0: $out" || return 1
  out=$(as_rootless_user env MAHIMAHI_WAY_OUT=slirp "$BIN/mm-delay" 10 -- true 2>&1); status=$?
  [ "$status" = 2 ] && echo "$out" | grep -q "MAHIMAHI_WAY_OUT must be pasta.*or none" || fail "WAY_OUT: $out" || return 1
  out=$(AS_USER=$TEST_USER in_world env PATH=/nonexistent "$BIN/mm-delay" 10 -- /bin/true 2>&1); status=$?
  [ "$status" = 1 ] && echo "$out" | grep -q "pasta, which is not installed.*apt install passt.*MAHIMAHI_WAY_OUT=none" ||
    fail "no pasta: $out" || return 1
  # Without a way out: the shell's own outer address answers, nothing else.
  out=$(as_rootless_user env MAHIMAHI_WAY_OUT=none "$BIN/mm-delay" 10 -- sh -c \
    'ping -c 1 -q "$MAHIMAHI_BASE" | tail -1; ping -c 1 -W 1 -q 10.77.0.2 >/dev/null || echo "no way out"' 2>&1)
  echo "$out" | grep -q "^rtt min/avg/max/mdev = 20\." && echo "$out" | grep -q "^no way out" ||
    fail "MAHIMAHI_WAY_OUT=none: $out" || return 1
  ! pgrep -u "$TEST_USER" -f pasta >/dev/null || fail "pasta ran without a way out" || return 1
  echo "  each refusal in one line naming the setting; MAHIMAHI_WAY_OUT=none makes no way out"
}

# The other tests that the rootless pass runs again, rootless (they run their shells as the user).
rootless_pass_tests='^test_(delay_trace_and_jitter_as_a_user|loss_gilbert_elliott_bursts_as_a_user|delay_and_loss_logs_as_a_user|loss_trace_as_a_user|record_as_ordinary_user_files_are_the_users|replay_server_tcp_congestion_control_and_slow_start_after_idle|meter_delay_and_loss_windows_through_the_viewer|preset_applies_the_profiles_rates_and_round_trip_as_a_user|cumulus_page_loads_in_chromium_through_both_proxies)$'

# Another user made the test user's /tmp/mahimahi-UID first (finding of issue 49): the rootless
# shells pass it over for a directory only the user can make (HOME/.cache/mahimahi, without a
# runtime directory) and start, mm-replay included; with no such place left, the refusal says
# what to do. The test user's own directory, if there, is put back afterwards.
rootless_test_a_state_directory_another_user_made_first_does_not_block() {
  local uid dir home out status=0; uid=$(id -u "$TEST_USER") dir=/tmp/mahimahi-$(id -u "$TEST_USER")
  home=$WORLD_TMP/rootless-home
  rm -rf "$home" && mkdir -p "$home" && chown "$TEST_USER" "$home" && chmod 700 "$home"
  [ ! -e "$dir" ] || mv "$dir" "$dir.saved" || return 1
  AS_USER=$OTHER_USER in_world mkdir -m 755 "$dir" || status=1
  if [ "$status" = 0 ]; then
    out=$(as_rootless_user env -u XDG_RUNTIME_DIR HOME="$home" "$BIN/mm-delay" 5 -- \
      sh -c 'ping -c 2 -i 0.2 -q "$MAHIMAHI_BASE" | tail -1' 2>&1) ||
      { status=1; echo "FAIL: mm-delay with $dir another user's: $out"; }
    [ "$status" = 1 ] || [ -d "$home/.cache/mahimahi-$(hostname)" ] || { status=1; echo "FAIL: no state directory in $home/.cache: $(ls "$home/.cache")"; }
    if [ "$status" = 0 ]; then
      out=$(as_rootless_user env -u XDG_RUNTIME_DIR HOME="$home" "$BIN/mm-replay" "$top/recordings/demo-site" -- \
        curl -sS -o /dev/null -w '%{http_code}\n' -A mahimahi-demo http://a.test/index.html 2>&1)
      [ "$(echo "$out" | tail -1)" = 200 ] || { status=1; echo "FAIL: mm-replay with $dir another user's: $out"; }
    fi
    if [ "$status" = 0 ]; then
      # No runtime directory and no home of the user's: only /tmp's is left, and it is refused.
      out=$(as_rootless_user env -u XDG_RUNTIME_DIR HOME=/ "$BIN/mm-delay" 5 -- true 2>&1)
      case $out in *"remove $dir if another user made it"*) ;; *) status=1; echo "FAIL: the refusal: $out" ;; esac
    fi
  fi
  rm -rf "$dir"
  [ ! -e "$dir.saved" ] || mv "$dir.saved" "$dir"
  [ "$status" = 0 ] || return 1
  echo "  $dir taken by $OTHER_USER: the shells used $home/.cache/mahimahi-$(hostname); without a home: $(echo "$out" | head -1 | cut -c1-150)"
}

# A machine with no route out (a namespace of the test's own, with a LAN address and no default
# route): an outermost rootless shell starts without a way out, says so in one line, and reaches
# MAHIMAHI_BASE. Then, with a route out, a resolver on the machine's own LAN address (dnsmasq on
# 198.51.100.1, as a machine that runs its own DNS server) answers inside the shell: its DNS
# goes to pasta's forwarder, not to the outside's copy of that address.
rootless_test_no_route_out_and_a_resolver_on_the_hosts_own_address() {
  local x=mmt-x$$ y=mmt-y$$ out status=0 pid
  ip netns add "$x" && ip netns add "$y" || return 1
  ip -n "$x" link set lo up
  ip link add "mmt-c$$" netns "$x" type veth peer name "mmt-d$$" netns "$y"
  ip -n "$x" addr add 198.51.100.1/24 dev "mmt-c$$" && ip -n "$x" link set "mmt-c$$" up
  ip -n "$y" addr add 198.51.100.2/24 dev "mmt-d$$" && ip -n "$y" link set "mmt-d$$" up
  mkdir -p "/etc/netns/$x" && echo "nameserver 198.51.100.1" > "/etc/netns/$x/resolv.conf"
  ip netns exec "$x" /usr/sbin/dnsmasq --keep-in-foreground --no-resolv --no-hosts --address=/lan.test/198.51.100.9 \
    --listen-address=198.51.100.1 --bind-interfaces --user=root --pid-file= --log-facility=/dev/null -C /dev/null &
  pid=$!
  local run=(ip netns exec "$x" setpriv --reuid="$TEST_USER" --regid="$TEST_USER" --init-groups env PATH="$BIN:$PATH")
  out=$("${run[@]}" "$BIN/mm-delay" 5 -- sh -c 'ping -c 2 -i 0.2 -q "$MAHIMAHI_BASE" | tail -1' 2>&1) ||
    { status=1; echo "FAIL: with no route out: $out"; }
  if [ "$status" = 0 ]; then
    echo "$out" | grep -q "^mm-delay: this machine has no route out (no IPv4 default route), so the shell has no way out either" ||
      { status=1; echo "FAIL: no line saying there is no way out: $out"; }
    echo "$out" | grep -q '^rtt' || { status=1; echo "FAIL: MAHIMAHI_BASE did not answer: $out"; }
    echo "  no route out: $(echo "$out" | head -1 | cut -c1-120)"
  fi
  if [ "$status" = 0 ]; then
    ip -n "$x" route add default via 198.51.100.2
    wait_until 10 ip netns exec "$x" getent hosts lan.test >/dev/null || { status=1; echo "FAIL: dnsmasq did not start"; }
    out=$("${run[@]}" "$BIN/mm-delay" 5 -- getent hosts lan.test 2>&1) ||
      { status=1; echo "FAIL: the resolver on the host's own address, from inside: $out"; }
    [ "$status" = 1 ] || echo "$out" | grep -q '^198\.51\.100\.9 ' || { status=1; echo "FAIL: lan.test resolved to: $out"; }
    [ "$status" = 1 ] || echo "  lan.test through the shell: $out"
  fi
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  for p in $(ip netns pids "$x") $(ip netns pids "$y"); do kill -9 "$p" 2>/dev/null; done
  ip netns del "$x"; ip netns del "$y"
  rm -rf "/etc/netns/$x"
  return "$status"
}
