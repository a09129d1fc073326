# SPDX-License-Identifier: GPL-3.0-or-later
# Fault injection (issue 16, docs/robustness.md): a part of a shell killed during traffic, a full
# disk, a command that ignores the polite signals. Each time the shell says which part failed,
# ends with a non-zero status, and leaves nothing behind (run-all checks the world afterwards).

# The pid of the ferry of the shell whose supervisor is SHELL: the supervisor's child that is
# not the guard (the guard's child is the command).
shell_ferry() {  # SHELL
  local child
  for child in $(pgrep -P "$1"); do
    [ -z "$(pgrep -P "$child")" ] && { echo "$child"; return 0; }
  done
  return 1
}

first_line_older_than() { [ -s "$2" ] && [ $(($(date +%s%N) - $(head -1 "$2" | cut -d' ' -f2))) -ge $(($1 * 1000000000)) ]; }  # SECONDS FILE
# Waits at most SECONDS for the background shell PID to end, so that a regression fails rather
# than hangs: its status, or 124 after a SIGKILL.
wait_shell() {  # SECONDS PID
  if ! wait_until "$1" process_gone "$2"; then
    kill -9 "$2" 2>/dev/null
    wait "$2" 2>/dev/null
    return 124
  fi
  wait "$2"
}
process_gone() { [ ! -e "/proc/$1" ] || process_state_is "$1" Z; }  # PID

# The main process of the replay's Apache whose first IP:port is IP-PORT ("10.98.0.1-80"): from its pid file in
# the replay's work directory (found from any of its processes), never a worker.
replay_apache_main() {  # IP-PORT
  local any work
  any=$(pgrep -o -f "mm-replay\.[A-Za-z0-9]{6}/apache-$1\.conf -DFOREGROUND") || return 1
  work=$(tr '\0' ' ' < "/proc/$any/cmdline" | sed 's|.* -f \(/[^ ]*\)/apache-[^ ]*.*|\1|')
  [ -s "$work/apache-$1.pid" ] && cat "$work/apache-$1.pid"
}

at_least_files() { [ "$(ls "$2" 2>/dev/null | wc -l)" -ge "$1" ]; }  # COUNT DIR
gone_with_its_daemons() { [ ! -e "$1" ] && ! pgrep -f "$1" >/dev/null; }  # WORK-DIR

# The supervisor of the one running shell PROGRAM (mm-link, ...): the oldest of its processes.
shell_supervisor() { pgrep -o -f "^$BIN/$1 "; }  # PROGRAM

test_fault_kill9_of_the_ferry_during_traffic_ends_the_shell_and_names_it() {
  local out=$WORLD_TMP/fault-ferry.out log=$WORLD_TMP/fault-user/fault-ferry.log shell supervisor ferry rc
  mkdir -p "$WORLD_TMP/fault-user" && chown "$TEST_USER" "$WORLD_TMP/fault-user"
  # mm-link with a log: the ferry's threads and its log writer are busy when it dies.
  AS_USER=$TEST_USER in_world "$BIN/mm-link" rate:12Mbit/s rate:12Mbit/s --downlink-log="$log" -- \
    sh -c "ping -q -i 0.01 -s 1000 $SERVER_IP >/dev/null; sleep 41.11" > "$out" 2>&1 &
  shell=$!
  wait_until 10 pgrep -x ping >/dev/null ||
    { kill "$shell"; wait "$shell"; fail "the traffic never started: $(cat "$out")"; return 1; }
  supervisor=$(shell_supervisor mm-link) && ferry=$(shell_ferry "$supervisor") ||
    { kill "$shell"; wait "$shell"; fail "no ferry found"; return 1; }
  wait_until 10 test -s "$log" || fail "no traffic logged" || return 1
  kill -9 "$ferry"
  wait_shell 30 "$shell"; rc=$?
  [ "$rc" = 1 ] || fail "status $rc after the ferry was killed, expected 1: $(cat "$out")" || return 1
  grep -q "^mm-link: the packet ferry (pid $ferry) was killed by SIGKILL; ending the shell$" "$out" ||
    fail "the shell did not name the ferry's end: $(cat "$out")" || return 1
  none_sleeping 41.11 || return 1
  ! pgrep -x ping >/dev/null || fail "the command's traffic is still running" || return 1
  in_world "$BIN/mm-delay" 0 true || fail "a new shell failed after the ferry's death" || return 1
  echo "  $(cat "$out"); status $rc"
}

