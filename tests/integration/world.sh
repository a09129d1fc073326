# SPDX-License-Identifier: GPL-3.0-or-later
# The test world: one library shared by the integration tests (tests/integration/*.sh), the
# benchmarks (bench/) and the demo (scripts/): a throwaway "test world" of network namespaces,
# web origins in it, and the helpers the tests have in common. Bash.
#
#   world (namespace $WORLD)  ---veth---  server host (namespace $SERVER, 10.77.0.2)
#   10.77.0.1                             answers ping, runs iperf3 and a DNS server (dnsmasq)
#
# Shells under test run inside the world (ip netns exec $WORLD ...), so nothing they do touches
# the machine's own namespace. world_destroy removes all of it.

SERVER_IP=10.77.0.2
WORLD_IP=10.77.0.1
# A shell's outer device: <kind>-<pid>, the kinds of src/shell/nat.hh's kShellKinds.
SHELL_DEVICE_RE='(delay|loss|onoff|inter|link|meter|record|cumulus|paths|eth)-[0-9]+'
world_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

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
  wait_until 10 world_resolves server.test && return 0
  echo "test world: the DNS server did not start" >&2
  return 1
}

world_resolves() { in_world getent hosts "$1" >/dev/null 2>&1; }  # NAME

world_destroy() {
  xvfb_stop
  ! declare -F rootless_pass_end >/dev/null || rootless_pass_end  # (a run interrupted in the pass)
  [ -z "${WORLD_BUILD:-}" ] || { rm -rf "$WORLD_BUILD"; WORLD_BUILD=; }
  [ -n "${WORLD:-}" ] || return 0
  origins_destroy
  if [ -n "${LIVE_THINK_PID:-}" ]; then  # (under set -e, as in scripts: nothing here may stop the clean-up)
    kill "$LIVE_THINK_PID" 2>/dev/null || true
    wait "$LIVE_THINK_PID" 2>/dev/null || true
    LIVE_THINK_PID=
  fi
  for pid in $(ip netns pids "$WORLD" 2>/dev/null) $(ip netns pids "$SERVER" 2>/dev/null); do
    kill -9 "$pid" 2>/dev/null || true
  done
  [ -z "${WORLD_DNSMASQ:-}" ] || wait "$WORLD_DNSMASQ" 2>/dev/null || true
  rm -f "$(world_lock_file)"  # left by a test that held it, or a shell killed before its clean-up
  ip netns del "$WORLD" 2>/dev/null || true
  ip netns del "$SERVER" 2>/dev/null || true
  rm -rf "/etc/netns/$WORLD" "$WORLD_TMP"
  rmdir /etc/netns 2>/dev/null || true
  WORLD=
}

