# SPDX-License-Identifier: GPL-3.0-or-later
# Integration tests of mm-sweep: real sweeps (mm-replay, mm-delay, mm-link, mm-pageload and
# Chromium) over a page of the test world's origins recorded with Chromium, run as the
# ordinary test user.

# The recording every sweep test replays (made once): a.test's page, whose stylesheet, scripts and
# images come from three origins over HTTP and HTTPS, recorded as Chromium loaded it.
sweep_home() { echo "$WORLD_TMP/sweep-home"; }
sweep_recording() {
  local home; home=$(sweep_home)
  [ -d "$home/rec" ] && return 0
  origins_create || return 1
  mkdir -p "$home"; chown "$TEST_USER" "$home"
  AS_USER=$TEST_USER in_world env HOME="$home" MAHIMAHI_CA_DIR="$home/ca" "$BIN/mm-ca" trust >/dev/null || return 1
  AS_USER=$TEST_USER in_world env HOME="$home" MAHIMAHI_CA_DIR="$home/ca" SSL_CERT_FILE="$ORIGIN_CA" \
    "$BIN/mm-record" "$home/rec" -- timeout 60 chromium --headless=new --no-sandbox --disable-gpu --no-first-run \
    --disable-http-cache --user-data-dir="$home/record-profile" --dump-dom http://a.test/index.html >/dev/null 2>&1 ||
    { rm -rf "$home/rec"; fail "recording the page with chromium failed"; return 1; }
}

# mm-sweep as the test user, with the installed programs first in PATH.
sweep_run() {  # ARG...
  local home; home=$(sweep_home)
  AS_USER=$TEST_USER in_world env HOME="$home" MAHIMAHI_CA_DIR="$home/ca" PATH="$BIN:$PATH" "$BIN/mm-sweep" "$@"
}

no_chromium() { ! pgrep -x chromium >/dev/null && ! pgrep -f 'chromium.*--headless' >/dev/null; }
sweep_left_nothing() {
  wait_until 20 no_chromium || fail "chromium left running: $(pgrep -a chromium | head -3)" || return 1
  local left; left=$(world_leftovers)
  [ -z "$left" ] || fail "$left" || return 1
}

# Column NAME of summary.csv's row of configuration ID.
summary_value() {  # RESULTS ID NAME
  python3 - "$@" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1] + "/summary.csv")))
print([r for r in rows if r["configuration"] == sys.argv[2]][0][sys.argv[3]])
PY
}

