# SPDX-License-Identifier: GPL-3.0-or-later
# Integration tests of mm-eth (the paper's EthShell and UsbShell) in the test world (world.sh):
# a device namespace on the far end of a veth pair whose near end, in the world, stands for an
# interface of the machine (an Ethernet port, a phone's usb0). The device runs a real DHCP client
# (busybox's udhcpc), ping, getent and curl, while an ordinary user's shell has taken the
# interface (the administrator allows it in mahimahi.conf, as the tests write it).

eth_admin_config() { echo "$(dirname "$BIN")/etc/mahimahi.conf"; }

# The device: namespace ETH_NS, its eth0 the peer of ETH_IFACE in the world; the interface has
# an address and a route of its own in the world (what must come back as it was).
eth_device_create() {
  ETH_NS=mmt-d$$
  ETH_IFACE=ethd$$
  ip netns add "$ETH_NS" || return 1
  ip -n "$ETH_NS" link set lo up
  ip link add "$ETH_IFACE" netns "$WORLD" type veth peer name eth0 netns "$ETH_NS" || return 1
  ip -n "$ETH_NS" link set eth0 up
  ip -n "$WORLD" addr add 198.51.100.77/30 dev "$ETH_IFACE"
  ip -n "$WORLD" link set "$ETH_IFACE" up
  ip -n "$WORLD" route add 198.51.100.128/25 via 198.51.100.78 dev "$ETH_IFACE" proto static
  mkdir -p "/etc/netns/$ETH_NS"
  : > "/etc/netns/$ETH_NS/resolv.conf"
  # udhcpc's events: the lease's address, default route and DNS into the device's namespace.
  cat > "$WORLD_TMP/udhcpc.script" <<'SCRIPT'
#!/bin/sh
case "$1" in
  deconfig) ip addr flush dev "$interface"; ip link set "$interface" up ;;
  bound | renew)
    ip addr flush dev "$interface"
    ip addr add "$ip/${mask:-$subnet}" dev "$interface"
    [ -z "$router" ] || ip route replace default via "${router%% *}" dev "$interface"
    : > "$RESOLV"
    for d in $dns; do echo "nameserver $d" >> "$RESOLV"; done
    echo "$ip" > "$LEASE" ;;
esac
SCRIPT
  chmod 755 "$WORLD_TMP/udhcpc.script"
  mkdir -p "$(dirname "$(eth_admin_config)")"
  printf 'allow-interface %s\n' "$ETH_IFACE" > "$(eth_admin_config)"
  chmod 644 "$(eth_admin_config)"
}

eth_device_destroy() {
  rm -f "$(eth_admin_config)"
  ip netns del "$ETH_NS" 2>/dev/null
  ip -n "$WORLD" link del "$ETH_IFACE" 2>/dev/null
  rm -rf "/etc/netns/$ETH_NS"
  true
}

in_device() { ip netns exec "$ETH_NS" "$@"; }

# A DHCP lease for the device (5 tries, a second apart); its address in $WORLD_TMP/lease.
eth_lease() {
  rm -f "$WORLD_TMP/lease"
  RESOLV=/etc/netns/$ETH_NS/resolv.conf LEASE=$WORLD_TMP/lease \
    in_device busybox udhcpc -i eth0 -s "$WORLD_TMP/udhcpc.script" -n -q -f -t 5 -T 1 >"$WORLD_TMP/udhcpc.log" 2>&1
}

# Starts SHELL... (a shell ending in mm-eth) as the test user, its command waiting for DIR/done
# (60 s at most) after writing DIR/ready; waits for ready. Sets ETH_SHELL.
eth_shell_start() {  # DIR SHELL...
  local dir=$1
  shift
  rm -f "$dir/ready" "$dir/done"
  AS_USER=$TEST_USER in_world "$@" -- sh -c \
    'touch "$0/ready"; i=0; while [ ! -e "$0/done" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done' \
    "$dir" 2>"$dir/shell.err" &
  ETH_SHELL=$!
  wait_until 30 test -e "$dir/ready" || { fail "the shell did not start: $(cat "$dir/shell.err")"; return 1; }
}

