# SPDX-License-Identifier: GPL-3.0-or-later
# The hardening stage of tests/run-all (docs/robustness.md), sourced by it after the integration
# tests: the code built again with clang under ASan + UBSan (with the fuzz targets) and under TSan,
# then
#   asan/make-check       the build's make check as a contributor runs it (no sanitizer options
#                         given: the harness applies lsan.supp itself): the unit tests, and the
#                         layer, man page (every program's --help), completion and license checks
#   asan/unit/...         every unit test under ASan + UBSan (LeakSanitizer included), as the
#                         test user, with stricter options and every report checked
#   fuzz/TARGET           each fuzz target for a short smoke run on the committed corpus
#   tsan/unit/...         every unit test under TSan: the threaded parts (the ferry pair, the
#                         link-log writer, the record proxy and writer, the FastCGI matcher's
#                         server, the meter's drawing thread) and the rest
#   asan/TEST             a representative set of integration tests, the programs installed
#                         setuid root from the ASan build (MAHIMAHI_ASAN_TESTS='^test_': all)
#   tsan/TEST             the integration tests of the threaded programs, installed setuid root
#                         from the TSan build (MAHIMAHI_TSAN_TESTS to change the set)
# A sanitizer report anywhere fails the test that caused it. Uses run-all's record, run_unit_tests
# and run_integration, the test world, $top, $TMP, $BIN and $pattern. Bash.

# Executions per fuzz target, from a fixed seed, so that every run of the stage is the same run
# (a finding is a bug, never a flake); at most 60 s each. MAHIMAHI_FUZZ_RUNS to change.
HARDENING_FUZZ_RUNS=${MAHIMAHI_FUZZ_RUNS:-40000}
# One or more tests of each program and each privileged path (set-up, clean-up, the guard, NAT,
# logs, graphs, recording, replay with its daemons and matcher), within a few minutes.
# MAHIMAHI_ASAN_TESTS (a regular expression over the test functions' names, e.g. '^test_' for
# all of them) replaces the set.
HARDENING_INTEGRATION=${MAHIMAHI_ASAN_TESTS:-'^test_(delay_rtt_is_twice_the_delay|nested_six_deep_mixing_kinds|loss_seed_reproduces_drops|onoff_drops_some_and_passes_some|job_control_stop_and_continue|stragglers_that_ignore_sigterm_are_killed|meter_mm_meter_passes_traffic_through_and_graphs_it|record_500_concurrent_connections_lose_no_pair|record_as_ordinary_user_files_are_the_users|record_disk_full_client_still_served_nothing_half_written|replay_recording_is_parsed_without_root_and_never_in_the_supervisor|replay_sigterm_while_loading_ends_promptly|pageload_reports_plausible_metrics|ordinary_user_through_setuid|ferry_runs_as_the_user_and_command_cannot_regain_root|signals_end_the_shell_cleanly|kill9_of_the_shell_ends_what_the_command_started|shell_rules_are_gone_when_it_exits|dns_works_and_crosses_the_link|bad_input_is_rejected_clearly|link_droptail_drops_and_bounds_delay|link_log_format|link_bad_input|plot_tools_draw_logs_and_their_figures_match|mm_trace_makes_converts_and_checks|meter_output_draws_the_graphs_without_a_display|offload_loss_is_decided_per_wire_packet|record_http_and_https_over_several_origins|record_post_put_chunked_gzip_and_100_continue|record_bad_input|record_malformed_http_is_relayed_and_the_proxy_lives_on|replay_serves_every_recorded_url_byte_identical_with_origins_stopped|replay_matching_rules_closest_query_repeats_ports_user_agent_and_misses|replay_http2_negotiates_h2|replay_bad_input|replay_range_requests_get_206_416_and_recorded_slices|replay_servers_killed_replay_leaves_no_daemon|setup_lock_wait_is_bounded_and_interruptible|directory_name_cannot_run_code_through_the_prompt|http3_server_survives_garbage_and_a_flood_of_bogus_initials|http3_connections_migrate_and_recover_from_loss_behind_nested_shells)$'}
# The integration tests whose programs run threads (the ferry pair of every shell, the link-log
# writer, the record proxy and writer, the replay's FastCGI matcher, the meter's drawing
# thread), against a setuid install of the TSan build; none of them checks a time tightly, as
# TSan slows every thread down. MAHIMAHI_TSAN_TESTS replaces the set.
HARDENING_TSAN_INTEGRATION=${MAHIMAHI_TSAN_TESTS:-'^test_(dns_works_and_crosses_the_link|link_log_format|record_500_concurrent_connections_lose_no_pair|record_http_and_https_over_several_origins|replay_serves_every_recorded_url_byte_identical_with_origins_stopped|replay_http2_negotiates_h2|meter_output_draws_the_graphs_without_a_display|signals_end_the_shell_cleanly|http3_connections_migrate_and_recover_from_loss_behind_nested_shells)$'}

