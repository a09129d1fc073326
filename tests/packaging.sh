# SPDX-License-Identifier: GPL-3.0-or-later
# The packaging stage of tests/run-all, sourced by it after the integration tests: the ways users
# install mahimahi, each checked end to end.
#   dist/distcheck               make distcheck: the tarball builds out of tree (unoptimised) and
#                                passes make check, installs and uninstalls cleanly
#   dist/install-destdir-as-user make install DESTDIR=... by an ordinary user: everything installed,
#                                no setuid bit, and a note that says so
#   dist/tarball-holds-every-file  the distcheck tarball holds every file of the checkout (git
#                                ls-files) but the CI entry point and .gitignore
#   package/build-from-checkout  the README's commands, exactly, in a copy of the checkout's files:
#                                apt-get build-dep ./ && dpkg-buildpackage -us -uc -b, which
#                                builds in the source tree and runs its make check there (the unit
#                                tests, the layer, man page, completion and license checks)
#   package/lintian              no error and no warning that debian/*lintian-overrides does not
#                                justify
#   package/contents             dpkg-deb -c and -I: setuid shells, a man page for every program,
#                                completion for every program, the data, declared dependencies
#   package/install-on-fresh-debian  apt-get install ./*.deb in a fresh Debian 12 root
#                                (debootstrap) pulls in everything the programs need
#   package/smoke-as-user        debian/tests/smoke there: mm-delay 10 -- true and a replay of the
#                                demo recording with curl, as an ordinary user
#   package/removes-cleanly      dpkg -r, then dpkg -P, leave none of the package's files
# Uses run-all's record, $top, $TMP (whose build/ is run-all's configured build tree) and
# $pattern. MAHIMAHI_DEBIAN_MIRROR (default: deb.debian.org) is where the fresh root comes from
# (tests/debian-root). Bash.

. "$top/tests/programs.sh"

packaging_selected() { [ -z "$pattern" ] || [[ "$1" =~ $pattern ]]; }

# Runs "$@" and records it as NAME, with its output indented when it fails.
packaging_test() {  # NAME COMMAND...
  local name=$1 out status started=$SECONDS
  shift
  out=$("$@" 2>&1)
  status=$?
  record "$name" "$status"
  [ "$status" = 0 ] || echo "$out" | tail -40 | sed 's/^/   /'
  echo "     ($((SECONDS - started)) s)"
  return "$status"
}

packaging_distcheck() {
  # -j: the tarball's build and its make check use every core (as the packages' build does).
  # -O0: this build checks that the tarball is whole and its make check passes, not the code's
  # speed (the packages' build below optimises): 249 s here beside the fresh root's making.
  make -s -j"$(nproc)" -C "$TMP/build" distcheck DISTCHECK_CONFIGURE_FLAGS="CXXFLAGS=-O0" >"$TMP/distcheck.log" 2>&1 ||
    { tail -40 "$TMP/distcheck.log"; return 1; }
  ls "$TMP/build"/mahimahi-*.tar.gz >/dev/null || { echo "distcheck made no tarball"; return 1; }
}

packaging_destdir_as_user() {
  local dest=$TMP/destdir out bad=0 f
  mkdir -p "$dest" && chown "$TEST_USER" "$dest"
  out=$(runuser -u "$TEST_USER" -- make -C "$TMP/build" install DESTDIR="$dest/root" 2>&1) || { echo "$out"; return 1; }
  echo "$out" | grep -q "not root, so .* were installed without the setuid bit" ||
    { echo "make install as $TEST_USER printed no note about the setuid bits"; bad=1; }
  local prefix; prefix=$(sed -n 's/^prefix = //p' "$TMP/build/Makefile")
  for f in bin/mm-delay bin/mm-replay bin/mm-webreplay bin/mm-sweep share/man/man1/mm-link.1 share/man/man7/mahimahi.7 \
    share/mahimahi/traces/constant-12Mbps share/mahimahi/demo-site share/mahimahi/corpus/news \
    share/bash-completion/completions/mm-link; do
    [ -e "$dest/root$prefix/$f" ] || { echo "make install DESTDIR did not install $prefix/$f"; bad=1; }
  done
  f=$(find "$dest/root" -perm -4000 | head -1)
  [ -z "$f" ] || { echo "$f is setuid after an install by $TEST_USER"; bad=1; }
  f=$(find "$dest/root" ! -user "$TEST_USER" | head -1)
  [ -z "$f" ] || { echo "$f is not owned by $TEST_USER"; bad=1; }
  rm -rf "$dest"
  return "$bad"
}

