#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# Generates ./configure from configure.ac.
set -e
cd "$(dirname "$0")"
mkdir -p m4
exec autoreconf -fi
