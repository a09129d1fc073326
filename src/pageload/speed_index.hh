// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Speed index (paper §5.4; WebPagetest's definition): from frames of the viewport captured
// during a load, the visual completeness of each frame against the final frame, by colour
// histograms, then SI = integral over time of (1 - completeness) in milliseconds. A page that
// paints everything at once at time t has SI = t; a page that paints earlier has a smaller SI.
#include <string>
#include <vector>

// A frame as the browser captured it: its time in milliseconds since the navigation started, and
// the image as PNG bytes (DevTools' Page.screencastFrame data after base64 decoding).
struct CapturedFrame {
  double ms;
  std::string png;
};

// Completeness (0 to 1) of the page at a time.
struct VisualProgress {
  double ms;
  double completeness;
};

// The visual progress of frames sorted by time (the first frame is the blank start, the last
// the final state; frames that fail to decode are skipped). Completeness follows WebPagetest's
// histogram method: per channel (R, G, B) a 256-bin histogram of the frame's pixels (white
// pixels excluded, as WebPagetest does, so a blank page's background weighs nothing); the
// completeness of a frame is the share of the histogram distance from the first frame to the
// final one that it has covered, clamped to [0, 1]; 1 when the final frame's histograms equal
// the first's. Throws UserError when no frame decodes.
std::vector<VisualProgress> visual_progress(const std::vector<CapturedFrame>& frames);

// SI in ms: sum over consecutive progress points of (1 - completeness_i) * (ms_{i+1} - ms_i),
// up to the time the page was first visually complete (completeness reaching 1) or end_ms,
// whichever comes first. Progress before the first point counts as 0 from time 0.
double speed_index(const std::vector<VisualProgress>& progress, double end_ms);