test_fault_kill9_of_the_command_during_traffic() {
  local out=$WORLD_TMP/fault-command.out shell supervisor command rc
  AS_USER=$TEST_USER in_world "$BIN/mm-delay" 5 sh -c "exec ping -q -i 0.01 -s 1000 -c 100000 $SERVER_IP" > "$out" 2>&1 &
  shell=$!
  # (pgrep -x: the shell's own processes have the command line in their arguments too.)
  wait_until 10 pgrep -x ping >/dev/null || { kill "$shell"; wait "$shell"; fail "the traffic never started"; return 1; }
  command=$(pgrep -x ping)
  kill -9 "$command"
  wait_shell 30 "$shell"; rc=$?
  [ "$rc" = 137 ] || fail "status $rc, expected 137 (the command's SIGKILL): $(cat "$out")" || return 1
  echo "  the command SIGKILLed mid-traffic: the shell ended with its status, $rc"
}

# A recording in progress when its ferry (the proxy and the writer) is SIGKILLed: what is on disk
# is whole pairs only, under final names, with nothing unfinished beside them (O_TMPFILE); the
# pairs completed well beyond the writer's longest deferral (1 s) before the kill are all there.
test_fault_kill9_of_the_recording_ferry_keeps_whole_pairs() {
  local dir=$WORLD_TMP/fault-rec out=$WORLD_TMP/fault-rec.out times=$WORLD_TMP/fault-rec.times shell supervisor ferry rc
  rm -f "$times"
  recording_shell "$dir" -- sh -c "i=0; while :; do
      i=\$((i + 1)); curl -sf -o /dev/null \"http://a.test/?fault=\$i\" && echo \$i \$(date +%s%N) >> $times
      sleep 0.02; done" > "$out" 2>&1 &
  shell=$!
  # Pairs on disk, and requests completed over 4 s ago, so that some fall beyond the bound.
  wait_until 30 at_least_files 20 "$dir" && wait_until 30 first_line_older_than 4 "$times" || { kill "$shell"; wait "$shell"; fail "nothing was recorded: $(cat "$out")"; return 1; }
  supervisor=$(shell_supervisor mm-record) && ferry=$(shell_ferry "$supervisor") ||
    { kill "$shell"; wait "$shell"; fail "no ferry found"; return 1; }
  local killed; killed=$(date +%s%N)
  kill -9 "$ferry"
  wait_shell 30 "$shell"; rc=$?
  [ "$rc" = 1 ] || fail "status $rc, expected 1: $(cat "$out")" || return 1
  grep -q "^mm-record: the packet ferry (pid $ferry) was killed by SIGKILL; ending the shell$" "$out" ||
    fail "the shell did not name the ferry's end: $(cat "$out")" || return 1
  local hidden; hidden=$(ls -A "$dir" | grep -v '^save\.' || true)
  [ -z "$hidden" ] || fail "unfinished files left beside the pairs: $hidden" || return 1
  "$BIN/mm-recording" to-har "$dir" "$WORLD_TMP/fault-rec.har" >/dev/null 2>"$WORLD_TMP/fault-rec.err" ||
    fail "the recording does not read back: $(cat "$WORLD_TMP/fault-rec.err")" || return 1
  ! grep -q "warning" "$WORLD_TMP/fault-rec.err" || fail "damaged files: $(cat "$WORLD_TMP/fault-rec.err")" || return 1
  # Every request completed 3 s or more before the kill has its pair (the writer defers at most
  # 1 s; the rest is room for a loaded machine).
  local missing
  missing=$(/usr/bin/python3 - "$WORLD_TMP/fault-rec.har" "$times" "$killed" <<'PY'
import json, sys
urls = {e["request"]["url"] for e in json.load(open(sys.argv[1]))["log"]["entries"]}
killed = int(sys.argv[3])
old = [int(i) for i, t in (line.split() for line in open(sys.argv[2])) if killed - int(t) >= 3_000_000_000]
print(len(urls), len(old), " ".join(str(i) for i in old if "http://a.test/?fault=%d" % i not in urls))
PY
  )
  set -- $missing
  [ "$#" = 2 ] || fail "pairs completed over 3 s before the kill are missing: ${*:3}" || return 1
  [ "$2" -gt 0 ] || fail "no request completed 3 s before the kill" || return 1
  echo "  ferry SIGKILLed mid-recording: $1 whole pairs on disk, all $2 completed 3 s before the kill among them, nothing unfinished"
}