eth_shell_end() {  # DIR: ends the shell, returns its status
  touch "$1/done"
  wait "$ETH_SHELL"
}

# The interface is back in the world as it was: up, its address and its route.
eth_interface_back() {
  ip -n "$WORLD" -o link show "$ETH_IFACE" 2>/dev/null | grep -q 'state UP\|,UP' &&
    ip -n "$WORLD" -o addr show dev "$ETH_IFACE" | grep -q '198.51.100.77/30' &&
    ip -n "$WORLD" route show 198.51.100.128/25 | grep -q "dev $ETH_IFACE"
}

test_eth_device_gets_a_lease_dns_and_the_shells_delay() {
  # mm-delay 20 around mm-eth: the device's ping to the world's server host takes 40 ms more
  # than the wire, its names resolve through the shell, and the interface comes back as it was.
  local dir=$WORLD_TMP/eth status=0 avg
  mkdir -p "$dir" && chmod 777 "$dir"
  eth_device_create || { eth_device_destroy; fail "could not make the device"; return 1; }
  eth_shell_start "$dir" "$BIN/mm-delay" 20 "$BIN/mm-eth" "$ETH_IFACE" --verbose ||
    { eth_device_destroy; return 1; }
  ip -n "$WORLD" link show "$ETH_IFACE" >/dev/null 2>&1 && { fail "$ETH_IFACE is still in the world"; status=1; }
  eth_lease || { fail "no lease: $(cat "$WORLD_TMP/udhcpc.log")"; status=1; }
  eth_dnsmasq_is_nobody "$ETH_IFACE" || status=1
  echo "  lease: $(cat "$WORLD_TMP/lease" 2>/dev/null), DNS $(cat "/etc/netns/$ETH_NS/resolv.conf" | tr '\n' ' ')"
  case "$(cat "$WORLD_TMP/lease" 2>/dev/null)" in 192.168.77.*) ;; *) fail "the lease is not in 192.168.77.0/24"; status=1 ;; esac
  avg=$(in_device ping -n -c 10 -i 0.05 -q "$SERVER_IP" | ping_stats | awk '{ print $3 }')
  check_range "the device's ping to the world's server (ms)" "${avg:-0}" 39.9 46 || status=1
  [ "$(in_device getent hosts server.test | awk '{ print $1 }')" = "$SERVER_IP" ] ||
    { fail "server.test does not resolve for the device"; status=1; }
  eth_shell_end "$dir" || { fail "the shell exited $?: $(cat "$dir/shell.err")"; status=1; }
  grep -q "mm-eth: leased 192.168.77." "$dir/shell.err" || { fail "--verbose names no lease: $(cat "$dir/shell.err")"; status=1; }
  eth_interface_back || { fail "$ETH_IFACE is not back as it was: $(ip -n "$WORLD" addr show "$ETH_IFACE" 2>&1)"; status=1; }
  [ -z "$(ls /run/mahimahi/eth-* 2>/dev/null)" ] || { fail "left in /run/mahimahi: $(ls /run/mahimahi/eth-*)"; status=1; }
  pgrep -f "dnsmasq.*--interface=$ETH_IFACE" >/dev/null && { fail "dnsmasq is still running"; status=1; }
  eth_device_destroy
  return $status
}