# Where sanitizers write their reports (ASAN_OPTIONS log_path): a directory any user may write,
# as the shells drop to the user's rights; every report is a failure of the test that made it.
hardening_sanitizer_env() {  # DIR
  local reports=$1
  mkdir -p "$reports" && chmod 1777 "$reports"
  cp "$top/tests/lsan.supp" "$top/tests/tsan.supp" "$TMP/" && chmod 644 "$TMP/lsan.supp" "$TMP/tsan.supp"
  export ASAN_OPTIONS="log_path=$reports/asan:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1"
  export UBSAN_OPTIONS="log_path=$reports/ubsan:print_stacktrace=1:halt_on_error=1"
  export LSAN_OPTIONS="suppressions=$TMP/lsan.supp:print_suppressions=0"
  # die_after_fork=0: unit tests fork children that start threads (a record writer killed mid-write).
  export TSAN_OPTIONS="log_path=$reports/tsan:halt_on_error=1:second_deadlock_stack=1:die_after_fork=0:suppressions=$TMP/tsan.supp"
  SANITIZER_REPORTS=$reports  # run_integration fails a test that left a report
}
hardening_sanitizer_env_end() {
  unset ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS TSAN_OPTIONS
  SANITIZER_REPORTS=
}

hardening_reports() {  # DIR: prints and removes the reports written since the last call
  local reports=$1 f
  for f in "$reports"/*; do
    [ -f "$f" ] || continue
    echo "sanitizer report $(basename "$f"):"
    head -60 "$f"
    rm -f "$f"
  done
}

hardening_build() {  # DIR CONFIGURE-ARG...: a clang -O1 -g build of the programs and unit tests
  local dir=$1
  shift
  mkdir -p "$dir"
  (cd "$dir" && { [ -f Makefile ] || CXX=clang++ CXXFLAGS="-O1 -g" "$top/configure" -q "$@" >/dev/null; } &&
    make -s -j"$(nproc)" >/dev/null && make -s -j"$(nproc)" -C tests check-programs >/dev/null)
}

hardening_run() {
  echo "== hardening: clang builds under ASan + UBSan (with the fuzz targets) and TSan"
  local reports=$TMP/sanitizer-reports left phase=$SECONDS
  # Where the stage's time goes, a line per phase.
  phase_done() { echo "   ($1: $((SECONDS - phase)) s)"; phase=$SECONDS; }
  # build-fuzzers installs clang if it is missing and configures with --enable-fuzzers.
  # Configured for the prefix the integration tests install into, so that the paths compiled in
  # (the administrator's file, the bundled traces) are the installed ones.
  # A PATTERN builds only what its tests need: asan/ and fuzz/ the ASan build, tsan/ the TSan one.
  if [ -n "$pattern" ] && [[ ! "$pattern" =~ asan|fuzz ]]; then
    :
  elif ! "$top/scripts/build-fuzzers" "$TMP/asan" --prefix="$TMP/asan-prefix" >/dev/null || ! hardening_build "$TMP/asan"; then
    record "asan/build" 1
  else
    phase_done "asan build"
    hardening_fuzz_smoke  # first: libFuzzer reports its findings itself, into each target's log
    phase_done "fuzz targets"
    hardening_make_check "$TMP/asan" asan
    phase_done "asan make check"
    hardening_sanitizer_env "$reports"
    run_unit_tests asan/unit "$TMP/asan/tests/unit-tests"
    left=$(hardening_reports "$reports")
    [ -z "$left" ] || { record "asan/unit: sanitizer reports" 1; echo "$left" | sed 's/^/   /'; }
    phase_done "asan unit tests"
    hardening_integration "$TMP/asan" asan "$HARDENING_INTEGRATION"
    phase_done "asan integration tests"
    hardening_sanitizer_env_end
  fi
  rm -rf "$TMP/asan"
  if [ -n "$pattern" ] && [[ ! "$pattern" =~ tsan ]]; then
    :
  elif ! hardening_build "$TMP/tsan" --enable-sanitizers=thread --prefix="$TMP/tsan-prefix"; then
    record "tsan/build" 1
  else
    phase_done "tsan build"
    hardening_sanitizer_env "$reports"
    run_unit_tests tsan/unit "$TMP/tsan/tests/unit-tests"
    left=$(hardening_reports "$reports")
    [ -z "$left" ] || { record "tsan/unit: sanitizer reports" 1; echo "$left" | sed 's/^/   /'; }
    phase_done "tsan unit tests"
    hardening_integration "$TMP/tsan" tsan "$HARDENING_TSAN_INTEGRATION"
    phase_done "tsan integration tests"
    hardening_sanitizer_env_end
  fi
  rm -rf "$TMP/tsan"
}

# The build's own make check, as a contributor runs it (as root, from the build tree): no
# sanitizer option in the environment, since the test harness sets the suppressions itself.
# Recorded as LABEL/make-check; asan/unit/... run the unit tests again, as the test user with the
# stricter options and report files of hardening_sanitizer_env.
hardening_make_check() {  # BUILD LABEL
  local build=$1 label=$2 out status
  [ -n "$pattern" ] && [[ ! "$label/make-check" =~ $pattern ]] && return
  out=$(env -u ASAN_OPTIONS -u UBSAN_OPTIONS -u LSAN_OPTIONS -u TSAN_OPTIONS make -s -C "$build/tests" check 2>&1)
  status=$?
  record "$label/make-check" "$status"
  [ "$status" = 0 ] || { echo "$out" | grep -E '^(PASS|FAIL|ERROR|XPASS): '; tail -40 "$build/tests/test-suite.log"; } | sed 's/^/   /'
}

hardening_fuzz_smoke() {
  # Each target runs on one core: the targets are dealt to as many lanes as there are cores, a
  # lane running its own one after another; recorded in order after.
  local name status names=() lanes lane pids=() results=$TMP/fuzz-results
  lanes=$(nproc)
  mkdir -p "$results"
  for name in $(cd "$top/src/fuzz/corpus" && ls); do
    [ -n "$pattern" ] && [[ ! "fuzz/$name" =~ $pattern ]] && continue
    names+=("$name")
  done
  fuzz_lane() {  # LANE: the targets whose index modulo the lanes is LANE
    local i
    for i in "${!names[@]}"; do
      [ $((i % lanes)) = "$1" ] || continue
      FUZZ_BUILD=$TMP/asan FUZZ_WORK=$TMP/fuzz-work RUNS=$HARDENING_FUZZ_RUNS SEED=1 \
        "$top/bench/fuzz" 60 "^${names[$i]}\$" > "$results/${names[$i]}.out" 2>&1
      echo $? > "$results/${names[$i]}.status"
    done
  }
  for ((lane = 0; lane < lanes; lane++)); do
    fuzz_lane "$lane" &
    pids+=($!)
  done
  wait "${pids[@]}"
  for name in "${names[@]}"; do
    status=$(cat "$results/$name.status" 2>/dev/null || echo 1)
    record "fuzz/$name" "$status"
    tail -1 "$results/$name.out" | sed 's/^/   /'
    # The finding: the sanitizer's or the check's words and the input, without libFuzzer's progress.
    [ "$status" = 0 ] || grep -v -E '^#[0-9]+|^INFO:|^\s+#[0-9]+ 0x[0-9a-f]+ in fuzzer::|NEW_FUNC' \
      "$TMP/fuzz-work/$name/log" | head -40 | sed 's/^/   /'
  done
  rm -rf "$TMP/fuzz-work" "$results"
}

# The integration tests matching REGEX, run by run-all's harness against a setuid install of
# BUILD (configured with --prefix=BUILD-prefix), each recorded as LABEL/NAME.
hardening_integration() {  # BUILD LABEL REGEX
  local build=$1 label=$2 regex=$3 prefix=$1-prefix t
  # Setuid sanitizer builds obey their caller's ASAN_OPTIONS and the like: only root and the
  # test user may reach them (a directory of mode 0750, the test user's group).
  mkdir -p "$prefix" && chgrp "$(id -g "$TEST_USER")" "$prefix" && chmod 750 "$prefix" ||
    { record "$label/install" 1; return; }
  make -s -C "$build" install >/dev/null || { record "$label/install" 1; rm -rf "$prefix"; return; }
  local shell
  for shell in $(sed -n 's/^shells = //p' "$top/src/Makefile.am"); do  # the programs make install makes setuid
    chown root:root "$prefix/bin/$shell" && chmod 4755 "$prefix/bin/$shell"
  done
  local bin=$BIN
  BIN=$prefix/bin
  MAHIMAHI_SANITIZER=$label  # (world.sh: address_space_kb)
  if world_create && origins_create; then
    for t in $(declare -F | awk '{print $3}' | grep -E "$regex"); do
      [ -n "$pattern" ] && [[ ! "$label/${t#test_}" =~ $pattern ]] && continue
      run_integration "$t" "$label/${t#test_}"
    done
  else
    record "$label/test world" 1
  fi
  world_destroy
  BIN=$bin MAHIMAHI_SANITIZER=
  rm -rf "$prefix"
}