test_fault_kill9_of_a_replay_daemon_ends_the_replay_and_names_it() {
  local dir=$WORLD_TMP/fault-replay
  daemons_recording "$dir" || fail "could not build the recording" || return 1
  local victim out rc shell served=$WORLD_TMP/fault-replay-served
  for victim in apache2 dnsmasq; do
    out=$WORLD_TMP/fault-replay-$victim.out
    rm -f "$served"
    # Requests by name (dnsmasq) to the server at 10.98.0.1:80 (Apache), the first one marked.
    replay_shell "$dir" -- sh -c 'while :; do curl -sf -H User-Agent: -o /dev/null http://e.test/k1 && : > "$0"; sleep 0.05; done' \
      "$served" > "$out" 2>&1 &
    shell=$!
    wait_until 20 test -e "$served" || { kill "$shell"; wait "$shell"; fail "the replay never served: $(cat "$out")"; return 1; }
    local pid=""
    case $victim in
      apache2) pid=$(replay_apache_main 10.98.0.1-80) ;;
      dnsmasq) pid=$(pgrep -o -f 'dnsmasq .*mm-replay\.[A-Za-z0-9]{6}/dnsmasq') ;;
    esac
    [ -n "$pid" ] || { kill "$shell"; wait "$shell"; fail "no $victim started: $(cat "$out")"; return 1; }
    kill -9 "$pid"
    wait_shell 30 "$shell"; rc=$?
    [ "$rc" = 1 ] || fail "$victim killed: status $rc, expected 1: $(cat "$out")" || return 1
    case $victim in
      apache2) grep -q "^mm-replay: the replay server for 10.98.0.1:80, 10.98.0.2:443 and 10.98.0.3:80 (apache2, pid $pid) was killed by SIGKILL while replaying" "$out" ;;
      dnsmasq) grep -q "^mm-replay: the replay's DNS server (dnsmasq, pid $pid) was killed by SIGKILL while replaying" "$out" ;;
    esac || fail "$victim killed: not named: $(cat "$out")" || return 1
    grep -q "^mm-replay: the replay cannot go on without it; ending the shell$" "$out" || fail "$(cat "$out")" || return 1
    echo "  $victim SIGKILLed: status $rc, $(grep -c . "$out") lines, naming it"
  done
  local work; work=$(find /tmp -maxdepth 1 -name 'mm-replay.*' -newer "$dir" 2>/dev/null)
  [ -z "$work" ] || fail "work directories left: $work"
}

