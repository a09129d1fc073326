# SPDX-License-Identifier: GPL-3.0-or-later
# Integration tests of the live graphs: mm-link --meter-* and mm-meter, in X windows on a
# virtual X server (Xvfb) and headless (--meter-output), in the test world (world.sh). The
# windows and images are examined with tests/tools/x_probe.cc ($XPROBE): titles, colours where
# the series are drawn, closing a window. BIN is the directory of the installed programs;
# TEST_USER an ordinary user, who runs the shells (setuid) with an X cookie of their own.

# The colours of mm-throughput-graph's series as drawn: the capacity's fill (red at 25 % over
# white), the traffic arriving (blue) and leaving (red) lines.
CAPACITY_FILL=f5c9c9 INGRESS_LINE=2659d9 EGRESS_LINE=cc1a1a

# Runs COMMAND in the world as TEST_USER, with the X server's display and the user's cookie.
as_x_user() { AS_USER=$TEST_USER in_world env DISPLAY=":$DISPLAY_NUMBER" XAUTHORITY="$XAUTH_FILE" "$@"; }

# Runs TEST (a function) with an X server, stopped afterwards whatever TEST returned (in a
# subshell: a test that aborts, as on an unset variable under set -u, must not leave Xvfb).
with_xvfb() {  # TEST
  XVFB_USER=$TEST_USER xvfb_start || return 1
  local status=0
  ("$1") || status=$?
  xvfb_stop
  return $status
}

# The top-level windows' titles, one per line, as xwininfo (x11-utils) sees them.
window_titles() { as_x_user xwininfo -root -tree | sed -n 's/^ *0x[0-9a-f]* "\(.*\)": .*/\1/p' | sort; }

# A writable place for the user's files in this test.
user_dir() { local d=$WORLD_TMP/meter-$1; rm -rf "$d"; mkdir -p "$d"; chown "$TEST_USER" "$d"; echo "$d"; }

# Shell code for the command inside a shell: waits (deadline S seconds) until the window titled
# TITLE shows at least N pixels of the egress line, leaving its last grab in FILE.
grab_when_drawn() {  # TITLE FILE N S
  echo "i=0; until w=\$($XPROBE windows | awk -F'\t' -v t='$1' '\$2 == t { print \$1 }'); [ -n \"\$w\" ] &&
    $XPROBE grab \$w $2 && [ \$($XPROBE pixels $2 e=$EGRESS_LINE | cut -d' ' -f2) -ge $3 ]; do
    [ \$i -ge $(($4 * 20)) ] && break; sleep 0.05; i=\$((i + 1)); done"
}

# Checks the pixels of a throughput chart image: the capacity's fill, both lines, and the
# egress line at the top of the fill (the traffic at the capacity: a saturated link).
check_saturated_chart() {  # IMAGE WHAT
  set -- "$1" "$2" $("$XPROBE" pixels "$1" c=$CAPACITY_FILL i=$INGRESS_LINE e=$EGRESS_LINE | awk '{ printf "%s %s %s %s ", $2, $3, $4, $5 }')
  local image=$1 what=$2 fill=$3 fill_top=$4 ingress=$7 egress=${11} egress_median=${13}
  echo "  $what: capacity fill $fill px from y=$fill_top, ingress $ingress px, egress $egress px at median y=$egress_median"
  [ "$fill" -ge 5000 ] || fail "$what: the capacity's fill is missing ($fill pixels)" || return 1
  # (where the queue passes on all it gets, the egress line is drawn over the ingress line)
  [ "$ingress" -ge 10 ] || fail "$what: the ingress line is missing ($ingress pixels)" || return 1
  [ "$egress" -ge 100 ] || fail "$what: the egress line is missing ($egress pixels)" || return 1
  check_range "$what: egress line's median height minus the capacity's top (px)" $((egress_median - fill_top)) -12 12
}

