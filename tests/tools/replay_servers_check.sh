#!/bin/bash
# Manual integration check of ReplayServers (src/http/replay_servers.*): the Apache instances and
# dnsmasq that mm-replay runs, without the rest of mm-replay. Needs root (for the network namespace);
# the daemons run as an ordinary user (default: nobody), as in mm-replay.
#
#   tests/tools/replay_servers_check.sh [BUILD_DIR]     (default BUILD_DIR: /work/build-srv)
#
# BUILD_DIR is a configured build tree in which src/util, src/packet and src/http are built. The
# script compiles a small driver (below) against it: the driver serves FastCGI itself (libfcgi,
# echoing the parameters it receives as the body), starts ReplayServers from its command line,
# prints READY, and stops when told. Everything happens in a namespace of its own (rsc<pid>), which
# is removed at the end with every process in it; the machine's own network is not touched.
set -u
BUILD=${1:-/work/build-srv}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
USER_NAME=${CHECK_USER:-nobody}
GROUP_NAME=$(id -gn "$USER_NAME")
[ "$(id -u)" = 0 ] || { echo "run as root (needed for the network namespace)" >&2; exit 2; }
for lib in src/http/libhttp.a src/util/libutil.a; do
  [ -f "$BUILD/$lib" ] || { echo "$BUILD/$lib missing: build src/util and src/http there first" >&2; exit 2; }
done

NS=rsc$$
T=$(mktemp -d /tmp/rsc.XXXXXX)
chmod 755 "$T"
FAILS=0
DRIVER_PID=

