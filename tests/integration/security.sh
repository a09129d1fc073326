# SPDX-License-Identifier: GPL-3.0-or-later
# Security regression tests (issue 9): the setuid programs run as an ordinary user ($TEST_USER)
# inside the test world must not reroute the host, make it a router, regain root, stall other
# users' shells, or take more priority than the user could. Each finding of the review is a test.

# Where the installed programs read the administrator's configuration (SYSCONFDIR/mahimahi.conf).
admin_config() { echo "$(dirname "$BIN")/etc/mahimahi.conf"; }

with_admin_config() {  # TEXT: installs the configuration (root-owned, 0644) until remove_admin_config
  mkdir -p "$(dirname "$(admin_config)")"
  chmod 755 "$(dirname "$(admin_config)")"
  printf '%s\n' "$1" > "$(admin_config)"
  chmod 644 "$(admin_config)"
}
remove_admin_config() { rm -f "$(admin_config)"; }

# ----- finding 1: address pools -----

test_user_pool_outside_private_space_is_refused() {
  status=0
  for pool in 208.67.222.220/30 169.254.169.252/30 0.0.0.0/0 240.0.0.0/30 255.255.255.252/30 127.0.0.0/30 224.0.0.0/30 8.8.8.0/30; do
    out=$(AS_USER=$TEST_USER in_world env MAHIMAHI_ADDRESS_POOL=$pool "$BIN/mm-delay" 0 -- echo ran 2>&1); rc=$?
    if [ "$rc" = 1 ] && echo "$out" | grep -q "MAHIMAHI_ADDRESS_POOL=$pool is refused" && ! echo "$out" | grep -q '^ran'; then
      echo "  $pool: refused"
    else
      echo "FAIL: pool $pool as an ordinary user: status $rc, output: $out"; status=1
    fi
  done
  # Nothing was added: no route into the refused ranges exists in the world.
  routes=$(in_world ip route show table all | grep -E '208\.67|169\.254\.169|^240\.|^8\.8\.8' || true)
  [ -z "$routes" ] || { echo "FAIL: routes left: $routes"; status=1; }
  # Root may not take special space either, but may use a public range it owns.
  in_world env MAHIMAHI_ADDRESS_POOL=169.254.0.0/16 "$BIN/mm-delay" 0 true 2>/dev/null && { echo "FAIL: root took link-local space"; status=1; }
  out=$(in_world env MAHIMAHI_ADDRESS_POOL=198.51.100.0/30 "$BIN/mm-delay" 0 sh -c 'ping -n -c 1 -W 2 -q '"$SERVER_IP"' >/dev/null && echo ok')
  [ "$out" = ok ] || { echo "FAIL: root could not use 198.51.100.0/30"; status=1; }
  # An ordinary user inside private space works.
  out=$(AS_USER=$TEST_USER in_world env MAHIMAHI_ADDRESS_POOL=10.200.0.0/16 "$BIN/mm-delay" 0 sh -c 'echo $MAHIMAHI_BASE; ping -n -c 1 -W 2 -q '"$SERVER_IP"' >/dev/null && echo ok')
  [ "$out" = "10.200.0.1
ok" ] || { echo "FAIL: user pool 10.200.0.0/16 gave: $out"; status=1; }
  return $status
}

test_administrator_file_widens_the_pools_environment_cannot() {
  status=0
  pool=198.18.0.0/30
  AS_USER=$TEST_USER in_world env MAHIMAHI_ADDRESS_POOL=$pool "$BIN/mm-delay" 0 true 2>/dev/null &&
    { echo "FAIL: $pool accepted without the administrator's permission"; status=1; }
  with_admin_config "# test
allow-address-pool 198.18.0.0/15"
  out=$(AS_USER=$TEST_USER in_world env MAHIMAHI_ADDRESS_POOL=$pool "$BIN/mm-delay" 0 sh -c 'echo $MAHIMAHI_BASE; ping -n -c 1 -W 2 -q '"$SERVER_IP"' >/dev/null && echo ok' 2>&1)
  [ "$out" = "198.18.0.1
ok" ] || { echo "FAIL: allowed pool gave: $out"; status=1; }
  # A configuration others could have written is not trusted: the shell refuses to start.
  chmod 666 "$(admin_config)"
  out=$(AS_USER=$TEST_USER in_world "$BIN/mm-delay" 0 echo ran 2>&1); rc=$?
  [ "$rc" = 1 ] && echo "$out" | grep -q "writable by root only" ||
    { echo "FAIL: a world-writable configuration was used (status $rc: $out)"; status=1; }
  printf 'allow-address-pool 0.0.0.0/0 extra\n' > "$(admin_config)"; chmod 644 "$(admin_config)"
  out=$(AS_USER=$TEST_USER in_world "$BIN/mm-delay" 0 echo ran 2>&1); rc=$?
  [ "$rc" = 1 ] && echo "$out" | grep -q 'mahimahi.conf:1: expected "KEY VALUE"' ||
    { echo "FAIL: a malformed configuration gave status $rc: $out"; status=1; }
  remove_admin_config
  [ $status = 0 ] && echo "  198.18.0.0/30 refused, then allowed by the administrator's file; untrusted or malformed files refused"
  return $status
}

test_pool_never_covers_routed_gateway_or_resolver_addresses() {
  status=0
  # A route in another routing table (as VPNs keep theirs), and a resolver reached through the
  # default route: shells must take neither, whatever the pool says.
  in_world ip route add 10.99.0.0/24 via "$SERVER_IP" table 100
  out=$(AS_USER=$TEST_USER in_world env MAHIMAHI_ADDRESS_POOL=10.99.0.0/24 "$BIN/mm-delay" 0 true 2>&1); rc=$?
  in_world ip route del 10.99.0.0/24 via "$SERVER_IP" table 100
  [ "$rc" = 1 ] && echo "$out" | grep -q "no free /30 left" || { echo "FAIL: a routed range was taken ($rc: $out)"; status=1; }
  printf 'nameserver 10.88.0.53\n' > "$WORLD_TMP/resolv-far"
  out=$(AS_USER=$TEST_USER in_world_with_resolv "$WORLD_TMP/resolv-far" env MAHIMAHI_ADDRESS_POOL=10.88.0.52/30 "$BIN/mm-delay" 0 true 2>&1); rc=$?
  [ "$rc" = 1 ] && echo "$out" | grep -q "no free /30 left" || { echo "FAIL: the resolver's /30 was taken ($rc: $out)"; status=1; }
  out=$(AS_USER=$TEST_USER in_world_with_resolv "$WORLD_TMP/resolv-far" env MAHIMAHI_ADDRESS_POOL=10.88.0.48/28 "$BIN/mm-delay" 0 sh -c 'echo $MAHIMAHI_BASE')
  [ "$out" = 10.88.0.49 ] || { echo "FAIL: expected the first /30 beside the resolver, got $out"; status=1; }
  [ $status = 0 ] && echo "  routed range (table 100) and the resolver's /30 skipped"
  return $status
}

# ----- finding 3: one user must not stall another's shells -----

# Stops (SIGSTOP, as the user may) or freezes (a cgroup the user may own, as systemd delegates
# one to each user) a user's shell at varied points of its set-up, and checks each time that
# another shell starts at once.
test_stopped_or_frozen_shell_of_one_user_does_not_delay_another() {
  status=0 worst=0 frozen=0
  freezer=/sys/fs/cgroup/freezer/mmt-victim$$
  [ -d /sys/fs/cgroup/freezer ] && mkdir -p "$freezer" || freezer=
  [ -n "$freezer" ] || [ -e /sys/fs/cgroup/cgroup.freeze ] || echo "  (no v1 freezer here: SIGSTOP only)"
  for i in $(seq 0 29); do
    how=stop; [ -n "$freezer" ] && [ $((i % 2)) = 1 ] && how=freeze
    if [ $how = freeze ]; then
      sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$freezer" nsenter --net="/run/netns/$WORLD" setpriv --reuid="$TEST_USER" \
        --regid="$TEST_USER" --init-groups -- "$BIN/mm-delay" 0 true &
    else
      AS_USER=$TEST_USER in_world "$BIN/mm-delay" 0 true &
    fi
    victim=$!
    sleep "0.00$((i % 10))$i"  # a different point of the set-up each time (not a synchronisation)
    if [ $how = freeze ]; then
      echo FROZEN > "$freezer/freezer.state"; frozen=$((frozen + 1))
    else
      # As the user: a root helper forked by the user's shell (listed by pgrep while its real uid
      # was still the user's, a moment before it became root) is then out of the user's reach,
      # as it is for a real user, instead of being stopped by the test's root rights.
      stopped=$(pgrep -U "$(id -u "$TEST_USER")" -f "$BIN/mm-delay")
      for p in $stopped; do setpriv --reuid="$TEST_USER" --regid="$TEST_USER" --init-groups kill -STOP "$p" 2>/dev/null; done
    fi
    s=$(date +%s%N)
    timeout 10 ip netns exec "$WORLD" "$BIN/mm-delay" 0 true; rc=$?
    ms=$(( ($(date +%s%N) - s) / 1000000 ))
    [ "$ms" -gt "$worst" ] && worst=$ms
    if [ $how = freeze ]; then echo THAWED > "$freezer/freezer.state"; else for p in $stopped; do kill -CONT "$p" 2>/dev/null; done; fi
    wait "$victim"
    [ "$rc" = 0 ] || { echo "FAIL: attempt $i ($how): another shell failed or waited ($rc after $ms ms)"; status=1; }
  done
  [ -z "$freezer" ] || wait_until 10 rmdir "$freezer" 2>/dev/null || echo "  (the test cgroup could not be removed yet: $freezer)"
  echo "  30 user shells stopped or frozen ($frozen frozen) at varied points of their set-up; the other shell's slowest start: $worst ms"
  [ "$worst" -lt 3000 ] || { echo "FAIL: a stopped shell delayed another by $worst ms"; status=1; }
  return $status
}

# Root (the test) holds the world's set-up lock, as a root helper would (a user cannot take it),
# until release_world_lock.
hold_world_lock() {
  lock=$(world_lock_file)
  mkdir -p /run/mahimahi
  touch "$WORLD_TMP/hold"
  flock "$lock" sh -c 'while [ -e "$0" ]; do sleep 0.05; done' "$WORLD_TMP/hold" &
  lock_holder=$!
  wait_until 10 sh -c "! flock -n '$lock' true" || { release_world_lock; fail "could not take the lock"; }
}
release_world_lock() { rm -f "$WORLD_TMP/hold"; wait "$lock_holder"; }

# One user's shells coming and going (their devices vanish at any moment) while another user
# starts shells in the same namespace: every start succeeds, and quickly.
test_shells_coming_and_going_do_not_fail_another_users_start() {
  touch "$WORLD_TMP/churn"
  AS_USER=$TEST_USER in_world sh -c 'while [ -e "$0" ]; do for i in 1 2 3 4; do "$1" 0 true & done; wait; done' \
    "$WORLD_TMP/churn" "$BIN/mm-delay" &
  churn=$!
  status=0 worst=0
  for i in $(seq 20); do
    s=$(date +%s%N)
    out=$(timeout 20 ip netns exec "$WORLD" "$BIN/mm-delay" 0 sh -c 'ping -n -c 1 -W 2 -q '"$SERVER_IP"' >/dev/null && echo ok' 2>&1)
    ms=$(( ($(date +%s%N) - s) / 1000000 ))
    [ "$ms" -gt "$worst" ] && worst=$ms
    [ "$out" = ok ] || { echo "FAIL: start $i among the other user's churning shells: $out"; status=1; }
  done
  rm -f "$WORLD_TMP/churn"; wait "$churn"
  echo "  20 starts among another user's churning shells; slowest $worst ms"
  [ "$worst" -lt 5000 ] || { echo "FAIL: a start took $worst ms"; status=1; }
  return $status
}

test_setup_lock_wait_is_bounded_and_interruptible() {
  hold_world_lock || return 1
  status=0
  s=$(date +%s%N)
  out=$(AS_USER=$TEST_USER in_world "$BIN/mm-delay" 0 echo ran 2>&1); rc=$?
  ms=$(( ($(date +%s%N) - s) / 1000000 ))
  echo "  waited $ms ms, status $rc: $out"
  [ "$rc" = 1 ] && echo "$out" | grep -q "for over 10 s" || { echo "FAIL: expected a clear refusal after the bound"; status=1; }
  [ "$ms" -ge 9500 ] && [ "$ms" -lt 15000 ] || { echo "FAIL: gave up after $ms ms, expected about 10 s"; status=1; }
  # A shell waiting for the lock stops at once when told to.
  ip netns exec "$WORLD" setpriv --reuid="$TEST_USER" --regid="$TEST_USER" --init-groups -- \
    "$BIN/mm-delay" 0 echo ran > "$WORLD_TMP/interrupted.out" 2>&1 &
  shell=$!  # ip and setpriv exec in place: the shell's supervisor
  # Waiting: its root helper (the only child it has while setting up) exists.
  wait_until 10 pgrep -P "$shell" >/dev/null || { echo "FAIL: the shell never started its helper"; status=1; }
  s=$(date +%s%N)
  kill -TERM "$shell"
  wait "$shell"; rc=$?
  ms=$(( ($(date +%s%N) - s) / 1000000 ))
  echo "  SIGTERM while waiting: status $rc after $ms ms: $(cat "$WORLD_TMP/interrupted.out")"
  [ "$rc" != 0 ] && [ "$ms" -lt 2000 ] || { echo "FAIL: the waiting shell did not end promptly"; status=1; }
  grep -q '^ran' "$WORLD_TMP/interrupted.out" && { echo "FAIL: the command ran"; status=1; }
  release_world_lock
  rm -f "$lock"  # the test made it, and no shell of the world is left to remove it
  return $status
}

# The process that holds the namespace's lock (the root helper) is out of the user's reach:
# observed while it waits for a lock the test holds, which makes the check deterministic.
test_lock_holder_cannot_be_signalled_or_frozen_by_the_user() {
  hold_world_lock || return 1
  freezer=/sys/fs/cgroup/freezer/mmt-user$$
  [ -d /sys/fs/cgroup/freezer ] && mkdir -p "$freezer" || freezer=
  # The user's shell, started inside a cgroup of the user's (as systemd gives each user one).
  # nsenter, not ip netns exec: that one mounts a new /sys, without the cgroup file systems.
  sh -c '[ -z "$0" ] || echo $$ > "$0/cgroup.procs"; exec "$@"' "$freezer" nsenter --net="/run/netns/$WORLD" setpriv \
    --reuid="$TEST_USER" --regid="$TEST_USER" --init-groups -- "$BIN/mm-delay" 0 echo ran > "$WORLD_TMP/helper.out" 2>&1 &
  shell=$!
  status=0
  # Ready once it is root in all three slots and leads its own session (then it waits for the lock).
  helper_ready() {
    helper=$(pgrep -P "$shell" | head -1)
    [ -n "$helper" ] && [ "$(awk '/^Uid/{print $2,$3,$4}' "/proc/$helper/status" 2>/dev/null)" = "0 0 0" ] &&
      [ "$(ps -o sid= -p "$helper" | tr -d ' ')" = "$helper" ]
  }
  wait_until 10 helper_ready || { echo "FAIL: no helper became root in its own session"; status=1; }
  helper=$(pgrep -P "$shell" | head -1)
  if [ -n "$helper" ]; then
    uids=$(awk '/^Uid/{print $2,$3,$4}' "/proc/$helper/status")
    echo "  helper $helper: uids $uids, session $(ps -o sid= -p "$helper") (shell's $(ps -o sid= -p "$shell"))"
    [ "$uids" = "0 0 0" ] || { echo "FAIL: the helper's uids are $uids"; status=1; }
    [ "$(ps -o sid= -p "$helper")" != "$(ps -o sid= -p "$shell")" ] || { echo "FAIL: the helper shares the shell's session"; status=1; }
    out=$(setpriv --reuid="$TEST_USER" --regid="$TEST_USER" --init-groups -- kill -STOP "$helper" 2>&1) &&
      { echo "FAIL: the user could stop the helper"; status=1; }
    echo "  the user's kill -STOP: ${out:-succeeded}"
    if [ -n "$freezer" ]; then
      cg=$(awk -F: '$2 == "freezer" {print $3}' "/proc/$helper/cgroup")
      echo "  helper's freezer cgroup: $cg (the shell's: $(awk -F: '$2 == "freezer" {print $3}' "/proc/$shell/cgroup"))"
      [ "$cg" = / ] || { echo "FAIL: the helper stays in the user's freezable cgroup"; status=1; }
    fi
  fi
  release_world_lock
  wait "$shell" || { echo "FAIL: the shell did not start once the lock was free: $(cat "$WORLD_TMP/helper.out")"; status=1; }
  grep -qx ran "$WORLD_TMP/helper.out" || { echo "FAIL: the command did not run"; status=1; }
  [ -z "$freezer" ] || wait_until 10 rmdir "$freezer" 2>/dev/null || echo "  (the test cgroup could not be removed yet: $freezer)"
  return $status
}

# ----- finding 4: forwarding -----

forwarding_state() {  # every IPv4 forwarding sysctl of the world but the shells' own devices
  in_world sh -c 'for f in /proc/sys/net/ipv4/ip_forward /proc/sys/net/ipv4/conf/*/forwarding; do echo "$f $(cat $f)"; done' |
    grep -v -E "/conf/$SHELL_DEVICE_RE/"
}

test_forwarding_stays_off_between_other_interfaces_and_is_restored() {
  # Two more networks on the world, as a VPN and a LAN would be: host fa (10.78.1.2) and fb (10.78.2.2).
  for n in a b; do
    ip netns add "mmt-f$n$$"; ip -n "mmt-f$n$$" link set lo up
    ip link add "mmt-f$n$$" netns "$WORLD" type veth peer name eth0 netns "mmt-f$n$$"
  done
  ip -n "$WORLD" addr add 10.78.1.1/24 dev "mmt-fa$$"; ip -n "$WORLD" link set "mmt-fa$$" up
  ip -n "$WORLD" addr add 10.78.2.1/24 dev "mmt-fb$$"; ip -n "$WORLD" link set "mmt-fb$$" up
  ip -n "mmt-fa$$" addr add 10.78.1.2/24 dev eth0; ip -n "mmt-fa$$" link set eth0 up; ip -n "mmt-fa$$" route add default via 10.78.1.1
  ip -n "mmt-fb$$" addr add 10.78.2.2/24 dev eth0; ip -n "mmt-fb$$" link set eth0 up; ip -n "mmt-fb$$" route add default via 10.78.2.1
  saved=$(in_world sysctl -n net.ipv4.ip_forward)
  in_world sysctl -q -w net.ipv4.ip_forward=0
  before=$(forwarding_state)
  a_to_b() { ip netns exec "mmt-fa$$" ping -n -c 1 -W 1 -q 10.78.2.2 >/dev/null 2>&1; }
  status=0
  # Two shells at once, of two users: the root's and the ordinary user's; each waits for a file.
  for who in root user; do
    rm -f "$WORLD_TMP/up-$who" "$WORLD_TMP/go-$who"
    script="ping -n -c 1 -W 2 -q $SERVER_IP >/dev/null && ip -o -4 addr show ingress | awk '{print \$4}' > $WORLD_TMP/up-$who.tmp && mv $WORLD_TMP/up-$who.tmp $WORLD_TMP/up-$who; while [ ! -e $WORLD_TMP/go-$who ]; do sleep 0.05; done; ping -n -c 1 -W 2 -q $SERVER_IP >/dev/null"
    if [ $who = user ]; then AS_USER=$TEST_USER in_world "$BIN/mm-delay" 1 sh -c "$script" & else in_world "$BIN/mm-delay" 1 sh -c "$script" & fi
    eval "shell_$who=\$!"
  done
  chmod 777 "$WORLD_TMP"
  wait_until 10 test -e "$WORLD_TMP/up-root" -a -e "$WORLD_TMP/up-user" || { echo "FAIL: shells could not reach the server"; status=1; }
  a_to_b && { echo "FAIL: the world forwarded between two of its other networks while shells ran"; status=1; }
  # Nor from those networks into a shell: only replies to the shell's own connections enter.
  inner=$(cat "$WORLD_TMP/up-user")
  ip netns exec "mmt-fa$$" ping -n -c 1 -W 1 -q "$inner" >/dev/null 2>&1 &&
    { echo "FAIL: a host of another network reached the shell's inner address $inner"; status=1; }
  [ "$(in_world sysctl -n net.ipv4.ip_forward)" = 0 ] || { echo "FAIL: global ip_forward switched on"; status=1; }
  touch "$WORLD_TMP/go-user"; wait "$shell_user" || { echo "FAIL: the user's shell lost its forwarding"; status=1; }
  # The root shell still reaches the server after the user's shell left.
  touch "$WORLD_TMP/go-root"; wait "$shell_root" || { echo "FAIL: the remaining shell lost its forwarding when the other left"; status=1; }
  chmod 755 "$WORLD_TMP"
  after=$(forwarding_state)
  [ "$before" = "$after" ] || { echo "FAIL: forwarding settings not restored:"; diff <(echo "$before") <(echo "$after"); status=1; }
  [ -z "$(world_tables)" ] || { echo "FAIL: tables left: $(world_tables)"; status=1; }
  # The test can fail: with forwarding on, the same ping crosses.
  in_world sysctl -q -w net.ipv4.ip_forward=1
  a_to_b || { echo "FAIL: control: fa cannot reach fb even with forwarding on"; status=1; }
  rm -f "$WORLD_TMP/up-"*
  in_world sysctl -q -w net.ipv4.ip_forward="$saved"
  ip netns del "mmt-fa$$"; ip netns del "mmt-fb$$"
  [ $status = 0 ] && echo "  two shells ran; fa -> fb and fa -> shell blocked meanwhile (fa -> fb crosses with ip_forward=1); all forwarding sysctls as before"
  return $status
}

# ----- finding 5: priority -----

ferry_nice_as() {  # prints the nice value of the shell's ferry (the process running as the user, or as root for root)
  cmd='for p in $(pgrep -x mm-delay); do [ "$(awk "/^Uid/{print \$2,\$3,\$4}" /proc/$p/status)" = "$(id -u) $(id -u) $(id -u)" ] && awk "{print \$19}" /proc/$p/stat; done | sort -n | head -1'
  "$@" "$BIN/mm-delay" 0 sh -c "$cmd"
}

test_ferry_priority_is_what_the_user_may_have() {
  status=0
  root=$(ferry_nice_as in_world)
  user=$(AS_USER=$TEST_USER ferry_nice_as in_world)
  limited=unavailable
  # Raising RLIMIT_NICE's hard limit needs CAP_SYS_RESOURCE, which some machines (this VM) lack.
  prlimit --nice=30:30 true 2>/dev/null && limited=$(ip netns exec "$WORLD" prlimit --nice=30:30 setpriv --reuid="$TEST_USER" --regid="$TEST_USER" --init-groups -- "$BIN/mm-delay" 0 sh -c \
    'for p in $(pgrep -x mm-delay); do [ "$(awk "/^Uid/{print \$2}" /proc/$p/status)" = "$(id -u)" ] && [ "$(awk "/^Uid/{print \$4}" /proc/$p/status)" = "$(id -u)" ] && awk "{print \$19}" /proc/$p/stat; done | head -1')
  with_admin_config "ferry-nice -5"
  configured=$(AS_USER=$TEST_USER ferry_nice_as in_world)
  remove_admin_config
  echo "  ferry nice: root $root, user $user, user with RLIMIT_NICE 30: $limited, user with ferry-nice -5: $configured"
  [ "$root" = -5 ] || { echo "FAIL: root's ferry not at -5"; status=1; }
  # Without RLIMIT_NICE (Debian's default 0) the user's ferry keeps the nice value it inherits.
  [ "$user" = "$(nice)" ] || { echo "FAIL: an ordinary user's ferry got priority $user (inherited: $(nice))"; status=1; }
  [ "$limited" = -5 ] || [ "$limited" = unavailable ] || { echo "FAIL: RLIMIT_NICE 30 allows -10, the ferry takes -5"; status=1; }
  [ "$configured" = -5 ] || { echo "FAIL: the administrator's ferry-nice -5 not applied"; status=1; }
  return $status
}

# ----- finding 7 -----

test_directory_name_cannot_run_code_through_the_prompt() {
  # mm-record's tag carries the recording's directory name into MAHIMAHI_SHELL_PREFIX, which
  # bash puts in PS1: a name such as x$(cmd) must not run cmd when bash shows its prompt.
  parent=$WORLD_TMP/rec-parent
  mkdir -p "$parent" "$WORLD_TMP/user-ca"; chown "$TEST_USER" "$parent" "$WORLD_TMP/user-ca"
  # Expanded, $(printf ...) and `printf ...` would show RAN-A and RAN-B in the prompt.
  printf 'echo prompt-test-done\nexit\n' | AS_USER=$TEST_USER in_world env MAHIMAHI_CA_DIR="$WORLD_TMP/user-ca/ca" \
    "$BIN/mm-record" "$parent/x\$(printf RAN-%s A)\`printf RAN-%s B\`" -- bash --norc -i > "$WORLD_TMP/prompt.out" 2>&1
  prefix=$(AS_USER=$TEST_USER in_world env MAHIMAHI_CA_DIR="$WORLD_TMP/user-ca/ca" "$BIN/mm-record" "$parent/y\$(id)" -- \
    sh -c 'printf "%s" "$MAHIMAHI_SHELL_PREFIX"' 2>/dev/null)
  rm -rf "$parent" "$WORLD_TMP/user-ca"
  echo "  prefix for a recording named 'y\$(id)': $prefix"
  echo "  prompt shown: $(grep -o '\[record [^]]*\]' "$WORLD_TMP/prompt.out" | head -1)"
  grep -q prompt-test-done "$WORLD_TMP/prompt.out" || fail "the interactive bash did not run: $(cat "$WORLD_TMP/prompt.out")" || return 1
  grep -q '\[record ' "$WORLD_TMP/prompt.out" || fail "bash showed no prompt with the prefix" || return 1
  ! grep -q 'RAN-[AB]' "$WORLD_TMP/prompt.out" || fail "the directory name ran a command through the prompt" || return 1
  case "$prefix" in *'$'*|*'`'*|'') fail "the prefix is empty or still carries \$ or a backquote"; return 1 ;; esac
}

test_command_gets_back_what_glibc_withholds_from_setuid_programs() {
  out=$(AS_USER=$TEST_USER in_world env TMPDIR=/tmp/mm-tmp LD_LIBRARY_PATH=/nonexistent RES_OPTIONS=ndots:2 LOCALDOMAIN=example.test \
        "$BIN/mm-delay" 0 sh -c 'echo "$TMPDIR|$LD_LIBRARY_PATH|$RES_OPTIONS|$LOCALDOMAIN"')
  [ "$out" = "/tmp/mm-tmp|/nonexistent|ndots:2|example.test" ] || fail "the command got: $out"
}

# ----- issue 49: one shared table, several users -----

# A directory that both test users may write to.
shared_dir() { local d=$WORLD_TMP/$1; rm -rf "$d"; mkdir -p "$d"; chmod 777 "$d"; echo "$d"; }

# Runs COMMAND as USER in the world, as pid 2 of a pid namespace of its own, under a shell
# (pid 1) that outlives it: a shell started so is named delay-2, whoever starts it (the collision
# of pids that pid reuse would bring, made certain). Run it in the background: the job becomes
# unshare, whose child is that pid 1 (killing it kills the whole namespace).
exec_in_world_as_pid_2() {  # USER COMMAND...
  local user=$1; shift
  exec ip netns exec "$WORLD" unshare --pid --fork --mount-proc sh -c '"$@"; exit $?' sh \
    setpriv --reuid="$user" --regid="$user" --init-groups -- "$@"
}

# Finding 4: user A's killed shell left its elements under delay-2; user B's live shell is
# delay-2 too (another pool: A's slot keeps A's dead elements). A's next shell, on A's old
# addresses, removes what A left, and nothing of B's: B's replies still come in.
test_a_dead_shell_of_one_user_leaves_alone_the_namesake_of_another() {
  local dir a b i
  dir=$(shared_dir namesake) || return 1
  exec_in_world_as_pid_2 "$TEST_USER" "$BIN/mm-delay" 0 sleep 31.4 2>/dev/null & a=$!  # (unshare's word on the kill)
  wait_until 10 sleeping 31.4 || { kill -9 $(pgrep -P "$a") 2>/dev/null; wait "$a"; fail "A's shell did not start"; return 1; }
  in_world ip -o link show delay-2 >/dev/null || { kill -9 $(pgrep -P "$a"); wait "$a"; fail "A's shell is not delay-2"; return 1; }
  kill -9 $(pgrep -P "$a"); wait "$a" 2>/dev/null  # the pid namespace's first process: all of it dies
  a_gone() { ! in_world ip link show delay-2 >/dev/null 2>&1; }
  wait_until 10 a_gone || fail "A's device stayed after kill -9" || return 1
  in_world nft list set ip mahimahi shells | grep -q '"delay-2"' || fail "A's killed shell left no element" || return 1
  exec_in_world_as_pid_2 "$OTHER_USER" env MAHIMAHI_ADDRESS_POOL=10.201.0.0/24 "$BIN/mm-delay" 0 sh -c \
    ': > "$0/b.ready"; while [ ! -e "$0/go" ]; do sleep 0.02; done; ping -n -c 5 -i 0.2 -W 2 "$1"' \
    "$dir" "$SERVER_IP" > "$dir/b.out" 2>&1 & b=$!
  wait_until 10 test -e "$dir/b.ready" || { kill -9 $(pgrep -P "$b"); wait "$b"; fail "B's shell did not start"; return 1; }
  in_world ip -o link show delay-2 >/dev/null || { touch "$dir/go"; wait "$b"; fail "B's shell is not delay-2"; return 1; }
  AS_USER=$TEST_USER in_world "$BIN/mm-delay" 0 true || { touch "$dir/go"; wait "$b"; fail "A's next shell failed"; return 1; }
  local shells; shells=$(in_world nft list set ip mahimahi shells | tr -s ' \n\t' ' ')
  touch "$dir/go"
  wait "$b"; i=$?
  set -- $(ping_stats < "$dir/b.out")
  echo "  B's shell (delay-2), after A's killed delay-2 and A's next shell on its addresses: $1 of 5 replies; shells: ${shells#*elements = }"
  [ "$i" = 0 ] && [ "$1" = 5 ] || fail "B's shell lost its replies (status $i): $(cat "$dir/b.out")"
}

# Finding 5: mm-meter's device (as mm-cumulus-local's) is a shell's, never one of the host's
# devices "opened" for forwarding.
test_every_kind_of_shells_device_is_known_as_a_shells() {
  local shell opened
  ip netns exec "$WORLD" "$BIN/mm-meter" --meter-output="$WORLD_TMP/kinds.png" -- sleep 31.5 & shell=$!
  wait_until 10 sleeping 31.5 || { kill "$shell"; wait "$shell"; fail "mm-meter did not start"; return 1; }
  opened=$(in_world nft list set ip mahimahi opened | tr -s ' \n\t' ' ')
  kill -TERM "$shell"; wait "$shell"
  echo "  opened while mm-meter ran: ${opened#*elements = }"
  echo "$opened" | grep -q 'mmt-a' || fail "the world's own device was not opened: $opened" || return 1
  ! echo "$opened" | grep -q 'meter-' || fail "mm-meter's device was taken for one of the host's: $opened"
}

# Finding 8: a server in user B's setuid shell answers B and root, and no other user, as a
# rootless shell's answers nobody; B's command's own connections to a server of another user
# (replies going into the shell) are untouched.
test_another_user_cannot_connect_into_a_users_shell() {
  local dir port a_port shell inner ok=0
  dir=$(shared_dir intruder) || return 1
  port=$(free_port) && a_port=$(free_port) || return 1
  [ "$a_port" != "$port" ] || a_port=$((port + 1))
  echo hello-from-a > "$dir/a.txt"
  # (Not in_world, whose job is a subshell: these jobs are the server and B's shell themselves.)
  ip netns exec "$WORLD" setpriv --reuid="$TEST_USER" --regid="$TEST_USER" --init-groups -- \
    /usr/bin/python3 -m http.server --bind "$WORLD_IP" --directory "$dir" "$a_port" >/dev/null 2>&1 & local a_server=$!
  ip netns exec "$WORLD" setpriv --reuid="$OTHER_USER" --regid="$OTHER_USER" --init-groups -- "$BIN/mm-delay" 0 sh -c \
    'ip -4 -o addr show ingress | awk "{ print \$4 }" | cut -d/ -f1 > "$0/inner"; echo hello-from-b > "$0/b.txt"
     exec /usr/bin/python3 -m http.server --directory "$0" "$1"' "$dir" "$port" >/dev/null 2>&1 & shell=$!
  answers() { in_world curl -sf --max-time 2 -o /dev/null "http://$(cat "$dir/inner" 2>/dev/null):$port/b.txt"; }
  a_answers() { AS_USER=$OTHER_USER in_world "$BIN/mm-delay" 0 curl -sf --max-time 2 -o /dev/null "http://$WORLD_IP:$a_port/a.txt"; }
  if wait_until 15 answers && wait_until 10 a_answers; then
    inner=$(cat "$dir/inner")
    local by_a by_b by_root from_b a_ping b_ping
    by_a=$(AS_USER=$TEST_USER in_world curl -s --max-time 3 "http://$inner:$port/b.txt" 2>&1)
    by_b=$(AS_USER=$OTHER_USER in_world curl -s --max-time 3 "http://$inner:$port/b.txt" 2>&1)
    by_root=$(in_world curl -s --max-time 3 "http://$inner:$port/b.txt" 2>&1)
    a_ping=$(AS_USER=$TEST_USER in_world ping -n -c 1 -W 1 "$inner" 2>&1 | ping_stats)
    b_ping=$(AS_USER=$OTHER_USER in_world ping -n -c 1 -W 1 "$inner" 2>&1 | ping_stats)
    # From inside B's shell, a connection to A's server: its replies enter B's shell.
    from_b=$(AS_USER=$OTHER_USER in_world "$BIN/mm-delay" 0 curl -s --max-time 3 "http://$WORLD_IP:$a_port/a.txt" 2>&1)
    ok=1
  fi
  kill -TERM "$shell" "$a_server"; wait "$shell"; wait "$a_server"
  [ "$ok" = 1 ] || fail "B's server or A's did not answer" || return 1
  echo "  B's server at $inner:$port: to A '$by_a', to B '$by_b', to root '$by_root'; pings answered: A ${a_ping%% *}, B ${b_ping%% *}"
  echo "  A's server, to a command in B's shell: '$from_b'"
  [ "$by_b" = hello-from-b ] && [ "$by_root" = hello-from-b ] || fail "B's server did not answer B and root" || return 1
  [ -z "$by_a" ] || fail "A connected into B's shell: $by_a" || return 1
  [ "${b_ping%% *}" = 1 ] && [ "${a_ping%% *}" = 0 ] || fail "pings into B's shell: A's answered ${a_ping%% *}, B's ${b_ping%% *}" || return 1
  [ "$from_b" = hello-from-a ] || fail "a connection from B's shell to A's server got: $from_b"
}
