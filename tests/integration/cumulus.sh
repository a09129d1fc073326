# SPDX-License-Identifier: GPL-3.0-or-later
# Integration tests of Cumulus (mm-cumulus-remote, mm-cumulus-local): page loads of the bundled
# corpus in Chromium through the two proxies, the Remote Proxy beside mm-replay's servers and
# the Local Proxy behind an emulated link; what happens when the Remote Proxy fails, cannot be
# reached, cuts its bulk response or stalls (the page still loads, from its servers, with a
# line on standard error); the refusals; nothing left running. Sourced by tests/run-all.

cumulus_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# A home for the test user with the corpus and a trusted CA.
cumulus_home() {
  CUMULUS_HOME=$WORLD_TMP/cumulus-home
  corpus_user_home "$CUMULUS_HOME"
}
cumulus_url() { awk -v n="$1" '$1 == n { print $2 }' "$cumulus_top/corpus/pages"; }  # NAME: the page's URL
cumulus_as_user() { AS_USER=$TEST_USER in_world env HOME="$CUMULUS_HOME" MAHIMAHI_CA_DIR="$CUMULUS_HOME/ca" "$@"; }

# The corpus was recorded with one Chromium: another one's User-Agent is not matched by replay.
cumulus_ua_flag() {
  local recorded installed
  recorded=$("$BIN/mm-recording" show "$CUMULUS_HOME/corpus/news" \
    "$("$BIN/mm-recording" ls "$CUMULUS_HOME/corpus/news" | awk 'NR == 2 { print $NF }')" |
    sed -n 's|^User-Agent: .*Chrome/\([0-9]*\)\..*|\1|p')
  installed=$(chromium --version 2>/dev/null | sed -n 's/^Chromium \([0-9]*\)\..*/\1/p')
  [ "$recorded" = "$installed" ] || echo --ignore-user-agent
}

# No Chromium, loader or proxy of the test user is left (the Remote Proxy's run in namespaces of
# their own, inside the world's).
cumulus_nothing_running() { ! pgrep -u "$TEST_USER" -f 'chrom|mm-cumulus|mm-pageload|mm-record|mm-delay' >/dev/null; }
cumulus_check_nothing_running() {
  wait_until 15 cumulus_nothing_running ||
    { fail "left running: $(pgrep -a -u "$TEST_USER" -f 'chrom|mm-cumulus|mm-pageload|mm-record|mm-delay' | cut -c1-120 | head -3)"; return 1; }
  echo "  nothing left running"
}

# A field of mm-cumulus-local's closing line: answered / forwarded.
cumulus_answered() { sed -n 's/^mm-cumulus-local: .* \([0-9]*\) requests\{0,1\} answered from bulk responses.*/\1/p' "$1"; }
cumulus_forwarded() { sed -n 's/^mm-cumulus-local: .* \([0-9]*\) sent to servers.*/\1/p' "$1"; }

# Corpus pages loaded through Cumulus at 100 ms RTT (over HTTP, over HTTPS, and one whose first
# answer redirects to another origin): Chromium's load is complete, every object
# comes from the bulk response, the Remote Proxy reports its load with its CPU time.
test_cumulus_page_loads_in_chromium_through_both_proxies() {
  command -v chromium >/dev/null || { echo "  chromium not installed"; return 1; }
  cumulus_home || return 1
  local ua; ua=$(cumulus_ua_flag)
  local name url out objects answered forwarded
  for name in news shop app; do  # shop: http://shop.test/ redirects to https://www.shop.test/
    url=$(cumulus_url "$name")
    out=$CUMULUS_HOME/load-$name
    objects=$("$BIN/mm-recording" ls --wide "$CUMULUS_HOME/corpus/$name" | awk 'NR > 1 { print $1, $2, $3, $4 }' | sort -u | wc -l)
    cumulus_as_user timeout 180 "$BIN/mm-replay" "$CUMULUS_HOME/corpus/$name" $ua \
      "$BIN/mm-cumulus-remote" -- "$BIN/mm-delay" 50 "$BIN/mm-cumulus-local" -- \
      "$BIN/mm-pageload" --csv "$out.csv" "$url" > "$out.summary" 2> "$out.err" ||
      fail "$name: exit status $?: $(grep -v '^\[' "$out.err" | tail -5)" || return 1
    [ "$(csv_field "$out.csv" 1 status)" = ok ] || fail "$name: the load was not ok: $(tail -3 "$out.err")" || return 1
    grep -q "^mm-cumulus-remote: load 1 ok: " "$out.err" ||
      fail "$name: no line from the Remote Proxy for its load: $(tail -5 "$out.err")" || return 1
    grep -Eq "^mm-cumulus-local: $url: bulk response of [0-9]+ objects, .*the Remote Proxy's load ok, [0-9.]+ ms, CPU [0-9]+ ms" "$out.err" ||
      fail "$name: no bulk line with the remote load and CPU: $(grep mm-cumulus "$out.err" | tail -5)" || return 1
    answered=$(cumulus_answered "$out.err") forwarded=$(cumulus_forwarded "$out.err")
    [ -n "$answered" ] || fail "$name: no closing line: $(tail -3 "$out.err")" || return 1
    # Every object the page needs came in the bulk: at most the favicon or a late beacon goes to its server.
    [ "$answered" -ge $((objects - 2)) ] && [ "$forwarded" -le 2 ] ||
      fail "$name: $answered of $objects recorded objects answered from the bulk, $forwarded sent to servers" || return 1
    echo "  $name ($objects objects): PLT $(csv_field "$out.csv" 1 plt_ms) ms, $answered answered from the bulk, $forwarded sent to servers; $(sed -n 's/^mm-cumulus-remote: load 1 ok: //p' "$out.err")"
  done
  cumulus_check_nothing_running
}