test_eth_devices_behind_a_switch_and_a_static_one() {
  # A switch (a bridge in a namespace of its own) on the interface with three devices behind
  # it: two ask for leases and get two addresses, the third has a static address of the subnet
  # below the DHCP range and the gateway .1 (as mm-eth(1) says); all three see the shells' delay.
  local dir=$WORLD_TMP/eth-switch status=0 sw=mmt-sw$$ n ns avg leases=""
  mkdir -p "$dir" && chmod 777 "$dir"
  eth_device_create || { eth_device_destroy; fail "could not make the device"; return 1; }
  ip netns add "$sw" && ip -n "$sw" link set lo up && ip -n "$ETH_NS" link set eth0 netns "$sw" &&
    ip -n "$sw" link add br0 type bridge && ip -n "$sw" link set eth0 master br0 &&
    ip -n "$sw" link set eth0 up && ip -n "$sw" link set br0 up || status=1
  for n in 1 2 3; do
    ns=mmt-d$$-$n
    ip netns add "$ns" && ip -n "$ns" link set lo up &&
      ip link add "p$n" netns "$sw" type veth peer name eth0 netns "$ns" &&
      ip -n "$sw" link set "p$n" master br0 && ip -n "$sw" link set "p$n" up && ip -n "$ns" link set eth0 up || status=1
    mkdir -p "/etc/netns/$ns" && : > "/etc/netns/$ns/resolv.conf"
  done
  eth_switch_destroy() {
    for n in 1 2 3; do ip netns del "mmt-d$$-$n" 2>/dev/null; rm -rf "/etc/netns/mmt-d$$-$n"; done
    ip netns del "$sw" 2>/dev/null
    eth_device_destroy
  }
  [ $status = 0 ] || { eth_switch_destroy; fail "could not make the switch"; return 1; }
  eth_shell_start "$dir" "$BIN/mm-delay" 20 "$BIN/mm-eth" "$ETH_IFACE" || { eth_switch_destroy; return 1; }
  for n in 1 2; do
    ns=mmt-d$$-$n
    RESOLV=/etc/netns/$ns/resolv.conf LEASE=$dir/lease$n ip netns exec "$ns" busybox udhcpc -i eth0 \
      -s "$WORLD_TMP/udhcpc.script" -n -q -f -t 5 -T 1 >"$dir/udhcpc$n.log" 2>&1 ||
      { fail "device $n: no lease: $(cat "$dir/udhcpc$n.log")"; status=1; }
    leases="$leases $(cat "$dir/lease$n" 2>/dev/null)"
  done
  ip -n mmt-d$$-3 addr add 192.168.77.5/24 dev eth0 && ip -n mmt-d$$-3 route add default via 192.168.77.1 || status=1
  echo "  leases:$leases; the static device: 192.168.77.5"
  set -- $leases
  case "$1 $2" in 192.168.77.*" "192.168.77.*) [ "$1" != "$2" ] || { fail "both devices got $1"; status=1; } ;;
    *) fail "the leases: $leases"; status=1 ;; esac
  for n in 1 2 3; do
    avg=$(ip netns exec "mmt-d$$-$n" ping -n -c 10 -i 0.05 -q "$SERVER_IP" | ping_stats | awk '{ print $3 }')
    check_range "device $n's ping to the world's server (ms)" "${avg:-0}" 39.9 46 || status=1
  done
  eth_shell_end "$dir" || { fail "the shell exited $?: $(cat "$dir/shell.err")"; status=1; }
  eth_interface_back || { fail "$ETH_IFACE is not back as it was"; status=1; }
  eth_switch_destroy
  return $status
}

# The DHCP server the device talks to has given root up: nobody's, without capabilities beyond
# those it keeps to serve (dnsmasq keeps CAP_NET_ADMIN, CAP_NET_RAW, CAP_NET_BIND_SERVICE).
eth_dnsmasq_is_nobody() {  # IFACE
  local pid uid
  pid=$(pgrep -f "dnsmasq.*--interface=$1" | head -1)
  [ -n "$pid" ] || { fail "no dnsmasq for $1"; return 1; }
  uid=$(awk '/^Uid:/ { print $2, $3, $4 }' "/proc/$pid/status")
  [ "$uid" = "65534 65534 65534" ] || { fail "dnsmasq's uids (real, effective, saved): $uid"; return 1; }
  echo "  dnsmasq runs as nobody (uids $uid)"
}

