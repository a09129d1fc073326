# SPDX-License-Identifier: GPL-3.0-or-later
# Integration tests of mm-record and its tools (mm-recording, mm-ca, mm-webrecord), against the
# web origins of the test world (world.sh: origins_create).

# mm-record as the test user would run it: the local CA in the world's scratch space, the
# origins' CA trusted upstream. Usage: record DIR [mm-record options] -- COMMAND...
recording_shell() {
  origins_create || return 1
  in_world env MAHIMAHI_CA_DIR="$WORLD_TMP/mmca" SSL_CERT_FILE="$ORIGIN_CA" "$BIN/mm-record" "$@"
}

# A recording as JSON lines, one per pair, for checks in Python: the HAR that mm-recording
# writes, flattened. Usage: recording_json DIR > FILE
recording_har() { "$BIN/mm-recording" to-har "$1" -; }

# Runs a Python check over the HAR of DIR; the script sees `har` (parsed), `entries` and `raw(e, side)`.
check_recording() {  # DIR PYTHON-CODE
  recording_har "$1" > "$WORLD_TMP/check.har" || fail "mm-recording to-har $1 failed" || return 1
  /usr/bin/python3 - "$WORLD_TMP/check.har" "$2" <<'EOF'
import base64, gzip, json, sys, zlib
har = json.load(open(sys.argv[1]))
entries = har["log"]["entries"]
def mm(e): return e["_mahimahi"]
def raw(e, side):
    return base64.b64decode(mm(e)[side + "_body_raw_base64"] or "")
def dechunk(b):
    out, i = b"", 0
    while True:
        j = b.index(b"\r\n", i); size = int(b[i:j].split(b";")[0], 16); i = j + 2
        if size == 0: return out
        out += b[i:i + size]; i += size + 2
def header(e, side, name):
    for h in e[side]["headers"]:
        if h["name"].lower() == name.lower(): return h["value"]
    return None
def by_url(url):
    found = [e for e in entries if e["request"]["url"] == url]
    assert found, "no pair for %s; recorded: %s" % (url, sorted(e["request"]["url"] for e in entries))
    return found
try:
    exec(sys.argv[2])
except AssertionError as error:
    print("FAIL:", error); sys.exit(1)
EOF
}

test_record_http_and_https_over_several_origins() {
  local dir=$WORLD_TMP/rec-basic web=$WORLD_TMP/web
  recording_shell "$dir" -- sh -c "
    curl -sf -o /dev/null http://a.test/index.html &&
    curl -sf -o /dev/null -o /dev/null --cacert $WORLD_TMP/mmca/ca.pem https://b.test/style.css https://www.b.test/index.html &&
    curl -sf -o /dev/null -o /dev/null --cacert $WORLD_TMP/mmca/ca.pem 'https://c.test/pixel.png?v=1' 'http://c.test/app.js?x=1&y=2'
  " || fail "mm-record or a curl inside it failed" || return 1
  [ "$(ls "$dir" | wc -l)" = 5 ] || fail "expected 5 files, got: $(ls "$dir")" || return 1
  check_recording "$dir" "
web = '$web'
expect = [('http://a.test/index.html', '10.78.1.2', 80, 'http', 'a/www/a.test/index.html'),
          ('https://b.test/style.css', '10.78.2.2', 443, 'https', 'b/www/b.test/style.css'),
          ('https://www.b.test/index.html', '10.78.2.2', 443, 'https', 'b/www/www.b.test/index.html'),
          ('https://c.test/pixel.png?v=1', '10.78.3.2', 443, 'https', 'c/www/c.test/pixel.png'),
          ('http://c.test/app.js?x=1&y=2', '10.78.3.2', 80, 'http', 'c/www/c.test/app.js')]
for url, ip, port, scheme, path in expect:
    (e,) = by_url(url)
    m = mm(e)
    assert (m['ip'], m['port'], m['scheme']) == (ip, port, scheme), (url, m['ip'], m['port'], m['scheme'])
    assert e['response']['status'] == 200, (url, e['response']['status'])
    host = url.split('/')[2]
    assert header(e, 'request', 'Host') == host, (url, header(e, 'request', 'Host'))
    assert m['request_first_line'] == 'GET ' + url.split(host, 1)[1] + ' HTTP/1.1', m['request_first_line']
    body = raw(e, 'response')
    if header(e, 'response', 'Transfer-Encoding') == 'chunked': body = dechunk(body)
    if header(e, 'response', 'Content-Encoding') == 'gzip': body = gzip.decompress(body)
    assert body == open(web + '/' + path, 'rb').read(), 'body of ' + url + ' differs from the origin file'
    if scheme == 'https': assert m['server_name'] == host, (url, m['server_name'])
    # What the origin offers a browser (b.test's offers HTTP/2; mm-record asks each HTTPS origin).
    assert m['protocol'] == ('h2' if ip == '10.78.2.2' else 'http/1.1'), (url, m['protocol'])
print('  5 pairs: ip, port, scheme, first line, Host, status, body as served, and each origin\'s protocol')
"
}