# curl through the Local Proxy: HTTPS ended with the user's CA, the body exactly what the origin
# sent (as replayed), a POST goes to the server; and with mm-cumulus-remote's browser unable to
# start, the page comes from its server and the failure is one line.
test_cumulus_failing_remote_browser_falls_back_to_servers() {
  command -v chromium >/dev/null || { echo "  chromium not installed"; return 1; }
  cumulus_home || return 1
  local out=$CUMULUS_HOME/fail url
  url=$(cumulus_url app)
  # The Remote Proxy's browser is /bin/false: every load it makes fails at once.
  cumulus_as_user timeout 120 "$BIN/mm-replay" "$CUMULUS_HOME/corpus/app" --ignore-user-agent \
    "$BIN/mm-cumulus-remote" --browser=/bin/false -- "$BIN/mm-delay" 10 "$BIN/mm-cumulus-local" -- \
    sh -c 'curl -sS --compressed --cacert "$MAHIMAHI_CA_DIR/ca.pem" -o "$1.page" -w "%{http_code}\n" "$2" &&
           curl -sS --cacert "$MAHIMAHI_CA_DIR/ca.pem" -o /dev/null -w "%{http_code}\n" -d x=1 "$2"' sh "$out" "$url" \
    > "$out.codes" 2> "$out.err" || fail "exit status $?: $(tail -5 "$out.err")" || return 1
  [ "$(head -1 "$out.codes")" = 200 ] || fail "the page's status was $(head -1 "$out.codes"): $(tail -5 "$out.err")" || return 1
  # The POST reached the replay (which has no such pair: its explained 404), not the cache.
  [ "$(sed -n 2p "$out.codes")" = 404 ] || fail "the POST got $(sed -n 2p "$out.codes")" || return 1
  grep -q "the Remote Proxy's load error" "$out.err" ||
    fail "no line saying the Remote Proxy's load failed: $(grep mm-cumulus "$out.err" | tail -5)" || return 1
  [ "$(cumulus_forwarded "$out.err")" = 2 ] || fail "expected 2 requests sent to servers: $(tail -2 "$out.err")" || return 1
  grep -q '<title' "$out.page" || fail "the page has no title: $(head -c 200 "$out.page")" || return 1
  echo "  $(grep "the Remote Proxy's load error" "$out.err" | head -1 | cut -c1-160)"
  cumulus_check_nothing_running
}

# A fake Remote Proxy in the replay's namespace (on every address: the Local Proxy, inside
# mm-delay, reaches it at a replayed server's): MODE cut sends the head and half a frame, then
# closes; stall sends the head and then nothing; refuse is no server at all.
cumulus_fake_remote() {  # MODE PORT
  /usr/bin/python3 -c '
import socket, sys, time
mode, port = sys.argv[1], int(sys.argv[2])
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", port)); s.listen(4)
open(sys.argv[3], "w").close()
c, _ = s.accept(); c.recv(65536)
c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-mahimahi-cumulus\r\nConnection: close\r\n\r\n")
if mode == "cut":
    c.sendall(b"P\x00\x00\x10\x00" + b"x" * 100); c.close()
else:
    time.sleep(30)
' "$@"
}

