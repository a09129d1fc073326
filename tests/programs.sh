# SPDX-License-Identifier: GPL-3.0-or-later
# The programs and their options, as the checks read them (sourced by check-man-pages,
# check-completion and packaging.sh; POSIX sh). SRC is the source tree's top directory.

# The words of a make variable's value, continuation lines included: mm_make_variable FILE NAME.
mm_make_variable() { awk -v name="$2" '$0 ~ "^" name " *=" { on = 1; sub("^" name " *=", "") } on { c = sub(/\\$/, ""); print; if (!c) exit }' "$1"; }

# The setuid shells (src/Makefile.am's shells): mm_shells SRC.
mm_shells() { echo $(mm_make_variable "$1/src/Makefile.am" shells); }

# Every installed program, the shells included (bin_PROGRAMS): mm_programs SRC.
mm_programs() { echo $(mm_make_variable "$1/src/Makefile.am" bin_PROGRAMS) | sed "s/\$(shells)/$(mm_shells "$1")/"; }

# The aliases the install hook links (mm-webrecord, mm-webreplay): mm_aliases SRC.
mm_aliases() { echo $(sed -n 's/.*ln -sf [^ ]* "$(DESTDIR)$(bindir)\/\([^"]*\)".*/\1/p' "$1/src/Makefile.am"); }

# The options a --help text (standard input) lists, one a line, sorted: the -x/--xyz words of
# the first column (up to two spaces) of its option lines, which start with at most 8 spaces and
# "-"; "=VALUE" and "[...]" are not part of an option.
mm_help_options() {
  awk '
    { match($0, /^ */) }
    RLENGTH <= 8 && substr($0, RLENGTH + 1, 1) == "-" {
      line = substr($0, RLENGTH + 1)
      sub(/  .*/, "", line)
      n = split(line, word, /[ ,]+/)
      for (i = 1; i <= n; i++) if (match(word[i], /^--?[A-Za-z0-9][A-Za-z0-9-]*/)) print substr(word[i], 1, RLENGTH)
    }' | LC_ALL=C sort -u
}
