// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The start-up channel, a socketpair between the supervisor and its ferry. The ferry sends:
//   'A' count(u32, host order) count*addr(4 bytes, network order)   isolated shells: add addresses
//                                                   (the addresses only if count <= kMaxIsolatedAddresses)
//   'R'   it carries packets: the command may start
//   'S'   it stopped (before being ready, or when asked to): nothing more will come
//   'F'   it stopped after failing, and has said why (kFerryStoppedFailed)
// and the supervisor answers 'A' with 'K' (added) or 'E' length(u16) text (refused: why).
// The ferry may be hostile (a bug exploited in what it parsed): the supervisor reads at most
// what the cap allows, answers one request, and never blocks on it.
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "shell/privileged.hh"
#include "util/address.hh"
#include "util/signals.hh"

// The ferry's words on the channel.
constexpr char kFerryReady = 'R', kFerryStopped = 'S';
// The ferry's last word when it stopped because it failed (and said why): a log it could not
// finish writing, after the command had ended. The shell's status is then 1.
constexpr char kFerryStoppedFailed = 'F';

// How a ferry ends, besides 0 and its words on the channel.
// Exit status of a ferry whose queues are finished (mm-link --once): the shell ends the command
// (and everything it started) and exits with kOnceEndedStatus, unless the command had ended first.
constexpr int kFerryFinished = 77;
// Exit status of a ferry that failed and has said why on standard error (mm-replay: "the replay
// server for IP:PORT was killed by SIGKILL"): the shell ends with status 1, adding no line.
constexpr int kFerryFailedSaidWhy = 78;
// The status of a shell whose traces ran out before the command ended (as timeout(1)'s 124 for a
// command it had to end): a script can tell that the command did not finish on its own.
constexpr int kOnceEndedStatus = 124;

// A signal that asks a shell to end: SIGINT, SIGTERM, SIGHUP, SIGQUIT.
bool interrupting(int signo);

// The ferry's side of an address request: returns once the supervisor has added them; throws
// UserError with the supervisor's reason if it refused.
void request_addresses(int channel, const std::vector<Ipv4>& addresses);

// Runs the ferry's start-up: answers its request for addresses (isolated shells: isolated_ns is
// the namespace) until it reports that it is ready (nullopt: the command may start). Otherwise
// returns the shell's exit status: 1 if the ferry stopped or died (it has printed why), 128+N if
// signal N interrupted the start (the ferry is then stopped; one line says so).
std::optional<int> run_startup(const std::string& program, pid_t ferry, int channel, const SignalFd& signals,
                               const ShellNetwork* isolated_ns);