test_fault_kill9_of_the_replay_ferry_leaves_no_work_directory() {
  local dir=$WORLD_TMP/fault-replay-ferry out=$WORLD_TMP/fault-replay-ferry.out shell apache ferry work rc
  daemons_recording "$dir" || fail "could not build the recording" || return 1
  replay_shell "$dir" -- sleep 41.21 > "$out" 2>&1 &
  shell=$!
  wait_until 20 replay_apache_main 10.98.0.1-80 >/dev/null ||
    { kill "$shell"; wait "$shell"; fail "no Apache started: $(cat "$out")"; return 1; }
  apache=$(replay_apache_main 10.98.0.1-80)
  ferry=$(ps -o ppid= -p "$apache" | tr -d ' ')
  [ "$(cat "/proc/$ferry/comm" 2>/dev/null)" = mm-replay ] ||
    { kill "$shell"; wait "$shell"; fail "Apache's parent $ferry is not the replay's ferry"; return 1; }
  work=$(tr '\0' ' ' < "/proc/$apache/cmdline" | sed 's|.* -f \(/[^ ]*\)/apache-[^ ]*.*|\1|')
  [ -d "$work" ] || { kill "$shell"; wait "$shell"; fail "no work directory ($work)"; return 1; }
  kill -9 "$ferry"
  wait_shell 30 "$shell"; rc=$?
  [ "$rc" = 1 ] || fail "status $rc, expected 1: $(cat "$out")" || return 1
  wait_until 5 gone_with_its_daemons "$work" || { rm -rf "$work"; fail "the work directory or its daemons outlived the ferry: $work"; return 1; }
  none_sleeping 41.21 || return 1
  echo "  replay's ferry SIGKILLed: status $rc, daemons stopped and $work removed by the guardian"
}

# A full file system under a link log: one line naming the log, status 1, the command ended,
# rather than a log with a gap and status 0.
test_fault_disk_full_during_link_logging_ends_the_shell() {
  local full=$WORLD_TMP/full-log out rc
  mkdir -p "$full"
  mount -t tmpfs -o size=64k,mode=0777 tmpfs "$full" || { echo "  cannot mount a tmpfs here"; return 1; }
  out=$(AS_USER=$TEST_USER in_world "$BIN/mm-link" rate:96Mbit/s rate:96Mbit/s --downlink-log="$full/down.log" -- \
    sh -c "ping -q -i 0.002 -s 1000 -c 5000 $SERVER_IP >/dev/null; echo finished" 2>&1); rc=$?
  umount "$full"
  [ "$rc" = 1 ] || fail "status $rc, expected 1: $out" || return 1
  echo "$out" | grep -q "^mm-link: cannot write the downlink log $full/down.log: No space left on device; the log would have a gap, so the shell ends" ||
    fail "not named: $out" || return 1
  ! echo "$out" | grep -q "^finished$" || fail "the command ran to its end after the log failed: $out" || return 1
  echo "  $out; status $rc"
}

test_fault_read_only_recording_directory_is_refused_before_start() {
  local parent=$WORLD_TMP/ro-parent out rc
  mkdir -p "$parent"
  mount -t tmpfs -o size=64k,mode=0777 tmpfs "$parent" && mount -o remount,ro "$parent" ||
    { umount "$parent" 2>/dev/null; echo "  cannot mount a read-only tmpfs here"; return 1; }
  out=$(AS_USER=$TEST_USER in_world env MAHIMAHI_CA_DIR="$WORLD_TMP/ro-ca" "$BIN/mm-record" "$parent/rec" -- \
    sh -c 'echo started' 2>&1); rc=$?
  umount "$parent"
  rm -rf "$WORLD_TMP/ro-ca"
  [ "$rc" != 0 ] || fail "status 0 for a read-only directory: $out" || return 1
  echo "$out" | grep -q "$parent/rec" && echo "$out" | grep -qi "read-only file system" || fail "not named: $out" || return 1
  ! echo "$out" | grep -q "^started$" || fail "the command ran: $out" || return 1
  echo "  $out (status $rc)"
}