test_meter_link_windows_show_capacity_and_traffic_at_it() {
  with_xvfb meter_link_windows
}
meter_link_windows() {
  local dir; dir=$(user_dir windows)
  port=$(free_port) || return 1
  iperf_server "$port" || return 1
  local prefix="[link 12Mbit/s up 12Mbit/s down]"
  # iperf3 saturates the downlink; the window is grabbed once its egress line has 2 s of data.
  as_x_user "$BIN/mm-link" rate:12Mbit/s rate:12Mbit/s --meter-all -- sh -c \
    "iperf3 -c \$MAHIMAHI_BASE -p $port -R -t 8 >/dev/null & $(grab_when_drawn "$prefix downlink" "$dir/down.png" 200 10);
     $XPROBE windows | cut -f2 | sort > $dir/titles; wait" || fail "mm-link --meter-all failed" || return 1
  printf '%s\n' "$prefix downlink" "$prefix downlink delay" "$prefix uplink" "$prefix uplink delay" > "$dir/expected"
  diff "$dir/expected" "$dir/titles" || fail "the windows' titles" || return 1
  check_saturated_chart "$dir/down.png" "downlink window" || return 1
  # 20 s of time axis, about 8 s of them drawn: the lines end before the middle of the plot.
  set -- $("$XPROBE" pixels "$dir/down.png" e=$EGRESS_LINE)
  check_range "rightmost egress pixel (x; the plot spans 80-876)" "$5" 150 600 || return 1
  # The windows close with the shell.
  [ -z "$(window_titles)" ] || fail "windows left after the shell: $(window_titles)"
}

# mm-delay's and mm-loss's live graphs, drawn by mm-meter-view (a process of the user's, so that
# the shells themselves load no graphing library): the windows of an mm-loss inside an
# mm-delay, titled by their shells, show iperf3's traffic in and out with no capacity (there is
# no link); they close with the shells, and no viewer is left. (Each shell places its first
# window at the top left: the inner shell's covers the outer one's uplink window, so the outer
# shell's downlink window, beside it, is the one examined.)
test_meter_delay_and_loss_windows_through_the_viewer() {
  with_xvfb meter_delay_loss_windows
}
meter_delay_loss_windows() {
  local dir; dir=$(user_dir delay-windows)
  port=$(free_port) || return 1
  iperf_server "$port" || return 1
  local delay="[delay 20 ms] downlink" loss="[delay 20 ms] [loss down=0.001] downlink"
  as_x_user "$BIN/mm-delay" 20 --meter-uplink --meter-downlink -- "$BIN/mm-loss" downlink 0.001 \
    --meter-downlink -- sh -c "iperf3 -c \$MAHIMAHI_BASE -p $port -R -b 20M -t 6 >/dev/null &
      $(grab_when_drawn "$delay" "$dir/delay.png" 200 10); $(grab_when_drawn "$loss" "$dir/loss.png" 200 10);
      $XPROBE windows | cut -f2 | sort > $dir/titles; pgrep -c -u $TEST_USER -x mm-meter-view > $dir/viewers; wait" ||
    fail "mm-delay and mm-loss with --meter-*" || return 1
  printf '%s\n' "$delay" "[delay 20 ms] uplink" "$loss" | sort > "$dir/expected"
  diff "$dir/expected" "$dir/titles" || fail "the windows' titles" || return 1
  [ "$(cat "$dir/viewers")" = 2 ] || fail "$(cat "$dir/viewers") viewers, not one per shell" || return 1
  for image in delay loss; do
    set -- $("$XPROBE" pixels "$dir/$image.png" c=$CAPACITY_FILL i=$INGRESS_LINE e=$EGRESS_LINE)
    echo "  $image window: capacity fill $2 px, traffic in $7 px, out ${12} px"
    [ "$2" -lt 1000 ] || fail "the $image window drew a capacity (there is no link)" || return 1
    # (The traffic in, blue, is drawn first: where it equals the traffic out, red hides it.)
    [ "${12}" -ge 200 ] || fail "the $image window lacks its traffic" || return 1
  done
  [ -z "$(window_titles)" ] || fail "windows left after the shells: $(window_titles)" || return 1
  ! pgrep -u "$TEST_USER" -x mm-meter-view >/dev/null || fail "a viewer outlived its shell"
}

