// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// mm-monkey's see and serve (do is a shell: monkey_do.hh), with the user's rights only.
#include <cstdint>
#include <string>

// Reads CAPTURE, writes the workload to OUTPUT ("-": standard output; refused if it exists unless
// `force`) and a summary to standard error; returns the exit status.
int monkey_see_command(const std::string& capture, const std::string& output, bool force);
// The server emulator inside a shell, on the address of its device "ingress" (monkey_server.hh),
// with `plan_file`'s plan if not empty; returns the status a stop request gives.
int monkey_serve_command(uint16_t port, const std::string& congestion_control, const std::string& plan_file);
// Reads WORKLOAD (and RESULTS, if not empty) and draws their charts into DIRECTORY (made if
// missing), PNG or SVG; returns the exit status.
int monkey_plot_command(const std::string& workload, const std::string& results, const std::string& directory,
                        bool svg);