test_record_post_put_chunked_gzip_and_100_continue() {
  local dir=$WORLD_TMP/rec-methods ca=$WORLD_TMP/mmca/ca.pem
  head -c 300000 /dev/urandom > "$WORLD_TMP/upload.bin"; chmod 644 "$WORLD_TMP/upload.bin"
  recording_shell "$dir" -- sh -c "
    curl -sf -o /dev/null --cacert $ca -d 'name=value&x=1' https://a.test/form &&
    curl -sf -o /dev/null --cacert $ca -H 'Expect: 100-continue' -T $WORLD_TMP/upload.bin https://c.test/upload/u.bin &&
    curl -sf -o /dev/null --cacert $ca --compressed https://b.test/app.js &&
    curl -sf -o /dev/null -X DELETE http://c.test/upload/u.bin &&
    curl -sf -o /dev/null -I http://a.test/style.css
  " || fail "mm-record or a curl inside it failed" || return 1
  check_recording "$dir" "
(e,) = by_url('https://a.test/form')
assert e['request']['method'] == 'POST' and raw(e, 'request') == b'name=value&x=1', raw(e, 'request')[:40]
(e,) = by_url('https://c.test/upload/u.bin')
assert e['request']['method'] == 'PUT' and raw(e, 'request') == open('$WORLD_TMP/upload.bin', 'rb').read(), 'PUT body'
assert header(e, 'request', 'Expect') == '100-continue'
assert e['response']['status'] == 201, e['response']['status']
(e,) = by_url('https://b.test/app.js')
assert header(e, 'response', 'Transfer-Encoding') == 'chunked' and header(e, 'response', 'Content-Encoding') == 'gzip'
assert gzip.decompress(dechunk(raw(e, 'response'))) == open('$WORLD_TMP/web/b/www/b.test/app.js', 'rb').read()
(e,) = by_url('http://c.test/upload/u.bin')
assert e['request']['method'] == 'DELETE' and e['response']['status'] == 204, e['response']['status']
(e,) = by_url('http://a.test/style.css')
assert e['request']['method'] == 'HEAD' and raw(e, 'response') == b'' and header(e, 'response', 'Content-Length') != '0'
assert len(entries) == 5, len(entries)
print('  POST and PUT bodies, 100-continue upload, chunked gzip, DELETE, HEAD: as sent')
"
}

