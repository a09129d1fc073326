# Integration tests of mm-replay, against recordings made by mm-record from the web origins of
# web.sh (paused during replay, to prove nothing reaches them) and against crafted recordings.

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
  echo "  closest query, recorded order then last, non-default port, User-Agent (and --ignore-user-agent), explained 404"
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
  ! grep -q "no recorded response" "$home/err" || fail "requests missed: $(grep 'no recorded response' "$home/err" | head -3)" || return 1
  echo "  chromium (CA trusted through NSS) loads the recorded 3-origin page from the replay, every request found"
}