# The files of the checkout, as a clean clone has them: git's tracked files (their contents in
# the work tree, so that a change not yet committed is tested too).
# (safe.directory: root runs the tests in a checkout another user may own.) A tracked file deleted
# in the work tree is not in it.
packaging_git() { git -c safe.directory="$top" -C "$top" "$@"; }
packaging_checkout_files() {
  packaging_git ls-files --cached | while IFS= read -r f; do
    [ -e "$top/$f" ] || [ -L "$top/$f" ] && printf '%s\n' "$f"
  done
}

packaging_tarball_holds_every_file() {
  local tarball missing
  tarball=$(ls "$TMP/build"/mahimahi-*.tar.gz | head -1)
  [ -n "$tarball" ] || { echo "no tarball (dist/distcheck failed)"; return 1; }
  packaging_git rev-parse --git-dir >/dev/null 2>&1 || { echo "$top is not a git checkout: nothing to compare the tarball with"; return 1; }
  missing=$(LC_ALL=C comm -23 <(packaging_checkout_files | grep -vE '^(\.ci/|\.gitignore$)' | LC_ALL=C sort) \
    <(tar -tzf "$tarball" | sed 's|^[^/]*/||' | LC_ALL=C sort))
  [ -z "$missing" ] || { echo "the tarball (make dist) lacks these files of the checkout: add them to EXTRA_DIST"; echo "$missing"; return 1; }
}

# The README's build of the packages, in a copy of the checkout (its top directory named like
# the source package, as a clone is): the packages land in its parent, $TMP/package.
packaging_build() {
  local src=$TMP/package/mahimahi
  packaging_git rev-parse --git-dir >/dev/null 2>&1 || { echo "$top is not a git checkout"; return 1; }
  mkdir -p "$src" && packaging_checkout_files >"$TMP/package/files" || return 1
  tar -C "$top" --no-recursion -cf "$TMP/package/checkout.tar" -T "$TMP/package/files" &&
    tar -C "$src" -xf "$TMP/package/checkout.tar" && rm -f "$TMP/package/checkout.tar" "$TMP/package/files" || return 1
  # The README's commands as they are; the environment only gives the build both cores.
  # build-dep installs nothing here (install-deps has every Build-Depends) and so asks nothing.
  (cd "$src" && apt-get build-dep ./ </dev/null && DEB_BUILD_OPTIONS="parallel=$(nproc)" dpkg-buildpackage -us -uc -b) \
    >"$TMP/package/build.log" 2>&1 || { tail -40 "$TMP/package/build.log"; return 1; }
  # make check ran in the source tree, each of its tests passing.
  local t
  for t in unit-tests check-layers check-man-pages check-completion check-license; do
    grep -q "^PASS: $t\$" "$TMP/package/build.log" || { echo "dh_auto_test did not pass $t"; grep -E '^(PASS|FAIL|ERROR|SKIP): ' "$TMP/package/build.log"; return 1; }
  done
  ls "$TMP/package"/mahimahi_*.deb "$TMP/package"/mahimahi-data_*.deb
}

packaging_lintian() {
  local changes out
  changes=$(ls "$TMP/package"/mahimahi_*.changes | head -1)
  [ -n "$changes" ] || { echo "no .changes file"; return 1; }
  # --fail-on error,warning: an overridden tag does not count. Its temporary files (some of which
  # it leaves) go to the package directory, removed with it.
  out=$(TMPDIR="$TMP/package" lintian --fail-on error,warning --display-info "$changes" 2>&1)
  local status=$?
  echo "$out"
  [ "$status" = 0 ] || return 1
  if echo "$out" | grep -E '^(E|W): '; then echo "lintian printed errors or warnings"; return 1; fi
}

