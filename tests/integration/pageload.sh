# SPDX-License-Identifier: GPL-3.0-or-later
# Integration tests of mm-pageload: real headless Chromium (Debian's) loading pages of the test
# world's origins (world.sh: origins_create), directly and inside shells.

# The pages: a dependency chain of known depth 4 (the document, a script on b.test that writes
# a script on c.test that writes an image on www.b.test, each request only once the one before
# has run), the same page with its content hidden until the chain's first script (the same bytes
# painted late), and a page whose image never arrives.
PAGELOAD_CHAIN_DEPTH=4
pageload_pages() {
  origins_create || return 1
  local web=$WORLD_TMP/web
  [ -f "$web/a/www/a.test/chain.html" ] && return 0
  local body='<h1>A page in a chain</h1><div style="width:600px;height:400px;background:#c33"></div>
<p>Text that paints with the page.</p><script src="https://b.test/chain1.js"></script>'
  printf '<!doctype html><html><head><title>chain</title></head><body>%s</body></html>\n' "$body" \
    > "$web/a/www/a.test/chain.html"
  printf '<!doctype html><html><head><title>chain</title></head><body style="visibility:hidden">%s</body></html>\n' \
    "$body" > "$web/a/www/a.test/late.html"
  # document.write from a parser-blocking script: each next object is parser-inserted, so it
  # certainly holds the load event (script-inserted ones need not, and did not always).
  echo 'document.body.style.visibility = "visible";
document.write("<script src=\"https://c.test/chain2.js\"></" + "script>");' \
    > "$web/b/www/b.test/chain1.js"
  echo 'document.write("<img src=\"https://www.b.test/pixel.png?chain\" alt=\"\">");' \
    > "$web/c/www/c.test/chain2.js"
  printf '<!doctype html><html><body><h1>never loads</h1><img src="http://%s:8081/never.png"></body></html>\n' \
    "$SERVER_IP" > "$web/a/www/a.test/never.html"
  chmod a+r "$web/a/www/a.test/"*.html "$web/b/www/b.test/chain1.js" "$web/c/www/c.test/chain2.js"
}

# mm-pageload in the world, trusting the origins' CA: pageload [SHELL...] -- [OPTIONS] URL...
pageload() {
  local shell=()
  while [ "$1" != -- ]; do shell+=("$1"); shift; done
  shift
  in_world "${shell[@]}" "$BIN/mm-pageload" --ca "$ORIGIN_CA" "$@"
}

# Chromium processes (not zombies) in the world's network namespace: mm-pageload's only.
world_chromium() {
  local pid cmdline
  for pid in $(ip netns pids "$WORLD" 2>/dev/null); do
    [ "$(process_state "$pid")" = Z ] && continue
    cmdline=$(tr '\0' ' ' 2>/dev/null < "/proc/$pid/cmdline") || continue
    case "$cmdline" in *chrom*) echo "$pid $cmdline" ;; esac
  done
}
no_world_chromium() { [ -z "$(world_chromium)" ]; }
check_no_chromium() {
  wait_until 10 no_world_chromium || { fail "Chromium processes left: $(world_chromium | cut -c1-120)"; return 1; }
  echo "  no Chromium process left"
}

# A field of the CSV's rows: csv_field FILE ROW COLUMN (ROW from 1, after the header).
csv_field() {
  /usr/bin/python3 -c 'import csv, sys; rows = list(csv.DictReader(open(sys.argv[1]))); print(rows[int(sys.argv[2]) - 1][sys.argv[3]])' "$@"
}

# A server in the server host that accepts connections on port 8081 and never answers.
silent_server_start() {
  ip netns exec "$SERVER" /usr/bin/python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("'"$SERVER_IP"'", 8081)); s.listen(64)
held = []
while True: held.append(s.accept())
' &
  SILENT_SERVER=$!
  wait_until 10 listening "$SERVER" tcp 8081 || { fail "the silent server did not start"; return 1; }
}
silent_server_stop() { kill "$SILENT_SERVER" 2>/dev/null; wait "$SILENT_SERVER" 2>/dev/null; return 0; }