# The command itself ignores SIGHUP and SIGTERM: a SIGTERM to the shell still ends it, after the
# grace period (2 s), with SIGKILL, and says so.
test_fault_command_ignoring_hup_and_term_still_ends() {
  local marker=$WORLD_TMP/ignoring-ready out=$WORLD_TMP/ignoring.out shell rc s ms
  rm -f "$marker"
  # (ip netns exec directly: $! is then the shell itself, not a subshell of in_world.)
  ip netns exec "$WORLD" "$BIN/mm-delay" 0 sh -c 'trap "" HUP TERM; : > "$0"; while :; do sleep 0.05; done' "$marker" \
    > "$out" 2>&1 &
  shell=$!
  wait_until 10 test -e "$marker" || { kill -9 "$shell"; wait "$shell"; fail "the command never started"; return 1; }
  s=$(date +%s%N)
  kill -TERM "$shell"
  wait_shell 30 "$shell"; rc=$?
  ms=$(( ($(date +%s%N) - s) / 1000000 ))
  # The command's own end: SIGKILL.
  [ "$rc" = 137 ] || fail "status $rc, expected 137: $(cat "$out")" || return 1
  grep -q "^mm-delay: sh did not end within 2000 ms of SIGTERM; ending it and everything it started with SIGKILL$" "$out" ||
    fail "no word of why: $(cat "$out")" || return 1
  check_range "time to end a command that ignores SIGHUP and SIGTERM (ms)" "$ms" 1900 4000
}

# Chromium crashes mid-load inside mm-replay (with mm-delay inside it, so that the load lasts):
# SIGSEGV to the browser process once its renderer runs and the page has started to arrive.
# The shells end with the browser's own status, end every process it left (renderer, zygote,
# crash handler), and leave nothing behind: no Chromium process, no replay daemon, no work
# directory; a replay started afterwards serves the same page.
test_fault_chromium_crash_mid_load_inside_replay() {
  command -v chromium >/dev/null || { echo "  chromium not installed"; return 1; }
  local dir=$WORLD_TMP/fault-chromium out=$WORLD_TMP/fault-chromium.out shell rc browser work
  /usr/bin/python3 - "$WORLD_TMP/fault-chromium.har" <<'PY'
import json, sys
def entry(url, body, mime):
    return {"startedDateTime": "2026-01-01T00:00:00.000Z", "time": 1,
            "request": {"method": "GET", "url": url, "httpVersion": "HTTP/1.1",
                        "headers": [{"name": "Host", "value": "crash.test"}], "queryString": [], "cookies": [],
                        "headersSize": -1, "bodySize": 0},
            "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1",
                         "headers": [{"name": "Content-Type", "value": mime}], "cookies": [],
                         "content": {"size": len(body), "mimeType": mime, "text": body},
                         "redirectURL": "", "headersSize": -1, "bodySize": len(body)},
            "cache": {}, "timings": {"send": 0, "wait": 1, "receive": 0}, "serverIPAddress": "10.98.0.9"}
# A chain of scripts, each written by the one before: every step is one more round trip.
entries = [entry("http://crash.test/", '<!doctype html><title>crash</title><h1>crash</h1><script src="/s0.js"></script>', "text/html")]
for i in range(8):
    entries.append(entry("http://crash.test/s%d.js" % i,
                         'document.write("<script src=\\"/s%d.js\\"></" + "script>");' % (i + 1), "application/javascript"))
