# Shared by tests, benchmarks and the demo: a throwaway "test world" of network namespaces.
#
#   world (namespace $WORLD)  ---veth---  server host (namespace $SERVER, 10.77.0.2)
#   10.77.0.1                             answers ping, runs iperf3 and a DNS server (dnsmasq)
#
# Shells under test run inside the world (ip netns exec $WORLD ...), so nothing they do touches
# the machine's own namespace. world_destroy removes all of it.

SERVER_IP=10.77.0.2
WORLD_IP=10.77.0.1

world_create() {
  WORLD=mmt-w$$
  SERVER=mmt-s$$
  WORLD_TMP=$(mktemp -d /tmp/mm-world.XXXXXX)
  chmod 755 "$WORLD_TMP"
  ip netns add "$WORLD"
  ip netns add "$SERVER"
  ip -n "$WORLD" link set lo up
  ip -n "$SERVER" link set lo up
  ip link add "mmt-a$$" netns "$WORLD" type veth peer name "mmt-b$$" netns "$SERVER"
  ip -n "$WORLD" addr add "$WORLD_IP/24" dev "mmt-a$$"
  ip -n "$SERVER" addr add "$SERVER_IP/24" dev "mmt-b$$"
  ip -n "$WORLD" link set "mmt-a$$" up
  ip -n "$SERVER" link set "mmt-b$$" up
  ip -n "$WORLD" route add default via "$SERVER_IP"
  # DNS of the world: a resolver on the server host that knows server.test.
  printf '%s server.test\n' "$SERVER_IP" > "$WORLD_TMP/hosts"
  ip netns exec "$SERVER" /usr/sbin/dnsmasq --keep-in-foreground --no-resolv --no-hosts \
    --addn-hosts="$WORLD_TMP/hosts" --local=/#/ --listen-address="$SERVER_IP" --bind-interfaces \
    --user=root --pid-file="$WORLD_TMP/dnsmasq.pid" --log-facility=/dev/null -C /dev/null &
  WORLD_DNSMASQ=$!
  mkdir -p "/etc/netns/$WORLD"
  echo "nameserver $SERVER_IP" > "/etc/netns/$WORLD/resolv.conf"
  trap world_destroy EXIT
  trap 'exit 130' INT TERM HUP
  for _ in $(seq 50); do
    in_world getent hosts server.test >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "test world: the DNS server did not start" >&2
  return 1
}

world_destroy() {
  [ -n "${WORLD:-}" ] || return 0
  if declare -F origins_destroy >/dev/null; then origins_destroy; fi
  for pid in $(ip netns pids "$WORLD" 2>/dev/null) $(ip netns pids "$SERVER" 2>/dev/null); do
    kill -9 "$pid" 2>/dev/null || true
  done
  [ -z "${WORLD_DNSMASQ:-}" ] || wait "$WORLD_DNSMASQ" 2>/dev/null || true
  ip netns del "$WORLD" 2>/dev/null || true
  ip netns del "$SERVER" 2>/dev/null || true
  rm -rf "/etc/netns/$WORLD" "$WORLD_TMP"
  rmdir /etc/netns 2>/dev/null || true
  WORLD=
}

# Runs a command inside the world (as root unless AS_USER is set).
in_world() {
  if [ -n "${AS_USER:-}" ]; then
    ip netns exec "$WORLD" setpriv --reuid="$AS_USER" --regid="$AS_USER" --init-groups -- "$@"
  else
    ip netns exec "$WORLD" "$@"
  fi
}

in_server() { ip netns exec "$SERVER" "$@"; }

# ping summary fields from "rtt min/avg/max/mdev = a/b/c/d ms" and "N received".
ping_stats() {  # prints: received min avg max
  awk '/packets transmitted/ { for (i = 1; i <= NF; i++) if ($i ~ /^received/) r = $(i-1) }
       /^rtt|^round-trip/ { split($4, v, "/"); mn = v[1]; av = v[2]; mx = v[3] }
       END { printf "%s %s %s %s\n", r + 0, mn + 0, av + 0, mx + 0 }'
}

# Leftovers of shells in the world: NAT tables, TUN devices, shell processes. A shell returns
# once its ferry has stopped; the kernel then needs a moment (an RCU grace period per device) to
# unregister the TUN devices as the ferry exits, so allow up to 2 s for those to go.
world_leftovers() {
  for _ in $(seq 20); do
    [ -z "$(world_leftovers_now)" ] && return 0
    sleep 0.1
  done
  world_leftovers_now
}

world_leftovers_now() {
  {
    in_world nft list tables 2>/dev/null | grep mahimahi_ || true
    in_world ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | grep -E '^(delay|loss|onoff|inter|link|record)-' || true
    pgrep -a -f 'mm-replay\.[A-Za-z0-9]{6}/' || true  # replay daemons (their configs live there)
    ls -d /tmp/mm-replay.* 2>/dev/null || true
    for pid in $(ip netns pids "$WORLD" 2>/dev/null); do
      comm=$(cat "/proc/$pid/comm" 2>/dev/null) || continue
      case "$comm" in mm-*) echo "process $pid $comm" ;; esac
    done
  } | sed 's/^/leftover: /'
}

# in_world, with RESOLV_CONF in place of the world's /etc/resolv.conf (a private mount).
in_world_with_resolv() {
  resolv=$1; shift
  if [ -n "${AS_USER:-}" ]; then
    ip netns exec "$WORLD" unshare -m sh -c 'mount --bind "$0" /etc/resolv.conf && u=$1 && shift && exec setpriv --reuid="$u" --regid="$u" --init-groups -- "$@"' \
      "$resolv" "$AS_USER" "$@"
  else
    ip netns exec "$WORLD" unshare -m sh -c 'mount --bind "$0" /etc/resolv.conf && shift && exec "$@"' "$resolv" x "$@"
  fi
}

# Waits until COMMAND... succeeds, checking every 20 ms, for at most SECONDS (a deadline, not a
# delay: it returns as soon as the condition holds). Fails if the deadline passes.
wait_until() {  # SECONDS COMMAND...
  local deadline=$(( $(date +%s%N) + ${1%.*} * 1000000000 ))
  shift
  until "$@"; do
    [ "$(date +%s%N)" -lt "$deadline" ] || return 1
    sleep 0.02
  done
}