test_pageload_reports_plausible_metrics() {
  pageload_pages || return 1
  local out=$WORLD_TMP/pl-basic
  mkdir -p "$out"
  pageload -- --runs 2 --csv "$out/loads.csv" --json "$out/loads.json" \
    https://a.test/chain.html http://a.test/index.html > "$out/summary" 2> "$out/err" ||
    fail "mm-pageload exited $?: $(cat "$out/err")" || return 1
  grep -q "https://a.test/chain.html: 2 of 2 ok" "$out/summary" || fail "summary: $(cat "$out/summary")" || return 1
  [ "$(grep -c '^mm-pageload: \[' "$out/err")" = 4 ] || fail "expected 4 progress lines: $(cat "$out/err")" || return 1
  /usr/bin/python3 - "$out/loads.csv" "$out/loads.json" <<'EOF' || return 1
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
objects = json.load(open(sys.argv[2]))
try:
    assert len(rows) == 4 and len(objects) == 4, (len(rows), len(objects))
    for row, obj in zip(rows, objects):
        # The CSV and the JSON say the same.
        assert row["url"] == obj["url"] and int(row["run"]) == obj["run"] and row["status"] == obj["status"], (row, obj)
        for m in ("plt_ms", "fcp_ms", "lcp_ms", "speed_index_ms", "bytes", "requests", "origins", "frames"):
            assert obj[m] is not None and abs(float(row[m]) - obj[m]) < 0.01, (m, row[m], obj[m])
        assert row["protocols"] == " ".join("%s=%s" % kv for kv in sorted(obj["protocols"].items())), row["protocols"]
        assert obj["status"] == "ok", obj
        assert 0 < obj["plt_ms"] < 30000, obj["plt_ms"]
        assert 0 < obj["fcp_ms"] and obj["lcp_ms"] >= obj["fcp_ms"], obj
        # A fast page may paint once, in one frame (blank before it, as the speed index counts).
        assert obj["frames"] >= 1 and 0 < obj["speed_index_ms"], obj
        assert set(obj["protocols"].values()) <= {"h1", "h2"}, obj["protocols"]
        if obj["url"].endswith("chain.html"):
            # The document, two scripts and the image at least (and the favicon, if asked for).
            assert 4 <= obj["requests"] <= 6, obj["requests"]
            assert sorted(obj["protocols"]) == ["https://a.test:443", "https://b.test:443", "https://c.test:443",
                                                "https://www.b.test:443"], obj
            assert obj["origins"] == 4, obj["origins"]
        else:
            # index.html: its 6 subresources over 4 origins (http://a.test twice: page and plain.js).
            assert 7 <= obj["requests"] <= 8 and obj["origins"] == 5, obj
        assert obj["bytes"] > 1000, obj["bytes"]
    print("  4 loads ok, CSV and JSON agree; chain.html: %d requests, 4 origins (h1), PLT %.0f ms, FCP %.0f ms"
          % (objects[0]["requests"], objects[0]["plt_ms"], objects[0]["fcp_ms"]))
except AssertionError as e:
    print("FAIL:", e); sys.exit(1)
EOF
  check_no_chromium
}

test_pageload_plt_grows_with_the_delay_by_the_dependency_depth() {
  pageload_pages || return 1
  local out=$WORLD_TMP/pl-delay
  mkdir -p "$out"
  pageload -- --runs 3 --csv "$out/direct.csv" https://a.test/chain.html > /dev/null 2> "$out/err" ||
    fail "direct: $(cat "$out/err")" || return 1
  pageload "$BIN/mm-delay" 100 -- --runs 3 --csv "$out/delayed.csv" https://a.test/chain.html > /dev/null 2> "$out/err" ||
    fail "in mm-delay 100: $(cat "$out/err")" || return 1
  /usr/bin/python3 - "$out/direct.csv" "$out/delayed.csv" "$PAGELOAD_CHAIN_DEPTH" <<'EOF'
import csv, statistics, sys
direct = [float(r["plt_ms"]) for r in csv.DictReader(open(sys.argv[1]))]
rows = list(csv.DictReader(open(sys.argv[2])))
delayed = [float(r["plt_ms"]) for r in rows]
depth = int(sys.argv[3])
# Each level of the chain asks only after the one before arrived: at least one round trip of
# 200 ms each (mm-delay 100 delays both directions), more with new connections and TLS.
gain = statistics.median(delayed) - statistics.median(direct)
print("  median PLT direct %.0f ms, in mm-delay 100 %.0f ms: +%.0f ms (at least %d x 200 ms)"
      % (statistics.median(direct), statistics.median(delayed), gain, depth))
if gain < depth * 200:
    print("FAIL: the delay added %.0f ms, less than the chain's %d round trips" % (gain, depth)); sys.exit(1)
for r in rows:
    if not float(r["fcp_ms"]) <= float(r["plt_ms"]):
        print("FAIL: FCP %s after PLT %s" % (r["fcp_ms"], r["plt_ms"])); sys.exit(1)
EOF
  [ $? = 0 ] || return 1
  check_no_chromium
}