test_meter_closing_a_window_leaves_the_shell_and_the_others_and_windows_resize() {
  with_xvfb meter_close_one
}
meter_close_one() {
  local dir; dir=$(user_dir close)
  local up="[link 24Mbit/s up 24Mbit/s down] uplink"
  rc=0
  as_x_user "$BIN/mm-link" rate:24Mbit/s rate:24Mbit/s --meter-all -- sh -c \
    "count() { $XPROBE windows | wc -l; }; i=0; until [ \$(count) = 4 ] || [ \$i = 200 ]; do sleep 0.05; i=\$((i+1)); done
     $XPROBE close \$($XPROBE windows | awk -F'\t' '\$2 == \"$up\" { print \$1 }') || exit 3
     i=0; until [ \$(count) = 3 ] || [ \$i = 200 ]; do sleep 0.05; i=\$((i+1)); done
     $XPROBE windows | cut -f2 | sort > $dir/after; ping -c 3 -i 0.2 -q \$MAHIMAHI_BASE > $dir/ping
     w=\$($XPROBE windows | awk -F'\t' '\$2 ~ / downlink\$/ { print \$1 }')
     $XPROBE grab \$w $dir/before.png && $XPROBE frame $dir/before.png > $dir/frame-before
     $XPROBE resize \$w 640 400 || exit 4
     i=0; until $XPROBE grab \$w $dir/after.png && f=\$($XPROBE frame $dir/after.png) && [ \$f -ge 610 ] && [ \$f -le 617 ] ||
       [ \$i = 200 ]; do
       sleep 0.05; i=\$((i+1)); done
     $XPROBE frame $dir/after.png > $dir/frame-after; exit 7" || rc=$?
  [ "$rc" = 7 ] || fail "the shell exited $rc, not with its command's 7" || return 1
  echo "  after closing \"$up\": $(tr '\n' ';' < "$dir/after")"
  [ "$(wc -l < "$dir/after")" = 3 ] && ! grep -qxF "$up" "$dir/after" || fail "windows after the close: $(cat "$dir/after")" || return 1
  grep -q ' 0% packet loss' "$dir/ping" || fail "the link stopped after the close: $(cat "$dir/ping")" || return 1
  # Resized from 900x480 to 640x400, the chart is drawn anew to the window's width: the plot's
  # right edge moves from 876 to 616 (24 pixels of margin).
  echo "  plot frame's right edge: $(cat "$dir/frame-before") at 900 px wide, $(cat "$dir/frame-after") at 640"
  check_range "plot's right edge at 900 px wide" "$(cat "$dir/frame-before")" 875 877 &&
    check_range "plot's right edge at 640 px wide" "$(cat "$dir/frame-after")" 615 617 || fail "the chart did not follow the resize"
}

test_meter_nested_shells_have_their_own_windows() {
  with_xvfb meter_nested
}
meter_nested() {
  local dir; dir=$(user_dir nested)
  as_x_user "$BIN/mm-delay" 5 "$BIN/mm-link" --meter-uplink rate:12Mbit/s rate:12Mbit/s \
    "$BIN/mm-link" --meter-uplink rate:24Mbit/s rate:24Mbit/s -- sh -c \
    "i=0; until [ \$($XPROBE windows | wc -l) = 2 ] || [ \$i = 200 ]; do sleep 0.05; i=\$((i+1)); done
     $XPROBE windows | cut -f2 | sort > $dir/titles" || fail "nested shells failed" || return 1
  printf '%s\n' "[delay 5 ms] [link 12Mbit/s up 12Mbit/s down] [link 24Mbit/s up 24Mbit/s down] uplink" \
    "[delay 5 ms] [link 12Mbit/s up 12Mbit/s down] uplink" > "$dir/expected"
  diff "$dir/expected" "$dir/titles" && sed 's/^/  window: /' "$dir/titles"
}