entries.append(entry("http://crash.test/s8.js", 'document.title = "loaded";', "application/javascript"))
json.dump({"log": {"version": "1.2", "creator": {"name": "test", "version": "1"}, "entries": entries}}, open(sys.argv[1], "w"))
PY
  "$BIN/mm-recording" from-har "$WORLD_TMP/fault-chromium.har" "$dir" >/dev/null || fail "could not build the recording" || return 1
  # Its temporary files in the world's directory: a crashed Chromium leaves its profile's
  # singleton socket directory (org.chromium.Chromium.XXXXXX) in TMPDIR.
  mkdir -p "$WORLD_TMP/fault-chromium-tmp"
  local browser_cmd=(env TMPDIR="$WORLD_TMP/fault-chromium-tmp" chromium --headless=new --no-sandbox --disable-gpu
    --no-first-run --disable-http-cache --user-data-dir="$WORLD_TMP/fault-chromium-profile" --dump-dom http://crash.test/)
  ip netns exec "$WORLD" "$BIN/mm-replay" --ignore-user-agent "$dir" "$BIN/mm-delay" 200 -- "${browser_cmd[@]}" > "$out" 2>&1 &
  shell=$!
  # The browser process (named chromium, with this test's profile, without --type=).
  browser_pid() {
    local pid
    for pid in $(pgrep -x chromium); do
      process_state_is_not "$pid" Z || continue
      case "$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null)" in
        *--type=*) ;;
        *fault-chromium-profile*) echo "$pid"; return 0 ;;
      esac
    done
    return 1
  }
  # Mid-load: the browser has a connection to the replayed server (it is fetching the page,
  # whose chain of scripts then takes eight more round trips of 400 ms).
  fetching() {
    browser=$(browser_pid) &&
      [ -n "$(nsenter --net="/proc/$browser/ns/net" ss -Htn state established dst 10.98.0.9 2>/dev/null)" ]
  }
  # Chromium's processes (and its crash handler) of the tests: outside the machine's namespace.
  test_chromium() {
    local pid root_ns; root_ns=$(readlink /proc/1/ns/net)
    for pid in $(pgrep -x chromium) $(pgrep -x chrome_crashpad); do
      process_state_is_not "$pid" Z && [ "$(readlink "/proc/$pid/ns/net" 2>/dev/null)" != "$root_ns" ] && echo "$pid"
    done
  }
  no_chromium_left() { [ -z "$(test_chromium)" ]; }
  wait_until 60 fetching || { kill "$shell"; wait_shell 30 "$shell"; fail "the browser never fetched: $(tail -5 "$out")"; return 1; }
  browser=$(browser_pid)
  work=$(pgrep -a -f 'mm-replay\.[A-Za-z0-9]{6}/apache' | sed -n 's|.* -f \(/[^ ]*\)/apache-[^ ]*.*|\1|p' | head -1)
  [ -n "$work" ] || { kill "$shell"; wait_shell 30 "$shell"; fail "no replay work directory found"; return 1; }
  kill -SEGV "$browser"
  wait_shell 60 "$shell"; rc=$?
  # The browser's own end: SIGSEGV (128 + 11), passed up through both shells.
  [ "$rc" = 139 ] || fail "status $rc after the crash, expected 139: $(tail -5 "$out")" || return 1
  ! grep -q '<title>loaded</title>' "$out" || fail "the page loaded: the crash was not mid-load" || return 1
  # What the browser left (its crash handler, renderers) the shell ended and named; unless all of
  # it ended on its own first (it can, when the children see their parent gone in time): then
  # nothing of it may be running once the shell has exited.
  grep -q '^mm-delay: ended [0-9]* process.* that the command left running (.*chrom' "$out" || no_chromium_left ||
    fail "Chromium processes outlived the shell, unnamed: $(test_chromium); $(grep -v '^\[' "$out" | tail -3)" || return 1
  wait_until 10 no_chromium_left || fail "Chromium processes left: $(test_chromium)" || return 1
  wait_until 10 gone_with_its_daemons "$work" || fail "the replay's work directory or daemons remain: $work" || return 1
  echo "  browser (pid $browser) crashed mid-load: status $rc; $(grep -E 'left running|ended' "$out" | grep -v '^\[' | head -2 | tr '\n' ' ')"
  # The same page again, whole: nothing of the crash is in the way.
  out=$(timeout 120 ip netns exec "$WORLD" "$BIN/mm-replay" --ignore-user-agent "$dir" -- "${browser_cmd[@]}" 2>/dev/null)
  echo "$out" | grep -q '<title>loaded</title>' || fail "the page did not load after the crash: $(echo "$out" | head -3)" || return 1
  wait_until 10 no_chromium_left || fail "Chromium processes left after the second load" || return 1
  echo "  the same page replayed whole afterwards; no Chromium process left"
}
