# SPDX-License-Identifier: GPL-3.0-or-later
# Integration tests of HTTP/3 replay (mm-replay --http3, mm-pageload --http3): Chromium loads the
# corpus pages with every https response over h3 (checked per response by mm-pageload), as an
# ordinary user with its sandbox on, behind nested shells; the QUIC server survives garbage.
# Sourced by tests/run-all after world.sh.

h3_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# A home for the test user with the corpus and a trusted CA (made once per run).
h3_home() {
  H3_HOME=$WORLD_TMP/h3-home
  corpus_user_home "$H3_HOME"
}

# As the test user, in the world: mm-replay PAGE REPLAY-OPTIONS... -- COMMAND...
h3_replay() {
  local page=$1; shift
  AS_USER=$TEST_USER in_world env HOME="$H3_HOME" MAHIMAHI_CA_DIR="$H3_HOME/ca" \
    "$BIN/mm-replay" "$H3_HOME/corpus/$page" --ignore-user-agent "$@"
}

# Every row of a CSV of mm-pageload is ok, and every https origin it lists went over h3.
h3_rows_ok() {  # CSV EXPECTED-ROWS
  /usr/bin/python3 - "$1" "$2" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
try:
    assert len(rows) == int(sys.argv[2]), "%d rows, expected %s" % (len(rows), sys.argv[2])
    for row in rows:
        assert row["status"] == "ok", "%s run %s: %s %s" % (row["url"], row["run"], row["status"], row["reason"])
        pairs = dict(p.split("=") for p in row["protocols"].split())
        https = {o: p for o, p in pairs.items() if o.startswith("https://")}
        assert https, "no https origin in %s" % row["protocols"]
        assert set(https.values()) == {"h3"}, row["protocols"]
        assert all(p == "h1" for o, p in pairs.items() if o.startswith("http://")), row["protocols"]
except AssertionError as e:
    print("FAIL:", e); sys.exit(1)
EOF
}

test_http3_corpus_pages_load_over_h3_behind_nested_shells_as_a_user() {
  command -v chromium >/dev/null || { echo "  chromium not installed"; return 1; }
  h3_home || return 1
  local name url csv err over https_pairs trace=$h3_top/traces/constant-12Mbps
  while read -r name url; do
    csv=$H3_HOME/$name.csv err=$H3_HOME/$name.err
    https_pairs=$("$BIN/mm-recording" ls --wide "$H3_HOME/corpus/$name" | awk 'NR > 1 && $2 == "https"' | wc -l)
    h3_replay "$name" --http3 --verbose -- "$BIN/mm-delay" 10 "$BIN/mm-link" "$trace" "$trace" -- \
      "$BIN/mm-pageload" --http3 --timeout 60 --csv "$csv" "$url" >/dev/null 2>"$err" ||
      fail "$name: mm-pageload --http3 in mm-replay --http3 failed: $(grep -v '^\[' "$err" | tail -4)" || return 1
    h3_rows_ok "$csv" 1 || return 1
    over=$(sed -n 's/^mm-replay: .* not found (\([0-9]*\) over HTTP\/3)$/\1/p' "$err")
    [ -n "$over" ] && [ "$over" -ge "$https_pairs" ] ||
      fail "$name: ${over:-no} requests over HTTP/3, $https_pairs https pairs recorded: $(grep '^mm-replay' "$err")" || return 1
    echo "  $name: $url ok, $over requests over HTTP/3 ($https_pairs https pairs recorded), PLT $(csv_field "$csv" 1 plt_ms) ms"
  done < <(corpus_pages)
  check_no_chromium
}

test_http3_forced_load_fails_naming_quic_when_the_replay_has_no_http3() {
  h3_home || return 1
  local csv=$H3_HOME/no-h3.csv err=$H3_HOME/no-h3.err
  h3_replay app -- "$BIN/mm-pageload" --http3 --timeout 30 --csv "$csv" https://app.test/ >/dev/null 2>"$err" &&
    fail "a forced HTTP/3 load without HTTP/3 servers succeeded" && return 1
  grep -q 'QUIC or HTTP/3 failed (net::ERR_QUIC_[A-Z_]*; with --http3, is the replay running with --http3?)' "$csv" ||
    fail "the row does not say why: $(cat "$csv")" || return 1
  echo "  $(tail -1 "$csv" | cut -d, -f3-4)"
  check_no_chromium
}