test_cumulus_cut_stalled_or_unreachable_remote_loads_from_servers() {
  cumulus_home || return 1
  local out=$CUMULUS_HOME/cut mode url
  url=$(cumulus_url news)
  for mode in cut stall refuse; do
    rm -f "$out.ready"
    # The fake remote starts in the replay's namespace, then the Local Proxy (behind mm-delay) is told of it.
    cumulus_as_user timeout 60 "$BIN/mm-replay" "$CUMULUS_HOME/corpus/news" --ignore-user-agent -- bash -c '
      mode=$1 out=$2 url=$3 bin=$4 lib=$5
      ip=$(getent hosts "$(echo "$url" | cut -d/ -f3)" | awk "{ print \$1; exit }")
      if [ "$mode" != refuse ]; then
        . "$lib"; cumulus_fake_remote "$mode" 8463 "$out.ready" & fake=$!
        for i in $(seq 100); do [ -f "$out.ready" ] && break; sleep 0.05; done
      fi
      (umask 077; echo 0123456789abcdef0123456789abcdef > "$out.token")
      "$bin/mm-delay" 10 "$bin/mm-cumulus-local" --remote="$ip:8463" --token-file="$out.token" --stall-timeout=1 -- \
        curl -sS -o "$out.page" -w "%{http_code}\n" "$url"
      status=$?; [ -z "${fake:-}" ] || kill "$fake" 2>/dev/null; exit $status' \
      sh "$mode" "$out" "$url" "$BIN" "$cumulus_top/tests/integration/cumulus.sh" > "$out.code" 2> "$out.err" ||
      fail "$mode: exit status $?: $(tail -5 "$out.err")" || return 1
    [ "$(cat "$out.code")" = 200 ] || fail "$mode: the page's status was $(cat "$out.code")" || return 1
    cmp -s "$out.page" <(cumulus_replayed_page "$url") || fail "$mode: the page differs from the replayed one" || return 1
    local said
    case $mode in
      cut) said="the Remote Proxy closed the bulk response before its end" ;;
      stall) said="the Remote Proxy sent nothing for 1 s" ;;
      refuse) said="cannot connect to the Remote Proxy at [0-9.]*:8463: Connection refused" ;;
    esac
    grep -q "^mm-cumulus-local: $url: $said; what the page still needs goes to its origins$" "$out.err" ||
      fail "$mode: expected \"$said\": $(grep mm-cumulus "$out.err" | tail -3)" || return 1
    echo "  $mode: $(grep "$said" "$out.err" | head -1)"
  done
  cumulus_check_nothing_running
}

# The page as the replay serves it to curl directly (what the Local Proxy must pass on unchanged).
cumulus_replayed_page() {
  cumulus_as_user "$BIN/mm-replay" "$CUMULUS_HOME/corpus/news" --ignore-user-agent -- curl -sS "$1"
}

