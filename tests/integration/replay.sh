# SPDX-License-Identifier: GPL-3.0-or-later
# Integration tests of mm-replay, against recordings made by mm-record from the web origins of
# the test world (world.sh; paused during replay, to prove nothing reaches them) and against
# crafted recordings.

origins_pause() { local ns; for ns in $ORIGIN_NAMESPACES; do ip netns pids "$ns" | xargs -r kill -STOP; done; }
origins_resume() { local ns; for ns in $ORIGIN_NAMESPACES; do ip netns pids "$ns" | xargs -r kill -CONT; done; }

replay_shell() {  # DIR [options] -- COMMAND...  (as root, the CA of the recording tests)
  in_world env MAHIMAHI_CA_DIR="$WORLD_TMP/mmca" "$BIN/mm-replay" "$@"
}

# A recording from a HAR written by Python: crafted bodies per query string, several hosts.
crafted_recording() {  # DIR
  /usr/bin/python3 - "$WORLD_TMP/crafted.har" <<'PY'
import json, sys
count = [0]
def entry(url, body, ip, status=200, ua=None, method="GET"):
    count[0] += 1  # recorded order: one second apart
    headers = [{"name": "Host", "value": url.split("/")[2]}]
    if ua: headers.append({"name": "User-Agent", "value": ua})
    return {"startedDateTime": "2026-01-01T00:00:%02d.000Z" % count[0], "time": 1,
            "request": {"method": method, "url": url, "httpVersion": "HTTP/1.1", "headers": headers,
                        "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 0},
            "response": {"status": status, "statusText": "OK", "httpVersion": "HTTP/1.1",
                         "headers": [{"name": "Content-Type", "value": "text/plain"}], "cookies": [],
                         "content": {"size": len(body), "mimeType": "text/plain", "text": body},
                         "redirectURL": "", "headersSize": -1, "bodySize": len(body)},
            "cache": {}, "timings": {"send": 0, "wait": 1, "receive": 0}, "serverIPAddress": ip}
entries = [entry("http://q.test/item?id=123&t=1", "first\n", "10.99.0.1"),
           entry("http://q.test/item?id=999&t=2", "second\n", "10.99.0.1"),
           entry("http://q.test/again", "again 1\n", "10.99.0.1"),
           entry("http://q.test/again", "again 2\n", "10.99.0.1"),
           entry("https://s.test/secure", "secure\n", "10.99.0.2"),
           entry("http://ua.test/page", "for firefox\n", "10.99.0.3", ua="Firefox/1"),
           entry("http://q.test:8080/port", "port 8080\n", "10.99.0.1")]
json.dump({"log": {"version": "1.2", "creator": {"name": "test", "version": "1"}, "entries": entries}}, open(sys.argv[1], "w"))
PY
  "$BIN/mm-recording" from-har "$WORLD_TMP/crafted.har" "$1" >/dev/null
}

test_replay_serves_every_recorded_url_byte_identical_with_origins_stopped() {
  local dir=$WORLD_TMP/rp-basic ca=$WORLD_TMP/mmca/ca.pem
  local urls="http://a.test/index.html https://b.test/style.css https://www.b.test/app.js https://c.test/pixel.png?v=1 http://c.test/app.js?x=1"
  recording_shell "$dir" -- sh -c "for u in $urls; do curl -sf --cacert $ca --compressed -o /dev/null \$u || exit 1; done" ||
    fail "recording failed" || return 1
  origins_pause
  local out; out=$(replay_shell "$dir" -- sh -c "for u in $urls; do curl -s --cacert $ca --compressed -o \"$WORLD_TMP/got.\$(echo \$u | md5sum | cut -c1-8)\" -w '%{http_code} %{url_effective}\n' \$u; done" 2>&1)
  origins_resume
  local u f
  for u in $urls; do
    echo "$out" | grep -q "^200 $u$" || fail "replay of $u: $out" || return 1
    f=$(echo "$u" | sed 's|https\?://||; s|?.*||; s|^\([^/]*\)/|\1/|')
    local host=${f%%/*} path=${f#*/} o=${f:0:1}; [ "$host" = www.b.test ] && o=b
    cmp -s "$WORLD_TMP/got.$(echo "$u" | md5sum | cut -c1-8)" "$WORLD_TMP/web/$o/www/$host/$path" ||
      fail "body of $u differs from what was recorded" || return 1
  done
  echo "  5 URLs over 3 origins, HTTP and HTTPS, replayed with the origins stopped: status and bytes identical"
}

test_replay_matching_rules_closest_query_repeats_ports_user_agent_and_misses() {
  local dir=$WORLD_TMP/rp-crafted
  crafted_recording "$dir" || fail "could not build the crafted recording" || return 1
  # (Recorded without a User-Agent: curl sends none with -H User-Agent:.)
  local out; out=$(replay_shell "$dir" -- sh -c '
    c="curl -s -H User-Agent:"
    $c "http://q.test/item?id=123&t=7"; $c "http://q.test/item?id=999&t=0"
    $c http://q.test/again; $c http://q.test/again; $c http://q.test/again
    $c http://q.test:8080/port
    curl -s -A Firefox/1 http://ua.test/page; curl -s -o /dev/null -w "ua %{http_code}\n" -A Chrome/2 http://ua.test/page
    $c -w "miss %{http_code}\n" http://q.test/never' 2>"$WORLD_TMP/replay.err")
  local expected="first
second
again 1
again 2
again 2
port 8080
for firefox
ua 404"
  [ "$(echo "$out" | head -8)" = "$expected" ] || fail "got: $out" || return 1
  echo "$out" | grep -q "miss 404" && echo "$out" | grep -q "/never" || fail "the 404 does not explain: $out" || return 1
  grep -q "no recorded response for GET http://q.test/never; nearest: GET http://q.test/" "$WORLD_TMP/replay.err" ||
    fail "no log line for the miss: $(cat "$WORLD_TMP/replay.err")" || return 1
  out=$(replay_shell "$dir" --ignore-user-agent -- curl -s -A Chrome/2 http://ua.test/page)
  [ "$out" = "for firefox" ] || fail "--ignore-user-agent: $out" || return 1
  out=$(replay_shell "$dir" --repeats=first -- sh -c 'for i in 1 2 3; do curl -s -H User-Agent: http://q.test/again; done')
  [ "$(echo $out)" = "again 1 again 1 again 1" ] || fail "--repeats=first: $out" || return 1
  out=$(replay_shell "$dir" --repeats=last -- true 2>&1); local status=$?
  [ "$status" = 2 ] && echo "$out" | grep -q -- "--repeats takes in-order or first" || fail "--repeats=last: $status $out" || return 1
  echo "  closest query, recorded order then last (--repeats=first: the first each time), non-default port, User-Agent (and --ignore-user-agent), explained 404"
}

test_replay_unknown_name_fails_fast_and_nothing_leaks() {
  local dir=$WORLD_TMP/rp-crafted2
  crafted_recording "$dir" || return 1
  local out; out=$(replay_shell "$dir" -- sh -c '
    s=$(date +%s%N); getent hosts never.test; echo "getent $? $(( ($(date +%s%N) - s) / 1000000 ))"
    curl -s -m 3 -o /dev/null -w "server %{http_code}\n" http://10.77.0.2/ ; getent hosts q.test' 2>&1)
  echo "$out" | grep -q "^getent 2 " || fail "an unrecorded name resolved: $out" || return 1
  local ms; ms=$(echo "$out" | awk '/^getent/ { print $3 }')
  [ "$ms" -lt 1000 ] || fail "an unrecorded name took $ms ms to fail" || return 1
  echo "$out" | grep -q "server 000" || fail "the outside was reachable: $out" || return 1
  echo "$out" | grep -q "^10.99.0.1 *q.test" || fail "q.test: $out" || return 1
  echo "  unknown name fails in $ms ms; the world outside is unreachable; recorded names resolve"
}

test_replay_single_server() {
  local dir=$WORLD_TMP/rp-single
  crafted_recording "$dir" || return 1
  local out; out=$(replay_shell "$dir" --single-server -- sh -c 'getent hosts q.test ua.test s.test | awk "{print \"ip\", \$1}" | sort -u
    curl -s -H User-Agent: http://q.test/again; curl -s -A Firefox/1 http://ua.test/page' 2>&1)
  [ "$(echo "$out" | grep -c '^ip ')" = 1 ] || fail "names resolve to several addresses: $out" || return 1
  echo "$out" | grep -q "^again 1$" && echo "$out" | grep -q "^for firefox$" || fail "$out" || return 1
  echo "  every name resolves to $(echo "$out" | awk '/^ip/ { print $2 }'), which answers for every host"
}

test_replay_http2_negotiates_h2() {
  local dir=$WORLD_TMP/rp-h2
  crafted_recording "$dir" || return 1
  local out; out=$(replay_shell "$dir" --http2 -- curl -s -H User-Agent: --cacert "$WORLD_TMP/mmca/ca.pem" --http2 -w '\nhttp %{http_version}\n' https://s.test/secure 2>&1)
  echo "$out" | grep -q "^secure$" && echo "$out" | grep -q "^http 2$" || fail "$out" || return 1
  echo "  HTTPS replay over h2"
}

test_replay_recording_in_the_original_schema() {
  local dir=$WORLD_TMP/rp-original
  mkdir -p "$dir"
  protoc --encode=MahimahiProtobufs.RequestResponse -I "$top/tests/fixtures" "$top/tests/fixtures/original_http_record.proto" > "$dir/save.AbC123" <<'EOF2'
ip: "10.99.1.1"
port: 80
scheme: HTTP
request { first_line: "GET /old HTTP/1.1" header { key: "Host" value: "old.test" } header { key: "User-Agent" value: "curl/7.88.1" } }
response { first_line: "HTTP/1.1 200 OK" header { key: "Content-Type" value: "text/plain" } header { key: "Transfer-Encoding" value: "chunked" } body: "6\r\nold fo\r\n4\r\nrmat\r\n0\r\n\r\n" }
EOF2
  [ -s "$dir/save.AbC123" ] || fail "protoc could not encode the fixture" || return 1
  local out; out=$(replay_shell "$dir" -- curl -s -A curl/7.88.1 http://old.test/old 2>&1)
  [ "$out" = "old format" ] || fail "got '$out'" || return 1
  echo "  a file in the original's schema (chunked body) replays"
}

test_replay_nests_with_delay_and_link() {
  local dir=$WORLD_TMP/rp-nest
  crafted_recording "$dir" || return 1
  printf '1\n' > "$WORLD_TMP/one.trace"; chmod 644 "$WORLD_TMP/one.trace"
  local out; out=$(replay_shell "$dir" "$BIN/mm-delay" 50 "$BIN/mm-link" "$WORLD_TMP/one.trace" "$WORLD_TMP/one.trace" -- \
    curl -s -H User-Agent: -w '\n%{time_total}\n' http://q.test/again 2>&1)
  echo "$out" | grep -q "^again 1$" || fail "$out" || return 1
  local t; t=$(echo "$out" | tail -1)
  check_range "fetch time through 50 ms each way (s)" "$t" 0.2 1.5
}

test_replay_bad_input() {
  local out status
  out=$(replay_shell "$WORLD_TMP/no-such-dir" -- true 2>&1); status=$?
  [ "$status" != 0 ] && echo "$out" | grep -q "no-such-dir" || fail "missing DIR: $status '$out'" || return 1
  mkdir -p "$WORLD_TMP/rp-bad"; crafted_recording "$WORLD_TMP/rp-bad2" || return 1
  cp "$WORLD_TMP/rp-bad2"/* "$WORLD_TMP/rp-bad/"
  head -c 20 "$(ls "$WORLD_TMP"/rp-bad2/save.* | head -1)" > "$WORLD_TMP/rp-bad/save.trunc"
  echo "garbage" > "$WORLD_TMP/rp-bad/save.junk"
  out=$(replay_shell "$WORLD_TMP/rp-bad" -- curl -s -H User-Agent: http://q.test/again 2>&1); status=$?
  [ "$status" = 0 ] && echo "$out" | grep -q "save.trunc" && echo "$out" | grep -q "save.junk" && echo "$out" | grep -q "again 1" ||
    fail "corrupt files: status $status, '$out'" || return 1
  mkdir -p "$WORLD_TMP/rp-empty"; echo junk > "$WORLD_TMP/rp-empty/save.x"
  out=$(replay_shell "$WORLD_TMP/rp-empty" -- true 2>&1); status=$?
  [ "$status" != 0 ] && echo "$out" | grep -qi "no valid" || fail "nothing valid: $status '$out'" || return 1
  echo "  missing DIR, corrupt files skipped with warnings, nothing valid refused"
}

# The servers' TCP, in the replay's namespace only: as an ordinary user, reno (the host's default
# here is bbr) on the very socket that sends a download, slow start after idle off; the host's
# settings untouched; a name the kernel has not, one it does not allow, and malformed words refused.
test_replay_server_tcp_congestion_control_and_slow_start_after_idle() {
  local dir=$WORLD_TMP/rp-tcp home=$WORLD_TMP/rp-tcp-home out status
  big_recording "$dir" 4000000 || return 1
  mkdir -p "$home" && chown -R "$TEST_USER" "$dir" "$home"
  local host_cc host_ssai; host_cc=$(cat /proc/sys/net/ipv4/tcp_congestion_control); host_ssai=$(cat /proc/sys/net/ipv4/tcp_slow_start_after_idle)
  # One the kernel allows in a namespace other than the host's default (here reno; bbr is the default).
  local other; other=$(for cc in $(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control); do
    [ "$cc" = "$host_cc" ] || echo "$cc"; done | head -1)
  [ -n "$other" ] || other=$host_cc
  out=$(AS_USER=$TEST_USER in_world env HOME="$home" "$BIN/mm-replay" "$dir" --server-congestion-control=$other \
    --server-slow-start-after-idle=off -- sh -c '
      cat /proc/sys/net/ipv4/tcp_congestion_control /proc/sys/net/ipv4/tcp_slow_start_after_idle
      curl -s -H User-Agent: --limit-rate 100k -o /dev/null http://big.test/big0 & pid=$!
      for i in $(seq 200); do
        line=$(ss -tinH state established "( sport = :80 )" | tr "\n" " ")
        [ -n "$line" ] && break; sleep 0.05
      done
      echo "server socket: $line"; kill $pid 2>/dev/null; true' 2>&1); status=$?
  [ "$status" = 0 ] || fail "status $status: $out" || return 1
  [ "$(echo "$out" | sed -n 1p)" = "$other" ] && [ "$(echo "$out" | sed -n 2p)" = 0 ] ||
    fail "the namespace's sysctls: $out" || return 1
  echo "$out" | grep "^server socket:" | grep -qw "$other" || fail "the sending socket's congestion control: $out" || return 1
  [ "$(cat /proc/sys/net/ipv4/tcp_congestion_control)" = "$host_cc" ] &&
    [ "$(cat /proc/sys/net/ipv4/tcp_slow_start_after_idle)" = "$host_ssai" ] || fail "the host's settings changed" || return 1
  out=$(replay_shell "$dir" --server-congestion-control=nosuchcc -- true 2>&1); status=$?
  [ "$status" != 0 ] && echo "$out" | grep -q "no congestion control of that name.*choose one" || fail "unknown name: $status '$out'" || return 1
  local refused; refused=$(for cc in $(cat /proc/sys/net/ipv4/tcp_available_congestion_control); do
    grep -qw "$cc" /proc/sys/net/ipv4/tcp_allowed_congestion_control || echo "$cc"; done | head -1)
  if [ -n "$refused" ]; then
    out=$(replay_shell "$dir" --server-congestion-control="$refused" -- true 2>&1); status=$?
    [ "$status" != 0 ] && echo "$out" | grep -q "allows only these in a namespace" || fail "$refused: $status '$out'" || return 1
  fi
  out=$(replay_shell "$dir" --server-congestion-control='Bad!' -- true 2>&1); status=$?
  [ "$status" = 2 ] && echo "$out" | grep -q "needs a congestion control's name" || fail "malformed: $status '$out'" || return 1
  out=$(replay_shell "$dir" --server-slow-start-after-idle=maybe -- true 2>&1); status=$?
  [ "$status" = 2 ] && echo "$out" | grep -q "takes on or off" || fail "on/off: $status '$out'" || return 1
  echo "  the servers' socket sends with $other; slow start after idle off; ${refused:-(every available one allowed)} refused with the allowed list"
}

# --server-initial-window reaches the servers' connections to a command behind a shell inside the
# replay (the shell's peer route copies the window of the replay's default route): 60 kB over a
# 200 ms round trip arrive in one flight with 64 segments, in four with 4 (4+8+16+14), as an
# ordinary user; the world's routes untouched; out-of-range windows refused.
test_replay_server_initial_window_reaches_connections_through_nested_shells() {
  local dir=$WORLD_TMP/rp-iw home=$WORLD_TMP/rp-iw-home out status routes_before
  big_recording "$dir" 60000 || return 1
  mkdir -p "$home" && chown -R "$TEST_USER" "$dir" "$home"
  routes_before=$(in_world ip route)
  local transfer4 transfer64
  for iw in 4 64; do
    out=$(AS_USER=$TEST_USER in_world env HOME="$home" "$BIN/mm-replay" "$dir" --server-initial-window=$iw \
      "$BIN/mm-delay" 100 -- curl -s -H User-Agent: -o /dev/null -w '%{time_starttransfer} %{time_total}\n' \
      http://big.test/big0 2>&1); status=$?
    [ "$status" = 0 ] || fail "initial window $iw: status $status: $out" || return 1
    set -- $out
    eval "transfer$iw=\$(awk -v a=\"\$1\" -v b=\"\$2\" 'BEGIN { printf \"%d\", (b - a) * 1000 }')"
  done
  check_range "after the first byte, 60 kB with 4 segments (ms; three more round trips of 200)" "$transfer4" 400 2000 || return 1
  check_range "after the first byte, 60 kB with 64 segments (ms)" "$transfer64" 0 150 || return 1
  [ "$(in_world ip route)" = "$routes_before" ] || fail "the world's routes changed" || return 1
  for bad in 0 1025 ten; do
    out=$(replay_shell "$dir" --server-initial-window=$bad -- true 2>&1); status=$?
    [ "$status" = 2 ] && echo "$out" | grep -q "server-initial-window" || fail "$bad: $status '$out'" || return 1
  done
}

test_replay_chromium_loads_the_recorded_page() {
  local home=$WORLD_TMP/chome2; local dir=$home/rec
  mkdir -p "$home"; chown "$TEST_USER" "$home"
  AS_USER=$TEST_USER in_world env HOME="$home" MAHIMAHI_CA_DIR="$home/ca" "$BIN/mm-ca" trust >/dev/null || return 1
  local chrome="timeout 60 chromium --headless=new --no-sandbox --disable-gpu --no-first-run --disable-http-cache"
  AS_USER=$TEST_USER in_world env HOME="$home" MAHIMAHI_CA_DIR="$home/ca" SSL_CERT_FILE="$ORIGIN_CA" \
    "$BIN/mm-record" "$dir" -- $chrome --user-data-dir="$home/p1" --dump-dom http://a.test/index.html >/dev/null 2>&1 ||
    fail "recording with chromium failed" || return 1
  origins_pause
  AS_USER=$TEST_USER in_world env HOME="$home" MAHIMAHI_CA_DIR="$home/ca" "$BIN/mm-replay" "$dir" --verbose -- \
    $chrome --user-data-dir="$home/p2" --dump-dom http://a.test/index.html > "$home/dom.html" 2>"$home/err"
  origins_resume
  grep -q "<title>a.test (app) (plain)</title>" "$home/dom.html" || fail "scripts from 3 origins did not run: $(grep -v '^\[' "$home/err" | tail -5)" || return 1
  # Every request of the page found; the browser's own /favicon.ico, which it asks for after the
  # load and so only sometimes before --dump-dom exits, may have gone unrecorded.
  ! grep "no recorded response" "$home/err" | grep -qv "GET http://a.test/favicon.ico;" ||
    fail "requests missed: $(grep 'no recorded response' "$home/err" | head -3)" || return 1
  echo "  chromium (CA trusted through NSS) loads the recorded 3-origin page from the replay, every request found"
}

# A page whose script asks for images at paths made from Math.random, the clock and crypto's
# random values, served with a Content-Security-Policy that allows no inline script.
random_page() {  # DIR
  cat > "$1/random.html" <<'EOF'
<!doctype html>
<html><head><meta charset="utf-8"><title>random</title></head>
<body><p>random URLs</p><script src="/random.js"></script></body></html>
EOF
  cat > "$1/random.js" <<'EOF'
var urls = ['/r/random-' + Math.random() + '.png', '/r/now-' + Date.now() + '.png',
  '/r/date-' + encodeURIComponent(new Date().toISOString()) + '.png',
  '/r/bytes-' + crypto.getRandomValues(new Uint32Array(2)).join('-') + '.png',
  '/r/uuid-' + crypto.randomUUID() + '.png'];
var left = urls.length, loaded = 0;
urls.forEach(function (u) {
  var image = new Image();
  image.onload = function () { loaded++; end(); };
  image.onerror = end;
  image.src = u;
});
function end() { if (--left === 0) document.title = 'random ' + loaded + '/' + urls.length; }
EOF
  chmod a+r "$1/random.html" "$1/random.js"
}

test_replay_deterministic_pages_ask_for_the_recorded_random_urls_in_chromium() {
  local home=$WORLD_TMP/chome-det; local dir=$home/rec
  origins_create || return 1
  random_page "$WORLD_TMP/web/a/www/a.test"
  mkdir -p "$home"; chown "$TEST_USER" "$home"
  AS_USER=$TEST_USER in_world env HOME="$home" MAHIMAHI_CA_DIR="$home/ca" "$BIN/mm-ca" trust >/dev/null || return 1
  local chrome="timeout 60 chromium --headless=new --no-sandbox --disable-gpu --no-first-run --disable-http-cache"
  # https: crypto.randomUUID needs a secure context.
  AS_USER=$TEST_USER in_world env HOME="$home" MAHIMAHI_CA_DIR="$home/ca" SSL_CERT_FILE="$ORIGIN_CA" \
    "$BIN/mm-record" "$dir" --deterministic -- $chrome --user-data-dir="$home/p1" --dump-dom https://a.test/random.html \
    > "$home/record.html" 2>"$home/record.err" || fail "recording failed: $(tail -3 "$home/record.err")" || return 1
  # The browser ran the script (the page's policy amended with its hash, or it would not have).
  grep -q "<title>random 5/5</title>" "$home/record.html" || fail "recorded load: $(grep -o '<title>.*</title>' "$home/record.html")" || return 1
  # The recording holds the page as the server sent it.
  "$BIN/mm-recording" show --decode "$dir" 2>/dev/null | grep -q "Math.random=random" &&
    fail "the recording holds the changed page" && return 1
  "$BIN/mm-recording" ls --wide "$dir" | grep -q '/r/uuid-[0-9a-f-]*.png' || fail "no uuid request recorded: $("$BIN/mm-recording" ls --wide "$dir")" || return 1
  origins_pause
  local mode flag
  for mode in deterministic plain; do
    flag=--deterministic; [ "$mode" = plain ] && flag=--verbose
    AS_USER=$TEST_USER in_world env HOME="$home" MAHIMAHI_CA_DIR="$home/ca" "$BIN/mm-replay" "$dir" $flag -- \
      $chrome --user-data-dir="$home/p-$mode" --dump-dom https://a.test/random.html > "$home/$mode.html" 2>"$home/$mode.err"
  done
  origins_resume
  grep -q "<title>random 5/5</title>" "$home/deterministic.html" ||
    fail "replayed with --deterministic: $(grep -o '<title>.*</title>' "$home/deterministic.html"); $(grep 'no recorded response' "$home/deterministic.err" | head -3)" || return 1
  ! grep "no recorded response" "$home/deterministic.err" | grep -qv "favicon.ico;" ||
    fail "requests missed with --deterministic: $(grep 'no recorded response' "$home/deterministic.err" | head -3)" || return 1
  # Without it the page asks for other paths: every one of the five is missed.
  local missed; missed=$(grep -c "no recorded response.*GET https://a.test/r/" "$home/plain.err")
  [ "$missed" = 5 ] || fail "without --deterministic $missed of 5 random URLs missed: $(grep -o '<title>.*</title>' "$home/plain.html")" || return 1
  echo "  5 URLs from Math.random, Date and crypto: with --deterministic recorded and replayed, all found (CSP amended); without it 5 missed"
}

# ---- Loading a recording without root (the ferry parses it; the supervisor only adds addresses)

# One pair whose response body is SIZE bytes, written as the protobuf wire format by hand (no
# Python protobuf module needed), the body streamed to the file.
big_recording() {  # DIR SIZE [FILES]
  /usr/bin/python3 - "$1" "$2" "${3:-1}" <<'PY'
import os, sys
d, size, files = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7f; n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n: return bytes(out)
def field(number, data): return varint(number << 3 | 2) + varint(len(data)) + data
def header(k, v): return field(2, field(1, k) + field(2, v))
os.makedirs(d, exist_ok=True)
for i in range(files):
    request = field(1, b"GET /big%d HTTP/1.1" % i) + header(b"Host", b"big.test")
    head = field(1, b"HTTP/1.1 200 OK") + header(b"Content-Type", b"application/octet-stream") + \
           header(b"Content-Length", b"%d" % size)
    body_tag = varint(3 << 3 | 2) + varint(size)
    response_length = len(head) + len(body_tag) + size
    with open(os.path.join(d, "save.big%d" % i), "wb") as f:
        f.write(field(1, b"10.99.2.1") + varint(2 << 3) + varint(80) + varint(3 << 3) + varint(1) + field(4, request))
        f.write(varint(5 << 3 | 2) + varint(response_length) + head + body_tag)
        chunk = b"x" * (1 << 20)
        left = size
        while left:
            n = min(left, len(chunk)); f.write(chunk[:n]); left -= n
PY
}

# The pid of the shell's supervisor (saved uid 0) among the mm-replay processes of DIR, and of
# the others (the ferry and its children): "supervisor PID" / "other PID" lines.
replay_processes() {  # DIR
  local pid
  for pid in $(pgrep -f -- "bin/mm-replay $1 "); do
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = mm-replay ] || continue
    if awk '/^Uid:/ { exit !($4 == 0) }' "/proc/$pid/status" 2>/dev/null; then echo "supervisor $pid"; else echo "other $pid"; fi
  done
}

status_field() { awk -v f="$2:" '$1 == f { $1 = ""; print substr($0, 2) }' "/proc/$1/status" 2>/dev/null; }  # PID FIELD

# The user's home for these tests (the CA of the replay servers is created there).
replay_user_home() {
  local home=$WORLD_TMP/rp-home
  mkdir -p "$home"; chown "$TEST_USER" "$home"; echo "$home"
}

test_replay_recording_is_parsed_without_root_and_never_in_the_supervisor() {
  local dir=$WORLD_TMP/rp-big size=$((300 * 1024 * 1024)) home; home=$(replay_user_home)
  big_recording "$dir" "$size" && chown -R "$TEST_USER" "$dir" || fail "could not write the recording" || return 1
  local uid gid; uid=$(id -u "$TEST_USER"); gid=$(id -g "$TEST_USER")
  rm -f "$home/pid" "$home/go"
  AS_USER=$TEST_USER in_world env HOME="$home" MAHIMAHI_CA_DIR="$home/ca" "$BIN/mm-replay" "$dir" -- sh -c "
    echo \$(cut -d' ' -f4 /proc/\$PPID/stat) \$PPID > $home/pid  # the supervisor, the guard
    while [ ! -e $home/go ]; do sleep 0.05; done
    curl -s -H User-Agent: -o /dev/null -w '%{http_code} %{size_download}\n' http://big.test/big0" > "$home/out" 2> "$home/err" &
  local shell=$! deadline=$((SECONDS + 60)) loading= pid kind rss
  # During the load: the process whose memory grows with the recording is not the supervisor.
  while [ ! -s "$home/pid" ] && [ $SECONDS -lt $deadline ]; do
    while read -r kind pid; do
      rss=$(status_field "$pid" VmRSS | awk '{ print $1 }')
      if [ "$kind" = other ] && [ "${rss:-0}" -gt 102400 ] && [ -z "$loading" ]; then
        loading="pid $pid, $((rss / 1024)) MB resident: Uid $(status_field "$pid" Uid | tr -s '\t ' ' '), Gid $(status_field "$pid" Gid | tr -s '\t ' ' '), CapPrm $(status_field "$pid" CapPrm), CapEff $(status_field "$pid" CapEff)"
      fi
    done < <(replay_processes "$dir")
  done
  [ -s "$home/pid" ] || { touch "$home/go"; kill "$shell"; wait "$shell"; fail "the replay did not start within 60 s: $(cat "$home/err")"; return 1; }
  local supervisor guard ferry; read -r supervisor guard < "$home/pid"
  ferry=$(replay_processes "$dir" | awk -v s="$supervisor" -v g="$guard" '$1 == "other" && $2 != s && $2 != g { print $2 }' |
          while read -r p; do [ "$(awk '/^PPid:/ { print $2 }' "/proc/$p/status")" = "$supervisor" ] && echo "$p"; done | head -1)
  local hwm; hwm=$(status_field "$supervisor" VmHWM | awk '{ print $1 }')
  local sup_uid; sup_uid=$(status_field "$supervisor" Uid | tr -s '\t ' ' ')
  local f_uid f_gid f_prm f_eff f_rss
  f_uid=$(status_field "$ferry" Uid | tr -s '\t ' ' '); f_gid=$(status_field "$ferry" Gid | tr -s '\t ' ' ')
  f_prm=$(status_field "$ferry" CapPrm); f_eff=$(status_field "$ferry" CapEff); f_rss=$(status_field "$ferry" VmRSS | awk '{ print $1 }')
  touch "$home/go"
  wait "$shell"; local status=$?
  [ "$status" = 0 ] && grep -q "^200 $size$" "$home/out" || fail "status $status, '$(cat "$home/out")', $(tail -3 "$home/err")" || return 1
  [ -n "$loading" ] || fail "never saw the loading process grow" || return 1
  echo "$loading" | grep -q "Uid $uid $uid $uid $uid, Gid $gid $gid $gid $gid, CapPrm 0000000000000000, CapEff 0000000000000000" ||
    fail "while loading: $loading (user $uid:$gid)" || return 1
  [ "$f_uid" = "$uid $uid $uid $uid" ] && [ "$f_gid" = "$gid $gid $gid $gid" ] && [ "$f_prm" = 0000000000000000 ] && [ "$f_eff" = 0000000000000000 ] ||
    fail "the ferry ($ferry) holding the index: Uid $f_uid Gid $f_gid CapPrm $f_prm CapEff $f_eff" || return 1
  [ "$(echo "$sup_uid" | cut -d' ' -f3)" = 0 ] || fail "supervisor $supervisor: Uid $sup_uid" || return 1
  [ "$hwm" -lt $((size / 1024 / 10)) ] || fail "the supervisor's peak RSS is $hwm kB for a $((size >> 20)) MB recording" || return 1
  echo "  while loading: $loading"
  echo "  ferry holding the index: $((f_rss / 1024)) MB resident, Uid $f_uid, Gid $f_gid, CapPrm/CapEff 0"
  echo "  supervisor (Uid $sup_uid): peak RSS (VmHWM) $((hwm / 1024)) MB for a $((size >> 20)) MB recording; the body served whole"
}

test_replay_fifo_and_symlink_in_the_recording_do_not_hang() {
  local dir=$WORLD_TMP/rp-fifo home; home=$(replay_user_home)
  crafted_recording "$dir" || return 1
  chown -R "$TEST_USER" "$dir"
  mkfifo "$dir/save.fifo"; chmod 666 "$dir/save.fifo"
  ln -s /etc/shadow "$dir/save.shadow"
  ln -s "$(ls "$dir"/save.* | head -1)" "$dir/save.link"
  local start=$SECONDS out status
  out=$(AS_USER=$TEST_USER in_world timeout 30 env HOME="$home" MAHIMAHI_CA_DIR="$home/ca" "$BIN/mm-replay" "$dir" -- \
    curl -s -H User-Agent: http://q.test/again 2>&1); status=$?
  local took=$((SECONDS - start))
  [ "$status" = 0 ] && echo "$out" | grep -q "^again 1$" || fail "status $status (124: it hung): $out" || return 1
  echo "$out" | grep -q "warning: cannot read recording file $dir/save.fifo: a FIFO (named pipe), not a regular file; skipped" ||
    fail "no warning for the FIFO: $out" || return 1
  echo "$out" | grep -q "save.shadow: a symbolic link, not a regular file; skipped" && echo "$out" | grep -q "save.link: a symbolic link" ||
    fail "no warning for the symbolic links: $out" || return 1
  [ "$took" -le 10 ] || fail "took $took s" || return 1
  # Nothing but a FIFO: refused at once.
  local only=$WORLD_TMP/rp-fifo-only; mkdir -p "$only"; mkfifo "$only/save.fifo"; chmod 666 "$only/save.fifo"
  start=$SECONDS
  out=$(AS_USER=$TEST_USER in_world timeout 30 env HOME="$home" MAHIMAHI_CA_DIR="$home/ca" "$BIN/mm-replay" "$only" -- true 2>&1); status=$?
  [ "$status" = 1 ] && echo "$out" | grep -q "holds no valid recorded pair" && echo "$out" | grep -q "FIFO" ||
    fail "a recording of only a FIFO: status $status: $out" || return 1
  echo "  FIFO and symbolic links (one to /etc/shadow) skipped with a warning each, replay in $took s; only a FIFO: refused in $((SECONDS - start)) s"
}

test_replay_more_than_1024_addresses_refused_before_any_is_added() {
  local dir=$WORLD_TMP/rp-many home; home=$(replay_user_home)
  /usr/bin/python3 - "$WORLD_TMP/many.har" <<'PY'
import json, sys
entries = []
for i in range(1025):
    ip = "10.98.%d.%d" % (i // 250, i % 250 + 1)
    entries.append({"startedDateTime": "2026-01-01T00:00:00.000Z", "time": 1,
        "request": {"method": "GET", "url": "http://h%d.test/" % i, "httpVersion": "HTTP/1.1",
                    "headers": [{"name": "Host", "value": "h%d.test" % i}], "queryString": [], "cookies": [],
                    "headersSize": -1, "bodySize": 0},
        "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1", "headers": [], "cookies": [],
                     "content": {"size": 3, "mimeType": "text/plain", "text": "%d\n" % i},
                     "redirectURL": "", "headersSize": -1, "bodySize": 3},
        "cache": {}, "timings": {"send": 0, "wait": 1, "receive": 0}, "serverIPAddress": ip})
json.dump({"log": {"version": "1.2", "creator": {"name": "test", "version": "1"}, "entries": entries}}, open(sys.argv[1], "w"))
PY
  "$BIN/mm-recording" from-har "$WORLD_TMP/many.har" "$dir" >/dev/null 2>&1 || fail "from-har failed" || return 1
  chown -R "$TEST_USER" "$dir"
  local start; start=$(date +%s%N)
  local out status
  out=$(AS_USER=$TEST_USER in_world env HOME="$home" MAHIMAHI_CA_DIR="$home/ca" "$BIN/mm-replay" "$dir" -- echo started 2>&1); status=$?
  local ms=$((($(date +%s%N) - start) / 1000000))
  [ "$status" = 1 ] && ! echo "$out" | grep -q started || fail "status $status: $out" || return 1
  echo "$out" | grep -q "^mm-replay: too many addresses for the replay: 1026 (the recorded servers' and the resolvers'; at most 1024); replay with --single-server" ||
    fail "message: $out" || return 1
  [ "$(echo "$out" | wc -l)" = 1 ] || fail "more than one line: $out" || return 1
  [ "$ms" -lt 5000 ] || fail "refusing took $ms ms" || return 1
  echo "  1025 servers (+ the resolver) refused in $ms ms: $out"
  out=$(AS_USER=$TEST_USER in_world env HOME="$home" MAHIMAHI_CA_DIR="$home/ca" "$BIN/mm-replay" "$dir" --single-server -- \
    curl -s -H User-Agent: http://h1024.test/ 2>&1); status=$?
  [ "$status" = 0 ] && [ "$out" = 1024 ] || fail "--single-server: status $status: $out" || return 1
  echo "  the same recording with --single-server replays"
}

test_replay_sigterm_while_loading_ends_promptly() {
  local dir=$WORLD_TMP/rp-big-term home; home=$(replay_user_home)
  big_recording "$dir" $((300 * 1024 * 1024)) 4 && chown -R "$TEST_USER" "$dir" || fail "could not write the recording" || return 1
  AS_USER=$TEST_USER in_world env HOME="$home" MAHIMAHI_CA_DIR="$home/ca" "$BIN/mm-replay" "$dir" -- echo started \
    > "$home/term.out" 2> "$home/term.err" &
  local shell=$! deadline=$((SECONDS + 60)) supervisor= loading= kind pid rss
  while [ -z "$loading" ] && [ $SECONDS -lt $deadline ]; do
    while read -r kind pid; do
      [ "$kind" = supervisor ] && supervisor=$pid
      rss=$(status_field "$pid" VmRSS | awk '{ print $1 }')
      [ "$kind" = other ] && [ "${rss:-0}" -gt 51200 ] && loading=$pid
    done < <(replay_processes "$dir")
  done
  [ -n "$loading" ] && [ -n "$supervisor" ] || { wait "$shell"; fail "never saw the load: $(cat "$home/term.err")"; return 1; }
  local start; start=$(date +%s%N)
  kill -TERM "$supervisor"
  wait "$shell"; local status=$?
  local ms=$((($(date +%s%N) - start) / 1000000))
  [ "$status" = 143 ] || fail "status $status: $(cat "$home/term.out" "$home/term.err")" || return 1
  [ ! -s "$home/term.out" ] || fail "the command ran: $(cat "$home/term.out")" || return 1
  grep -q "^mm-replay: start interrupted by SIGTERM" "$home/term.err" && [ "$(wc -l < "$home/term.err")" = 1 ] ||
    fail "messages: $(cat "$home/term.err")" || return 1
  [ "$ms" -lt 2000 ] || fail "took $ms ms to end" || return 1
  [ -z "$(replay_processes "$dir")" ] || fail "left running: $(replay_processes "$dir")" || return 1
  echo "  SIGTERM during the load of a 1200 MB recording: status 143 in $ms ms, $(cat "$home/term.err")"
}

# ----- Replay's daemons (src/replay: Apache per recorded IP:port, dnsmasq, the guardian), for
# what unit tests cannot see: the real daemons' behaviour. (Formerly the manual
# tests/tools/replay_servers_check.sh.)


# A recording for the daemons: an encoded slash, recorded Server and Date headers, an HTTPS
# origin reached by its address, a name recorded at two addresses.
daemons_recording() {  # DIR
  /usr/bin/python3 - "$WORLD_TMP/daemons.har" <<'PY'
import json, sys
def entry(url, body, ip, headers=()):
    response_headers = [{"name": "Content-Type", "value": "text/plain"}] + [{"name": k, "value": v} for k, v in headers]
    return {"startedDateTime": "2026-01-01T00:00:00.000Z", "time": 1,
            "request": {"method": "GET", "url": url, "httpVersion": "HTTP/1.1",
                        "headers": [{"name": "Host", "value": url.split("/")[2]}],
                        "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 0},
            "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1", "headers": response_headers,
                         "cookies": [], "content": {"size": len(body), "mimeType": "text/plain", "text": body},
                         "redirectURL": "", "headersSize": -1, "bodySize": len(body)},
            "cache": {}, "timings": {"send": 0, "wait": 1, "receive": 0}, "serverIPAddress": ip}
entries = [entry("http://e.test/a%2Fb/c?q=1", "encoded\n", "10.98.0.1",
                 [("Server", "RecordedServer/1.0"), ("Date", "Tue, 01 Jan 2019 00:00:00 GMT")])]
entries += [entry("http://e.test/k%d" % i, "k%d\n" % i, "10.98.0.1") for i in (1, 2, 3)]
entries += [entry("https://10.98.0.2/by-ip", "by ip\n", "10.98.0.2"), entry("https://t.test/h1", "h1\n", "10.98.0.2"),
            entry("http://two.test/", "one\n", "10.98.0.1"), entry("http://two.test/", "two\n", "10.98.0.3")]
json.dump({"log": {"version": "1.2", "creator": {"name": "test", "version": "1"}, "entries": entries}}, open(sys.argv[1], "w"))
PY
  "$BIN/mm-recording" from-har "$WORLD_TMP/daemons.har" "$1" >/dev/null
}

test_replay_servers_apache_and_dnsmasq_serve_as_recorded() {
  local dir=$WORLD_TMP/rp-daemons ca=$WORLD_TMP/mmca/ca.pem
  daemons_recording "$dir" || fail "could not build the recording" || return 1
  # (Recorded without a User-Agent: curl sends none with -H User-Agent:.)
  local out; out=$(replay_shell "$dir" -- sh -c "
    c='curl -s -H User-Agent:'
    \$c -i 'http://e.test/a%2Fb/c?q=1' | tr -d '\r'
    echo connects \$(\$c -w '%{num_connects} ' -o /dev/null http://e.test/k1 -o /dev/null http://e.test/k2 -o /dev/null http://e.test/k3)
    \$c --cacert $ca https://10.98.0.2/by-ip
    \$c --cacert $ca --http2 -w 'version %{http_version}\n' https://t.test/h1
    getent ahostsv4 two.test | awk '/STREAM/ { print \"two\", \$1 }' | sort" 2>&1)
  echo "$out" | grep -q '^HTTP/1.1 200 ' && echo "$out" | grep -q '^encoded$' ||
    fail "an encoded slash (%2F) was not forwarded as recorded: $out" || return 1
  echo "$out" | grep -q '^Server: RecordedServer/1.0$' && echo "$out" | grep -q '^Date: Tue, 01 Jan 2019 00:00:00 GMT$' ||
    fail "the recorded Server and Date headers were not kept: $out" || return 1
  echo "$out" | grep -q '^Content-Length: 8$' && ! echo "$out" | grep -qi '^Transfer-Encoding' ||
    fail "the matcher's Content-Length was not kept: $out" || return 1
  echo "$out" | grep -q '^connects 1 0 0$' || fail "3 requests did not share 1 kept-alive connection: $out" || return 1
  echo "$out" | grep -q '^by ip$' || fail "HTTPS by address (the address in the certificate): $out" || return 1
  echo "$out" | grep -q '^h1$' && echo "$out" | grep -q '^version 1.1$' || fail "HTTP/2 where not asked: $out" || return 1
  [ "$(echo "$out" | grep '^two ' | tr '\n' ' ')" = "two 10.98.0.1 two 10.98.0.3 " ] ||
    fail "a name recorded at two addresses: $out" || return 1
  echo "  %2F forwarded, recorded Server/Date and Content-Length kept, keep-alive, HTTPS by address, no h2 unasked, 2 addresses"
}

test_replay_servers_killed_replay_leaves_no_daemon() {
  local dir=$WORLD_TMP/rp-killed
  daemons_recording "$dir" || fail "could not build the recording" || return 1
  replay_shell "$dir" -- sleep 60 > /dev/null 2>&1 &
  local shell=$! apache="" _
  for _ in $(seq 100); do
    apache=$(pgrep -o -f 'mm-replay\.[A-Za-z0-9]{6}/apache-.*-DFOREGROUND')
    [ -n "$apache" ] && break
    sleep 0.1
  done
  [ -n "$apache" ] || { kill "$shell"; wait "$shell"; fail "the replay's Apache did not start"; return 1; }
  local ferry work
  ferry=$(ps -o ppid= -p "$apache" | tr -d ' ')
  while [ "$(cat "/proc/$ferry/comm" 2>/dev/null)" = apache2 ]; do ferry=$(ps -o ppid= -p "$ferry" | tr -d ' '); done
  [ "$(cat "/proc/$ferry/comm" 2>/dev/null)" = mm-replay ] ||
    { kill "$shell"; wait "$shell"; fail "the Apache's parent $ferry is not mm-replay"; return 1; }
  work=$(tr '\0' ' ' < "/proc/$apache/cmdline" | sed 's|.* -f \(/[^ ]*\)/apache-[^ ]*.*|\1|')
  kill -9 "$ferry"  # the process that started the daemons: no chance to stop them itself
  wait "$shell" 2>/dev/null
  local left=""
  for _ in $(seq 50); do
    left=$(pgrep -a -f 'mm-replay\.[A-Za-z0-9]{6}/' || true)
    [ -z "$left" ] && break
    sleep 0.1
  done
  [ -z "$left" ] || fail "daemons outlived the SIGKILLed replay: $left" || return 1
  # Its work directory too: the guardian removes it, as the dead process cannot.
  wait_until 5 test ! -e "$work" || { rm -rf "$work"; fail "the work directory $work was left"; return 1; }
  echo "  the replay's process SIGKILLed: the guardian stopped every daemon and removed $work"
}

# ----- Range requests (issue 11): a full recorded 200 answers ranges as a server would; recorded
# 206 responses answer the ranges they hold.

test_replay_range_requests_get_206_416_and_recorded_slices() {
  local dir=$WORLD_TMP/rp-range ca=$WORLD_TMP/mmca/ca.pem web=$WORLD_TMP/web
  # Recorded: style.css whole; app.js only as two ranges (206 from nginx); b.test/app.js gzip.
  # (-S: a failing curl says why.)
  recording_shell "$dir" -- sh -c "curl -sSf -o /dev/null http://a.test/style.css &&
    curl -sSf -o /dev/null -r 0-99 http://c.test/app.js && curl -sSf -o /dev/null -r 100-299 http://c.test/app.js &&
    curl -sSf -o /dev/null --cacert $ca --compressed https://b.test/app.js" || fail "recording failed" || return 1
  local css=$web/a/www/a.test/style.css js=$web/c/www/c.test/app.js
  local len; len=$(stat -c %s "$css")
  origins_pause
  local out; out=$(replay_shell "$dir" -- sh -c "
    curl -s -o $WORLD_TMP/range.mid -D $WORLD_TMP/range.mid.h -w 'mid %{http_code}\n' -r 10-19 http://a.test/style.css
    curl -s -o $WORLD_TMP/range.tail -w 'tail %{http_code}\n' -r -5 http://a.test/style.css
    curl -s -o /dev/null -D $WORLD_TMP/range.416.h -w 'beyond %{http_code}\n' -r 1000000- http://a.test/style.css
    curl -s -o $WORLD_TMP/range.multi -w 'multi %{http_code}\n' -r 0-1,5-6 http://a.test/style.css
    curl -s -o $WORLD_TMP/range.rec -w 'recorded %{http_code}\n' -r 0-99 http://c.test/app.js
    curl -s -o $WORLD_TMP/range.inside -w 'inside %{http_code}\n' -r 150-199 http://c.test/app.js
    curl -s -o $WORLD_TMP/range.across -w 'across %{http_code}\n' -r 50-149 http://c.test/app.js
    curl -s -o $WORLD_TMP/range.gz -D $WORLD_TMP/range.gz.h -w 'gzip %{http_code}\n' --cacert $ca -H 'Accept-Encoding: gzip' -r 0-9 https://b.test/app.js
    head -c 100 $css > $WORLD_TMP/range.resumed
    curl -s -C - -o $WORLD_TMP/range.resumed -w 'resumed %{http_code}\n' http://a.test/style.css" 2>"$WORLD_TMP/range.err")
  origins_resume
  local expected="mid 206
tail 206
beyond 416
multi 200
recorded 206
inside 206
across 404
gzip 206
resumed 206"
  [ "$out" = "$expected" ] || fail "statuses: $(echo $out) (want $(echo $expected)); $(tail -3 "$WORLD_TMP/range.err")" || return 1
  cmp -s "$WORLD_TMP/range.mid" <(tail -c +11 "$css" | head -c 10) || fail "bytes 10-19 differ" || return 1
  tr -d '\r' < "$WORLD_TMP/range.mid.h" | grep -qx "Content-Range: bytes 10-19/$len" ||
    fail "Content-Range: $(cat "$WORLD_TMP/range.mid.h")" || return 1
  cmp -s "$WORLD_TMP/range.tail" <(tail -c 5 "$css") || fail "the last 5 bytes differ" || return 1
  tr -d '\r' < "$WORLD_TMP/range.416.h" | grep -qx "Content-Range: bytes \*/$len" ||
    fail "416 without Content-Range: $(cat "$WORLD_TMP/range.416.h")" || return 1
  cmp -s "$WORLD_TMP/range.multi" "$css" || fail "two ranges: not the whole body" || return 1
  cmp -s "$WORLD_TMP/range.rec" <(head -c 100 "$js") || fail "the recorded range 0-99 differs" || return 1
  cmp -s "$WORLD_TMP/range.inside" <(tail -c +151 "$js" | head -c 50) || fail "bytes 150-199 cut from 100-299 differ" || return 1
  grep -q "bytes 0-99/" "$WORLD_TMP/range.across" && grep -q "range bytes=50-149 of GET http://c.test/app.js" "$WORLD_TMP/range.err" ||
    fail "a range across recorded slices: $(cat "$WORLD_TMP/range.across") $(cat "$WORLD_TMP/range.err")" || return 1
  [ "$(head -c 2 "$WORLD_TMP/range.gz" | od -An -tx1 | tr -d ' ')" = 1f8b ] && [ "$(stat -c %s "$WORLD_TMP/range.gz")" = 10 ] &&
    tr -d '\r' < "$WORLD_TMP/range.gz.h" | grep -qix "content-encoding: gzip" ||
    fail "a range of a gzip response is not the first 10 encoded bytes: $(od -An -tx1 "$WORLD_TMP/range.gz") $(cat "$WORLD_TMP/range.gz.h")" || return 1
  cmp -s "$WORLD_TMP/range.resumed" "$css" || fail "curl -C - did not complete the file" || return 1
  echo "  $len-byte recorded 200: 206 slices (a-b, -n), 416 beyond, 200 for two ranges; recorded 206s: exact, cut, a miss across; gzip ranges count encoded bytes; curl -C - resumes"
}

test_replay_user_agent_miss_names_ignore_user_agent() {
  local dir=$WORLD_TMP/rp-ua
  crafted_recording "$dir" || return 1
  local out; out=$(replay_shell "$dir" -- curl -s -A Chrome/2 http://ua.test/page 2>"$WORLD_TMP/ua.err")
  echo "$out" | grep -q "differs in: user-agent" && echo "$out" | grep -q -- "--ignore-user-agent" ||
    fail "the 404 does not name --ignore-user-agent: $out" || return 1
  grep -q -- "--ignore-user-agent" "$WORLD_TMP/ua.err" || fail "the log line does not: $(cat "$WORLD_TMP/ua.err")" || return 1
  echo "  $(echo "$out" | tail -1)"
}

test_replay_warns_when_started_inside_another_shell() {
  local dir=$WORLD_TMP/rp-nested
  crafted_recording "$dir" || return 1
  local inside outside
  inside=$(in_world env MAHIMAHI_CA_DIR="$WORLD_TMP/mmca" "$BIN/mm-delay" 5 "$BIN/mm-replay" "$dir" -- true 2>&1)
  outside=$(replay_shell "$dir" "$BIN/mm-delay" 5 -- true 2>&1)
  [ "$(echo "$inside" | grep -c "warning: started inside another shell (\[delay 5 ms\])")" = 1 ] &&
    echo "$inside" | grep -q "put mm-replay outermost, e.g. mm-replay DIR mm-delay 50 -- COMMAND" ||
    fail "inside mm-delay: $inside" || return 1
  ! echo "$outside" | grep -q "inside another shell" || fail "warned when outermost: $outside" || return 1
  echo "  $(echo "$inside" | grep warning)"
}

# Replays a recording made by from-har from a browser's HAR (tests/fixtures, written by hand
# from the HAR 1.2 spec in the shape Chromium's DevTools and Firefox export) and checks every
# replayable entry with curl, with and without --compressed: the body is the HAR's decoded
# content, no Content-Encoding is claimed for it, Content-Length is right.
# Usage: replay_browser_har FIXTURE "METHOD URL STATUS"...  (STATUS: what the replay answers)
replay_browser_har() {
  local name=$1 ca=$WORLD_TMP/mmca/ca.pem; shift
  local har=$top/tests/fixtures/$name.har dir=$WORLD_TMP/rp-$name out=$WORLD_TMP/$name.out
  rm -rf "$dir" "$out"; mkdir -p "$out"
  "$BIN/mm-recording" from-har "$har" "$dir" 2>"$out/import.err" ||
    fail "from-har $name: $(cat "$out/import.err")" || return 1
  printf '%s\n' "$@" > "$out/requests"
  # The expected bodies (content decoded from base64 where the HAR says so) and the request bodies.
  /usr/bin/python3 - "$har" "$out" <<'PY' || fail "could not read the expectations of $name" || return 1
import base64, json, sys
entries = json.load(open(sys.argv[1]))["log"]["entries"]
for i, line in enumerate(open(sys.argv[2] + "/requests").read().split("\n")[:-1]):
    method, url, _ = line.split()
    (e,) = [e for e in entries if e["request"]["method"] == method and e["request"]["url"] == url]
    c = e["response"]["content"]
    body = base64.b64decode(c["text"]) if c.get("encoding") == "base64" else c.get("text", "").encode()
    open("%s/expected.%d" % (sys.argv[2], i), "wb").write(body)
    open("%s/post.%d" % (sys.argv[2], i), "wb").write(e["request"].get("postData", {}).get("text", "").encode())
PY
  replay_shell "$dir" --ignore-user-agent -- sh -c '
    i=0
    while read -r method url status; do
      for how in plain compressed; do
        extra=""; [ $how = compressed ] && extra=--compressed
        post=""; [ -s "$1/post.$i" ] && post="--data-binary @$1/post.$i"
        curl -s --cacert "$2" -X "$method" $extra $post -D "$1/headers.$how.$i" -o "$1/body.$how.$i" \
          -w "%{http_code}\n" "$url" > "$1/status.$how.$i"
      done
      i=$((i + 1))
    done < "$1/requests"' sh "$out" "$ca" 2>"$out/replay.err" || fail "mm-replay failed: $(cat "$out/replay.err")" || return 1
  local i=0 method url status how length
  while read -r method url status; do
    for how in plain compressed; do
      [ "$(cat "$out/status.$how.$i")" = "$status" ] ||
        fail "$method $url ($how): status $(cat "$out/status.$how.$i"), not $status; $(cat "$out/replay.err")" || return 1
      cmp -s "$out/body.$how.$i" "$out/expected.$i" ||
        fail "$method $url ($how): body differs from the HAR's content: $(head -c 100 "$out/body.$how.$i" | od -c | head -3)" || return 1
      ! grep -qi '^content-encoding' "$out/headers.$how.$i" ||
        fail "$method $url ($how): a Content-Encoding for decoded content: $(cat "$out/headers.$how.$i")" || return 1
      length=$(tr -d '\r' < "$out/headers.$how.$i" | awk 'tolower($1) == "content-length:" { print $2 }')
      [ -z "$length" ] || [ "$length" = "$(stat -c %s "$out/expected.$i")" ] ||
        fail "$method $url ($how): Content-Length $length for $(stat -c %s "$out/expected.$i") bytes" || return 1
    done
    i=$((i + 1))
  done < "$out/requests"
}

test_replay_chromium_devtools_har() {
  replay_browser_har chromium-devtools \
    "GET https://www.chromium.test/ 200" "GET https://www.chromium.test/old-home 301" \
    "GET https://www.chromium.test/app.js 200" "GET https://img.chromium.test/logo.png 200" \
    "GET https://www.chromium.test/style.css 200" "GET https://v6.chromium.test/v6.txt 200" \
    "POST http://www.chromium.test:8080/api/submit?draft=1 201" "GET https://www.chromium.test/cached.js 200" || return 1
  local out=$WORLD_TMP/chromium-devtools.out
  grep -q "wrote 8 pairs to .*, skipped 2 entries$" "$out/import.err" &&
    grep -q "entry 6 (https://www.chromium.test/beacon): status 0 .*net::ERR_ABORTED" "$out/import.err" &&
    grep -q "entry 7 (wss://www.chromium.test/live): a wss: URL" "$out/import.err" &&
    grep -q "v6.chromium.test .*replayed at 198.18.0.1" "$out/import.err" || fail "import said: $(cat "$out/import.err")" || return 1
  grep -qi '^location: https://www.chromium.test/' "$out/headers.plain.1" || fail "redirect: $(cat "$out/headers.plain.1")" || return 1
  grep -qi '^set-cookie: session=abc123; Path=/; Secure; HttpOnly' "$out/headers.plain.2" ||
    fail "cookie: $(cat "$out/headers.plain.2")" || return 1
  echo "  8 entries (br, gzip, base64 PNG, 301, 304 with content, IPv6-only host, POST on :8080, from cache) replay"
  echo "  decoded with and without --compressed; canceled and WebSocket entries skipped with the reason"
}

test_replay_firefox_har() {
  replay_browser_har firefox "GET https://www.firefox.test/ 200" "GET https://www.firefox.test/pic.gif 200" \
    "POST http://www.firefox.test/form 200" "GET https://www.firefox.test/go 302" || return 1
  local out=$WORLD_TMP/firefox.out
  grep -q "wrote 4 pairs to .*, skipped 1 entry$" "$out/import.err" &&
    grep -q "entry 5 (https://www.firefox.test/big.bin): the response body is not in the HAR" "$out/import.err" ||
    fail "import said: $(cat "$out/import.err")" || return 1
  grep -qi '^location: /' "$out/headers.plain.3" || fail "redirect: $(cat "$out/headers.plain.3")" || return 1
  echo "  Firefox's HAR (HTTP/2, gzip and deflate, base64 GIF, form POST, 302) replays decoded; a body-less entry skipped"
}

# A recording of the origins (gzip, chunked, binary) exported to HAR, its private "_mahimahi"
# fields removed as any other tool would, imported and replayed: the bodies are the origin files.
test_replay_har_round_trip_without_private_fields() {
  local dir=$WORLD_TMP/rp-har-rt ca=$WORLD_TMP/mmca/ca.pem web=$WORLD_TMP/web
  local urls="https://b.test/app.js https://b.test/style.css http://a.test/index.html https://c.test/pixel.png"
  recording_shell "$dir" -- sh -c "for u in $urls; do curl -sf --cacert $ca --compressed -o /dev/null \$u || exit 1; done" ||
    fail "recording failed" || return 1
  "$BIN/mm-recording" to-har "$dir" "$WORLD_TMP/rt.har" 2>/dev/null || fail "to-har failed" || return 1
  # HAR 1.2's shape: content.text is the decoded content, size its length; base64 only for binary.
  /usr/bin/python3 - "$WORLD_TMP/rt.har" "$web" "$WORLD_TMP/rt-stripped.har" <<'PY' || fail "the HAR is not HAR 1.2" || return 1
import base64, json, sys
har = json.load(open(sys.argv[1]))
web = {"https://b.test/app.js": "b/www/b.test/app.js", "https://b.test/style.css": "b/www/b.test/style.css",
       "http://a.test/index.html": "a/www/a.test/index.html", "https://c.test/pixel.png": "c/www/c.test/pixel.png"}
assert har["log"]["version"] == "1.2"
gzipped = 0
for e in har["log"]["entries"]:
    c = e["response"]["content"]
    text = base64.b64decode(c["text"]) if c.get("encoding") == "base64" else c["text"].encode()
    want = open(sys.argv[2] + "/" + web[e["request"]["url"]], "rb").read()
    assert text == want, "content.text of %s is not the decoded body" % e["request"]["url"]
    assert c["size"] == len(want), (e["request"]["url"], c["size"], len(want))
    assert ("encoding" in c) == (e["request"]["url"].endswith(".png")), e["request"]["url"]
    assert "_contentEncoding" not in c and "comment" not in c, c.get("comment")
    if any(h["name"].lower() == "content-encoding" for h in e["response"]["headers"]):
        gzipped += 1
        assert c["compression"] > 0, c
    del e["_mahimahi"]
assert gzipped >= 2, "the origins sent no gzip: the test proves nothing"
json.dump(har, open(sys.argv[3], "w"))
print("  to-har: content decoded, size and compression right, base64 for the PNG only;", gzipped, "gzipped bodies")
PY
  "$BIN/mm-recording" from-har "$WORLD_TMP/rt-stripped.har" "$dir-2" 2>/dev/null || fail "from-har failed" || return 1
  origins_pause
  local out; out=$(replay_shell "$dir-2" -- sh -c "for u in $urls; do
      for how in '' --compressed; do
        f=$WORLD_TMP/rt.\$(echo \$u\$how | md5sum | cut -c1-8)
        curl -s --cacert $ca \$how -D \$f.h -o \$f \$u || echo \"curl \$u \$how failed\"
      done
    done" 2>&1)
  origins_resume
  [ -z "$out" ] || fail "replay: $out" || return 1
  local u how f
  for u in $urls; do
    for how in '' --compressed; do
      f=$WORLD_TMP/rt.$(echo "$u$how" | md5sum | cut -c1-8)
      ! grep -qi '^content-encoding' "$f.h" || fail "$u $how: Content-Encoding on a decoded body: $(cat "$f.h")" || return 1
      case $u in
        https://b.test/*) cmp -s "$f" "$web/b/www/b.test/${u##*/}" ;;
        http://a.test/*) cmp -s "$f" "$web/a/www/a.test/${u##*/}" ;;
        https://c.test/*) cmp -s "$f" "$web/c/www/c.test/${u##*/}" ;;
      esac || fail "$u $how: the replayed body is not the origin's file" || return 1
    done
  done
  echo "  without _mahimahi: from-har then replay serve the origin files, with and without --compressed"
}

# A server that thinks: /slow answers after 150 ms, anything else at once (python3's http.server
# in the world's server host, the one address the test world routes without origins).
thinking_server() {  # PORT (prints the server's pid)
  in_server /usr/bin/python3 - "$1" >/dev/null 2>&1 <<'PY' &
import http.server, sys, time
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        if self.path.startswith("/slow"):
            time.sleep(0.15)
        body = ("answer to %s\n" % self.path).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("0.0.0.0", int(sys.argv[1])), Handler).serve_forever()
PY
  echo $!
  wait_until 10 listening "$SERVER" tcp "$1"
}

# mm-record measures each server's round trip and think time (here 40 ms away behind a
# per-destination delay, and 150 ms of thinking on /slow); mm-recording timings reports them and
# writes mm-delay's map; mm-replay --timing=recorded answers with both (and without, at once).
test_replay_timing_recorded_reproduces_distance_and_think_time() {
  local port pid dir=$WORLD_TMP/rp-timing out
  port=$(IPERF_NETNS=$SERVER free_port) || return 1
  pid=$(thinking_server "$port") || { fail "the thinking server did not start"; return 1; }
  local base=http://$SERVER_IP:$port
  in_world "$BIN/mm-delay" 0 --destination="$SERVER_IP=20" -- env MAHIMAHI_CA_DIR="$WORLD_TMP/mmca" \
    "$BIN/mm-record" "$dir" -- sh -c "curl -sf -o /dev/null $base/fast && curl -sf -o /dev/null $base/slow" ||
    { kill "$pid"; fail "recording failed"; return 1; }
  kill "$pid"
  out=$("$BIN/mm-recording" timings "$dir") || { fail "mm-recording timings: $out"; return 1; }
  echo "$out" | sed 's/^/  | /'
  set -- $(echo "$out" | awk -v o="$SERVER_IP:$port" '$1 == o { print $6, $7, $8 }')
  check_range "recorded RTT (ms)" "$1" 40.0 44.0 || return 1
  check_range "recorded think p90 (ms, /slow)" "$3" 148 175 || return 1
  check_range "recorded think p50 (ms, /fast)" "$2" 0 10 || return 1
  "$BIN/mm-recording" timings --destinations "$dir" | grep -Eq "^$SERVER_IP 2[0-1]\.[0-9]{3}  # RTT" ||
    fail "no map line for $SERVER_IP: $("$BIN/mm-recording" timings --destinations "$dir")" || return 1
  local timed plain
  timed=$(replay_shell "$dir" --timing=recorded --verbose -- curl -s -o /dev/null -w '%{time_connect} %{time_starttransfer}\n' "$base/slow" 2>"$WORLD_TMP/timing.err")
  grep -q "timing: 1 of 1 origin at their recorded distances" "$WORLD_TMP/timing.err" ||
    fail "no timing summary: $(cat "$WORLD_TMP/timing.err")" || return 1
  set -- $timed
  check_range "replayed TCP connect (s)" "$1" 0.040 0.050 || return 1
  check_range "replayed first byte (s): 2 RTT + think" "$2" 0.228 0.280 || return 1
  plain=$(replay_shell "$dir" -- curl -s -o /dev/null -w '%{time_starttransfer}\n' "$base/slow")
  check_range "first byte without --timing (s)" "$plain" 0 0.030
}

test_replay_timing_errors() {
  rc_msg 2 '--timing takes recorded or none' replay_shell /nonexistent --timing=fast true
}

# The paper's Fig. 3 in small: the chain page (pageload.sh: four levels over a.test, b.test,
# c.test, www.b.test) loaded live by Chromium with each origin at its own distance (one
# per-destination delay shell), recorded at those distances, then replayed with --timing=recorded
# and without: the timed replay lands near the live loads, the plain one far below them. As an
# ordinary user, Chromium's sandbox on.
test_replay_timing_page_load_tracks_the_live_load_as_a_user() {
  command -v chromium >/dev/null || { echo "  chromium not installed"; return 1; }
  pageload_pages || return 1
  local home=$WORLD_TMP/timing-home url=https://a.test/chain.html
  mkdir -p "$home"
  printf '%s 10\n%s 30\n%s 20\n' "$(origin_ip a)" "$(origin_ip b)" "$(origin_ip c)" > "$home/distances"
  chown -R "$TEST_USER" "$home"
  as_user() { AS_USER=$TEST_USER in_world env HOME="$home" MAHIMAHI_CA_DIR="$home/ca" SSL_CERT_FILE="$ORIGIN_CA" "$@"; }
  as_user "$BIN/mm-ca" trust >/dev/null || fail "mm-ca trust failed" || return 1
  local far=("$BIN/mm-delay" 0 --destinations="$home/distances" --)
  as_user "${far[@]}" "$BIN/mm-pageload" --ca "$ORIGIN_CA" --runs 5 --csv "$home/live.csv" "$url" >/dev/null 2>"$home/err" ||
    fail "live loads: $(tail -3 "$home/err")" || return 1
  as_user "${far[@]}" "$BIN/mm-record" "$home/rec" -- "$BIN/mm-pageload" --runs 1 "$url" >/dev/null 2>"$home/err" ||
    fail "recording: $(tail -3 "$home/err")" || return 1
  "$BIN/mm-recording" timings "$home/rec" | sed 's/^/  | /'
  as_user "$BIN/mm-replay" "$home/rec" --timing=recorded -- "$BIN/mm-pageload" --runs 5 --csv "$home/timed.csv" "$url" \
    >/dev/null 2>"$home/err" || fail "timed replay: $(tail -3 "$home/err")" || return 1
  as_user "$BIN/mm-replay" "$home/rec" -- "$BIN/mm-pageload" --runs 5 --csv "$home/plain.csv" "$url" \
    >/dev/null 2>"$home/err" || fail "plain replay: $(tail -3 "$home/err")" || return 1
  /usr/bin/python3 - "$home" <<'PY'
import csv, statistics, sys
home = sys.argv[1]
def plts(name):
    rows = list(csv.DictReader(open(f"{home}/{name}.csv")))
    assert all(r["status"] == "ok" for r in rows), [(r["status"], r["reason"]) for r in rows]
    return [float(r["plt_ms"]) for r in rows]
live, timed, plain = (statistics.median(plts(n)) for n in ("live", "timed", "plain"))
error = abs(timed - live) / live * 100
print(f"  median PLT: live {live:.0f} ms, replay --timing=recorded {timed:.0f} ms (error {error:.1f} %), "
      f"replay without {plain:.0f} ms")
# Four levels, each at least one round trip of 20 to 60 ms: the plain replay skips them all.
if error > 15:
    print("FAIL: the timed replay is more than 15 % from the live loads"); sys.exit(1)
if plain > live * 0.6:
    print("FAIL: the plain replay is not far below the live loads"); sys.exit(1)
PY
  [ $? = 0 ] || return 1
  check_no_chromium
}

# Matching rules users ask for: a POST API answered by body (curl -d, the same URL), and a cache
# buster left out of the comparison (--ignore-query-param), through Apache as a browser would.
test_replay_matches_post_bodies_and_ignores_cache_busters() {
  local dir=$WORLD_TMP/rp-bodies har=$WORLD_TMP/bodies.har out
  /usr/bin/python3 - "$har" <<'PY'
import json, sys
def entry(method, url, answer, body=None, n=[0]):
    n[0] += 1
    e = {"startedDateTime": "2026-01-01T00:00:%02d.000Z" % n[0], "time": 1,
         "request": {"method": method, "url": url, "httpVersion": "HTTP/1.1",
                     "headers": [{"name": "Host", "value": "api.test"}], "queryString": [], "cookies": [],
                     "headersSize": -1, "bodySize": len(body or "")},
         "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1",
                      "headers": [{"name": "Content-Type", "value": "text/plain"}], "cookies": [],
                      "content": {"size": len(answer), "mimeType": "text/plain", "text": answer},
                      "redirectURL": "", "headersSize": -1, "bodySize": len(answer)},
         "cache": {}, "timings": {"send": 0, "wait": 1, "receive": 0}, "serverIPAddress": "10.99.0.9"}
    if body is not None:
        e["request"]["postData"] = {"mimeType": "application/json", "text": body}
    return e
entries = [entry("POST", "http://api.test/graphql", "user\n", '{"q":"user"}'),
           entry("POST", "http://api.test/graphql", "feed\n", '{"q":"feed"}'),
           entry("GET", "http://api.test/item?id=7&_=1111111111", "seven\n"),
           entry("GET", "http://api.test/item?id=8&_=1700000001", "eight\n")]
json.dump({"log": {"version": "1.2", "creator": {"name": "test", "version": "1"}, "entries": entries}}, open(sys.argv[1], "w"))
PY
  "$BIN/mm-recording" from-har "$har" "$dir" >/dev/null 2>&1 || { fail "from-har failed"; return 1; }
  out=$(replay_shell "$dir" --ignore-user-agent --ignore-query-param=_ -- sh -c '
    curl -s -d "{\"q\":\"feed\"}" http://api.test/graphql; curl -s -d "{\"q\":\"user\"}" http://api.test/graphql
    curl -s "http://api.test/item?id=7&_=1700000001"' 2>&1)
  [ "$out" = "$(printf 'feed\nuser\nseven')" ] || fail "with the rules: $out" || return 1
  # Without the option the closest query string wins, which the buster misleads.
  out=$(replay_shell "$dir" --ignore-user-agent -- curl -s "http://api.test/item?id=7&_=1700000001" 2>&1)
  [ "$out" = eight ] || fail "without --ignore-query-param: $out" || return 1
  rc_msg 2 '--ignore-query-param needs a parameter name' replay_shell "$dir" --ignore-query-param='a=b' true
}

# A request nothing matches, with --unmatched=close: no response at all (curl over HTTP/1.1,
# HTTPS and HTTP/2), the connection's other requests unharmed; the default stays the 404.
test_replay_unmatched_close_sends_no_response() {
  local dir=$WORLD_TMP/rp-close ca=$WORLD_TMP/mmca/ca.pem out
  crafted_recording "$dir" || fail "could not build the crafted recording" || return 1
  # shellcheck disable=SC2016  # for the inner sh
  local script='c="curl -s -m 20 -H User-Agent: -o /dev/null --cacert $0"
    $c -w "h1 %{http_code} " http://q.test/never; echo $?
    $c --http1.1 -w "tls %{http_code} " https://s.test/never; echo $?
    $c --http2 -w "h2 %{http_code} %{size_download} " https://s.test/never; echo $?
    $c --http2 -w "h2-hit %{http_code} " -o /dev/null -o /dev/null https://s.test/secure https://s.test/never https://s.test/secure; echo
    $c -w "hit %{http_code} " http://q.test/again; echo $?'
  out=$(replay_shell "$dir" --http2 --unmatched=close -- sh -c "$script" "$ca" 2>"$WORLD_TMP/close.err")
  # curl: 52 "empty reply from server" (HTTP/1.1, also over TLS); over HTTP/2 the connection
  # ends under the stream (an error of curl's HTTP/2 layer), a sibling before and after answered.
  local want='^h1 000 52
tls 000 52
h2 000 0 [1-9][0-9]*
h2-hit 200 h2-hit 000 h2-hit 200 
hit 200 0$'
  [[ $out =~ $want ]] || fail "with --unmatched=close: $out" || return 1
  [ "$(grep -c 'no recorded response for GET https\?://[qs].test/never; .* \[no response: --unmatched=close\]$' "$WORLD_TMP/close.err")" = 4 ] ||
    fail "the log lines: $(cat "$WORLD_TMP/close.err")" || return 1
  ! grep -q "cannot close" "$WORLD_TMP/close.err" || fail "$(cat "$WORLD_TMP/close.err")" || return 1
  out=$(replay_shell "$dir" --http2 --unmatched=404 -- sh -c "$script" "$ca" 2>/dev/null)
  [ "$(echo "$out" | head -2)" = "$(printf 'h1 404 0\ntls 404 0')" ] || fail "with --unmatched=404: $out" || return 1
  rc_msg 2 '--unmatched takes 404 or close' replay_shell "$dir" --unmatched=drop true || return 1
  echo "  curl: HTTP/1.1, HTTPS and HTTP/2 see the connection end before any response (HTTP/2: answered requests before and after); --unmatched=404 the 404"
}

# Through Chromium as an ordinary user, over HTTP/1.1, HTTP/2 and HTTP/3: with --unmatched=close
# a page's request for something unrecorded fails as on a network that drops it (a synchronous
# XMLHttpRequest throws), while its other request is answered; without, it gets the 404.
test_replay_unmatched_close_fails_the_request_in_chromium_over_h1_h2_and_h3() {
  local home=$WORLD_TMP/chome-close; local dir=$home/rec
  mkdir -p "$home"
  /usr/bin/python3 - "$home/close.har" <<'PY'
import json, sys
page = """<!doctype html><html><head><title>pending</title></head><body><script>
function get(path) {
  const x = new XMLHttpRequest();
  try { x.open('GET', path, false); x.send(); return x.status + (x.status == 200 ? ':' + x.responseText.trim() : ''); }
  catch (e) { return 'failed'; }
}
document.title = [get('/never'), get('/ok.txt')].join(' ');
</script></body></html>"""
def entry(path, body, kind, n=[0]):
    n[0] += 1
    return {"startedDateTime": "2026-01-01T00:00:%02d.000Z" % n[0], "time": 1,
            "request": {"method": "GET", "url": "https://s.test" + path, "httpVersion": "HTTP/1.1",
                        "headers": [{"name": "Host", "value": "s.test"}], "queryString": [], "cookies": [],
                        "headersSize": -1, "bodySize": 0},
            "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1",
                         "headers": [{"name": "Content-Type", "value": kind}], "cookies": [],
                         "content": {"size": len(body), "mimeType": kind, "text": body},
                         "redirectURL": "", "headersSize": -1, "bodySize": len(body)},
            "cache": {}, "timings": {"send": 0, "wait": 1, "receive": 0}, "serverIPAddress": "10.99.0.2"}
json.dump({"log": {"version": "1.2", "creator": {"name": "test", "version": "1"},
                   "entries": [entry("/page.html", page, "text/html"), entry("/ok.txt", "ok\n", "text/plain")]}},
          open(sys.argv[1], "w"))
PY
  "$BIN/mm-recording" from-har "$home/close.har" "$dir" >/dev/null 2>&1 || fail "from-har failed" || return 1
  chown -R "$TEST_USER" "$home"
  AS_USER=$TEST_USER in_world env HOME="$home" MAHIMAHI_CA_DIR="$home/ca" "$BIN/mm-ca" trust >/dev/null || return 1
  local chrome="timeout 60 chromium --headless=new --no-sandbox --disable-gpu --no-first-run --disable-http-cache"
  local proto unmatched replay_flags chrome_flags title
  for proto in h1 h2 h3; do
    for unmatched in close 404; do
      case $proto in
        h1) replay_flags="" chrome_flags="--disable-http2 --disable-quic" ;;
        h2) replay_flags="--http2" chrome_flags="--disable-quic" ;;
        h3) replay_flags="--http3" chrome_flags="--origin-to-force-quic-on=s.test:443" ;;
      esac
      AS_USER=$TEST_USER in_world env HOME="$home" MAHIMAHI_CA_DIR="$home/ca" "$BIN/mm-replay" "$dir" --ignore-user-agent \
        --verbose --unmatched=$unmatched $replay_flags -- $chrome $chrome_flags --user-data-dir="$home/p-$proto-$unmatched" \
        --dump-dom https://s.test/page.html > "$home/$proto-$unmatched.html" 2>"$home/$proto-$unmatched.err"
      title=$(sed -n 's|.*<title>\(.*\)</title>.*|\1|p' "$home/$proto-$unmatched.html")
      local want="failed 200:ok"; [ "$unmatched" = 404 ] && want="404 200:ok"
      [ "$title" = "$want" ] ||
        fail "$proto, --unmatched=$unmatched: page says \"$title\"; $(grep -v '^\[' "$home/$proto-$unmatched.err" | tail -4)" || return 1
      grep -q "no recorded response for GET https://s.test/never" "$home/$proto-$unmatched.err" ||
        fail "$proto: the miss was not logged: $(tail -3 "$home/$proto-$unmatched.err")" || return 1
    done
  done
  # Over HTTP/3 the page and its answered request went over QUIC (the reset stream is no response).
  grep -q "HTTP/3: .* 2 requests" "$home/h3-close.err" || fail "h3: $(grep 'HTTP/3' "$home/h3-close.err")" || return 1
  echo "  Chromium over h1, h2 and h3: the unrecorded request fails with --unmatched=close, gets the 404 without; the other is answered"
}