test_meter_output_draws_the_graphs_without_a_display() {
  local dir; dir=$(user_dir headless)
  port=$(free_port) || return 1
  iperf_server "$port" || return 1
  # No DISPLAY at all: one PNG per graph in a directory, snapshots every 0.5 s while it runs
  # (the command waits for the first one), and the downlink's log for mm-throughput-graph.
  AS_USER=$TEST_USER in_world env -u DISPLAY -u XAUTHORITY "$BIN/mm-link" rate:12Mbit/s rate:12Mbit/s --meter-all \
    --meter-output="$dir/graphs" --meter-snapshot-interval=0.5 --downlink-log="$dir/down.log" -- sh -c \
    "iperf3 -c \$MAHIMAHI_BASE -p $port -R -t 4 >/dev/null
     i=0; until [ -s $dir/graphs/downlink.png ] || [ \$i = 100 ]; do sleep 0.05; i=\$((i+1)); done
     cp $dir/graphs/downlink.png $dir/during.png" || fail "mm-link --meter-output failed" || return 1
  for g in uplink downlink uplink-delay downlink-delay; do
    [ "$(head -c 8 "$dir/graphs/$g.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "$g.png is not a PNG" || return 1
  done
  [ -s "$dir/during.png" ] || fail "no snapshot while the shell ran" || return 1
  [ -z "$(ls -A "$dir/graphs" | grep -v '^\(up\|down\)link\(-delay\)\?\.png$')" ] || fail "stray files: $(ls -A "$dir/graphs")" || return 1
  check_saturated_chart "$dir/graphs/downlink.png" "downlink.png" || return 1
  # The log of the same run, drawn by mm-throughput-graph: the same series, at the same heights.
  # (the live file's bins, as its title says: 100 ms for a run of a few seconds)
  out=$("$BIN/mm-throughput-graph" 100 "$dir/down.log" -o "$dir/offline.png" 2>&1) || fail "mm-throughput-graph: $out" || return 1
  set -- $("$XPROBE" pixels "$dir/graphs/downlink.png" c=$CAPACITY_FILL e=$EGRESS_LINE) \
    $("$XPROBE" pixels "$dir/offline.png" c=$CAPACITY_FILL e=$EGRESS_LINE)
  check_range "capacity's top, live minus offline (px)" $(($3 - ${13})) -6 6 || return 1
  check_range "egress median height, live minus offline (px)" $(($9 - ${19})) -10 10 || return 1
  # One file holds all four, one under the other (SVG: four titles).
  AS_USER=$TEST_USER in_world env -u DISPLAY "$BIN/mm-link" rate:12Mbit/s rate:12Mbit/s --meter-all \
    --meter-output="$dir/all.svg" -- true || fail "--meter-output=FILE.svg failed" || return 1
  height=$(sed -n 's/.*<svg[^>]* height="\([0-9.]*\)pt".*/\1/p' "$dir/all.svg" | head -1)
  check_range "all.svg's height (four charts of 560 px and their legends)" "${height%.*}" 2240 2600
}

test_meter_without_a_display_says_to_use_meter_output_and_leaves_nothing() {
  local ok=rate:12Mbit/s
  AS_USER=$TEST_USER rc_msg 2 "DISPLAY is not set; to draw them without a display, give --meter-output=FILE.png" \
    in_world env -u DISPLAY "$BIN/mm-link" "$ok" "$ok" --meter-uplink true || return 1
  AS_USER=$TEST_USER rc_msg 2 "--meter-output=FILE.png" in_world env -u DISPLAY "$BIN/mm-meter" true || return 1
  # A display that cannot be opened: the shell fails before its command starts, and cleans up.
  AS_USER=$TEST_USER rc_msg 1 "cannot open the X display \":987\" for the live graphs (--meter-*); check DISPLAY and XAUTHORITY, or draw them without a display with --meter-output" \
    in_world env DISPLAY=:987 "$BIN/mm-link" "$ok" "$ok" --meter-all -- touch "$WORLD_TMP/ran" || return 1
  [ ! -e "$WORLD_TMP/ran" ] || fail "the command ran without its graphs" || return 1
  local left; left=$(world_leftovers)
  [ -z "$left" ] || fail "left behind: $left" || return 1
  rc_msg 2 "--meter-snapshot-interval writes the graphs to --meter-output" \
    in_world "$BIN/mm-link" "$ok" "$ok" --meter-snapshot-interval=1 true || return 1
  rc_msg 2 "--meter-output=out.jpg: the type is taken from the name" in_world "$BIN/mm-link" "$ok" "$ok" --meter-output=out.jpg true
}

test_meter_x_connection_uses_the_users_credentials() {
  with_xvfb meter_credentials
}
meter_credentials() {
  # The cookie in a file only root can read: a setuid shell must not read it for the user.
  local root_only=$WORLD_TMP/root-xauth
  cp "$XAUTH_FILE" "$root_only" && chown root "$root_only" && chmod 600 "$root_only"
  # (the X library prints the server's refusal first, then the shell its message)
  rc=0
  msg=$(AS_USER=$TEST_USER in_world env DISPLAY=":$DISPLAY_NUMBER" XAUTHORITY="$root_only" "$BIN/mm-link" \
    rate:12Mbit/s rate:12Mbit/s --meter-uplink true 2>&1) || rc=$?
  [ "$rc" = 1 ] && echo "$msg" | grep -qF 'mm-link: cannot open the X display ":'"$DISPLAY_NUMBER"'" for the live graphs' ||
    fail "with a cookie only root can read: $rc: $msg" || return 1
  echo "  with a cookie only root can read -> $rc: $(echo "$msg" | tr '\n' ' ')"
  rm -f "$root_only"
  # With the user's own cookie, the window opens (and the shell is the user's: id -u inside).
  local dir; dir=$(user_dir credentials)
  as_x_user "$BIN/mm-link" rate:12Mbit/s rate:12Mbit/s --meter-uplink -- sh -c \
    "id -u > $dir/uid; $XPROBE windows | cut -f2 > $dir/titles" || fail "with the user's cookie" || return 1
  [ "$(cat "$dir/uid")" = "$(id -u "$TEST_USER")" ] || fail "the command ran as $(cat "$dir/uid")" || return 1
  grep -qxF "[link 12Mbit/s up 12Mbit/s down] uplink" "$dir/titles" || fail "no window: $(cat "$dir/titles")"
}

test_meter_mm_meter_passes_traffic_through_and_graphs_it() {
  local dir; dir=$(user_dir mm-meter)
  ls -l "$BIN/mm-meter" | grep -q '^-rwsr-xr-x 1 root' || fail "mm-meter is not installed setuid root" || return 1
  port=$(free_port) || return 1
  iperf_server "$port" || return 1
  AS_USER=$TEST_USER in_world env -u DISPLAY "$BIN/mm-link" rate:1Gbit/s rate:24Mbit/s -- "$BIN/mm-meter" \
    --meter-output="$dir/graphs" -- sh -c "ping -c 5 -i 0.2 -q \$MAHIMAHI_BASE > $dir/ping;
    iperf3 -c \$MAHIMAHI_BASE -p $port -R -w 2M -O 2 -t 4 -f k > $dir/iperf" || fail "mm-meter failed" || return 1
  goodput=$(iperf_receiver_mbits < "$dir/iperf")
  ideal=$(awk 'BEGIN { printf "%.3f", 24 * 1448 / 1500 }')
  check_range "goodput through mm-meter inside a 24 Mbit/s link (Mbit/s; ideal $ideal)" "$goodput" \
    "$(awk -v i="$ideal" 'BEGIN { print i * 0.98 }')" "$(awk -v i="$ideal" 'BEGIN { print i * 1.01 }')" || return 1
  rtt=$(awk -F/ '/^rtt/ { print $5 }' "$dir/ping")
  check_range "ping RTT through mm-meter and a link (ms)" "$rtt" 0 5 || return 1
  set -- $("$XPROBE" pixels "$dir/graphs/downlink.png" c=$CAPACITY_FILL i=$INGRESS_LINE e=$EGRESS_LINE)
  # No link, so no capacity; what arrives leaves at once, so one line: the traffic.
  echo "  downlink.png: capacity fill $2 px, traffic (blue) $7 px, red line ${12} px"
  [ "$2" -lt 50 ] || fail "mm-meter drew a capacity it does not have" || return 1
  [ "$7" -ge 100 ] || fail "the traffic line is missing" || return 1
  [ "${12}" -lt 50 ] || fail "mm-meter drew a second traffic line" || return 1
  [ ! -e "$dir/graphs/downlink-delay.png" ] || fail "mm-meter drew delay graphs"
}