test_cumulus_refusals_name_the_input() {
  cumulus_home || return 1
  rc_msg 1 "no Remote Proxy: give --remote=ADDRESS:PORT, or run inside mm-cumulus-remote" \
    cumulus_as_user "$BIN/mm-cumulus-local" -- true || return 1
  rc_msg 2 "--remote=nowhere is not ADDRESS:PORT" cumulus_as_user "$BIN/mm-cumulus-local" --remote=nowhere -- true || return 1
  rc_msg 1 "MAHIMAHI_CUMULUS_REMOTE is not TOKEN@ADDRESS:PORT" \
    cumulus_as_user env MAHIMAHI_CUMULUS_REMOTE=10.1.2.3 "$BIN/mm-cumulus-local" -- true || return 1
  # The token: never on a command line, and needed.
  rc_msg 2 "--remote takes ADDRESS:PORT, without the token" \
    cumulus_as_user "$BIN/mm-cumulus-local" --remote=0123456789abcdef0123456789abcdef@10.1.2.3:1 -- true || return 1
  rc_msg 1 "no token for the Remote Proxy at 10.1.2.3:1: give --token-file=FILE" \
    cumulus_as_user "$BIN/mm-cumulus-local" --remote=10.1.2.3:1 -- true || return 1
  rc_msg 1 "cannot read the token file $CUMULUS_HOME/none" \
    cumulus_as_user "$BIN/mm-cumulus-local" --remote=10.1.2.3:1 --token-file="$CUMULUS_HOME/none" -- true || return 1
  rc_msg 2 "--max-pair must be 1 to 256" cumulus_as_user "$BIN/mm-cumulus-remote" --max-pair=0 -- true || return 1
  # Root's browser would run without its sandbox: refused, outside mm-replay.
  rc_msg 1 "does not run as root outside mm-replay" in_world "$BIN/mm-cumulus-remote" -- true || return 1
  rc_msg 2 "--stall-timeout must be 1 to 600" cumulus_as_user "$BIN/mm-cumulus-local" --stall-timeout=0 -- true || return 1
  rc_msg 2 "--listen=1.2.3 is not ADDRESS:PORT" cumulus_as_user "$BIN/mm-cumulus-remote" --listen=1.2.3 -- true || return 1
  rc_msg 2 "--uplink-trace and --downlink-trace go together" \
    cumulus_as_user "$BIN/mm-cumulus-remote" --uplink-trace=x -- true || return 1
  # Where nothing but loopback exists, the Remote Proxy has no other address to be reached at.
  rc_msg 1 "no address to be reached at" \
    cumulus_as_user unshare --map-current-user -n "$BIN/mm-cumulus-remote" --listen=0.0.0.0:0 -- true || return 1
  # The command's exit status is the Remote Proxy's, and the environment tells the Local Proxy.
  local got
  got=$(cumulus_as_user "$BIN/mm-replay" "$CUMULUS_HOME/corpus/news" "$BIN/mm-cumulus-remote" -- \
    sh -c 'echo "$MAHIMAHI_CUMULUS_REMOTE"; exit 7' 2>/dev/null)
  [ $? = 7 ] || fail "mm-cumulus-remote did not exit with its command's status 7" || return 1
  echo "$got" | grep -Eq '^[0-9a-f]{32}@[0-9.]+:[0-9]+$' || fail "MAHIMAHI_CUMULUS_REMOTE was \"$got\"" || return 1
  echo "  refusals named; MAHIMAHI_CUMULUS_REMOTE=TOKEN@${got#*@}; status 7 passed on"
  cumulus_check_nothing_running
}

# mm-sweep --cumulus: the same grid through Cumulus beside h1; cumulus.csv reports the Remote
# Proxy's work per load; at 200 ms RTT the page loads faster through Cumulus (the paper's point:
# its dependency chain resolves next to the servers, not across the link).
test_cumulus_sweep_reports_remote_cost_and_beats_h1_at_long_rtt() {
  command -v chromium >/dev/null || { echo "  chromium not installed"; return 1; }
  cumulus_home || return 1
  local res=$CUMULUS_HOME/sweep url
  url=$(cumulus_url news)
  cumulus_as_user env PATH="$BIN:$PATH" "$BIN/mm-sweep" --recording "$CUMULUS_HOME/corpus/news" --url "$url" \
    --rates 14 --rtts 200 --runs 1 --timeout 60 --jobs 1 --cumulus --out "$res" 2> "$CUMULUS_HOME/sweep.err" ||
    fail "mm-sweep failed: $(tail -20 "$CUMULUS_HOME/sweep.err")" || return 1
  python3 - "$res" <<'PY' || { fail "results: $(cat "$res/summary.csv" "$res/cumulus.csv")"; return 1; }
import csv, sys
d = sys.argv[1]
loads = list(csv.DictReader(open(d + "/loads.csv")))
assert len(loads) == 4 and all(r["status"] == "ok" for r in loads), [(r["configuration"], r["status"], r["reason"]) for r in loads]
summary = {r["configuration"]: r for r in csv.DictReader(open(d + "/summary.csv"))}
h1, cu = summary["h1-multi-14mbit-200ms-loss0"], summary["cumulus-multi-14mbit-200ms-loss0"]
assert h1["optimal_plt_ms"] == cu["optimal_plt_ms"], (h1["optimal_plt_ms"], cu["optimal_plt_ms"])
assert float(cu["plt_median_ms"]) < float(h1["plt_median_ms"]), (cu["plt_median_ms"], h1["plt_median_ms"])
rows = list(csv.DictReader(open(d + "/cumulus.csv")))
assert sorted(r["configuration"] for r in rows) == ["cumulus-multi-14mbit-200ms-loss0", "cumulus-multi-unemulated"], rows
for r in rows:
    assert r["remote_status"] == "ok" and float(r["remote_cpu_ms"]) > 0 and float(r["remote_load_ms"]) > 0, r
    assert int(r["bulk_objects"]) >= 44 and int(r["sent_to_servers"]) <= 2, r
print("  h1 %s ms, cumulus %s ms (optimal %s ms); remote load %s ms, CPU %s ms" % (h1["plt_median_ms"], cu["plt_median_ms"],
      cu["optimal_plt_ms"], rows[-1]["remote_load_ms"], rows[-1]["remote_cpu_ms"]))
PY
  cumulus_check_nothing_running
}

