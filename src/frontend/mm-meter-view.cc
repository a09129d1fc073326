// SPDX-License-Identifier: GPL-3.0-or-later
// mm-meter-view: draws the live graphs of mm-delay and mm-loss (--meter-*) for the shell's
// ferry, in a process of its own, so that those shells load no graphing library. Started by the
// ferry only (see shell/meter_viewer.hh for its arguments and protocol); runs with the rights
// and environment of the user who started the shell.
#include <exception>
#include <iostream>

#include "graphing/meter_viewer.hh"

int main(int argc, char** argv) {
  try {
    return run_meter_viewer(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "mm-meter-view: " << e.what() << "\n";
    return 1;
  }
}
