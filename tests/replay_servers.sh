# Integration tests of replay's daemons (src/replay: Apache per recorded IP:port, dnsmasq, the
# guardian) through mm-replay, for what unit tests cannot see: the real daemons' behaviour. Uses
# replay_shell from replay.sh. (Formerly the manual tests/tools/replay_servers_check.sh.)

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
  case "$work" in /tmp/mm-replay.*) rm -rf "$work" ;; esac  # its work directory: nobody left to remove it
  [ -z "$left" ] || fail "daemons outlived the SIGKILLed replay: $left" || return 1
  echo "  the replay's process SIGKILLed: the guardian stopped every daemon"
}