test_record_streams_a_200MB_download() {
  local dir=$WORLD_TMP/rec-big
  set -- $(recording_shell "$dir" -- curl -sf -o /dev/null -w '%{time_starttransfer} %{time_total} %{size_download}\n' http://a.test/big.bin)
  [ "${3:-0}" = 209715200 ] || fail "downloaded ${3:-nothing} bytes, expected 209715200" || return 1
  # Streamed: the first byte arrives long before the last (store-and-forward would make them equal).
  awk -v f="$1" -v t="$2" 'BEGIN { exit !(f < t / 4) }' || fail "first byte at $1 s of $2 s: not streamed" || return 1
  echo "  first byte after $1 s, last after $2 s"
  local size; size=$("$BIN/mm-recording" ls "$dir" | awk '/big.bin/ { for (i = 1; i <= NF; i++) if ($i == 209715200) print $i }')
  [ "$size" = 209715200 ] || fail "recorded body size: '${size}'" || return 1
}

# HTTPS, TLS ended on both sides: connections one after another to one origin (the later ones
# resume the proxy's session with the server) keep the server certificate's names and TLS
# version in every pair; a 200 MB body over TLS (read ahead, records beyond what a pump takes
# at once) reaches the client whole and is recorded whole.
test_record_https_resumed_sessions_and_a_200MB_body() {
  local dir=$WORLD_TMP/rec-https ca=$WORLD_TMP/mmca/ca.pem
  recording_shell "$dir" -- sh -c "
    for i in 1 2 3 4; do curl -sf -o /dev/null --cacert $ca \"https://c.test/app.js?c=\$i\" || exit 1; done" ||
    fail "mm-record or a curl inside it failed" || return 1
  check_recording "$dir" "
for i in (1, 2, 3, 4):
    (e,) = by_url('https://c.test/app.js?c=%d' % i)
    server = mm(e)['server_timing']
    assert server.get('certificate_names') == ['c.test'], (i, server)
    assert server.get('tls_version') in ('TLSv1.2', 'TLSv1.3'), (i, server)
print('  4 connections to c.test, each pair with the certificate names and TLS version')
" || return 1
  set -- $(recording_shell "$WORLD_TMP/rec-https-big" -- curl -sf -o /dev/null --cacert "$ca" -w '%{size_download}\n' \
    https://a.test/big.bin)
  [ "${1:-0}" = 209715200 ] || fail "downloaded ${1:-nothing} bytes over HTTPS, expected 209715200" || return 1
  local size; size=$("$BIN/mm-recording" ls "$WORLD_TMP/rec-https-big" | awk '/big.bin/ { for (i = 1; i <= NF; i++) if ($i == 209715200) print $i }')
  [ "$size" = 209715200 ] || fail "recorded body size over HTTPS: '${size}'" || return 1
  echo "  200 MB over HTTPS relayed and recorded whole"
}

# --max-body: the 200 MB body reaches curl whole, but is not recorded; the small pair beside it
# is recorded; a line names the one left out.
test_record_max_body_relays_but_does_not_keep_a_larger_body() {
  local dir=$WORLD_TMP/rec-max-body out
  out=$(recording_shell "$dir" --max-body=1 -- sh -c '
    curl -sf -o /dev/null -w "%{size_download}\n" http://a.test/big.bin &&
    curl -sf -o /dev/null -w "%{size_download}\n" http://c.test/app.js' 2> "$WORLD_TMP/max-body.err")
  [ "$(echo "$out" | head -1)" = 209715200 ] && [ "$(echo "$out" | wc -l)" = 2 ] ||
    fail "curl got \"$(echo $out)\": $(tail -3 "$WORLD_TMP/max-body.err")" || return 1
  grep -q "^mm-record: .*GET /big.bin HTTP/1.1: a response body of 209715200 bytes, over --max-body (1048576): relayed, not recorded$" \
    "$WORLD_TMP/max-body.err" || fail "no line for the body left out: $(cat "$WORLD_TMP/max-body.err")" || return 1
  grep -q "^mm-record: 1 pair not recorded (--max-body)$" "$WORLD_TMP/max-body.err" || fail "no count in the closing lines" || return 1
  local listing; listing=$("$BIN/mm-recording" ls "$dir")
  ! echo "$listing" | grep -q big.bin || fail "big.bin was recorded" || return 1
  echo "$listing" | grep -q app.js || fail "app.js was not recorded: $listing" || return 1
  echo "  200 MB relayed whole, not recorded; app.js recorded"
}

test_record_500_concurrent_connections_lose_no_pair() {
  local dir=$WORLD_TMP/rec-500 urls=$WORLD_TMP/urls.txt
  for i in $(seq 500); do printf 'url = "http://c.test/app.js?n=%s"\noutput = "/dev/null"\n' "$i"; done > "$urls"
  chmod 644 "$urls"
  local out; out=$(recording_shell "$dir" -- curl -s --no-progress-meter --parallel --parallel-immediate --parallel-max 500 \
    -K "$urls" -w '%{http_code}\n' 2>"$WORLD_TMP/500.err")
  [ "$(echo "$out" | grep -c '^200$')" = 500 ] ||
    fail "curl got $(echo "$out" | grep -c '^200$') of 500 responses: $(echo "$out" | grep -v '^200$' | sort | uniq -c | head -5) $(tail -3 "$WORLD_TMP/500.err")" || return 1
  local n; n=$(ls "$dir" | wc -l)
  [ "$n" = 500 ] || fail "$n of 500 pairs recorded" || return 1
  echo "  500 parallel connections, 500 pairs recorded"
}

test_record_bad_input() {
  local dir=$WORLD_TMP/rec-exists out status
  mkdir -p "$dir"
  out=$(recording_shell "$dir" -- true 2>&1); status=$?
  [ "$status" != 0 ] && echo "$out" | grep -q "already exists" || fail "existing DIR: status $status, '$out'" || return 1
  out=$(AS_USER=$TEST_USER in_world env MAHIMAHI_CA_DIR="$WORLD_TMP/userca" "$BIN/mm-record" /proc/rec -- true 2>&1); status=$?
  [ "$status" != 0 ] && echo "$out" | grep -q "/proc" || fail "unwritable DIR: status $status, '$out'" || return 1
  [ ! -e "$WORLD_TMP/userca" ] || [ "$(stat -c %U "$WORLD_TMP/userca")" = "$TEST_USER" ] || fail "CA not the user's" || return 1
  # A server whose certificate nobody trusts: the client gets a connection error, the log says why.
  out=$(in_world env MAHIMAHI_CA_DIR="$WORLD_TMP/mmca" "$BIN/mm-record" "$WORLD_TMP/rec-untrusted" -- \
    curl -s --cacert "$WORLD_TMP/mmca/ca.pem" -o /dev/null -w 'http %{http_code}\n' https://a.test/ 2>&1); status=$?
  echo "$out" | grep -q "http 000" || fail "the client got a response from an untrusted server: $out" || return 1
  echo "$out" | grep -q "certificate is not trusted" || fail "no reason logged: $out" || return 1
  echo "$out" | grep -q "0 pairs recorded" || fail "$out" || return 1
  out=$("$BIN/mm-record" 2>&1); [ $? = 2 ] && echo "$out" | grep -q "missing DIR" || fail "no DIR: $out" || return 1
  echo "  existing DIR, unwritable DIR, untrusted server, missing DIR: refused with reasons"
}

test_record_as_ordinary_user_files_are_the_users() {
  local dir=$WORLD_TMP/user/rec
  rm -rf "$WORLD_TMP/user"  # (run again by the rootless pass)
  mkdir -p "$WORLD_TMP/user" && chown "$TEST_USER" "$WORLD_TMP/user"
  AS_USER=$TEST_USER in_world env HOME="$WORLD_TMP/home" MAHIMAHI_CA_DIR="$WORLD_TMP/user/ca" SSL_CERT_FILE="$ORIGIN_CA" \
    "$BIN/mm-record" "$dir" -- curl -sf -o /dev/null --cacert "$WORLD_TMP/user/ca/ca.pem" https://b.test/ ||
    fail "mm-record as $TEST_USER failed" || return 1
  [ "$(stat -c '%U %a' "$dir")" = "$TEST_USER 700" ] || fail "DIR: $(stat -c '%U %a' "$dir")" || return 1
  [ "$(stat -c '%U %a' "$dir"/* | sort -u)" = "$TEST_USER 600" ] || fail "files: $(stat -c '%U %a' "$dir"/*)" || return 1
  [ "$(stat -c '%a' "$WORLD_TMP/user/ca/ca.key")" = 600 ] || fail "CA key mode $(stat -c %a "$WORLD_TMP/user/ca/ca.key")" || return 1
  echo "  recording and CA owned by $TEST_USER, modes 700/600"
}

test_record_original_schema_decodes_our_files() {
  local dir=$WORLD_TMP/rec-schema
  recording_shell "$dir" -- curl -sf -o /dev/null --cacert "$WORLD_TMP/mmca/ca.pem" https://www.b.test/style.css || return 1
  local f; f=$(ls "$dir" | head -1)
  local text; text=$(protoc --decode=MahimahiProtobufs.RequestResponse -I "$top/tests/fixtures" \
    "$top/tests/fixtures/original_http_record.proto" < "$dir/$f") || fail "protoc could not decode $f" || return 1
  echo "$text" | grep -q 'ip: "10.78.2.2"' && echo "$text" | grep -q 'scheme: HTTPS' &&
    echo "$text" | grep -q 'first_line: "GET /style.css HTTP/1.1"' || fail "decoded: $(echo "$text" | head -20)" || return 1
  echo "  the original's schema decodes ip, port, scheme, messages"
}

test_record_har_round_trip_keeps_every_pair() {
  local dir=$WORLD_TMP/rec-har
  recording_shell "$dir" -- sh -c "curl -sf -o /dev/null -o /dev/null -o /dev/null --cacert $WORLD_TMP/mmca/ca.pem --compressed https://b.test/style.css https://c.test/pixel.png http://a.test/index.html" || return 1
  "$BIN/mm-recording" to-har "$dir" "$WORLD_TMP/one.har" && "$BIN/mm-recording" from-har "$WORLD_TMP/one.har" "$WORLD_TMP/rec-har2" >/dev/null &&
    "$BIN/mm-recording" to-har "$WORLD_TMP/rec-har2" "$WORLD_TMP/two.har" || fail "HAR conversion failed" || return 1
  /usr/bin/python3 - "$WORLD_TMP/one.har" "$WORLD_TMP/two.har" <<'EOF' || fail "HAR round trip changed pairs"
import json, sys
def pairs(path):  # what was recorded; the file names are new ones, naturally
    return sorted(json.dumps({k: v for k, v in e["_mahimahi"].items() if k != "file"}, sort_keys=True)
                  for e in json.load(open(path))["log"]["entries"])
a, b = pairs(sys.argv[1]), pairs(sys.argv[2])
assert len(a) == 3 and a == b, (len(a), len(b))
print("  3 pairs identical after to-har, from-har, to-har")
EOF
}

test_record_chromium_loads_a_multi_origin_page() {
  command -v chromium >/dev/null || { echo "  chromium not installed"; return 1; }
  local home=$WORLD_TMP/chome; local dir=$home/rec
  origins_create || return 1
  mkdir -p "$home"; chown "$TEST_USER" "$home"
  # The CA is trusted through NSS (no ignore flag), as a user would do once with mm-ca trust.
  AS_USER=$TEST_USER in_world env HOME="$home" MAHIMAHI_CA_DIR="$home/ca" "$BIN/mm-ca" trust >/dev/null ||
    fail "mm-ca trust failed" || return 1
  AS_USER=$TEST_USER in_world env HOME="$home" MAHIMAHI_CA_DIR="$home/ca" SSL_CERT_FILE="$ORIGIN_CA" \
    "$BIN/mm-record" "$dir" -- timeout 60 chromium --headless=new --no-sandbox --disable-gpu --no-first-run --user-data-dir="$home/profile" \
    --virtual-time-budget=5000 --dump-dom http://a.test/index.html > "$home/dom.html" 2>"$home/chromium.err" ||
    fail "chromium in mm-record failed: $(tail -5 "$home/chromium.err")" || return 1
  # (An http page: an https one may not load the http script, mixed content.)
  grep -q "<title>a.test (app) (plain)</title>" "$home/dom.html" || fail "the page's scripts did not run: $(head -c 300 "$home/dom.html")" || return 1
  check_recording "$dir" "
for url in ['http://a.test/index.html', 'https://b.test/style.css', 'https://c.test/app.js', 'http://a.test/plain.js',
            'https://www.b.test/pixel.png', 'https://c.test/pixel.png?v=1', 'http://c.test/pixel.png?v=2']:
    assert any(e['response']['status'] == 200 for e in by_url(url)), url + ': no 200'
print('  chromium: page and 6 subresources over 3 origins, HTTP and HTTPS, all 200')
"
}

test_record_deterministic_pages_change_for_the_client_only() {
  local dir=$WORLD_TMP/rec-det out
  # Over one connection: a page (nginx gzips it, chunked), a script, the page again by HEAD.
  out=$(recording_shell "$dir" --deterministic -- sh -c 'curl -s --compressed -D - http://a.test/index.html \
    -o /dev/null -w "%{size_download} %{num_connects}\n" --next -s -D - http://a.test/plain.js \
    --next -s -I --compressed http://a.test/index.html; curl -s --compressed http://a.test/index.html' 2>&1)
  echo "$out" | grep -q "Math.random=random" || fail "the page came without the script: $out" || return 1
  echo "$out" | grep -q "^document.title += ' (plain)';" || fail "the script after it on the same connection: $out" || return 1
  echo "$out" | grep -qi "^transfer-encoding: chunked" && fail "the changed page kept chunked framing: $out" && return 1
  [ "$(echo "$out" | grep -ci '^content-encoding: gzip')" -ge 2 ] || fail "the page lost its gzip coding: $out" || return 1
  /usr/bin/python3 - "$(recording_har "$dir")" <<'EOF' || return 1
import json, sys
entries = json.loads(sys.argv[1])["log"]["entries"]
pages = [e for e in entries if e["request"]["url"] == "http://a.test/index.html" and e["request"]["method"] == "GET"]
assert len(pages) == 2 and len(entries) == 4, [(e["request"]["method"], e["request"]["url"]) for e in entries]
for e in pages:
    text = e["response"]["content"].get("text", "")
    assert "<title>a.test</title>" in text and "Math.random" not in text, text[:200]
    assert any(h["name"].lower() == "transfer-encoding" for h in e["response"]["headers"]), "recorded framing changed"
print("  the client got the page with the script (gzip, with a length, the connection reused); the recording has it as sent")
EOF
}

test_record_websocket_passes_through_unrecorded() {
  local dir=$WORLD_TMP/rec-ws
  ip netns exec "mmt-oc$$" /usr/bin/python3 "$top/tests/tools/ws_echo.py" serve 10.78.3.2 8080 &
  local server=$!
  wait_until 10 listening "mmt-oc$$" tcp 8080 || { kill "$server"; wait "$server" 2>/dev/null; fail "the WebSocket server did not start"; return 1; }
  local out; out=$(recording_shell "$dir" -- sh -c "curl -sf -o /dev/null http://c.test/style.css && /usr/bin/python3 $top/tests/tools/ws_echo.py call c.test 8080 hello" 2>&1)
  kill "$server"; wait "$server" 2>/dev/null
  echo "$out" | grep -q "^echo: hello 2hello 2.* 1413$" || fail "WebSocket echo through mm-record: $out" || return 1
  [ "$(ls "$dir" | wc -l)" = 1 ] || fail "expected only the HTTP pair recorded, got $(ls "$dir" | wc -l) files" || return 1
  echo "  WebSocket frames both ways after the upgrade; only the plain HTTP pair recorded"
}

test_record_malformed_http_is_relayed_and_the_proxy_lives_on() {
  local dir=$WORLD_TMP/rec-malformed
  # A server that answers anything with bytes that are not HTTP.
  ip netns exec "mmt-oc$$" /usr/bin/python3 -c '
import socket
s = socket.create_server(("10.78.3.2", 8081))
while True:
    c, _ = s.accept(); c.recv(65536); c.sendall(b"\x00\x01garbage that is not HTTP\r\n\r\n"); c.close()' &
  local server=$!
  wait_until 10 listening "mmt-oc$$" tcp 8081 || { kill "$server"; wait "$server" 2>/dev/null; fail "the malformed server did not start"; return 1; }
  local out; out=$(recording_shell "$dir" -- bash -c '
    exec 3<>/dev/tcp/c.test/80; printf "GET / HTTP/1.1\r\nHost: c.test\r\nno colon here\r\n\r\n" >&3; head -c 12 <&3; echo; exec 3>&-
    exec 4<>/dev/tcp/c.test/8081; printf "GET / HTTP/1.1\r\nHost: c.test\r\n\r\n" >&4; head -c 9 <&4 | tail -c 7; echo; exec 4>&-
    curl -sf -o /dev/null -w "after: %{http_code}\n" http://c.test/app.js' 2>&1)
  kill "$server"; wait "$server" 2>/dev/null
  echo "$out" | grep -q "^HTTP/1.1 400" || fail "a malformed request did not reach the server as sent: $out" || return 1
  echo "$out" | grep -q "^garbage$" || fail "a malformed response was not relayed: $out" || return 1
  echo "$out" | grep -q "^after: 200$" || fail "the proxy did not live on: $out" || return 1
  [ "$(ls "$dir" | wc -l)" = 1 ] || fail "expected 1 pair (the good one), got $(ls "$dir" | wc -l)" || return 1
  echo "  malformed request and response relayed as sent, unrecorded; the next request recorded"
}

test_record_refuses_quic_unless_allowed() {
  ip netns exec "mmt-oc$$" /usr/bin/python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("10.78.3.2", 443))
while True:
    data, peer = s.recvfrom(2048); s.sendto(b"pong", peer)' &
  local server=$!
  wait_until 10 listening "mmt-oc$$" udp 443 || { kill "$server"; wait "$server" 2>/dev/null; fail "the UDP server did not start"; return 1; }
  local probe='import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3); s.connect(("c.test", 443))
try:
    s.send(b"ping"); print(s.recv(100).decode())
except ConnectionRefusedError:
    print("refused")'
  local refused allowed
  refused=$(recording_shell "$WORLD_TMP/rec-quic1" -- /usr/bin/python3 -c "$probe" 2>/dev/null)
  allowed=$(recording_shell "$WORLD_TMP/rec-quic2" --allow-quic -- /usr/bin/python3 -c "$probe" 2>/dev/null)
  kill "$server"; wait "$server" 2>/dev/null
  [ "$refused" = refused ] && [ "$allowed" = pong ] || fail "UDP/443: default '$refused' (want refused), --allow-quic '$allowed' (want pong)"
}

test_record_disk_full_client_still_served_nothing_half_written() {
  local full=$WORLD_TMP/full
  mkdir -p "$full"
  mount -t tmpfs -o size=256k tmpfs "$full" || { echo "  cannot mount a tmpfs here"; return 1; }
  local out; out=$(recording_shell "$full/rec" -- sh -c 'curl -sf -o /dev/null -w "%{size_download}\n" "http://c.test/big.bin" -r 0-1048575; curl -sf -o /dev/null -w "%{size_download}\n" http://c.test/style.css' 2>&1)
  local leftovers; leftovers=$(ls -A "$full/rec" 2>/dev/null | grep -c '^\.tmp')
  local files; files=$(ls "$full/rec" 2>/dev/null | wc -l)
  umount "$full"
  echo "$out" | grep -q "^1048576$" || fail "the client did not get its 1 MiB: $out" || return 1
  echo "$out" | grep -q "No space left on device" || fail "the error was not reported: $out" || return 1
  [ "$leftovers" = 0 ] || fail "$leftovers half-written temporary files left" || return 1
  [ "$files" = 1 ] || fail "expected the small pair only, $files files" || return 1
  echo "  1 MiB response served, ENOSPC reported, no partial file; the small pair saved"
}

test_record_webrecord_alias() {
  "$BIN/mm-webrecord" --help | grep -q "records every HTTP" || fail "mm-webrecord --help"
}

# ----- A first day's frictions (issue 11)

test_record_nothing_captured_leaves_no_directory_in_the_way() {
  local dir=$WORLD_TMP/rec-nothing out status
  # Every connection fails (the client does not trust the local CA): nothing is recorded.
  out=$(recording_shell "$dir" -- curl -s -o /dev/null https://a.test/ 2>&1); status=$?
  [ ! -e "$dir" ] || fail "an empty $dir was left: $(ls -la "$dir")" || return 1
  echo "$out" | grep -q "0 pairs recorded; 1 connection failed; removed the empty directory $dir, so the same command can be run again" ||
    fail "status $status: $out" || return 1
  echo "$out" | grep -q -- "curl: --cacert \"\$(mm-ca path)\"" || fail "the TLS hint does not name curl --cacert: $out" || return 1
  # The retry, with the same directory name, works.
  out=$(recording_shell "$dir" -- curl -sf -o /dev/null --cacert "$WORLD_TMP/mmca/ca.pem" https://a.test/ 2>&1) ||
    fail "the retry failed: $out" || return 1
  echo "$out" | grep -q "^mm-record: 1 pair recorded in $dir$" || fail "the retry said: $out" || return 1
  echo "  nothing recorded: directory removed, curl hint given; the retry recorded: $out"
}

test_record_append_adds_pages_to_one_recording() {
  local dir=$WORLD_TMP/rec-append ca=$WORLD_TMP/mmca/ca.pem out status
  recording_shell "$dir" -- curl -sf -o /dev/null http://a.test/index.html || fail "first page" || return 1
  local first; first=$(ls "$dir"); local sum; sum=$(md5sum < "$dir/$first")
  out=$(recording_shell --append "$dir" -- curl -sf -o /dev/null -o /dev/null --cacert "$ca" https://b.test/style.css https://c.test/app.js 2>&1) ||
    fail "--append: $out" || return 1
  echo "$out" | grep -q "^mm-record: 2 pairs recorded and added to $dir$" || fail "--append said: $out" || return 1
  [ "$(ls "$dir" | wc -l)" = 3 ] && [ "$(md5sum < "$dir/$first")" = "$sum" ] ||
    fail "after --append: $(ls "$dir"), first file $(md5sum < "$dir/$first") (was $sum)" || return 1
  out=$(replay_shell "$dir" -- sh -c "curl -s -o /dev/null -o /dev/null -o /dev/null -w '%{http_code} ' --cacert $ca http://a.test/index.html https://b.test/style.css https://c.test/app.js")
  [ "$out" = "200 200 200 " ] || fail "replay of the appended recording: $out" || return 1
  # Nothing to append to, or not a recording: refused before the command runs, nothing written.
  out=$(recording_shell --append "$WORLD_TMP/rec-none" -- echo ran 2>&1); status=$?
  [ "$status" = 1 ] && ! echo "$out" | grep -q "^ran" && echo "$out" | grep -q "rec-none does not exist: nothing to append to" &&
    [ ! -e "$WORLD_TMP/rec-none" ] || fail "missing DIR: status $status: $out" || return 1
  out=$(recording_shell --append "$WORLD_TMP/web" -- echo ran 2>&1); status=$?
  [ "$status" = 1 ] && ! echo "$out" | grep -q "^ran" && echo "$out" | grep -q "$WORLD_TMP/web is not a recording: . is a directory" ||
    fail "a directory that is not a recording: status $status: $out" || return 1
  echo "  two pages in one recording (the first file untouched), replayed; missing DIR and a non-recording refused"
}

test_mm_ca_path_creates_nothing() {
  local cadir=$WORLD_TMP/ca-path out status
  out=$(in_world env MAHIMAHI_CA_DIR="$cadir" "$BIN/mm-ca" path 2>"$WORLD_TMP/ca-path.err"); status=$?
  [ "$status" = 1 ] && [ "$out" = "$cadir/ca.pem" ] && [ ! -e "$cadir" ] ||
    fail "no CA: status $status, '$out', $cadir $( [ -e "$cadir" ] && echo created)" || return 1
  grep -q "no CA in $cadir yet: mm-ca create makes one" "$WORLD_TMP/ca-path.err" || fail "$(cat "$WORLD_TMP/ca-path.err")" || return 1
  # A script's curl then fails, naming the file.
  out=$(in_world curl -s -S --cacert "$(in_world env MAHIMAHI_CA_DIR="$cadir" "$BIN/mm-ca" path 2>/dev/null)" https://a.test/ 2>&1); status=$?
  [ "$status" = 77 ] && echo "$out" | grep -q "$cadir/ca.pem" || fail "curl: status $status: $out" || return 1
  in_world env MAHIMAHI_CA_DIR="$cadir" "$BIN/mm-ca" create >/dev/null || return 1
  out=$(in_world env MAHIMAHI_CA_DIR="$cadir" "$BIN/mm-ca" path 2>&1); status=$?
  [ "$status" = 0 ] && [ "$out" = "$cadir/ca.pem" ] || fail "with a CA: status $status: $out" || return 1
  echo "  without a CA: the path, status 1, nothing created, curl fails with status 77 naming it; with one: status 0"
}

test_recording_show_takes_paths_and_decodes() {
  local dir=$WORLD_TMP/rec-show
  recording_shell "$dir" -- curl -sf --cacert "$WORLD_TMP/mmca/ca.pem" --compressed -o /dev/null https://b.test/app.js ||
    fail "recording failed" || return 1
  local f; f=$(ls "$dir")
  local by_name by_path by_completion in_dir
  by_name=$("$BIN/mm-recording" show "$dir" "$f" | sed 1d) && by_path=$("$BIN/mm-recording" show "$dir/$f" | sed 1d) &&
    by_completion=$("$BIN/mm-recording" show "$dir" "$dir/$f" | sed 1d) &&
    in_dir=$(cd "$dir" && "$BIN/mm-recording" show "$f" | sed 1d) || fail "a form of show failed" || return 1
  [ "$by_path" = "$by_name" ] && [ "$by_completion" = "$by_name" ] && [ "$in_dir" = "$by_name" ] ||
    fail "show by path differs from show by name" || return 1
  echo "$by_name" | grep -q "gzip-compressed; --decode shows it decoded>$" || fail "summary: $by_name" || return 1
  "$BIN/mm-recording" show --decode "$dir/$f" > "$WORLD_TMP/show.txt" || fail "show --decode failed" || return 1
  grep -q "decoded from gzip) ----$" "$WORLD_TMP/show.txt" && grep -qF "document.title += ' (app)';" "$WORLD_TMP/show.txt" ||
    fail "show --decode: $(cat "$WORLD_TMP/show.txt")" || return 1
  local err status
  err=$("$BIN/mm-recording" show "$dir" 2>&1); status=$?
  [ "$status" = 2 ] && echo "$err" | grep -q "show takes one record file" || fail "show DIR: $status $err" || return 1
  err=$("$BIN/mm-recording" show "$dir" /etc/hostname 2>&1); status=$?
  [ "$status" = 2 ] && echo "$err" | grep -q "/etc/hostname is not in $dir" || fail "show DIR OTHER: $status $err" || return 1
  echo "  show DIR FILE, DIR/FILE, DIR DIR/FILE and FILE in DIR agree; --decode shows the gzip body decoded"
}