# Runs a command inside the world (as root unless AS_USER is set).
in_world() {
  if [ -n "${AS_USER:-}" ]; then
    ip netns exec "$WORLD" setpriv --reuid="$AS_USER" --regid="$(id -g "$AS_USER")" --init-groups -- "$@"
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

# Leftovers of shells in the world: nftables tables (the shared one "mahimahi", and an older
# version's mahimahi_*), TUN devices, shell processes. A shell returns once its ferry has
# stopped; the kernel then needs a moment (an RCU grace period per device) to unregister the TUN
# devices as the ferry exits, so wait (up to 10 s, for a loaded machine) for those to go.
world_leftovers() {
  wait_until 10 world_is_clean && return 0
  world_leftovers_now
}

# The lock file of the world's namespace (shell/forwarding.hh): the last shell removes it.
world_lock_file() { echo "/run/mahimahi/netns-$(in_world stat -L -c %i /proc/self/ns/net 2>/dev/null).lock"; }

world_is_clean() { [ -z "$(world_leftovers_now)" ]; }

# The world's nftables tables of shells: "mahimahi" (shell/forwarding.hh), or an older version's.
world_tables() { in_world nft list tables 2>/dev/null | grep -E " mahimahi(_|$)" || true; }

world_leftovers_now() {
  {
    world_tables
    in_world ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | grep -E "^$SHELL_DEVICE_RE" || true
    pgrep -a -f 'mm-replay\.[A-Za-z0-9]{6}/' || true  # replay daemons (their configs live there)
    ls -d /tmp/mm-replay.* /tmp/mm-monkey.* 2>/dev/null || true
    ls "$(world_lock_file)" 2>/dev/null || true
    # Rootless shells' (tests/integration/rootless.sh): their way out, their lock files.
    pgrep -a '^pas(ta|st)' || true
    ls -d /tmp/mahimahi-[0-9]*/netns-* /run/user/*/mahimahi/netns-* 2>/dev/null || true
    # A shell's processes outside the root namespace: the world's, and a guard in a shell's own.
    local root_ns pid; root_ns=$(readlink /proc/1/ns/net)
    for pid in $(pgrep '^mm-'); do
      [ "$(readlink "/proc/$pid/ns/net" 2>/dev/null)" != "$root_ns" ] || continue
      echo "process $pid $(cat "/proc/$pid/comm" 2>/dev/null)"
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

# ----- Helpers of the tests

fail() { echo "FAIL: $*"; return 1; }

# awk-based float comparison: check_range NAME VALUE LOW HIGH
check_range() {
  awk -v v="$2" -v lo="$3" -v hi="$4" 'BEGIN { exit !(v >= lo && v <= hi) }' ||
    { echo "FAIL: $1 = $2, expected within [$3, $4]"; return 1; }
  echo "  $1 = $2 (expected [$3, $4])"
}

# Runs COMMAND, which must exit with EXPECTED_RC and say FRAGMENT in the first line of its errors.
rc_msg() {  # EXPECTED_RC FRAGMENT COMMAND...
  want=$1 frag=$2; shift 2
  msg=$("$@" 2>&1 >/dev/null); rc=$?
  [ "$rc" = "$want" ] || { echo "FAIL: '$*' exited $rc, expected $want ($msg)"; return 1; }
  echo "$msg" | head -1 | grep -qF -- "$frag" || { echo "FAIL: '$*' said: $msg"; return 1; }
  echo "  $* -> $rc: $(echo "$msg" | head -1)"
}

# Whether a process whose command line is exactly "sleep SECONDS" exists (unusual durations
# mark a test's processes).
sleeping() { pgrep -x -f "sleep $1" >/dev/null; }
# The pid of the command NAME of the shell whose supervisor is SHELL: the supervisor's children
# are the ferry and the guard, and the guard's child is the command.
shell_command() {  # SHELL NAME
  local guard
  for guard in $(pgrep -P "$1"); do pgrep -x -P "$guard" "$2" && return 0; done
  return 1
}

# Fails (and ends them) if any of the marked sleeps is still running.
none_sleeping() {  # SECONDS...
  for marker in "$@"; do
    if sleeping "$marker"; then pkill -x -f "sleep $marker"; fail "'sleep $marker' outlived its shell"; return 1; fi
  done
}

# The state letter of a process (R, S, T, ...; empty once it is gone), and whether it is STATE.
process_state() { awk '{print $3}' "/proc/$1/stat" 2>/dev/null; }  # PID
process_state_is() { [ "$(process_state "$1")" = "$2" ]; }  # PID STATE
process_state_is_not() { [ "$(process_state "$1")" != "$2" ]; }  # PID STATE

# Whether something listens on PORT (tcp or udp) in namespace NETNS.
listening() {  # NETNS tcp|udp PORT
  local flag=-ltn; [ "$2" = udp ] && flag=-lun
  ip netns exec "$1" ss $flag "sport = :$3" | grep -q ":$3 "
}

# A shell's processes but its command's: the shell (a supervisor's pid) and its descendants,
# except processes named COMMAND and theirs; their pids, on one line.
shell_processes() {  # SHELL-PID COMMAND
  local all pids="" frontier="$1 "
  all=$(ps -e -o pid=,ppid=,comm=)
  while [ -n "$frontier" ]; do
    pids="$pids$frontier"
    frontier=$(echo "$all" | awk -v f=" $frontier" -v c="$2" 'index(f, " " $2 " ") && $3 != c { printf "%s ", $1 }')
  done
  echo "$pids"
}

# Their memory (PSS, kB: shared pages divided among the processes sharing them).
shell_memory_kb() {  # SHELL-PID COMMAND
  local p kb=0
  for p in $(shell_processes "$1" "$2"); do
    kb=$((kb + $(awk '/^Pss:/ { print $2 }' "/proc/$p/smaps_rollup" 2>/dev/null || echo 0)))
  done
  echo "$kb"
}

# The address-space limit (ulimit -v, kB) under which the bounds tests run a program, so that
# reading a huge input fails them rather than the machine; 0 (none) for a sanitizer build
# (MAHIMAHI_SANITIZER=asan or tsan, set by tests/hardening.sh), whose shadow memory alone
# reserves terabytes of address space: the deadline and the sanitizer's own checks stand in.
address_space_kb() { if [ -n "${MAHIMAHI_SANITIZER:-}" ]; then echo 0; else echo "$1"; fi; }

# A TCP port from 5400 to 5899 on which nothing listens in the world (or IPERF_NETNS): a random
# one alone could be a port where an earlier test's iperf3 server still sits, serving a client
# that a fault test killed ("the server is busy running a test").
free_port() {
  local ns=${IPERF_NETNS:-$WORLD} port _
  for _ in $(seq 100); do
    port=$((5400 + RANDOM % 500))
    listening "$ns" tcp "$port" || { echo "$port"; return 0; }
  done
  echo "no free port from 5400 to 5899 in $ns" >&2
  return 1
}

# A one-shot iperf3 server in the world (or, with IPERF_NETNS, that namespace) on PORT,
# listening when this returns.
iperf_server() {  # PORT
  local ns=${IPERF_NETNS:-$WORLD}
  ip netns exec "$ns" iperf3 -s -1 -D -p "$1" >/dev/null || return 1
  wait_until 10 listening "$ns" tcp "$1" || { echo "iperf3 server on port $1 did not start" >&2; return 1; }
}

# The receiver's goodput (Mbit/s, 3 decimals) in iperf3 -f k output on standard input.
iperf_receiver_mbits() { awk '/receiver/ { for (i = 1; i < NF; i++) if ($(i + 1) == "Kbits/sec") printf "%.3f\n", $i / 1000 }'; }

# ----- An X server for the live graphs (tests/integration/meter.sh, bench/meter)

# Starts Xvfb (a virtual X server) on a free display, accepting only clients with the X cookie
# in $XAUTH_FILE, which is readable by XVFB_USER (if set) and root only; sets DISPLAY_NUMBER and
# XVFB_PID. xvfb_stop ends it.
xvfb_start() {
  local n cookie
  for n in $(seq 70 99); do [ -e "/tmp/.X$n-lock" ] || [ -e "/tmp/.X11-unix/X$n" ] || break; done
  DISPLAY_NUMBER=$n
  XAUTH_FILE=$WORLD_TMP/xauth-$n
  cookie=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  rm -f "$XAUTH_FILE"
  touch "$XAUTH_FILE"
  chmod 600 "$XAUTH_FILE"
  xauth -q -f "$XAUTH_FILE" add ":$n" MIT-MAGIC-COOKIE-1 "$cookie" || return 1
  [ -z "${XVFB_USER:-}" ] || chown "$XVFB_USER" "$XAUTH_FILE"
  Xvfb ":$n" -auth "$XAUTH_FILE" -nolisten tcp -screen 0 1920x1080x24 >"$WORLD_TMP/xvfb-$n.log" 2>&1 &
  XVFB_PID=$!
  wait_until 10 env DISPLAY=":$n" XAUTHORITY="$XAUTH_FILE" xwininfo -root >/dev/null 2>&1 && return 0
  echo "Xvfb :$n did not start: $(cat "$WORLD_TMP/xvfb-$n.log")" >&2
  xvfb_stop
  return 1
}

xvfb_stop() {
  [ -n "${XVFB_PID:-}" ] || return 0
  kill "$XVFB_PID" 2>/dev/null
  wait "$XVFB_PID" 2>/dev/null
  XVFB_PID=
  rm -f "$XAUTH_FILE"
}

# ----- Set-up of the benchmarks and the demo

# Installs the Debian packages PACKAGE... that are missing (what a benchmark needs beyond
# scripts/install-deps).
need_packages() {  # PACKAGE...
  local p missing=
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
  done
  [ -n "$missing" ] || return 0
  echo "installing$missing" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >/dev/null
}

# Makes a fresh machine ready (as root): every package of scripts/install-deps and PACKAGE...;
# unless BIN names installed programs, builds into a temporary prefix (BIN then), which
# world_destroy removes.
world_programs() {  # [PACKAGE...]
  local top; top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  [ "$(id -u)" = 0 ] || { echo "run me as root (the test world is made of network namespaces)" >&2; return 1; }
  "$top/scripts/install-deps" >/dev/null || return 1
  need_packages "$@" || return 1
  [ -z "${BIN:-}" ] || return 0
  WORLD_BUILD=$(mktemp -d /tmp/mm-build.XXXXXX)
  chmod 755 "$WORLD_BUILD"
  trap world_destroy EXIT
  MAHIMAHI_BUILD_DIR=$WORLD_BUILD/build "$top/scripts/build" "$WORLD_BUILD/prefix" >/dev/null || return 1
  BIN=$WORLD_BUILD/prefix/bin
}

# ----- Web origins (for record and replay, the benchmarks and the demo recording): call
# origins_create after world_create; world_destroy removes them with the world.
#
#   world --- server host (10.77.0.2, DNS) ---+--- origin a.test     10.78.1.2  (namespace mmt-oa$$)
#                                             +--- origin b.test     10.78.2.2  (www.b.test too; HTTP/2)
#                                             `--- origin c.test     10.78.3.2
#
# Each origin is a real nginx (Debian's) on ports 80 and 443, HTTPS with SNI-only virtual hosts
# (a handshake without a known name is refused), certificates from a test CA ($ORIGIN_CA).

ORIGINS="a b c"

origin_ip() { case "$1" in a) echo 10.78.1.2 ;; b) echo 10.78.2.2 ;; c) echo 10.78.3.2 ;; esac; }

# An origin host: namespace NS behind the server host, joined by a veth named NS on the server's
# side and eth0 on the origin's, on the /30 PREFIX.0 (PREFIX.1 the server's end, PREFIX.2 the
# origin's). world_destroy removes it with the world.
origin_host_create() {  # NS PREFIX
  local ns=$1 prefix=$2
  ip netns add "$ns" || return 1
  ORIGIN_NAMESPACES="${ORIGIN_NAMESPACES:-} $ns"
  ip link add "$ns" netns "$SERVER" type veth peer name eth0 netns "$ns" &&
    ip -n "$SERVER" addr add "$prefix.1/30" dev "$ns" &&
    ip -n "$SERVER" link set "$ns" up &&
    ip -n "$ns" addr add "$prefix.2/30" dev eth0 &&
    ip -n "$ns" link set lo up &&
    ip -n "$ns" link set eth0 up &&
    ip -n "$ns" route add default via "$prefix.1"
}

origins_create() {
  [ -n "${ORIGIN_CA:-}" ] && return 0
  local web=$WORLD_TMP/web
  mkdir -p "$web"
  ip netns exec "$SERVER" sysctl -qw net.ipv4.ip_forward=1
  # The origins' CA and one certificate per host name.
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 -subj "/CN=Test origins CA" \
    -keyout "$web/ca.key" -out "$web/ca.pem" -addext "basicConstraints=critical,CA:TRUE" 2>/dev/null || return 1
  ORIGIN_CA=$web/ca.pem
  local o i=0 names
  for o in $ORIGINS; do
    i=$((i + 1))
    local ns=mmt-o$o$$ ip; ip=$(origin_ip "$o")
    origin_host_create "$ns" "10.78.$i" || return 1
    names="$o.test"; [ "$o" = b ] && names="b.test www.b.test"
    local d=$web/$o n
    mkdir -p "$d/tmp"
    for n in $names; do
      printf '%s %s\n' "$ip" "$n" >> "$WORLD_TMP/hosts"
      origin_certificate "$d" "$n" || return 1
      origin_content "$d/www/$n" "$n"
    done
    origin_nginx_conf "$d" "$ip" $names > "$d/nginx.conf"
    ip netns exec "$ns" nginx -c "$d/nginx.conf" -e "$d/error.log" || { cat "$d/error.log" >&2; return 1; }
  done
  kill -HUP "$WORLD_DNSMASQ"  # reread the hosts file
  wait_until 10 origins_answer && return 0
  echo "web origins did not start" >&2
  return 1
}

# DIR/NAME.key and DIR/NAME.pem: a certificate for host NAME from the origins' CA.
origin_certificate() {  # DIR NAME
  local web=$WORLD_TMP/web
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$2" -keyout "$1/$2.key" \
    -out "$1/$2.csr" 2>/dev/null &&
    openssl x509 -req -in "$1/$2.csr" -CA "$web/ca.pem" -CAkey "$web/ca.key" -CAcreateserial -days 30 \
      -extfile <(printf 'subjectAltName=DNS:%s\nextendedKeyUsage=serverAuth\n' "$2") -out "$1/$2.pem" 2>/dev/null
}

origins_answer() { in_world curl -sf -o /dev/null http://c.test/ && world_resolves www.b.test; }

origins_destroy() {
  local ns pid
  for ns in ${ORIGIN_NAMESPACES:-}; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
  ORIGIN_NAMESPACES= ORIGIN_CA=
}

# The site of one host name: a page whose subresources are spread over every origin.
origin_content() {  # DIR NAME
  mkdir -p "$1/upload"
  cat > "$1/index.html" <<EOF
<!doctype html>
<html><head><title>$2</title>
<link rel="stylesheet" href="https://b.test/style.css">
<script src="https://c.test/app.js"></script>
<script src="http://a.test/plain.js"></script>
</head><body><h1>$2</h1>
<img src="https://www.b.test/pixel.png" alt="">
<img src="https://c.test/pixel.png?v=1" alt="">
<img src="http://c.test/pixel.png?v=2" alt="">
</body></html>
EOF
  local k
  { echo "/* $2 */"; for k in $(seq 200); do echo ".rule$k { margin: ${k}px; }"; done; } > "$1/style.css"
  { echo "// $2"; for k in $(seq 200); do echo "var v$k = $k;"; done; echo "document.title += ' (app)';"; } > "$1/app.js"
  echo "document.title += ' (plain)';" > "$1/plain.js"
  # A 1x1 PNG.
  printf '\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\1\0\0\0\1\x08\x06\0\0\0\x1f\x15\xc4\x89\0\0\0\rIDATx\x9cc\xf8\xff\xff?\0\x05\xfe\x02\xfe\xa7\x35\x81\x84\0\0\0\0IEND\xaeB`\x82' > "$1/pixel.png"
  truncate -s 200M "$1/big.bin"
  chmod -R a+rwX "$1"
}

# The start of an nginx configuration (up to inside its http block) shared by the origins:
# one worker as root, its pid and logs in DIR, its temporary files under TMP.
nginx_conf_prologue() {  # DIR TMP CONNECTIONS
  cat <<EOF
daemon on;
user root;
worker_processes 1;
pid $1/nginx.pid;
error_log $1/error.log;
events { worker_connections $3; }
http {
  access_log off;
  client_body_temp_path $2/body;
  proxy_temp_path $2/proxy;
  fastcgi_temp_path $2/fastcgi;
  uwsgi_temp_path $2/uwsgi;
  scgi_temp_path $2/scgi;
EOF
}

origin_nginx_conf() {  # DIR IP NAME... (b.test's origin offers HTTP/2, the others HTTP/1.1 only)
  local d=$1 ip=$2 h2=; shift 2
  [ "$ip" = "$(origin_ip b)" ] && h2=" http2"
  nginx_conf_prologue "$d" "$d/tmp" 4096
  cat <<EOF
  types { text/html html; text/css css; application/javascript js; image/png png; application/octet-stream bin; }
  default_type application/octet-stream;
  gzip on;
  gzip_types text/css application/javascript;
  gzip_min_length 100;
  keepalive_requests 10000;
  client_max_body_size 64m;
  server { listen $ip:443 ssl$h2 default_server; ssl_reject_handshake on; }
EOF
  local n
  for n in "$@"; do
    cat <<EOF
  server {
    listen $ip:80;
    listen $ip:443 ssl$h2;
    server_name $n;
    ssl_certificate $d/$n.pem;
    ssl_certificate_key $d/$n.key;
    root $d/www/$n;
    location = /form { return 200 "form received\n"; }
    location = /random.html { add_header Content-Security-Policy "script-src 'self'; img-src 'self'"; }
    location /r/ { try_files /pixel.png =404; }
    location /upload/ { dav_methods PUT DELETE; create_full_put_path on; }
  }
EOF
  done
  echo "}"
}

# ----- The corpus's origins (scripts/make-corpus): many hosts, each its own origin host with
# its own name, address and certificate, serving the files scripts/corpus-sites wrote in SITES
# (SITES/hosts lists the names; SITES/www/NAME is the root of NAME; SITES/conf/NAME.conf holds
# its extra nginx directives). Call after origins_create; world_destroy removes them.
#
#   server host ---+--- corpus origin 1 (namespace mmt-q1$$)  10.79.1.2
#                  +--- ...
#                  `--- corpus origin N (namespace mmt-qN$$)  10.79.N.2    (N <= 250)

corpus_origins_create() {  # SITES [LIVE-DIR SEED]
  local sites=$1 live=${2:-} seed=${3:-} web=$WORLD_TMP/web/corpus i=0 n last=
  [ -n "${ORIGIN_CA:-}" ] || { echo "corpus_origins_create: call origins_create first" >&2; return 1; }
  mkdir -p "$web"
  if [ -n "$live" ]; then  # the live world's settings and its think-time backend
    /usr/bin/python3 "$world_top/scripts/live-world" settings "$sites" "$seed" "$live" || return 1
    /usr/bin/python3 "$world_top/scripts/live-world" serve "$live/think.sock" "$seed" >"$live/think.log" 2>&1 &
    LIVE_THINK_PID=$!
    wait_until 10 test -S "$live/think.sock" || { echo "the think-time backend did not start" >&2; return 1; }
  fi
  while read -r n; do
    i=$((i + 1))
    [ "$i" -le 250 ] || { echo "corpus_origins_create: more than 250 hosts in $sites/hosts" >&2; return 1; }
    local ns=mmt-q$i$$ ip=10.79.$i.2
    origin_host_create "$ns" "10.79.$i" || return 1
    printf '%s %s\n' "$ip" "$n" >> "$WORLD_TMP/hosts"
    origin_certificate "$web" "$n" || return 1
    mkdir -p "$web/$n"
    corpus_nginx_conf "$web/$n" "$ip" "$n" "$sites" "$live" > "$web/$n/nginx.conf"
    ip netns exec "$ns" nginx -c "$web/$n/nginx.conf" -e "$web/$n/error.log" || { cat "$web/$n/error.log" >&2; return 1; }
    last=$n
  done < "$sites/hosts"
  [ -n "$last" ] || { echo "corpus_origins_create: no host in $sites/hosts" >&2; return 1; }
  kill -HUP "$WORLD_DNSMASQ"  # reread the hosts file
  wait_until 10 corpus_origins_answer "$last" && return 0
  echo "corpus origins did not start" >&2
  return 1
}

corpus_origins_answer() { world_resolves "$1" && in_world curl -s -o /dev/null "http://$1/"; }  # LAST_HOST

corpus_nginx_conf() {  # DIR IP NAME SITES [LIVE-DIR]
  local d=$1 ip=$2 n=$3 sites=$4 live=${5:-} h2= serve tls="TLSv1.2 TLSv1.3"
  serve="root $sites/www/$n;"
  if [ -n "$live" ]; then
    # The live world: every request waits its think time at the backend, which then hands the
    # file back to nginx (X-Accel-Redirect); HTTPS in HTTP/2 where the settings say so.
    [ "$(awk -F'\t' -v n="$n" '$1 == n { print $4 }' "$live/settings.tsv")" = h2 ] && h2=" http2"
    [ "$(awk -F'\t' -v n="$n" '$1 == n { print $6 }' "$live/settings.tsv")" = TLSv1.2 ] && tls=TLSv1.2
    # Static files at once, without the backend (and a location of the page's own: the fonts' /files/).
    serve="root $sites/www/$n;
    location / {
      location ~ $(awk -F'\t' -v n="$n" '$1 == n { print $5 }' "$live/settings.tsv") { }
      proxy_pass http://unix:$live/think.sock:; proxy_set_header X-Live-Host $n;
    }
    location /_files/ { internal; alias $sites/www/$n/; }"
  fi
  nginx_conf_prologue "$d" "$d" 1024
  cat <<EOF
  types {
    text/html html; text/css css; application/javascript js; image/png png; image/jpeg jpg;
    image/svg+xml svg; image/x-icon ico; font/ttf ttf; font/woff2 woff2; application/json json;
  }
  default_type application/octet-stream;
  gzip on;
  gzip_types text/css application/javascript image/svg+xml font/ttf application/json;
  gzip_min_length 100;
  keepalive_requests 10000;
  ssl_protocols $tls;
  server { listen $ip:443 ssl$h2 default_server; ssl_reject_handshake on; }
  server {
    listen $ip:80;
    listen $ip:443 ssl$h2;
    server_name $n;
    ssl_certificate $d/../$n.pem;
    ssl_certificate_key $d/../$n.key;
    $serve
    include $sites/conf/$n.conf;
  }
}
EOF
}

# A home for the test user (DIR, made once per run) with a copy of the bundled corpus it can
# read and its own CA, trusted in its NSS database (http3.sh, cumulus.sh).
corpus_user_home() {  # DIR
  [ -f "$1/.ready" ] && return 0
  mkdir -p "$1"
  cp -r "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/corpus" "$1/corpus"
  chown -R "$TEST_USER" "$1"
  AS_USER=$TEST_USER in_world env HOME="$1" MAHIMAHI_CA_DIR="$1/ca" "$BIN/mm-ca" trust >/dev/null ||
    fail "mm-ca trust failed" || return 1
  touch "$1/.ready"
}