test_pageload_speed_index_is_smaller_for_a_page_that_paints_early() {
  pageload_pages || return 1
  local out=$WORLD_TMP/pl-si
  mkdir -p "$out"
  pageload "$BIN/mm-delay" 50 -- --runs 3 --json "$out/si.json" https://a.test/chain.html https://a.test/late.html \
    > /dev/null 2> "$out/err" || fail "mm-pageload: $(cat "$out/err")" || return 1
  /usr/bin/python3 - "$out/si.json" <<'EOF'
import json, statistics, sys
loads = json.load(open(sys.argv[1]))
si = {"early": [], "late": []}
for l in loads:
    assert l["status"] == "ok", l
    if not 0 < l["speed_index_ms"] <= l["plt_ms"]:
        print("FAIL: %s: SI %.1f not in (0, PLT %.1f]" % (l["url"], l["speed_index_ms"], l["plt_ms"])); sys.exit(1)
    si["late" if l["url"].endswith("late.html") else "early"].append(l["speed_index_ms"])
early, late = statistics.median(si["early"]), statistics.median(si["late"])
print("  median SI: painted early %.0f ms, the same bytes painted late %.0f ms (each within (0, PLT])" % (early, late))
# The late page shows nothing until its first script arrived, a round trip (100 ms) at least
# after the document.
if not late >= early + 100:
    print("FAIL: the late painter's SI is not 100 ms above the early one's"); sys.exit(1)
EOF
  [ $? = 0 ] || return 1
  check_no_chromium
}

test_pageload_a_page_that_never_loads_is_a_timeout_row() {
  pageload_pages || return 1
  silent_server_start || return 1
  local out=$WORLD_TMP/pl-never start rc elapsed
  mkdir -p "$out"
  start=$(date +%s%N)
  # timeout(1) only guards against a hang of mm-pageload itself.
  timeout 120 ip netns exec "$WORLD" "$BIN/mm-pageload" --timeout 3 --csv "$out/loads.csv" http://a.test/never.html \
    > "$out/summary" 2> "$out/err"
  rc=$?
  elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
  silent_server_stop
  [ "$rc" = 1 ] || fail "exit status $rc, expected 1: $(cat "$out/err")" || return 1
  [ "$(csv_field "$out/loads.csv" 1 status)" = timeout ] || fail "row: $(cat "$out/loads.csv")" || return 1
  csv_field "$out/loads.csv" 1 reason | grep -q "no load event within 3 s" || fail "reason: $(cat "$out/loads.csv")" || return 1
  [ -z "$(csv_field "$out/loads.csv" 1 plt_ms)" ] || fail "a timeout with a PLT: $(cat "$out/loads.csv")" || return 1
  [ -n "$(csv_field "$out/loads.csv" 1 fcp_ms)" ] || fail "the heading painted, but no FCP: $(cat "$out/loads.csv")" || return 1
  check_range "seconds to report the 3 s timeout" "$((elapsed / 1000))" 3 20 || return 1
  check_no_chromium
}

test_pageload_unreachable_hosts_are_error_rows_naming_the_reason() {
  pageload_pages || return 1
  local out=$WORLD_TMP/pl-unreachable
  mkdir -p "$out"
  in_world "$BIN/mm-pageload" --csv "$out/loads.csv" http://nowhere.test/ http://a.test:81/ https://a.test/chain.html \
    > /dev/null 2> "$out/err"
  [ $? = 1 ] || fail "exit status should be 1: $(cat "$out/err")" || return 1
  local expect=("DNS failure (net::ERR_NAME_NOT_RESOLVED)" "connection refused (net::ERR_CONNECTION_REFUSED)"
    "certificate error (net::ERR_CERT_AUTHORITY_INVALID)")  # the origins' CA not given
  local i
  for i in 1 2 3; do
    [ "$(csv_field "$out/loads.csv" $i status)" = error ] &&
      [ "$(csv_field "$out/loads.csv" $i reason)" = "${expect[$((i - 1))]}" ] ||
      fail "row $i: $(sed -n "$((i + 1))p" "$out/loads.csv"), expected ${expect[$((i - 1))]}" || return 1
    echo "  $(csv_field "$out/loads.csv" $i url): $(csv_field "$out/loads.csv" $i reason)"
  done
  check_no_chromium
}