# The Remote Proxy outside mm-replay, as on a shared machine, the test user's: it listens on
# loopback only; another user's request (no token) gets a 401 and starts no load; the token's
# holder's load of a private address (the world's server host, 10.77.0.2) is refused at its
# connection, not fetched.
test_cumulus_remote_serves_only_its_token_and_no_private_address() {
  command -v chromium >/dev/null || { echo "  chromium not installed"; return 1; }
  cumulus_home || return 1
  local dir=$CUMULUS_HOME/guard port code pid
  rm -rf "$dir" && mkdir -p "$dir" && chown "$TEST_USER" "$dir"
  cumulus_as_user "$BIN/mm-cumulus-remote" --token-file="$dir/token" --delay=0 2> "$dir/remote.err" & pid=$!
  # (The background job is a subshell around the program: the program itself is signalled.)
  local stop_remote="pkill -TERM -u $TEST_USER -f -- --token-file=$dir/token"
  wait_until 30 grep -q '^mm-cumulus-remote: listening on' "$dir/remote.err" ||
    { $stop_remote; wait "$pid"; fail "the Remote Proxy did not start: $(cat "$dir/remote.err")"; return 1; }
  port=$(sed -n 's/^mm-cumulus-remote: listening on 127\.0\.0\.1:\([0-9]*\) (the token is in .*)$/\1/p' "$dir/remote.err")
  cumulus_remote_guard_checks "$dir" "$port"; local status=$?
  $stop_remote; wait "$pid"
  [ "$status" = 0 ] || return 1
  cumulus_check_nothing_running
}

cumulus_remote_guard_checks() {  # DIR PORT
  local dir=$1 port=$2 code url
  [ -n "$port" ] || fail "not on loopback: $(cat "$dir/remote.err")" || return 1
  in_world ss -ltn "sport = :$port" | grep -q "127.0.0.1:$port " || fail "not listening on 127.0.0.1:$port" || return 1
  ! in_world ss -ltn "sport = :$port" | grep -q "0.0.0.0:$port " || fail "listening on every address" || return 1
  [ "$(stat -c %a "$dir/token")" = 600 ] || fail "the token file's mode is $(stat -c %a "$dir/token")" || return 1
  url="http://127.0.0.1:$port/cumulus/1/load?url=http%3A%2F%2F$SERVER_IP%2F"
  # Another user, without the token (and with a wrong one).
  code=$(AS_USER=$OTHER_USER in_world curl -s -m 20 -o "$dir/other.out" -w '%{http_code}' "$url")
  [ "$code" = 401 ] || fail "another user's request got $code: $(head -c 300 "$dir/other.out")" || return 1
  code=$(AS_USER=$OTHER_USER in_world curl -s -m 20 -o /dev/null -w '%{http_code}' \
    -H "Authorization: Bearer ffffffffffffffffffffffffffffffff" "$url")
  [ "$code" = 401 ] || fail "a wrong token got $code" || return 1
  grep -q "refused a request from 127.0.0.1: no token" "$dir/remote.err" || fail "no line for the refusal" || return 1
  ! grep -q "^mm-cumulus-remote: load " "$dir/remote.err" || fail "a load ran for a request without the token" || return 1
  # The token's holder: a private address is refused where the loader's browser connects.
  cumulus_as_user sh -c 'curl -s -m 60 -H "Authorization: Bearer $(cat "$1")" -o "$2" "$3"' sh \
    "$dir/token" "$dir/private.bulk" "$url" || fail "the token's holder's request failed" || return 1
  wait_until 30 grep -q "^mm-cumulus-remote: load 1 " "$dir/remote.err" || fail "no load line: $(tail -5 "$dir/remote.err")" || return 1
  grep -q "^mm-cumulus-remote: load 1: refused a connection to $SERVER_IP:80 (in 10.0.0.0/8, which --refuse-upstream names).* (--allow-private lets the loads reach such addresses)$" "$dir/remote.err" ||
    fail "the loader's connection to $SERVER_IP was not refused: $(grep -v '^\[' "$dir/remote.err" | tail -5)" || return 1
  ! grep -aq "HTTP/1.1 200" "$dir/private.bulk" || fail "the server host's page came back in the bulk" || return 1
  echo "  loopback only (127.0.0.1:$port); another user: 401; $(grep -o 'refused a connection to [^(]*' "$dir/remote.err" | head -1)"
}