# Every PNG (chunk CRCs, IHDR, inflated image size) and SVG (well-formed XML, an <svg> root) in DIR.
plots_are_valid() {  # DIR
  python3 - "$1" <<'PY'
import glob, struct, sys, zlib, xml.dom.minidom
d = sys.argv[1]
pngs, svgs = sorted(glob.glob(d + "/*.png")), sorted(glob.glob(d + "/*.svg"))
assert pngs and len(pngs) == len(svgs), (pngs, svgs)
for p in pngs:
    data = open(p, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", p + ": no PNG signature"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        crc, = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert zlib.crc32(kind + body) == crc, p + ": bad CRC in " + kind.decode()
        if kind == b"IHDR": ihdr = struct.unpack(">IIBBBBB", body)
        if kind == b"IDAT": idat += body
        pos += 12 + length
    width, height, depth, colour = ihdr[:4]
    channels = {2: 3, 6: 4}[colour]
    assert len(zlib.decompress(idat)) == height * (1 + width * channels * depth // 8), p + ": wrong image size"
    assert width >= 500 and height >= 300, p
for s in svgs:
    assert xml.dom.minidom.parse(s).documentElement.tagName == "svg", s
print(len(pngs))
PY
}

test_sweep_2x2_two_runs_csvs_plots_and_plt_grows_with_rtt() {
  sweep_recording || return 1
  local home; home=$(sweep_home); local res=$home/res-2x2
  sweep_run --recording "$home/rec" --rates 2,25 --rtts 20,300 --runs 2 --timeout 40 --out "$res" 2>"$home/2x2.err" ||
    fail "mm-sweep failed: $(tail -20 "$home/2x2.err")" || return 1
  sweep_left_nothing || return 1
  # The default page is the recording's first HTML response; each load printed a progress line.
  grep -q "http://a.test/index.html: 5 configurations x 2 runs" "$home/2x2.err" || fail "$(head -3 "$home/2x2.err")" || return 1
  [ "$(grep -c '^mm-sweep: \[[0-9]*/10\] ' "$home/2x2.err")" = 10 ] || fail "progress: $(cat "$home/2x2.err")" || return 1
  grep -q '^mm-sweep: \[1/10\] .* left, about ' "$home/2x2.err" || fail "no time left: $(head -3 "$home/2x2.err")" || return 1
  # loads.csv: a row per load (the baseline and 4 configurations, 2 runs each), all ok.
  python3 - "$res" <<'PY' || { fail "loads.csv: $(cat "$res/loads.csv")"; return 1; }
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1] + "/loads.csv")))
assert len(rows) == 10, len(rows)
assert list(rows[0])[:8] == ["configuration", "protocol", "servers", "rate_mbps", "rtt_ms", "loss", "queue", "url"], list(rows[0])
assert all(r["status"] == "ok" and float(r["plt_ms"]) > 0 and float(r["bytes"]) > 0 for r in rows), rows
assert sorted({(r["rate_mbps"], r["rtt_ms"]) for r in rows}) == [("", "0"), ("2", "20"), ("2", "300"), ("25", "20"), ("25", "300")]
summary = list(csv.DictReader(open(sys.argv[1] + "/summary.csv")))
assert len(summary) == 5 and all(r["loads_ok"] == "2" and r["loads_total"] == "2" for r in summary), summary
assert all(float(r["plt_ratio_to_optimal"]) > 0 and float(r["optimal_plt_ms"]) > 0 for r in summary), summary
PY
  # PLT grows with RTT: the page needs at least two round trips in sequence (its HTML, then the
  # resources it names, over new connections), each 280 ms longer at 300 ms than at 20 ms.
  local rate low high
  for rate in 2 25; do
    low=$(summary_value "$res" "h1-multi-${rate}mbit-20ms-loss0" plt_median_ms)
    high=$(summary_value "$res" "h1-multi-${rate}mbit-300ms-loss0" plt_median_ms)
    check_range "median PLT at $rate Mbit/s, 300 ms minus 20 ms" "$(echo "$high - $low" | bc)" 560 1000000 || return 1
  done
  local n; n=$(plots_are_valid "$res/plots") || fail "plots: $n" || return 1
  [ "$n" = 5 ] || fail "expected 5 plots, found $n: $(ls "$res/plots")" || return 1
  # Another grid into the same RESULTS is refused, naming --out; nothing is loaded.
  local out; out=$(sweep_run --recording "$home/rec" --rates 2 --rtts 20,300 --runs 2 --timeout 40 --out "$res" 2>&1)
  [ $? = 1 ] && echo "$out" | grep -q "holds another sweep (it differs in: configurations, rates_mbps" &&
    echo "$out" | grep -q -- "--out" || fail "a different grid: $out" || return 1
  echo "  2x2 sweep, 2 runs: 10 rows, 5 summary rows with ratios to optimal, 5 valid PNG+SVG plots;" \
    "median PLT +$(echo "$high - $low" | bc) ms from 20 to 300 ms RTT at 25 Mbit/s"
}