packaging_contents() {
  local deb data bad=0 p info contents programs shells
  deb=$(ls "$TMP/package"/mahimahi_*.deb | head -1)
  data=$(ls "$TMP/package"/mahimahi-data_*.deb | head -1)
  contents=$(dpkg-deb -c "$deb") || return 1
  info=$(dpkg-deb -I "$deb") || return 1
  # The programs and shells as src/Makefile.am lists them.
  shells=$(mm_shells "$top")
  programs="$(mm_programs "$top") $(mm_aliases "$top")"
  for p in $shells; do
    echo "$contents" | grep -qE "^-rwsr-xr-x root/root .* \./usr/bin/$p\$" || { echo "usr/bin/$p is not setuid root (4755) in the package"; bad=1; }
  done
  for p in $programs; do
    echo "$contents" | grep -qE " \./usr/bin/$p( -> .*)?\$" || { echo "no usr/bin/$p"; bad=1; }
    echo "$contents" | grep -qE " \./usr/share/man/man1/$p\.1\.gz( -> .*)?\$" || { echo "no man page for $p"; bad=1; }
    echo "$contents" | grep -qE " \./usr/share/bash-completion/completions/$p( -> .*)?\$" || { echo "no completion for $p"; bad=1; }
  done
  echo "$contents" | grep -q " \./usr/share/man/man7/mahimahi\.7\.gz\$" || { echo "no mahimahi(7)"; bad=1; }
  for p in README.Debian security.md copyright; do
    echo "$contents" | grep -q " \./usr/share/doc/mahimahi/$p\(\.gz\)\?\$" || { echo "no /usr/share/doc/mahimahi/$p"; bad=1; }
  done
  # The license (COPYING's, as debian/copyright gives it).
  dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/share/doc/mahimahi/copyright | grep -q '^License: GPL-3+$' ||
    { echo "usr/share/doc/mahimahi/copyright does not license the files GPL-3+"; bad=1; }
  # Setuid files are the shells only.
  p=$(echo "$contents" | grep -E '^-..s' | grep -vE " \./usr/bin/($(echo $shells | tr ' ' '|'))\$")
  [ -z "$p" ] || { echo "unexpected setuid files: $p"; bad=1; }
  local depends; depends=$(echo "$info" | sed -n 's/^ Depends: //p')
  for p in libc6 libssl3 libprotobuf32 libcairo2 libnftnl11 libmnl0 libngtcp2-9 libngtcp2-crypto-gnutls2 libnghttp3-3 libgnutls30 mahimahi-data apache2-bin dnsmasq-base fonts-dejavu-core; do
    echo "$depends" | grep -qE "(^|, )$p( |,|\$)" || { echo "Depends lacks $p: $depends"; bad=1; }
  done
  echo "$info" | grep -qE '^ Suggests: .*chromium' || { echo "chromium is not suggested"; bad=1; }
  contents=$(dpkg-deb -c "$data") || return 1
  for p in traces/constant-12Mbps traces/constant-1000Mbps demo-site corpus/news corpus/app; do
    echo "$contents" | grep -q " \./usr/share/mahimahi/$p/\?\$" || { echo "mahimahi-data has no usr/share/mahimahi/$p"; bad=1; }
  done
  [ "$(echo "$contents" | grep -c ' \./usr/share/mahimahi/demo-site/save\.')" = "$(ls "$top/recordings/demo-site" | wc -l)" ] ||
    { echo "mahimahi-data does not hold every file of the demo recording"; bad=1; }
  dpkg-deb -I "$data" | grep -q '^ Architecture: all' || { echo "mahimahi-data is not Architecture: all"; bad=1; }
  return "$bad"
}

# A fresh Debian 12 root (minbase) with the host's /dev, a private /proc, /run and /tmp, in a
# mount namespace of its own: "$@" runs chrooted in it. Nothing is mounted in the host's view.
packaging_in_root() {  # COMMAND...
  unshare --mount --propagation private --fork -- sh -c '
    root=$1; shift
    mount --rbind /dev "$root/dev" && mount -t proc proc "$root/proc" &&
      mount -t tmpfs tmpfs "$root/run" && mount -t tmpfs tmpfs "$root/tmp" && exec chroot "$root" "$@"' \
    sh "$TMP/root" "$@"
}