cleanup() {
  for pid in $(ip netns pids "$NS" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
  ip netns del "$NS" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; FAILS=$((FAILS + 1)); }
check() {  # check DESCRIPTION COMMAND...: passes if the command succeeds
  local what=$1; shift
  if "$@"; then ok "$what"; else bad "$what"; fi
}
in_ns() { ip netns exec "$NS" "$@"; }
as_user() { in_ns setpriv --reuid="$USER_NAME" --regid="$GROUP_NAME" --clear-groups "$@"; }
# Runs a command in the namespace with resolv.conf pointing at the replay's dnsmasq (a bind mount in
# the private mount namespace `ip netns exec` creates; the machine's file is untouched).
with_dns() { in_ns sh -c 'mount --bind "$0" /etc/resolv.conf && exec "$@"' "$T/resolv.conf" "$@"; }

# ---- the driver ----
cat > "$T/driver.cc" <<'EOF'
// Starts ReplayServers from the command line, with a FastCGI echo responder in-process.
#include <fcgiapp.h>
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "certificate_authority.hh"
#include "replay_servers.hh"

namespace {
int listen_socket = -1;

// Echoes the FastCGI parameters as the body; /hdr answers with recorded-style Server and Date
// headers, to see which headers Apache keeps.
void respond() {
  FCGX_Request request;
  FCGX_InitRequest(&request, listen_socket, 0);
  while (FCGX_Accept_r(&request) >= 0) {
    const char* uri = FCGX_GetParam("REQUEST_URI", request.envp);
    std::string head = "Status: 200 OK\r\nContent-Type: text/plain\r\n";
    if (uri && std::strncmp(uri, "/hdr", 4) == 0) {
      head += "Server: RecordedServer/1.0\r\nDate: Tue, 01 Jan 2019 00:00:00 GMT\r\nX-Recorded: yes\r\n";
    }
    std::string body;
    for (char** e = request.envp; *e; e++) body += std::string(*e) + "\n";
    head += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
    FCGX_PutStr(head.data(), static_cast<int>(head.size()), request.out);
    FCGX_PutStr(body.data(), static_cast<int>(body.size()), request.out);
    FCGX_Finish_r(&request);
  }
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::istringstream in(text);
  std::string part;
  while (std::getline(in, part, separator)) if (!part.empty()) parts.push_back(part);
  return parts;
}
}  // namespace

// driver CA_DIR WORK SOCKET [server KIND:IP:PORT[:NAME,...]]... [many N KIND] [listen ADDR]... [name NAME=IP,...]...
//   KIND: http, https or h2; `many N KIND` adds N servers 10.78.1.1..N (port 80 or 443) named sI.many.test
int main(int argc, char** argv) {
  if (argc < 4) return 2;
  std::vector<ReplayServerSpec> servers;
  ReplayDns dns;
  for (int i = 4; i < argc; i++) {
    const std::string word = argv[i];
    const std::string value = i + 1 < argc ? argv[i + 1] : "";
    if (word == "server") {
      const auto f = split(value, ':');
      ReplayServerSpec s{f.at(1), static_cast<uint16_t>(std::stoi(f.at(2))), f[0] != "http", {}, f[0] == "h2"};
      if (f.size() > 3) s.names = split(f[3], ',');
      servers.push_back(s);
      i++;
    } else if (word == "many") {
      const int n = std::stoi(value);
      const std::string kind = argv[i + 2];
      for (int k = 1; k <= n; k++) {
        const bool tls = kind == "https" || kind == "h2" || (kind == "mix" && k % 2 == 0);
        const std::string name = "s" + std::to_string(k) + ".many.test";
        servers.push_back({"10.78.1." + std::to_string(k), static_cast<uint16_t>(tls ? 443 : 80), tls, {name},
                           kind == "h2" || (kind == "mix" && k % 4 == 0)});
        dns.names[name] = {"10.78.1." + std::to_string(k)};
      }
      i += 2;
    } else if (word == "listen") {
      dns.listen.push_back(value);
      i++;
    } else if (word == "name") {
      const auto eq = value.find('=');
      dns.names[value.substr(0, eq)] = split(value.substr(eq + 1), ',');
      i++;
    } else {
      std::cerr << "driver: unknown argument " << word << std::endl;
      return 2;
    }
  }
  FCGX_Init();
  listen_socket = FCGX_OpenSocket(argv[3], 128);
  if (listen_socket < 0) {
    std::cerr << "driver: cannot open " << argv[3] << std::endl;
    return 1;
  }
  for (int t = 0; t < 8; t++) std::thread(respond).detach();
  try {
    CertificateAuthority ca = CertificateAuthority::load_or_create(argv[1]);
    ReplayServers replay(servers, dns, ca, argv[3], argv[2]);
    std::cout << "READY " << replay.startup_seconds() << " " << servers.size() << std::endl;
    std::string command;
    while (std::getline(std::cin, command) && command != "stop") {
      if (command == "tail") std::cout << "TAIL\n" << replay.log_tail(10) << "END" << std::endl;
    }
    const auto start = std::chrono::steady_clock::now();
    replay.stop();
    std::cout << "STOPPED " << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
              << std::endl;
    replay.stop();  // idempotent
  } catch (const std::exception& e) {
    std::cout << "ERROR " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
EOF
echo "building the driver"
g++ -std=c++20 -O1 -Wall -Wextra -Werror -Wshadow -Wpedantic -pthread -D_GNU_SOURCE \
  -I"$SRC/src/http" -I"$SRC/src/util" -I"$BUILD/src/http" -o "$T/driver" "$T/driver.cc" \
  "$BUILD/src/http/libhttp.a" "$BUILD/src/util/libutil.a" -lssl -lcrypto -lprotobuf -lfcgi || exit 1

# ---- the namespace ----
ip netns add "$NS" || exit 1
in_ns ip link set lo up
{
  for a in 10.78.0.1 10.78.0.2 10.78.0.3 10.78.0.9 10.78.0.53; do echo "addr add $a/32 dev lo"; done
  for i in $(seq 1 200); do echo "addr add 10.78.1.$i/32 dev lo"; done
} > "$T/addresses"
ip -n "$NS" -batch "$T/addresses" || exit 1
in_ns sysctl -q -w net.ipv4.ip_unprivileged_port_start=0
echo "nameserver 10.78.0.53" > "$T/resolv.conf"
install -d -o "$USER_NAME" -g "$GROUP_NAME" -m 700 "$T/ca"

# start_driver NAME ARGS...: runs the driver as the user in the namespace; its stdin is a fifo
# ($T/NAME.in), its output goes to $T/NAME.out. Waits for READY or ERROR (or its end).
start_driver() {
  local name=$1; shift
  install -d -o "$USER_NAME" -g "$GROUP_NAME" -m 700 "$T/$name"
  mkfifo "$T/$name.in"
  # ip netns exec and setpriv exec in turn: $! is the driver itself.
  ip netns exec "$NS" setpriv --reuid="$USER_NAME" --regid="$GROUP_NAME" --clear-groups \
    "$T/driver" "$T/ca" "$T/$name" "$T/$name/matcher.sock" "$@" < "$T/$name.in" > "$T/$name.out" 2>&1 &
  DRIVER_PID=$!
  exec 9> "$T/$name.in"
  for _ in $(seq 300); do
    grep -q -E '^(READY|ERROR)' "$T/$name.out" && return 0
    kill -0 "$DRIVER_PID" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}
stop_driver() {
  echo stop >&9
  exec 9>&-
  wait "$DRIVER_PID"
}
no_daemons_left() {  # only processes in the namespace are ours; none may be left
  local left
  left=$(ip netns pids "$NS")
  [ -z "$left" ] || { ps -o pid,user,cmd -p $left; return 1; }
}

# ---- 1. a few servers: HTTP, HTTPS, h2, another port, DNS ----
echo "== basic servers"
start_driver basic \
  server http:10.78.0.1:80:a.test server https:10.78.0.1:443:a.test,www.a.test,A.Test. \
  server h2:10.78.0.2:443:b.test server http:10.78.0.3:8080:c.test \
  listen 10.78.0.53 listen 127.0.0.1 \
  name a.test=10.78.0.1 name www.a.test=10.78.0.1 name b.test=10.78.0.2 name c.test=10.78.0.3 name two.test=10.78.0.1,10.78.0.2
if grep -q '^READY' "$T/basic.out"; then ok "4 servers and dnsmasq started ($(head -1 "$T/basic.out"))"; else bad "start: $(cat "$T/basic.out")"; fi
CA=$T/ca/ca.pem
with_dns curl -sS --max-time 5 -A 'Check/1.0' 'http://a.test/p/a%2Fb/c?q=1&r=%20x#frag' > "$T/r1" 2>&1
check "HTTP by name: REQUEST_URI raw with query" grep -qx 'REQUEST_URI=/p/a%2Fb/c?q=1&r=%20x' "$T/r1"
check "HTTP: HTTP_HOST" grep -qx 'HTTP_HOST=a.test' "$T/r1"
check "HTTP: HTTP_USER_AGENT" grep -qx 'HTTP_USER_AGENT=Check/1.0' "$T/r1"
check "HTTP: SERVER_ADDR/SERVER_PORT" grep -qx 'SERVER_PORT=80' "$T/r1"
check "HTTP: no HTTPS parameter" bash -c "! grep -q '^HTTPS=' '$T/r1'"
with_dns curl -sS --max-time 5 --cacert "$CA" 'https://www.a.test/s?x=1' > "$T/r2" 2>&1
check "HTTPS by name, certificate verified against the CA" grep -qx 'HTTPS=on' "$T/r2"
check "HTTPS: SERVER_ADDR" grep -qx 'SERVER_ADDR=10.78.0.1' "$T/r2"
check "HTTPS: REQUEST_SCHEME" grep -qx 'REQUEST_SCHEME=https' "$T/r2"
in_ns curl -sS --max-time 5 --cacert "$CA" 'https://10.78.0.1/by-ip' > "$T/r3" 2>&1
check "HTTPS by IP (IP SAN)" grep -qx 'REQUEST_URI=/by-ip' "$T/r3"
with_dns curl -sS --max-time 5 --cacert "$CA" --http2 -v 'https://b.test/h2' > "$T/r4" 2>&1
check "h2: ALPN negotiated h2" grep -q 'ALPN: server accepted h2' "$T/r4"
check "h2: SERVER_PROTOCOL=HTTP/2.0" grep -qx 'SERVER_PROTOCOL=HTTP/2.0' "$T/r4"
check "h2: HTTP_HOST" grep -qx 'HTTP_HOST=b.test' "$T/r4"
urls=(); for i in $(seq 50); do urls+=(-o /dev/null "https://b.test/stream$i"); done
with_dns curl -s --max-time 10 --cacert "$CA" --http2 --parallel --parallel-max 50 -w '%{http_version} %{http_code} %{num_connects}\n' "${urls[@]}" > "$T/r4b" 2>/dev/null
check "h2: 50 parallel streams over $(awk '{c += $3} END {print c}' "$T/r4b") connection(s), all HTTP/2 200" bash -c "[ \"\$(grep -c '^2 200 ' '$T/r4b')\" = 50 ]"
with_dns curl -sS --max-time 5 --cacert "$CA" --http2 -v 'https://a.test/h1' > "$T/r5" 2>&1
check "no h2 where not asked: ALPN http/1.1" grep -q 'ALPN: server accepted http/1.1' "$T/r5"
with_dns curl -sS --max-time 5 'http://c.test:8080/other' > "$T/r6" 2>&1
check "second port: HTTP_HOST keeps :8080" grep -qx 'HTTP_HOST=c.test:8080' "$T/r6"
with_dns curl -sS --max-time 5 -d 'a=1&b=2' 'http://a.test/post' > "$T/r7" 2>&1
check "POST: REQUEST_METHOD and CONTENT_LENGTH" bash -c "grep -qx 'REQUEST_METHOD=POST' '$T/r7' && grep -qx 'CONTENT_LENGTH=7' '$T/r7'"
with_dns curl -sS --max-time 5 -i 'http://a.test/hdr' > "$T/r8" 2>&1
check "recorded Server and Date headers kept" bash -c "grep -q '^Server: RecordedServer/1.0' '$T/r8' && grep -q '^Date: Tue, 01 Jan 2019' '$T/r8'"
check "the matcher's Content-Length kept (no chunking)" bash -c "grep -q '^Content-Length: ' '$T/r8' && ! grep -qi '^Transfer-Encoding' '$T/r8'"
with_dns curl -sS --max-time 5 -i 'http://a.test/plain' > "$T/r9" 2>&1
echo "     response headers Apache sends for a plain answer:"; sed -n '1,/^\r$/p' "$T/r9" | sed 's/^/       /'
with_dns curl -sS --max-time 5 -w '%{num_connects}\n' -o /dev/null 'http://a.test/1' -o /dev/null 'http://a.test/2' \
  -o /dev/null 'http://a.test/3' > "$T/r10"
check "keep-alive: 3 requests over 1 connection" bash -c "[ \"\$(paste -sd' ' '$T/r10')\" = '1 0 0' ]"
with_dns getent hosts a.test > "$T/d1"
check "DNS: a.test -> 10.78.0.1" grep -q '^10.78.0.1 ' "$T/d1"
with_dns python3 -c 'import socket; print(sorted({a[4][0] for a in socket.getaddrinfo("two.test", 80, socket.AF_INET)}))' > "$T/d2"
check "DNS: a name with two addresses" grep -qF "['10.78.0.1', '10.78.0.2']" "$T/d2"
with_dns python3 - > "$T/d3" 2>&1 <<'PY'
import socket, time
t = time.monotonic()
try:
    socket.getaddrinfo("not-recorded.example", 80)
    print("resolved?!")
except socket.gaierror as e:
    print("NXDOMAIN" if e.errno == socket.EAI_NONAME else "other %s" % e, "%.3f" % (time.monotonic() - t))
PY
check "DNS: an unrecorded name fails at once ($(cat "$T/d3"))" bash -c "grep -q '^NXDOMAIN 0\.[0-2]' '$T/d3'"
in_ns python3 - > "$T/d4" 2>&1 <<'PY'
import socket, struct
def query(name, qtype, server):
    q = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
    q += b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0" + struct.pack(">HH", qtype, 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(1); s.sendto(q, (server, 53))
    r = s.recv(512); rcode = r[3] & 15; answers = struct.unpack(">H", r[6:8])[0]
    return rcode, answers
print("AAAA", *query("a.test", 28, "10.78.0.53"), "A", *query("a.test", 1, "127.0.0.1"), "other", *query("x.example", 1, "10.78.0.53"))
PY
check "DNS: AAAA is NODATA, 127.0.0.1 answers too, other names NXDOMAIN ($(cat "$T/d4"))" grep -qx 'AAAA 0 0 A 0 1 other 3 0' "$T/d4"
echo tail >&9; sleep 0.2
echo "     log_tail(10):"; sed -n '/^TAIL/,/^END/p' "$T/basic.out" | sed 's/^/       /'
cp "$T/basic/apache-10.78.0.2-443.conf" "$T/example.conf"
stop_driver
check "stop: $(grep STOPPED "$T/basic.out")" grep -q '^STOPPED' "$T/basic.out"
check "stop: no process left in the namespace" no_daemons_left

# ---- 2. failures ----
echo "== failures"
ip netns exec "$NS" python3 -c 'import socket,time; s=socket.socket(); s.bind(("10.78.0.9", 80)); s.listen(); time.sleep(30)' &
BLOCKER=$!
sleep 0.3
start_driver busy server http:10.78.0.1:80:a.test server http:10.78.0.9:80:busy.test listen 10.78.0.53
echo "     $(sed 's/^/     /' "$T/busy.out" | sed '1s/^ *//')"
check "port in use: clear error with Apache's words" grep -q 'Address already in use' "$T/busy.out"
check "port in use: the fix" grep -q 'fix: something else in the replay namespace already listens on 10.78.0.9:80' "$T/busy.out"
exec 9>&-; wait "$DRIVER_PID" 2>/dev/null
kill "$BLOCKER"; wait "$BLOCKER" 2>/dev/null
check "port in use: nothing left behind" no_daemons_left
ip netns exec "$NS" python3 -c 'import socket,time; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("10.78.0.53", 53)); time.sleep(30)' &
BLOCKER=$!
sleep 0.3
start_driver dnsbusy server http:10.78.0.1:80:a.test listen 10.78.0.53
echo "     $(sed 's/^/     /' "$T/dnsbusy.out" | sed '1s/^ *//')"
check "DNS port in use: clear error" grep -q 'fix: something else in the replay namespace already answers DNS' "$T/dnsbusy.out"
exec 9>&-; wait "$DRIVER_PID" 2>/dev/null
kill "$BLOCKER"; wait "$BLOCKER" 2>/dev/null
check "DNS port in use: nothing left behind" no_daemons_left
MAHIMAHI_APACHE2=/nonexistent start_driver noapache server http:10.78.0.1:80:a.test
echo "     $(cat "$T/noapache.out")"
check "Apache missing: clear error" grep -q 'replay needs Apache httpd' "$T/noapache.out"
exec 9>&-; wait "$DRIVER_PID" 2>/dev/null
in_ns sysctl -q -w net.ipv4.ip_unprivileged_port_start=1024
start_driver lowport server http:10.78.0.1:80:a.test
echo "     $(sed 's/^/     /' "$T/lowport.out" | sed '1s/^ *//')"
check "port 80 not allowed: the fix names ip_unprivileged_port_start" grep -q 'ip_unprivileged_port_start must be 0' "$T/lowport.out"
exec 9>&-; wait "$DRIVER_PID" 2>/dev/null
in_ns sysctl -q -w net.ipv4.ip_unprivileged_port_start=0

# ---- 3. the driver killed: its daemons die with it (parent-death signal) ----
echo "== driver killed"
start_driver killed server https:10.78.0.1:443:a.test listen 10.78.0.53
kill -9 "$DRIVER_PID"; wait "$DRIVER_PID" 2>/dev/null; exec 9>&-
sleep 1
check "SIGKILLed driver: no process left" no_daemons_left

# ---- 4. start-up time, and 500 concurrent connections ----
echo "== start-up time"
for spec in "10 http" "10 h2" "100 http" "100 https" "100 h2" "100 mix" "200 mix"; do
  set -- $spec
  start_driver "many$1$2" many "$1" "$2" listen 10.78.0.53
  echo "     $1 $2 servers: $(head -1 "$T/many$1$2.out")"
  if [ "$spec" = "100 mix" ] && grep -q '^READY' "$T/many$1$2.out"; then
    # 500 connections at once, 5 to each of the 100 servers, each carrying 2 requests.
    in_ns python3 - "$CA" > "$T/conc" 2>&1 <<'PY'
import socket, ssl, sys, threading, time
ctx = ssl.create_default_context(cafile=sys.argv[1])
ok = []; errors = []; barrier = threading.Barrier(500, timeout=20)
def worker(k, j):
    try:
        tls = k % 2 == 0
        s = socket.create_connection(("10.78.1.%d" % k, 443 if tls else 80), timeout=20)
        if tls: s = ctx.wrap_socket(s, server_hostname="s%d.many.test" % k)
        barrier.wait()  # all 500 open at the same time
        for n in range(2):
            s.sendall(b"GET /c%d/%d HTTP/1.1\r\nHost: s%d.many.test\r\n\r\n" % (j, n, k))
            data = b""
            while b"REQUEST_URI=/c%d/%d\n" % (j, n) not in data:
                chunk = s.recv(65536)
                if not chunk: raise EOFError("closed")
                data += chunk
        ok.append(1); s.close()
    except Exception as e:
        errors.append(repr(e))
t = time.monotonic()
threads = [threading.Thread(target=worker, args=(k, j)) for k in range(1, 101) for j in range(5)]
for th in threads: th.start()
for th in threads: th.join()
print("%d ok, %d errors in %.2f s %s" % (len(ok), len(errors), time.monotonic() - t, errors[:3]))
PY
    check "500 concurrent connections over 100 servers: $(cat "$T/conc")" grep -q '^500 ok, 0 errors' "$T/conc"
    for pid in $(ip netns pids "$NS"); do cat "/proc/$pid/smaps_rollup" 2>/dev/null; done |
      awk '/^Pss:/ {pss += $2} /^Rss:/ {rss += $2} END {printf "     memory of every process in the namespace: PSS %d MB (RSS sum %d MB)\n", pss/1024, rss/1024}'
  fi
  stop_driver
  echo "     $(grep STOPPED "$T/many$1$2.out")"
  check "$1 $2: started and stopped, nothing left" bash -c "grep -q '^READY' '$T/many$1$2.out' && grep -q '^STOPPED' '$T/many$1$2.out' && [ -z \"\$(ip netns pids $NS)\" ]"
done

echo "== an example configuration (10.78.0.2:443, HTTPS + h2)"
sed 's/^/    /' "$T/example.conf"
echo
if [ "$FAILS" = 0 ]; then echo "all checks passed"; else echo "$FAILS checks failed"; fi
[ "$FAILS" = 0 ]