test_sweep_interrupted_resumes_without_redoing_loads() {
  sweep_recording || return 1
  local home; home=$(sweep_home); local res=$home/res-resume
  local args=(--recording "$home/rec" --rates 25 --rtts 20,100 --runs 2 --timeout 40 --jobs 1 --out "$res")
  sweep_run "${args[@]}" 2>"$home/resume1.err" &
  local job=$! pid=
  # The background job is a subshell around ip netns exec and setpriv: signal mm-sweep itself.
  sweep_pid() { pid=$(pgrep -u "$TEST_USER" -x mm-sweep); [ -n "$pid" ]; }
  stored_loads() { find "$res/loads" -name 'run-*.json' 2>/dev/null | wc -l; }
  first_stored() { [ "$(stored_loads)" -ge 1 ]; }
  wait_until 20 sweep_pid || { wait "$job"; fail "mm-sweep did not start: $(cat "$home/resume1.err")"; return 1; }
  wait_until 180 first_stored || { kill -INT "$pid"; wait "$job"; fail "no load finished: $(cat "$home/resume1.err")"; return 1; }
  kill -INT "$pid"
  sweep_ended() { ! kill -0 "$pid" 2>/dev/null; }
  wait_until 60 sweep_ended || { kill -KILL "$pid"; wait "$job"; fail "mm-sweep did not stop within 60 s of SIGINT"; return 1; }
  wait "$job"; local status=$?
  [ "$status" = 130 ] || fail "interrupted sweep exited $status: $(cat "$home/resume1.err")" || return 1
  grep -q "interrupted: stopping" "$home/resume1.err" || fail "$(cat "$home/resume1.err")" || return 1
  sweep_left_nothing || return 1
  local done1; done1=$(stored_loads)
  [ "$done1" -ge 1 ] && [ "$done1" -lt 6 ] || fail "$done1 loads stored of 6" || return 1
  [ -z "$(find "$res/loads" -name '.*')" ] || fail "pending files left: $(find "$res/loads" -name '.*')" || return 1
  local before; before=$(find "$res/loads" -name 'run-*.json' -printf '%p %T@\n' | sort)
  sweep_run "${args[@]}" 2>"$home/resume2.err" || fail "resumed sweep failed: $(tail -20 "$home/resume2.err")" || return 1
  sweep_left_nothing || return 1
  grep -q "$done1 loads\? already done, $((6 - done1)) loads\? to do" "$home/resume2.err" ||
    fail "resume: $(head -2 "$home/resume2.err")" || return 1
  [ "$(grep -c '^mm-sweep: \[' "$home/resume2.err")" = $((6 - done1)) ] || fail "$(cat "$home/resume2.err")" || return 1
  [ "$(stored_loads)" = 6 ] || fail "$(stored_loads) loads stored after the resume" || return 1
  # The loads stored before the interruption are the same files, untouched.
  local after; after=$(find "$res/loads" -name 'run-*.json' -printf '%p %T@\n' | sort)
  [ "$(comm -23 <(echo "$before") <(echo "$after"))" = "" ] || fail "loads were redone: $before / $after" || return 1
  [ "$(tail -n +2 "$res/loads.csv" | wc -l)" = 6 ] || fail "loads.csv: $(cat "$res/loads.csv")" || return 1
  echo "  SIGINT after the first stored load: exit 130, $done1 of 6 loads kept; the same command ran the other" \
    "$((6 - done1)) only; no chromium left"
}