packaging_install() {
  local p
  # The root was made while the packages built (packaging_run waited for it).
  [ "$PACKAGING_ROOT_STATUS" = 0 ] || { cat "$TMP/root-bootstrap.err"; return 1; }
  cp /etc/resolv.conf "$TMP/root/etc/resolv.conf"
  for p in apache2-bin dnsmasq-base libnftnl11; do
    packaging_in_root dpkg -s "$p" >/dev/null 2>&1 && { echo "the fresh root has $p already: the test would prove nothing"; return 1; }
  done
  mkdir -p "$TMP/root/debs" && cp "$TMP/package"/mahimahi_*.deb "$TMP/package"/mahimahi-data_*.deb "$TMP/root/debs/" || return 1
  packaging_in_root sh -c 'apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends /debs/*.deb curl' \
    >"$TMP/apt.log" 2>&1 || { tail -30 "$TMP/apt.log"; return 1; }
  for p in mahimahi mahimahi-data apache2-bin dnsmasq-base libnftnl11 fonts-dejavu-core; do
    packaging_in_root dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed' || { echo "$p was not installed"; return 1; }
  done
}

packaging_smoke() {
  cp "$top/debian/tests/smoke" "$TMP/root/smoke" || return 1
  # The smoke test's shells run in a network namespace of its own, inside this test's mount
  # namespace: nothing reaches the host's network.
  packaging_in_root sh /smoke
}

packaging_remove() {
  local files left
  files=$(packaging_in_root dpkg -L mahimahi mahimahi-data) || return 1
  packaging_in_root dpkg -r mahimahi mahimahi-data || return 1
  left=$(echo "$files" | while read -r f; do [ -f "$TMP/root$f" ] || [ -L "$TMP/root$f" ] && echo "$f"; done)
  [ -z "$left" ] || { echo "dpkg -r left: $left"; return 1; }
  # No conffiles, so a purge has nothing more to do; it must succeed and forget both packages.
  packaging_in_root dpkg -P mahimahi mahimahi-data || return 1
  packaging_in_root dpkg -l mahimahi mahimahi-data 2>&1 | grep -E '^(ii|rc) ' && { echo "dpkg still knows the packages"; return 1; }
  left=$(find "$TMP/root/etc" "$TMP/root/usr" -name '*mahimahi*' -o -name 'mm-*' | head)
  [ -z "$left" ] || { echo "left after purge: $left"; return 1; }
}

packaging_run() {
  echo "== packaging (make distcheck, DESTDIR install, the Debian packages in a fresh Debian 12 root)"
  local tarball=1 built=1 installed=1
  # The fresh Debian root is made (downloads and unpacking, mostly waiting) while the tarball
  # and the packages build, not after.
  PACKAGING_ROOT_PID=
  if packaging_selected package/; then
    "$top/tests/debian-root" "$TMP/root" > "$TMP/root-bootstrap.err" 2>&1 &
    PACKAGING_ROOT_PID=$!
  fi
  if packaging_selected dist/distcheck || packaging_selected dist/tarball-holds-every-file; then
    packaging_test dist/distcheck packaging_distcheck || tarball=0
    if packaging_selected dist/tarball-holds-every-file; then
      if [ "$tarball" = 1 ]; then
        packaging_test dist/tarball-holds-every-file packaging_tarball_holds_every_file
      else
        record "dist/tarball-holds-every-file: no tarball (dist/distcheck failed)" 1
      fi
    fi
  fi
  packaging_selected dist/install-destdir-as-user && packaging_test dist/install-destdir-as-user packaging_destdir_as_user
  packaging_selected package/ || return 0
  packaging_test package/build-from-checkout packaging_build || built=0
  if [ "$built" = 1 ]; then
    packaging_test package/lintian packaging_lintian
    packaging_test package/contents packaging_contents
    local waited=$SECONDS
    wait "$PACKAGING_ROOT_PID"
    PACKAGING_ROOT_STATUS=$? PACKAGING_ROOT_PID=
    echo "     (the fresh root: waited $((SECONDS - waited)) s more for it)"
    packaging_test package/install-on-fresh-debian packaging_install || installed=0
  else
    record "package/: not built, so not checked, installed or removed" 1
    installed=0
  fi
  if [ "$installed" = 1 ]; then
    packaging_test package/smoke-as-user packaging_smoke
    packaging_test package/removes-cleanly packaging_remove
  fi
  # A root still being made (the packages did not build): its end is waited for, not cut.
  [ -z "$PACKAGING_ROOT_PID" ] || wait "$PACKAGING_ROOT_PID"
  # The root's mounts lived in a mount namespace that is gone; never remove through one.
  if grep -q " $TMP/root[/ ]" /proc/self/mountinfo; then
    record "package/: something is still mounted under $TMP/root" 1
  else
    rm -rf "$TMP/root"
  fi
  rm -rf "$TMP/package"
}
