# SPDX-License-Identifier: GPL-3.0-or-later
# Integration tests of the bundled corpus (corpus/, made by scripts/make-corpus): every page
# replays completely in Chromium, and corpus/README.md's figures are those of the recordings.
# Sourced by tests/run-all after world.sh.

corpus_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# The pages (NAME URL), as corpus/pages lists them.
corpus_pages() { cat "$corpus_top/corpus/pages"; }

test_corpus_pages_replay_completely_in_chromium() {
  command -v chromium >/dev/null || { echo "  chromium not installed"; return 1; }
  local home=$WORLD_TMP/corpus-home name url pages=0
  [ "$(corpus_pages | wc -l)" -ge 5 ] || fail "corpus/pages lists $(corpus_pages | wc -l) pages, expected at least 5" || return 1
  mkdir -p "$home"
  # A copy the test user can read (the checkout may sit under a private directory).
  cp -r "$corpus_top/corpus" "$home/corpus"
  chown -R "$TEST_USER" "$home"
  AS_USER=$TEST_USER in_world env HOME="$home" MAHIMAHI_CA_DIR="$home/ca" "$BIN/mm-ca" trust >/dev/null ||
    fail "mm-ca trust failed" || return 1
  # mm-replay matches the User-Agent; the corpus was recorded with one Chromium major version.
  local recorded installed ua_flag=
  recorded=$("$BIN/mm-recording" show "$home/corpus/news" "$("$BIN/mm-recording" ls "$home/corpus/news" | awk 'NR == 2 { print $NF }')" |
    sed -n 's|^User-Agent: .*Chrome/\([0-9]*\)\..*|\1|p')
  installed=$(chromium --version 2>/dev/null | sed -n 's/^Chromium \([0-9]*\)\..*/\1/p')
  if [ "$recorded" != "$installed" ]; then
    echo "  corpus recorded with Chromium $recorded, installed $installed: replaying with --ignore-user-agent"
    ua_flag=--ignore-user-agent
  fi
  while read -r name url; do
    pages=$((pages + 1))
    local dom=$home/$name.dom err=$home/$name.err objects
    # Distinct requests (a favicon the browser asks for again after the load may be recorded twice).
    objects=$("$BIN/mm-recording" ls --wide "$home/corpus/$name" | awk 'NR > 1 { print $1, $2, $3, $4 }' | sort -u | wc -l)
    AS_USER=$TEST_USER in_world env HOME="$home" MAHIMAHI_CA_DIR="$home/ca" "$BIN/mm-replay" "$home/corpus/$name" $ua_flag --verbose -- \
      timeout 120 chromium --headless=new --no-sandbox --disable-gpu --no-first-run --disable-http-cache --window-size=1366,768 \
      --user-data-dir="$home/profile-$name" --dump-dom "$url" > "$dom" 2>"$err" ||
      fail "$name: mm-replay or chromium failed: $(grep -v '^\[' "$err" | tail -5)" || return 1
    ! grep -q "no recorded response" "$err" || fail "$name: requests missed: $(grep 'no recorded response' "$err" | head -3)" || return 1
    # The load handler's mark: the load event was reached, with every script chain done.
    local title; title=$(grep -o '<title>.*</title>' "$dom")
    echo "$title" | grep -Eq '\[loaded, chains ([0-9]+)/\1: [a-z ]*\]</title>$' ||
      fail "$name: the page did not load completely: ${title:-no title} $(grep -v '^\[' "$err" | tail -3)" || return 1
    # Every recorded pair was asked for (mm-replay --verbose counts the requests it answered).
    local answered missed
    read -r answered missed < <(sed -n 's/^mm-replay: \([0-9]*\) requests\{0,1\} answered from the recording, \([0-9]*\) not found$/\1 \2/p' "$err")
    [ -n "$answered" ] || fail "$name: no summary from mm-replay --verbose: $(tail -3 "$err")" || return 1
    [ "$missed" = 0 ] || fail "$name: $missed requests not found" || return 1
    [ "$answered" -ge "$objects" ] || fail "$name: $objects pairs recorded, only $answered requests answered" || return 1
    echo "  $name: $url, $answered requests answered ($objects distinct recorded), none missed; $(echo "$title" | grep -o 'chains [0-9/]*')"
  done < <(corpus_pages)
}

test_corpus_readme_figures_match_the_recordings() {
  local readme=$corpus_top/corpus/README.md name url row
  [ -f "$readme" ] || fail "no corpus/README.md" || return 1
  # The table, recomputed from the recordings (objects, bytes, origins, split, chain depth).
  local table; table=$(/usr/bin/python3 "$corpus_top/scripts/corpus-figures" --table "$corpus_top/corpus" "$BIN/mm-recording") ||
    fail "corpus-figures failed" || return 1
  while read -r row; do
    grep -qxF -- "$row" "$readme" || fail "README does not say: $row" || return 1
  done <<< "$table"
  # Objects, bytes, hosts and the HTTP/HTTPS split once more, counted from mm-recording ls alone,
  # against the README's row; 5 to 20 origins a page, a chain depth of 3 at least.
  while read -r name url; do
    row=$(grep -F "| $name | $url |" "$readme") || fail "README has no row for $name" || return 1
    local counted; counted=$("$BIN/mm-recording" ls --wide "$corpus_top/corpus/$name" |
      awk 'NR > 1 { n++; bytes += $6; host[$3] = 1; s[$2]++ } END { h = 0; for (k in host) h++; printf "%d %d %d %d / %d\n", n, bytes, h, s["http"], s["https"] }')
    local said; said=$(echo "$row" | awk -F' \\| ' '{ printf "%s %s %s %s\n", $3, $4, $6, $7 }')
    [ "$counted" = "$said" ] || fail "$name: mm-recording ls counts '$counted' (objects bytes hosts http / https), README says '$said'" || return 1
    local origins depth
    origins=$(echo "$row" | awk -F' \\| ' '{ print $5 }'); depth=$(echo "$row" | awk -F' \\| ' '{ print $8 }' | tr -d ' |')
    check_range "$name origins" "$origins" 5 20 || return 1
    check_range "$name chain depth" "$depth" 3 20 || return 1
  done < <(corpus_pages)
  local http https
  http=$(echo "$table" | awk -F' \\| ' '{ split($7, v, " / "); n += v[1] } END { print n }')
  https=$(echo "$table" | awk -F' \\| ' '{ split($7, v, " / "); n += v[2] } END { print n }')
  [ "$http" -gt 0 ] && [ "$https" -gt 0 ] || fail "the corpus should mix HTTP ($http) and HTTPS ($https)" || return 1
  echo "  README table matches the recordings ($http HTTP and $https HTTPS requests in all)"
}

test_corpus_recordings_mention_no_machine_path() {
  local hits; hits=$(grep -rlaE '/(tmp|home|root|work)/' "$corpus_top/corpus" --include='save.*' | head -3)
  [ -z "$hits" ] || fail "recordings mention a machine path: $hits" || return 1
  echo "  no absolute path of the recording machine in $(find "$corpus_top/corpus" -name 'save.*' | wc -l) recorded pairs"
}
