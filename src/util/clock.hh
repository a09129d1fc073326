// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Time in nanoseconds on CLOCK_MONOTONIC: immune to NTP steps, cheap to read (vDSO).
#include <time.h>

#include <cmath>
#include <cstdint>
#include <limits>

using Nanos = int64_t;
constexpr Nanos kNever = std::numeric_limits<Nanos>::max();
constexpr Nanos kNanosPerMs = 1'000'000;
constexpr Nanos kNanosPerSec = 1'000'000'000;

inline Nanos monotonic_now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<Nanos>(ts.tv_sec) * kNanosPerSec + ts.tv_nsec;
}

inline timespec to_timespec(Nanos ns) {
  return timespec{static_cast<time_t>(ns / kNanosPerSec), static_cast<long>(ns % kNanosPerSec)};
}

// Milliseconds (possibly fractional) to nanoseconds, rounded to the nearest nanosecond.
inline Nanos ms_to_nanos(double ms) { return static_cast<Nanos>(std::llround(ms * 1e6)); }
inline Nanos seconds_to_nanos(double s) { return static_cast<Nanos>(std::llround(s * 1e9)); }
inline double nanos_to_ms(Nanos ns) { return static_cast<double>(ns) / 1e6; }