# The Local Proxy's listener is on the shell's address in the caller's namespace: another user
# who connects there directly is refused (it would otherwise be proxied, to the proxy itself,
# until its descriptors ran out). The proxy would also reset it (LocalProxy refuses a connection
# that is not from its command or was not redirected), behind the shell's rule.
test_cumulus_local_proxy_refuses_another_users_connection() {
  cumulus_home || return 1
  local dir=$CUMULUS_HOME/local-guard base port pid
  rm -rf "$dir" && mkdir -p "$dir" && chown "$TEST_USER" "$dir"
  (umask 077; echo 0123456789abcdef0123456789abcdef > "$dir/token"); chown "$TEST_USER" "$dir/token"
  cumulus_as_user "$BIN/mm-cumulus-local" --remote=127.0.0.1:9 --token-file="$dir/token" -- \
    sh -c 'echo "$MAHIMAHI_BASE" > "$1/base"; while [ ! -e "$1/done" ]; do sleep 0.1; done' sh "$dir" \
    2> "$dir/local.err" & pid=$!
  wait_until 20 test -s "$dir/base" || { kill "$pid"; wait "$pid"; fail "the shell did not start: $(cat "$dir/local.err")"; return 1; }
  base=$(cat "$dir/base")
  # The proxy's listener: the socket on the shell's address that mm-cumulus-local's ferry holds.
  port=$(in_world ss -ltnp | awk -v b="$base" '/"mm-cumulus-loca"/ { n = split($4, a, ":"); if (a[1] == b) print a[n] }' | head -1)
  local out status=0
  if [ -z "$port" ]; then
    status=1; echo "FAIL: no listener on $base: $(in_world ss -ltn)"
  else
    out=$(AS_USER=$OTHER_USER in_world timeout 10 curl -sS -m 5 "http://$base:$port/" 2>&1); local rc=$?
    # Refused at once by the shell's rule (curl's 7: only redirected connections reach the
    # listener), never a proxied answer or a hang.
    case $rc in
      7) ;;
      *) status=1; echo "FAIL: another user's connection to the Local Proxy: curl status $rc: $out; $(in_world ss -ltnp | grep -F "$base:")" ;;
    esac
  fi
  touch "$dir/done"; wait "$pid"
  [ "$status" = 0 ] || return 1
  echo "  another user's connection to $base:$port: $out"
}

# A download the Local Proxy forwards to its origin (here every request: no Remote Proxy answers)
# is relayed as it comes: 200 MB reach curl whole while the proxy's process never holds them
# (its parser counts the body without keeping it).
test_cumulus_local_proxy_relays_a_200MB_download_without_holding_it() {
  origins_create || return 1
  cumulus_home || return 1
  local dir=$CUMULUS_HOME/relay pid supervisor most=0 p hwm
  rm -rf "$dir" && mkdir -p "$dir" && chown "$TEST_USER" "$dir"
  (umask 077; echo 0123456789abcdef0123456789abcdef > "$dir/token"); chown "$TEST_USER" "$dir/token"
  cumulus_as_user "$BIN/mm-cumulus-local" --remote=127.0.0.1:9 --token-file="$dir/token" -- sh -c '
    curl -sS -o /dev/null -w "%{size_download}\n" http://a.test/big.bin > "$1/size"
    touch "$1/fetched"; while [ ! -e "$1/done" ]; do sleep 0.1; done' sh "$dir" 2> "$dir/local.err" & pid=$!
  wait_until 120 test -e "$dir/fetched"
  supervisor=$(pgrep -o -f -- "--token-file=$dir/token")
  for p in $(shell_processes "$supervisor" sh); do
    hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$p/status" 2>/dev/null || echo 0)
    [ "${hwm:-0}" -gt "$most" ] && most=$hwm
  done
  touch "$dir/done"; wait "$pid"
  [ "$(cat "$dir/size" 2>/dev/null)" = 209715200 ] ||
    fail "curl got $(cat "$dir/size" 2>/dev/null) bytes: $(tail -3 "$dir/local.err")" || return 1
  [ -n "$supervisor" ] && [ "$most" -gt 0 ] || fail "the shell's processes were not found" || return 1
  [ "$most" -lt 102400 ] || fail "a process of the shell held $((most / 1024)) MB at its peak" || return 1
  echo "  200 MB relayed; the shell's largest process peaked at $((most / 1024)) MB"
}