test_eth_device_loads_a_replayed_page_through_the_shells() {
  # mm-replay around mm-link and mm-delay around mm-eth: the device resolves the recording's
  # names and fetches its pages from the replay servers, over HTTP and HTTPS, with curl and with
  # Chromium.
  local dir=$WORLD_TMP/eth-replay status=0 home=$WORLD_TMP/eth-home body ca
  mkdir -p "$dir" && chmod 777 "$dir"
  rm -rf "$home" && mkdir -p "$home" && chown "$TEST_USER" "$home"
  eth_device_create || { eth_device_destroy; fail "could not make the device"; return 1; }
  eth_shell_start "$dir" env HOME="$home" "$BIN/mm-replay" --ignore-user-agent "$top/recordings/demo-site" "$BIN/mm-link" \
    rate:12Mbit/s rate:12Mbit/s -- "$BIN/mm-delay" 10 "$BIN/mm-eth" "$ETH_IFACE" || { eth_device_destroy; return 1; }
  eth_lease || { fail "no lease: $(cat "$WORLD_TMP/udhcpc.log")"; status=1; }
  body=$(in_device curl -sf --max-time 20 http://a.test/index.html)
  echo "$body" | grep -qi '<html' || { fail "http://a.test/index.html: $(echo "$body" | head -c 200)"; status=1; }
  # HTTPS: the replay's own CA signed the certificates; the device trusts it, as a phone would
  # with the CA installed.
  ca=$(AS_USER=$TEST_USER in_world env HOME="$home" "$BIN/mm-ca" path)
  in_device curl -sf --max-time 20 --cacert "$ca" -o /dev/null https://b.test/style.css ||
    { fail "https://b.test/style.css with the replay's CA"; status=1; }
  echo "  the device fetched http://a.test/index.html ($(echo "$body" | wc -c) bytes) and https://b.test/style.css"
  # A browser on the device: Chromium loads the whole page (its HTTPS resources too) from the replay.
  in_device env HOME="$dir" "$BIN/mm-pageload" --ca "$ca" --timeout 60 --csv "$dir/loads.csv" \
    http://a.test/index.html >/dev/null 2>"$dir/pageload.err" ||
    { fail "mm-pageload on the device: $(tail -3 "$dir/pageload.err")"; status=1; }
  awk -F, 'NR == 2 { print "  Chromium on the device: " $3 ", " $0 }' "$dir/loads.csv" | cut -c1-160
  [ "$(awk -F, 'NR == 2 { print $3 }' "$dir/loads.csv")" = ok ] || { fail "the page load: $(cat "$dir/loads.csv")"; status=1; }
  eth_shell_end "$dir" || { fail "the shell exited $?: $(cat "$dir/shell.err")"; status=1; }
  eth_interface_back || { fail "$ETH_IFACE is not back as it was"; status=1; }
  eth_device_destroy
  return $status
}

test_eth_unplugged_and_back_then_refusals() {
  # The device's link down and up: it asks again and goes on. Then what is refused, each in one
  # line naming the fix: an interface not allowed, one that does not exist, the default route's.
  local dir=$WORLD_TMP/eth-faults status=0
  mkdir -p "$dir" && chmod 777 "$dir"
  eth_device_create || { eth_device_destroy; fail "could not make the device"; return 1; }
  eth_shell_start "$dir" "$BIN/mm-eth" "$ETH_IFACE" || { eth_device_destroy; return 1; }
  eth_lease || { fail "no first lease"; status=1; }
  in_device ip link set eth0 down
  in_device ip link set eth0 up
  eth_lease || { fail "no lease after the link came back: $(cat "$WORLD_TMP/udhcpc.log")"; status=1; }
  in_device ping -n -c 3 -i 0.1 -W 2 -q "$SERVER_IP" >/dev/null || { fail "no ping after the link came back"; status=1; }
  eth_shell_end "$dir" || { fail "the shell exited $?"; status=1; }
  eth_interface_back || { fail "$ETH_IFACE is not back as it was"; status=1; }
  AS_USER=$TEST_USER rc_msg 1 "it needs a line \"allow-interface mmt-a$$\"" in_world "$BIN/mm-eth" "mmt-a$$" true ||
    status=1
  printf 'allow-interface %s\nallow-interface mmt-a%s\nallow-interface nosuch0\n' "$ETH_IFACE" "$$" > "$(eth_admin_config)"
  AS_USER=$TEST_USER rc_msg 1 "carries this machine's default route" in_world "$BIN/mm-eth" "mmt-a$$" true || status=1
  AS_USER=$TEST_USER rc_msg 1 "there is no interface nosuch0" in_world "$BIN/mm-eth" nosuch0 true || status=1
  rc_msg 2 "missing IFACE" in_world "$BIN/mm-eth" || status=1
  rc_msg 2 "--subnet needs a private or shared range" in_world "$BIN/mm-eth" --subnet=8.8.8.0/24 "$ETH_IFACE" true ||
    status=1
  ip -n "$WORLD" -o link show "mmt-a$$" | grep -q UP || { fail "the world's own interface changed"; status=1; }
  eth_device_destroy
  return $status
}

test_eth_killed_shell_gives_the_interface_back_at_the_next_start() {
  # SIGKILL to the shell's supervisor: dnsmasq keeps its namespace (and the interface) alive;
  # the next mm-eth for the interface kills it, puts the interface back as it was, and runs.
  local dir=$WORLD_TMP/eth-kill status=0 supervisor out
  mkdir -p "$dir" && chmod 777 "$dir"
  eth_device_create || { eth_device_destroy; fail "could not make the device"; return 1; }
  eth_shell_start "$dir" "$BIN/mm-eth" "$ETH_IFACE" || { eth_device_destroy; return 1; }
  supervisor=$(pgrep -x -f "$BIN/mm-eth $ETH_IFACE -- sh -c .*" | head -1)
  [ -n "$supervisor" ] || supervisor=$(pgrep -n -x mm-eth)
  kill -9 "$supervisor"
  touch "$dir/done"
  wait "$ETH_SHELL" 2>/dev/null
  ip -n "$WORLD" link show "$ETH_IFACE" >/dev/null 2>&1 && echo "  (the interface came back by itself)"
  out=$(AS_USER=$TEST_USER in_world "$BIN/mm-eth" "$ETH_IFACE" true 2>&1) || { fail "the next mm-eth: $out"; status=1; }
  echo "  the next start: $(echo "$out" | head -1)"
  eth_interface_back || { fail "$ETH_IFACE is not back as it was: $(ip -n "$WORLD" addr show "$ETH_IFACE" 2>&1)"; status=1; }
  pgrep -f "dnsmasq.*--interface=$ETH_IFACE" >/dev/null && { fail "the killed shell's dnsmasq is still running"; status=1; }
  [ -z "$(ls /run/mahimahi/eth-* 2>/dev/null)" ] || { fail "left in /run/mahimahi: $(ls /run/mahimahi/eth-*)"; status=1; }
  eth_device_destroy
  return $status
}

test_eth_bridge_port_comes_back_into_its_bridge() {
  # An interface that was a port of a bridge (as a host's LAN port often is) goes back into it.
  local bridge=mmtbr$$ status=0 out
  eth_device_create || { eth_device_destroy; fail "could not make the device"; return 1; }
  ip -n "$WORLD" link add "$bridge" type bridge && ip -n "$WORLD" link set "$bridge" up &&
    ip -n "$WORLD" link set "$ETH_IFACE" master "$bridge" || { eth_device_destroy; fail "no bridge"; return 1; }
  out=$(AS_USER=$TEST_USER in_world "$BIN/mm-eth" "$ETH_IFACE" -- sh -c "ip -o link show $ETH_IFACE | grep -c master" 2>&1)
  [ "$out" = 0 ] || { fail "inside the shell, $ETH_IFACE is still a bridge's port: $out"; status=1; }
  ip -n "$WORLD" -o link show "$ETH_IFACE" | grep -q "master $bridge" ||
    { fail "$ETH_IFACE is not back in $bridge: $(ip -n "$WORLD" -o link show "$ETH_IFACE")"; status=1; }
  ip -n "$WORLD" link del "$bridge"
  eth_device_destroy
  return $status
}

test_eth_tap_is_the_users_own() {
  # --tap: a TAP in the shell's namespace, owned by the user, up, with the gateway's address;
  # dnsmasq serves it; nothing of it outlives the shell.
  local out
  out=$(AS_USER=$TEST_USER in_world "$BIN/mm-eth" --tap=vm0 --subnet=10.9.8.0/24 -- sh -c \
    'ip -d link show vm0 | grep -o "tap .* user [a-z0-9]*" | sed "s/.* user //"; ip -o -4 addr show dev vm0 | awk "{ print \$4 }"' 2>&1) ||
    { fail "mm-eth --tap: $out"; return 1; }
  [ "$(echo "$out" | sed -n 1p)" = "$TEST_USER" ] || { fail "the TAP's owner: $out"; return 1; }
  [ "$(echo "$out" | sed -n 2p)" = 10.9.8.1/24 ] || { fail "the TAP's address: $out"; return 1; }
  in_world ip link show vm0 >/dev/null 2>&1 && { fail "vm0 is in the world"; return 1; }
  echo "  vm0: owned by $(echo "$out" | sed -n 1p), address $(echo "$out" | sed -n 2p)"
}

test_eth_tap_killed_shell_leaves_no_dnsmasq() {
  # SIGKILL to a --tap shell's supervisor: the TAP's dnsmasq (nobody's, with only the network
  # capabilities it serves with) ends with it, and with it the namespace and the TAP.
  local dir=$WORLD_TMP/eth-tap-kill status=0 supervisor dnsmasq uid caps
  mkdir -p "$dir" && chmod 777 "$dir"
  eth_shell_start "$dir" "$BIN/mm-eth" --tap=vm0 || return 1
  dnsmasq=$(pgrep -f "dnsmasq.*--interface=vm0" | head -1)
  uid=$(awk '/^Uid:/ { print $2, $3, $4 }' "/proc/$dnsmasq/status" 2>/dev/null)
  caps=$(awk '/^CapEff:/ { print $2 }' "/proc/$dnsmasq/status" 2>/dev/null)
  [ "$uid" = "65534 65534 65534" ] || { fail "the TAP's dnsmasq's uids (real, effective, saved): '$uid'"; status=1; }
  # CAP_NET_BIND_SERVICE (10), CAP_NET_ADMIN (12), CAP_NET_RAW (13), and no other.
  [ "$caps" = 0000000000003400 ] || { fail "the TAP's dnsmasq's capabilities: $caps"; status=1; }
  supervisor=$(pgrep -x -f "$BIN/mm-eth --tap=vm0 -- sh -c .*" | head -1)
  [ -n "$supervisor" ] || { fail "no supervisor found"; touch "$dir/done"; wait "$ETH_SHELL"; return 1; }
  kill -9 "$supervisor"
  wait "$ETH_SHELL" 2>/dev/null
  wait_until 10 sh -c "! kill -0 $dnsmasq 2>/dev/null" || { fail "the killed shell's dnsmasq ($dnsmasq) still runs"; status=1; }
  echo "  dnsmasq (uids $uid, capabilities $caps) ended with the killed supervisor"
  touch "$dir/done"
  # Its files, and the elements only a supervisor's clean-up removes, go at the next start.
  [ -d "/run/mahimahi/eth-$supervisor" ] || { fail "no /run/mahimahi/eth-$supervisor after the SIGKILL"; status=1; }
  AS_USER=$TEST_USER in_world "$BIN/mm-eth" --tap=vm0 true || { fail "the next mm-eth --tap"; status=1; }
  [ -e "/run/mahimahi/eth-$supervisor" ] && { fail "the next start left /run/mahimahi/eth-$supervisor"; status=1; }
  return $status
}

test_eth_qemu_machine_behind_the_replay() {
  # The "real second machine": a QEMU virtual machine (Debian's kernel, a busybox initramfs with
  # curl and the replay's CA, tests/tools/vm-image) whose NIC is the TAP of an ordinary user's
  # mm-eth inside mm-delay 20 inside mm-link inside mm-replay. It boots (TCG), takes a lease, resolves a
  # recorded name, pings it over the delay and fetches the recorded pages over HTTP and HTTPS.
  local dir=$WORLD_TMP/eth-vm status=0 home=$WORLD_TMP/eth-vm-home ca console rc=0 avg
  command -v qemu-system-x86_64 >/dev/null || { fail "no qemu-system-x86_64 (scripts/install-deps installs it)"; return 1; }
  rm -rf "$dir" "$home" && mkdir -p "$dir" "$home" && chown "$TEST_USER" "$dir" "$home"
  AS_USER=$TEST_USER in_world env HOME="$home" "$BIN/mm-ca" create >/dev/null || { fail "mm-ca create"; return 1; }
  ca=$(AS_USER=$TEST_USER in_world env HOME="$home" "$BIN/mm-ca" path)
  "$top/tests/tools/vm-image" "$dir/vm" "$ca" a.test http://a.test/index.html https://b.test/style.css ||
    { fail "tests/tools/vm-image"; return 1; }
  console=$dir/console
  AS_USER=$TEST_USER in_world env HOME="$home" timeout 240 "$BIN/mm-replay" --ignore-user-agent "$top/recordings/demo-site" \
    "$BIN/mm-link" rate:24Mbit/s rate:24Mbit/s -- \
    "$BIN/mm-delay" 20 "$BIN/mm-eth" --tap=vm0 -- qemu-system-x86_64 -nographic -no-reboot -m 256 \
    -kernel "$dir/vm/vmlinuz" -initrd "$dir/vm/initrd.gz" -append "console=ttyS0 quiet panic=-1" \
    -netdev tap,id=n0,ifname=vm0,script=no,downscript=no -device e1000,netdev=n0 </dev/null >"$console" 2>&1 || rc=$?
  grep -ao 'vm: .*' "$console" | tr -d '\r' > "$dir/vm.out"
  sed 's/^/  /' "$dir/vm.out"
  [ $rc = 0 ] || { fail "the shells around the machine exited $rc: $(tail -5 "$console")"; status=1; }
  grep -q '^vm: lease 192\.168\.77\.' "$dir/vm.out" || { fail "the machine took no lease in 192.168.77.0/24"; status=1; }
  grep -q '^vm: a\.test is [0-9]' "$dir/vm.out" || { fail "a.test did not resolve for the machine"; status=1; }
  avg=$(grep '^vm: ping avg' "$dir/vm.out" | awk '{ print $4 }')
  # 40 ms of mm-delay, and a software-emulated machine's own slowness on top (TCG, a shared CPU).
  check_range "the machine's ping to a.test (ms)" "${avg:-0}" 39.9 80 || status=1
  grep -q '^vm: http://a\.test/index\.html 200 [1-9]' "$dir/vm.out" || { fail "the machine's HTTP fetch"; status=1; }
  grep -q '^vm: https://b\.test/style\.css 200 [1-9]' "$dir/vm.out" || { fail "the machine's HTTPS fetch (the replay's CA)"; status=1; }
  in_world ip link show vm0 >/dev/null 2>&1 && { fail "vm0 is in the world"; status=1; }
  pgrep -f "dnsmasq.*--interface=vm0" >/dev/null && { fail "the TAP's dnsmasq is still running"; status=1; }
  return $status
}

rootless_test_eth_tap_without_root_and_no_interface() {
  # Rootless: a TAP of the user's with its DHCP server (dnsmasq as the user, with the network
  # capabilities of the user's own namespace only); taking an interface is refused, naming --tap.
  local out
  out=$(as_rootless_user "$BIN/mm-eth" --tap=vm0 -- sh -c \
    'ip -d link show vm0 | grep -o "tap .* user [a-z0-9]*" | sed "s/.* user //"; ip -o -4 addr show dev vm0 | awk "{ print \$4 }"
     for p in $(pgrep -x dnsmasq); do grep -q "interface=vm0" /proc/$p/cmdline && awk "/^Uid:/ { print \$2 }" /proc/$p/status; done
     true' 2>&1) ||
    { fail "rootless mm-eth --tap: $out"; return 1; }
  [ "$(echo "$out" | sed -n 1p)" = "$TEST_USER" ] && [ "$(echo "$out" | sed -n 2p)" = 192.168.77.1/24 ] &&
    [ "$(echo "$out" | sed -n 3p)" = "$(id -u "$TEST_USER")" ] || { fail "the TAP, its address, its dnsmasq: $out"; return 1; }
  echo "  vm0 owned by $(echo "$out" | sed -n 1p), 192.168.77.1/24, its dnsmasq the user's"
  rc_msg 1 "give the devices a TAP of your own instead (--tap NAME)" as_rootless_user "$BIN/mm-eth" "mmt-a$$" true
}