test_sweep_emitted_jobs_run_apart_and_merge() {
  sweep_recording || return 1
  local home; home=$(sweep_home); local res=$home/res-jobs
  # With the L4S queue and TCP's ECN on (mm-replay --tcp-ecn, inherited by the shells inside).
  sweep_run --recording "$home/rec" --rates 25 --rtts 20,100 --runs 1 --timeout 40 --out "$res" \
    --queue dualpi2 --tcp-ecn on --emit-jobs "$home/jobs.txt" 2>/dev/null || fail "--emit-jobs failed" || return 1
  [ "$(wc -l < "$home/jobs.txt")" = 3 ] || fail "jobs: $(cat "$home/jobs.txt")" || return 1
  [ "$(grep -c -- " --queue dualpi2 --tcp-ecn on " "$home/jobs.txt")" = 3 ] || fail "jobs: $(cat "$home/jobs.txt")" || return 1
  # Each line names the emitting mm-sweep by its full path; --job-program names another (quoted).
  [ "$(grep -c "^$BIN/mm-sweep --recording " "$home/jobs.txt")" = 3 ] || fail "not by its full path: $(cat "$home/jobs.txt")" || return 1
  local other
  other=$(sweep_run --recording "$home/rec" --rates 25 --rtts 20,100 --runs 1 --out "$res" --emit-jobs - \
    --job-program "/opt/shared prefix/bin/mm-sweep" 2>/dev/null) || fail "--job-program failed" || return 1
  [ "$(echo "$other" | grep -c "^'/opt/shared prefix/bin/mm-sweep' --recording ")" = 3 ] || fail "--job-program: $other" || return 1
  # Run two of the three lines, as a scheduler would (each its own --out), then merge: with a
  # minimal PATH that does not hold mahimahi's directory, and decoy mm-* programs first in it (a
  # sweep must run its own siblings, not whatever PATH finds first).
  local decoys=$home/decoys p
  mkdir -p "$decoys"
  for p in mm-replay mm-delay mm-loss mm-link mm-pageload; do
    printf '#!/bin/sh\necho "decoy %s ran" >&2\nexit 97\n' "$p" >"$decoys/$p" && chmod 755 "$decoys/$p"
  done
  local line
  for line in 1 3; do
    sed -n "${line}p" "$home/jobs.txt" | grep -q -- "--only .* --out $res/parts/" || fail "$(cat "$home/jobs.txt")" || return 1
    AS_USER=$TEST_USER in_world env HOME="$home" MAHIMAHI_CA_DIR="$home/ca" PATH="$decoys:/usr/bin:/bin" \
      sh -c "$(sed -n "${line}p" "$home/jobs.txt")" 2>"$home/job$line.err" ||
      fail "job $line: $(tail -5 "$home/job$line.err")" || return 1
    ! grep -rq decoy "$home/job$line.err" "$res/parts" || fail "job $line ran a decoy from PATH" || return 1
  done
  sweep_left_nothing || return 1
  sweep_run --merge "$res" "$res"/parts/* 2>"$home/merge.err" || fail "merge: $(cat "$home/merge.err")" || return 1
  grep -q '"tcp_ecn": *"on"' "$res/sweep.json" || fail "the merged manifest has no tcp_ecn" || return 1
  [ "$(tail -n +2 "$res/loads.csv" | wc -l)" = 2 ] || fail "loads.csv: $(cat "$res/loads.csv")" || return 1
  [ "$(summary_value "$res" h1-multi-25mbit-100ms-loss0 loads_ok)" = 1 ] &&
    [ -n "$(summary_value "$res" h1-multi-25mbit-100ms-loss0 plt_ratio_to_optimal)" ] &&
    [ "$(summary_value "$res" h1-multi-25mbit-20ms-loss0 loads_total)" = 0 ] || fail "summary: $(cat "$res/summary.csv")" || return 1
  plots_are_valid "$res/plots" >/dev/null || fail "merged plots are not valid" || return 1
  echo "  --emit-jobs wrote 3 lines naming $BIN/mm-sweep; two run apart (--only, own --out; PATH=decoys:/usr/bin:/bin)" \
    "and merged: their loads, the optimal, the plots"
}

# A command sweep (mm-sweep --command): iperf3's sender inside the shells, its server outside,
# over a trace link and a rate link, with reno and bbr as the namespace's congestion control,
# two runs each, two at a time.
test_sweep_command_reno_bbr_over_two_links() {
  local home; home=$(sweep_home); local res=$home/res-cc
  mkdir -p "$home" && chown "$TEST_USER" "$home"
  sweep_run --server 'iperf3 -s -1 -p $MM_SWEEP_PORT' \
    --command 'echo "cc $(sysctl -n net.ipv4.tcp_congestion_control) env $MM_SWEEP_CC"; iperf3 -c $MAHIMAHI_BASE -p $MM_SWEEP_PORT -t 4' \
    --link "$top/traces/constant-24Mbps" --rates 12 --rtts 40 --cc reno,bbr --runs 2 --jobs 2 --out "$res" \
    2>"$home/cc.err" || fail "mm-sweep --command failed: $(tail -20 "$home/cc.err")" || return 1
  sweep_left_nothing || return 1
  [ "$(grep -c '^mm-sweep: \[[0-9]*/8\] ' "$home/cc.err")" = 8 ] || fail "progress: $(cat "$home/cc.err")" || return 1
  # The congestion control each run's namespace had, and the variable that names it.
  local cc
  for cc in reno bbr; do
    grep -q "^cc $cc env $cc$" "$res/runs/command-$cc-12mbit-40ms-loss0-infinite/run-1.log" ||
      fail "the $cc run's namespace: $(head -3 "$res/runs/command-$cc-12mbit-40ms-loss0-infinite/run-1.log")" || return 1
  done
  python3 - "$res" "$(in_world hostname)" <<'PY' || { fail "runs.csv: $(cat "$res/runs.csv")"; return 1; }