test_http3_single_server_and_the_alt_svc_policy() {
  h3_home || return 1
  local csv=$H3_HOME/single.csv err=$H3_HOME/single.err
  h3_replay shop --http3 --single-server -- "$BIN/mm-pageload" --http3 --csv "$csv" http://shop.test/ >/dev/null 2>"$err" ||
    fail "--single-server --http3: $(grep -v '^\[' "$err" | tail -3)" || return 1
  h3_rows_ok "$csv" 1 || return 1
  echo "  --single-server: shop loads over h3 from one address"
  # Alt-Svc over TCP: none without --http3 (nothing answers QUIC), h3 on the served port with --advertise-h3.
  local headers
  headers=$(h3_replay app -- curl -sS --http1.1 --cacert "$H3_HOME/ca/ca.pem" -D - -o /dev/null https://app.test/ 2>&1) || fail "curl: $headers" || return 1
  ! echo "$headers" | grep -qi '^alt-svc' || fail "Alt-Svc without --http3: $headers" || return 1
  headers=$(h3_replay app --advertise-h3 -- curl -sS --http1.1 --cacert "$H3_HOME/ca/ca.pem" -D - -o /dev/null https://app.test/ 2>&1) || fail "curl: $headers" || return 1
  echo "$headers" | grep -qi '^alt-svc: h3=":443"; ma=86400' || fail "no Alt-Svc h3 with --advertise-h3: $headers" || return 1
  echo "  Alt-Svc: absent without --http3, h3=\":443\" with --advertise-h3"
}

test_http3_server_survives_garbage_and_a_flood_of_bogus_initials() {
  h3_home || return 1
  local csv=$H3_HOME/flood.csv err=$H3_HOME/flood.err
  # In the replay: 3000 datagrams to the page's HTTPS server from 300 source ports (random bytes,
  # truncated Initials, full-size Initials that do not decrypt, short headers for no connection,
  # empty ones),
  # then a page load over h3, then the same flood again while a second load runs.
  cat > "$H3_HOME/flood.py" <<'EOF'
import os, random, socket, sys
ip = socket.gethostbyname("app.test")
random.seed(7)
socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(300)]
for i in range(3000):
    kind = i % 4
    if kind == 0:
        data = os.urandom(random.randint(1, 1500))
    elif kind == 1:  # a long-header Initial of QUIC v1, cut short
        data = bytes([0xc0]) + (1).to_bytes(4, "big") + bytes([8]) + os.urandom(8) + bytes([8]) + os.urandom(random.randint(0, 40))
    elif kind == 2:  # a whole Initial (a datagram of 1226 bytes) that does not decrypt
        data = (bytes([0xc3]) + (1).to_bytes(4, "big") + bytes([8]) + os.urandom(8) + bytes([8]) + os.urandom(8)
                + b"\x00" + bytes([0x44, 0xb0]) + os.urandom(1200))
    else:  # a short header for a connection that does not exist
        data = bytes([0x40]) + os.urandom(random.randint(20, 1200))
    if i % 100 == 0:  # an empty datagram (ngtcp2 asserts on one: the server must not pass it on)
        data = b""
    try:
        socks[i % len(socks)].sendto(data, (ip, 443))
    except OSError:
        pass
print("sent 3000")
EOF
  chown "$TEST_USER" "$H3_HOME/flood.py"
  h3_replay app --http3 --verbose -- sh -c '
    python3 "$1" >/dev/null && "$2" --http3 --csv "$3" https://app.test/ >/dev/null &&
      { python3 "$1" >/dev/null & "$2" --http3 --csv "$3" https://app.test/ >/dev/null; s=$?; wait; exit $s; }' \
    sh "$H3_HOME/flood.py" "$BIN/mm-pageload" "$csv" 2>"$err" ||
    fail "loads during the flood failed: $(grep -v '^\[' "$err" | tail -4)" || return 1
  h3_rows_ok "$csv" 1 || return 1
  local summary dropped
  summary=$(grep '^mm-replay: HTTP/3: ' "$err") || fail "no HTTP/3 summary: $(tail -3 "$err")" || return 1
  dropped=$(echo "$summary" | sed -n 's/.*, \([0-9]*\) datagrams\{0,1\} dropped.*/\1/p')
  [ -n "$dropped" ] && [ "$dropped" -ge 4000 ] || fail "expected at least 4000 of the 6000 datagrams dropped: $summary" || return 1
  echo "  both loads ok over h3; ${summary#mm-replay: }"
  check_no_chromium
}

test_http3_discovery_follows_alt_svc() {
  h3_home || return 1
  local csv=$H3_HOME/discovery.csv err=$H3_HOME/discovery.err
  # Every origin advertises h3: the measured loads (after the priming one) are all h3.
  h3_replay app --advertise-h3 -- "$BIN/mm-delay" 5 "$BIN/mm-pageload" --http3-discovery --csv "$csv" https://app.test/ \
    >/dev/null 2>"$err" || fail "--http3-discovery with --advertise-h3: $(grep -v '^\[' "$err" | tail -3)" || return 1
  h3_rows_ok "$csv" 1 || return 1
  # No origin advertises it (the corpus recorded no Alt-Svc): the same load stays on TCP.
  h3_replay app --http3 -- "$BIN/mm-pageload" --http3-discovery --csv "$csv" https://app.test/ >/dev/null 2>"$err" ||
    fail "--http3-discovery with --http3: $(grep -v '^\[' "$err" | tail -3)" || return 1
  local protocols; protocols=$(csv_field "$csv" 1 protocols)
  [ "$(csv_field "$csv" 1 status)" = ok ] && ! echo "$protocols" | grep -q '=h3' ||
    fail "without Alt-Svc the discovery load should stay on TCP: $(tail -1 "$csv")" || return 1
  echo "  with Alt-Svc: every https origin over h3; without: $(echo "$protocols" | tr ' ' '\n' | sed 's/.*=//' | sort | uniq -c | xargs)"
  check_no_chromium
}

# A recording of one HTTPS origin (10.100.0.1, a.test) with COUNT objects of 10 B to 150 KB, and
# its manifest for bench/h3-load (host, path, status, SHA-256 of the body).
h3_load_recording() {  # DIR COUNT [WAIT-MS]: WAIT-MS, a browser's timings: 10 ms handshakes, that wait
  /usr/bin/python3 - "$1.har" "$2" "$1.manifest" "${3:-}" <<'PY'
import hashlib, json, sys
entries, manifest = [], []
timings = {"send": 0, "wait": 1, "receive": 0}
if sys.argv[4]:
    timings = {"connect": 10, "send": 0, "wait": float(sys.argv[4]), "receive": 0}
for i in range(int(sys.argv[2])):
    size = [10, 1000, 20000, 150000][i % 4]
    body = (("object %d " % i) * (size // 8 + 1))[:size]
    entries.append({"startedDateTime": "2026-01-01T00:00:00.000Z", "time": 1,
        "request": {"method": "GET", "url": "https://a.test/obj/%d" % i, "httpVersion": "HTTP/1.1",
                    "headers": [{"name": "Host", "value": "a.test"}], "queryString": [], "cookies": [],
                    "headersSize": -1, "bodySize": 0},
        "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1",
                     "headers": [{"name": "Content-Type", "value": "text/plain"}], "cookies": [],
                     "content": {"size": len(body), "mimeType": "text/plain", "text": body},
                     "redirectURL": "", "headersSize": -1, "bodySize": len(body)},
        "cache": {}, "timings": timings, "serverIPAddress": "10.100.0.1"})
    manifest.append("a.test\t/obj/%d\t200\t%s" % (i, hashlib.sha256(body.encode()).hexdigest()))
json.dump({"log": {"version": "1.2", "creator": {"name": "test", "version": "1"}, "entries": entries}}, open(sys.argv[1], "w"))
open(sys.argv[3], "w").write("\n".join(manifest) + "\n")
PY
  "$BIN/mm-recording" from-har "$1.har" "$1" >/dev/null
}

test_http3_connections_migrate_and_recover_from_loss_behind_nested_shells() {
  h3_home || return 1
  local load=${MAHIMAHI_BUILD_DIR:-}/bench/h3-load dir=$H3_HOME/corpus/load out=$H3_HOME/load.out err=$H3_HOME/load.err
  [ -x "$load" ] || fail "no bench/h3-load in the build ($load)" || return 1
  h3_load_recording "$dir" 40 || fail "cannot make the recording" || return 1
  chown -R "$TEST_USER" "$dir" "$dir.manifest"
  # 40 connections x 30 requests, each connection moving to a new UDP port after 10, every
  # certificate and body checked, across 10 ms of delay and 1 % loss each way.
  h3_replay load --http3 --verbose -- "$BIN/mm-delay" 5 "$BIN/mm-loss" uplink 0.01 downlink 0.01 -- \
    "$load" --ca "$H3_HOME/ca/ca.pem" --connections 40 --requests 30 --in-flight 4 --migrate-after 10 \
    --manifest "$dir.manifest" 10.100.0.1:443 >"$out" 2>"$err" ||
    fail "h3-load failed: $(cat "$out") $(grep -v '^\[' "$err" | tail -3)" || return 1
  grep -q '^connections 40 (40 handshakes), requests 1200: ok 1200, wrong status 0, wrong body 0, failed 0$' "$out" ||
    fail "$(cat "$out")" || return 1
  grep -q '^migrated 40 connections to a new UDP port$' "$out" || fail "$(cat "$out")" || return 1
  # The server kept each connection across its move: 40 connections, not 80.
  grep -q '^mm-replay: HTTP/3: 40 connections (40 handshakes), 1200 requests' "$err" ||
    fail "the server's count: $(grep '^mm-replay: HTTP/3' "$err")" || return 1
  echo "  $(head -1 "$out"); $(sed -n 2p "$out"); $(grep '^latency' "$out")"
}

# --timing=recorded over QUIC: every response waits its think time (100 ms: a browser's HAR with
# 10 ms handshakes and 110 ms waits) and the server 5 ms away each way, while the other streams of
# the connection and the other connections go on (4 requests in flight on each of 3 connections).
test_http3_think_times_are_replayed_over_quic() {
  h3_home || return 1
  local load=${MAHIMAHI_BUILD_DIR:-}/bench/h3-load dir=$H3_HOME/corpus/think out=$H3_HOME/think.out err=$H3_HOME/think.err
  [ -x "$load" ] || fail "no bench/h3-load in the build ($load)" || return 1
  h3_load_recording "$dir" 12 110 || fail "cannot make the recording" || return 1
  chown -R "$TEST_USER" "$dir" "$dir.manifest"
  local client=("$load" --ca "$H3_HOME/ca/ca.pem" --connections 3 --requests 12 --in-flight 4 --manifest "$dir.manifest" 10.100.0.1:443)
  h3_replay think --http3 --timing=recorded --verbose -- "${client[@]}" >"$out" 2>"$err" ||
    fail "h3-load failed: $(cat "$out") $(grep -v '^\[' "$err" | tail -3)" || return 1
  grep -q '^mm-replay: timing: 1 of 1 origin at their recorded distances (round trips 10.0 to 10.0 ms); think times as recorded (12 of 12 responses wait, median 100.0 ms' "$err" ||
    fail "the timing summary: $(grep '^mm-replay' "$err")" || return 1
  set -- $(sed -n 's/^latency ms: p50 \([0-9.]*\), p90 \([0-9.]*\),.*/\1 \2/p' "$out")
  check_range "latency p50 with think times (ms)" "$1" 110 140 || return 1
  # The 150 kB objects take a few round trips more (slow start); four waits one after another on a
  # connection would take 400 ms.
  check_range "latency p90 (ms): streams wait side by side" "$2" 110 250 || return 1
  h3_replay think --http3 -- "${client[@]}" >"$out" 2>"$err" || fail "h3-load failed: $(cat "$out")" || return 1
  set -- $(sed -n 's/^latency ms: p50 \([0-9.]*\),.*/\1/p' "$out")
  check_range "latency p50 without --timing (ms)" "$1" 0 20
}

test_http3_page_loads_behind_a_cellular_trace() {
  h3_home || return 1
  local up=$CELLULAR/Verizon-LTE-short.up down=$CELLULAR/Verizon-LTE-short.down csv=$H3_HOME/cellular.csv err=$H3_HOME/cellular.err
  [ -r "$up" ] && [ -r "$down" ] || fail "no cellular traces in $CELLULAR (MAHIMAHI_CELLULAR_TRACES)" || return 1
  cp "$up" "$down" "$H3_HOME/" && chown "$TEST_USER" "$H3_HOME"/Verizon-LTE-short.*
  # Verizon LTE (Mahimahi's recorded traces) and 40 ms of delay: h3 through a varying link, twice.
  h3_replay news --http3 -- "$BIN/mm-delay" 20 "$BIN/mm-link" "$H3_HOME/Verizon-LTE-short.up" \
    "$H3_HOME/Verizon-LTE-short.down" -- "$BIN/mm-pageload" --http3 --runs 2 --csv "$csv" http://www.news.test/ \
    >/dev/null 2>"$err" || fail "mm-pageload --http3 behind the cellular trace: $(grep -v '^\[' "$err" | tail -3)" || return 1
  h3_rows_ok "$csv" 2 || return 1
  echo "  news over h3 behind Verizon LTE + 40 ms: PLT $(csv_field "$csv" 1 plt_ms) and $(csv_field "$csv" 2 plt_ms) ms"
  check_no_chromium
}