test_pageload_sigterm_mid_load_leaves_no_chromium() {
  pageload_pages || return 1
  silent_server_start || return 1
  local out=$WORLD_TMP/pl-term pid rc
  mkdir -p "$out/tmp"
  ip netns exec "$WORLD" env TMPDIR="$out/tmp" "$BIN/mm-pageload" --ca "$ORIGIN_CA" --timeout 60 --csv "$out/loads.csv" \
    https://a.test/chain.html http://a.test/never.html \
    > /dev/null 2> "$out/err" &
  pid=$!
  # Mid-load: the first load has finished and the browser of the second is up.
  wait_until 60 grep -q "chain.html run 1: ok" "$out/err" && wait_until 30 eval '[ -n "$(world_chromium)" ]' ||
    { kill "$pid"; silent_server_stop; fail "the second load did not start: $(cat "$out/err")"; return 1; }
  kill -TERM "$pid"
  wait "$pid"
  rc=$?
  silent_server_stop
  [ "$rc" = 143 ] || fail "exit status $rc after SIGTERM, expected 143: $(cat "$out/err")" || return 1
  grep -q "interrupted by TERM after 1 finished load" "$out/err" || fail "said: $(cat "$out/err")" || return 1
  [ "$(csv_field "$out/loads.csv" 1 status)" = ok ] || fail "the finished load's row: $(cat "$out/loads.csv")" || return 1
  [ -z "$(ls -A "$out/tmp")" ] || fail "temporary files left: $(ls -A "$out/tmp")" || return 1
  check_no_chromium
}

test_pageload_a_hung_browser_is_killed_and_reported() {
  pageload_pages || return 1
  silent_server_start || return 1
  local out=$WORLD_TMP/pl-hung pid rc browser
  mkdir -p "$out"
  ip netns exec "$WORLD" "$BIN/mm-pageload" --timeout 3 --csv "$out/loads.csv" http://a.test/never.html > /dev/null 2> "$out/err" &
  pid=$!
  # The browser process (the one reading the pipe) stops answering: stopped by a signal, once the
  # page is loading (its request reached the silent server), so that the check after the load's
  # timeout finds it hung, not its start.
  browser_pid() { world_chromium | awk '/remote-debugging-pipe/ && !/--type=/ { print $1; exit }'; }
  silent_connected() { [ -n "$(ip netns exec "$SERVER" ss -Htn state established '( sport = :8081 )')" ]; }
  wait_until 60 silent_connected || { kill "$pid"; silent_server_stop; fail "the page never reached the silent server"; return 1; }
  browser=$(browser_pid)
  [ -n "$browser" ] || { kill "$pid"; silent_server_stop; fail "no browser"; return 1; }
  kill -STOP "$browser"
  wait "$pid"
  rc=$?
  silent_server_stop
  [ "$rc" = 1 ] || fail "exit status $rc: $(cat "$out/err")" || return 1
  [ "$(csv_field "$out/loads.csv" 1 status)" = error ] &&
    csv_field "$out/loads.csv" 1 reason | grep -q "^browser hung: no answer to Browser.getVersion within 5 s after the load's timeout" ||
    fail "row: $(cat "$out/loads.csv")" || return 1
  echo "  $(csv_field "$out/loads.csv" 1 reason)"
  check_no_chromium
}

test_pageload_usage_errors() {
  rc_msg 2 "give at least one URL" "$BIN/mm-pageload" || return 1
  rc_msg 2 "is not http:// or https://" "$BIN/mm-pageload" ftp://a.test/ || return 1
  rc_msg 2 "--runs 0: give 1 to 10000" "$BIN/mm-pageload" --runs 0 http://a.test/ || return 1
  rc_msg 2 "--window 10: give WIDTHxHEIGHT" "$BIN/mm-pageload" --window 10 http://a.test/ || return 1
  rc_msg 2 "--timeout 0: give 1 to 3600 seconds" "$BIN/mm-pageload" --timeout 0 http://a.test/ || return 1
  rc_msg 1 "--browser /nonexistent/chromium: No such file or directory" "$BIN/mm-pageload" --browser /nonexistent/chromium http://a.test/ || return 1
  rc_msg 1 "--ca /nonexistent.pem" "$BIN/mm-pageload" --ca /nonexistent.pem http://a.test/ || return 1
}