import csv, sys
res, host = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(res + "/runs.csv")))
assert len(rows) == 8, len(rows)
for r in rows:
    assert r["status"] == "ok" and r["exit_status"] == "0" and r["direction"] == "uplink", r
    capacity, tput = float(r["capacity_mbps"]), float(r["throughput_mbps"])
    want = 24 if r["link"] == "constant-24mbps" else 12
    # The link's capacity is its rate (IP packets: 1500-byte opportunities); iperf3 fills most of it.
    assert abs(capacity - want) / want < 0.05, (r["configuration"], capacity)
    assert 0.7 * capacity <= tput <= 1.01 * capacity, (r["configuration"], tput, capacity)
    # One way: 20 ms of propagation (RTT/2) plus the queue's (mm-link's default, infinite).
    assert 20 <= float(r["delay_mean_ms"]) <= float(r["delay_p95_ms"]) < 20000, r
    assert r["host"] == host and r["cpus"] and r["kernel"] and r["mahimahi"], r
summary = list(csv.DictReader(open(res + "/summary.csv")))
assert len(summary) == 4, summary
assert all(r["runs"] == "2" and r["stored"] == "2" and r["ok"] == "2" and r["not_ok"] == "" for r in summary), summary
# Reno fills the infinite queue (its delay grows until the transfer ends); BBR keeps it short.
p95 = {(r["cc"], r["link"]): float(r["delay_p95_ms"]) for r in summary}
for link in ("constant-24mbps", "12mbit"):
    assert p95[("bbr", link)] < 300 < p95[("reno", link)], p95
print("\n".join("  %s: %.2f Mbit/s, p95 one-way %.1f ms" % (r["configuration"], float(r["throughput_mbps"]), float(r["delay_p95_ms"])) for r in summary))
PY
  local n; n=$(plots_are_valid "$res/plots") || fail "plots: $n" || return 1
  [ "$n" = 4 ] || fail "expected 4 plots (2 paths x throughput-delay and over time), found $n: $(ls "$res/plots")" || return 1
}

# Runs that fail are rows, not holes: a command that exits 3, a server that never listens; a run
# whose shells cannot start (a trace mm-link refuses) stops the sweep naming its log; the same
# command resumes.
test_sweep_command_failures_are_rows_and_it_resumes() {
  local home; home=$(sweep_home); local res=$home/res-fail out
  mkdir -p "$home" && chown "$TEST_USER" "$home"
  sweep_run --scheme 'ok=true' --scheme 'three=exit 3' --rates 24 --runs 2 --out "$res" 2>"$home/fail.err" ||
    fail "mm-sweep: $(tail -5 "$home/fail.err")" || return 1
  python3 - "$res" <<'PY' || { fail "summary: $(cat "$res/summary.csv")"; return 1; }
import csv, sys
s = {r["scheme"]: r for r in csv.DictReader(open(sys.argv[1] + "/summary.csv"))}
assert s["ok"]["ok"] == "2" and s["ok"]["not_ok"] == "", s
assert s["three"]["ok"] == "0" and s["three"]["stored"] == "2" and s["three"]["not_ok"] == "failed 2", s
rows = [r for r in csv.DictReader(open(sys.argv[1] + "/runs.csv")) if r["scheme"] == "three"]
assert [r["exit_status"] for r in rows] == ["3", "3"], rows
PY
  # A server that never listens on $MM_SWEEP_PORT: each run says so (10 s each).
  sweep_run --server 'sleep 30' --command true --rates 24 --runs 1 --out "$home/res-server" 2>"$home/server.err" ||
    fail "mm-sweep: $(tail -5 "$home/server.err")" || return 1
  grep -q "^mm-sweep: \[1/1\] command-default-24mbit-0ms-loss0-infinite run 1: server-failed" "$home/server.err" ||
    fail "server: $(cat "$home/server.err")" || return 1
  # A trace mm-link refuses: the harness fails, naming the run's log; nothing is stored.
  printf 'x\n' > "$home/bad.trace" && chmod 644 "$home/bad.trace"
  out=$(sweep_run --command true --link "$home/bad.trace" --runs 1 --out "$home/res-bad" 2>&1)
  [ $? = 1 ] && echo "$out" | grep -q "gave no result" && echo "$out" | grep -q "run-1.log" ||
    fail "a refused trace: $out" || return 1
  # Interrupted: the same command continues where it stopped.
  rm -f "$res/runs/ok-default-24mbit-0ms-loss0-infinite/run-2.json"
  out=$(sweep_run --scheme 'ok=true' --scheme 'three=exit 3' --rates 24 --runs 2 --out "$res" 2>&1) ||
    fail "resume: $out" || return 1
  echo "$out" | grep -q "3 runs already done, 1 run to do" || fail "resume: $out" || return 1
  sweep_left_nothing
}

# A command sweep's server is the user's own program and listens where it likes (here every
# address); mm-sweep runs a sweep with a server inside a shell of its own, whose namespace no other
# user of the machine can open a connection into, so another user cannot reach the server during
# a run, while the run's command (and the user) can.
test_sweep_command_server_answers_only_its_user() {
  local home; home=$(sweep_home); local dir=$home/private
  mkdir -p "$dir" && chown "$TEST_USER" "$dir" && rm -f "$dir"/*
  sweep_run --server "ip -4 -o addr show | awk '\$2 != \"lo\" { print \$4 }' | cut -d/ -f1 > $dir/addresses
      echo hello > $dir/hello.txt; exec python3 -m http.server -d $dir \$MM_SWEEP_PORT" \
    --command "curl -sf --max-time 5 http://\$MAHIMAHI_BASE:\$MM_SWEEP_PORT/hello.txt > $dir/inside
      echo \$MM_SWEEP_PORT > $dir/port; while [ ! -e $dir/done ]; do sleep 0.1; done" \
    --rates 24 --runs 1 --timeout 60 --out "$home/res-private" 2>"$home/private.err" &
  local sweep=$!
  if ! wait_until 30 test -s "$dir/port"; then
    touch "$dir/done"; wait "$sweep"
    fail "the run did not start: $(cat "$home/private.err")" || return 1
  fi
  local port address by_user="" by_other="" by_root=""
  port=$(cat "$dir/port")
  for address in $(cat "$dir/addresses"); do
    by_user+=$(AS_USER=$TEST_USER in_world curl -s --max-time 3 "http://$address:$port/hello.txt" 2>&1)
    by_other+=$(AS_USER=$OTHER_USER in_world curl -s --max-time 3 "http://$address:$port/hello.txt" 2>&1)
    by_root+=$(in_world curl -s --max-time 3 "http://$address:$port/hello.txt" 2>&1)
  done
  # And on the addresses of the world itself, where a server outside any shell would listen.
  by_other+=$(AS_USER=$OTHER_USER in_world curl -s --max-time 3 "http://127.0.0.1:$port/hello.txt" 2>&1)
  by_other+=$(AS_USER=$OTHER_USER in_world curl -s --max-time 3 "http://$WORLD_IP:$port/hello.txt" 2>&1)
  touch "$dir/done"
  wait "$sweep" || fail "mm-sweep: $(cat "$home/private.err")" || return 1
  echo "  the server at $(tr '\n' ' ' < "$dir/addresses")port $port: to its user '$by_user', to root '$by_root', to another user '$by_other'"
  [ "$(cat "$dir/inside")" = hello ] || fail "the run's command did not reach the server: $(cat "$home/private.err")" || return 1
  [ -n "$by_user" ] && [ -z "${by_user//hello/}" ] || fail "the server did not answer its user" || return 1
  [ -z "$by_other" ] || fail "another user reached the sweep's server: $by_other" || return 1
  [ "$(summary_value "$home/res-private" command-default-24mbit-0ms-loss0-infinite ok)" = 1 ] ||
    fail "summary: $(cat "$home/res-private/summary.csv")" || return 1
  sweep_left_nothing
}
