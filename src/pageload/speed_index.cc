// SPDX-License-Identifier: GPL-3.0-or-later
// Visual progress from captured frames by colour histograms, and the speed index (see
// speed_index.hh). Frames are decoded one at a time and only their histograms kept: a load
// captures dozens of full-viewport frames.
#include "pageload/speed_index.hh"

#include <cairo.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>

#include "util/exception.hh"

namespace {
// A frame's pixels per value, one 256-bin histogram per channel (R, G, B).
using Histograms = std::array<std::array<int64_t, 256>, 3>;

// Bounds on a frame's size, checked in the PNG header before cairo allocates anything: a
// viewport at twice the device scale of a large screen fits with room to spare.
constexpr uint32_t kMaxSide = 16384;
constexpr uint64_t kMaxPixels = 32ull * 1024 * 1024;

// WebPagetest's tolerance: a histogram difference in one bin may be matched by the bins up to
// 5 values below it and 4 above (its range(i - slop, i + slop)), so slight colour variations
// (anti-aliasing, compression) still count as progress.
constexpr int kSlop = 5;

uint32_t big_endian_32(const std::string& bytes, size_t at) {
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i) value = value << 8 | static_cast<unsigned char>(bytes[at + i]);
  return value;
}

// The frame's width and height from its PNG header (the signature, then the IHDR chunk), or why
// it is not a PNG image cairo may decode.
std::string check_png_header(const std::string& png) {
  static const char kSignature[] = "\x89PNG\r\n\x1a\n";
  if (png.size() < 24 || std::memcmp(png.data(), kSignature, 8) != 0 || png.compare(12, 4, "IHDR") != 0)
    return "not a PNG image (no PNG signature and header)";
  const uint32_t width = big_endian_32(png, 16), height = big_endian_32(png, 20);
  if (width == 0 || height == 0 || width > kMaxSide || height > kMaxSide || uint64_t{width} * height > kMaxPixels)
    return "a PNG image of " + std::to_string(width) + "x" + std::to_string(height) +
           " pixels, outside the bounds of a captured frame (1 to " + std::to_string(kMaxSide) + " pixels a side, " +
           std::to_string(kMaxPixels) + " pixels in all)";
  return "";
}

struct SurfaceDeleter {
  void operator()(cairo_surface_t* surface) const { cairo_surface_destroy(surface); }
};
using Surface = std::unique_ptr<cairo_surface_t, SurfaceDeleter>;

struct PngReader {
  const std::string* bytes;
  size_t offset = 0;
  static cairo_status_t read(void* closure, unsigned char* data, unsigned int length) {
    auto* reader = static_cast<PngReader*>(closure);
    if (reader->bytes->size() - reader->offset < length) return CAIRO_STATUS_READ_ERROR;
    std::memcpy(data, reader->bytes->data() + reader->offset, length);
    reader->offset += length;
    return CAIRO_STATUS_SUCCESS;
  }
};

// The frame as opaque 24-bit RGB or premultiplied ARGB pixels (what cairo 1.16 makes of every
// PNG); other formats newer cairo versions choose (floating point for 16-bit PNGs) are drawn onto
// white RGB first.
Surface decode(const std::string& png, std::string& problem) {
  problem = check_png_header(png);
  if (!problem.empty()) return nullptr;
  PngReader reader{&png};
  Surface image(cairo_image_surface_create_from_png_stream(&PngReader::read, &reader));
  if (cairo_surface_status(image.get()) != CAIRO_STATUS_SUCCESS) {
    problem = std::string("not a PNG image cairo can decode (") +
              cairo_status_to_string(cairo_surface_status(image.get())) + ")";
    return nullptr;
  }
  const cairo_format_t format = cairo_image_surface_get_format(image.get());
  if (format == CAIRO_FORMAT_ARGB32 || format == CAIRO_FORMAT_RGB24) return image;
  const int width = cairo_image_surface_get_width(image.get()), height = cairo_image_surface_get_height(image.get());
  Surface rgb(cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height));
  cairo_t* cr = cairo_create(rgb.get());
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_set_source_surface(cr, image.get(), 0, 0);
  cairo_paint(cr);
  const cairo_status_t status = cairo_status(cr);
  cairo_destroy(cr);
  if (status != CAIRO_STATUS_SUCCESS) {
    problem = std::string("a PNG image cairo cannot convert to RGB (") + cairo_status_to_string(status) + ")";
    return nullptr;
  }
  cairo_surface_flush(rgb.get());
  return rgb;
}

// WebPagetest's histograms: every pixel's R, G and B values counted, except white pixels (all
// three at 250 or more, a little slop for compression), so the blank page weighs nothing.
// Translucent pixels are taken as drawn over white.
std::optional<Histograms> frame_histograms(const std::string& png, std::string& problem) {
  const Surface image = decode(png, problem);
  if (!image) return std::nullopt;
  cairo_surface_flush(image.get());
  const bool alpha = cairo_image_surface_get_format(image.get()) == CAIRO_FORMAT_ARGB32;
  const int width = cairo_image_surface_get_width(image.get()), height = cairo_image_surface_get_height(image.get());
  const int stride = cairo_image_surface_get_stride(image.get());
  const unsigned char* data = cairo_image_surface_get_data(image.get());
  Histograms histograms{};
  for (int y = 0; y < height; ++y) {
    const auto* row = reinterpret_cast<const uint32_t*>(data + static_cast<size_t>(y) * static_cast<size_t>(stride));
    for (int x = 0; x < width; ++x) {
      const uint32_t pixel = row[x];  // cairo's native-endian 0xAARRGGBB, colours premultiplied
      const uint32_t over_white = alpha ? 255 - (pixel >> 24) : 0;
      const uint32_t r = ((pixel >> 16) & 0xff) + over_white, g = ((pixel >> 8) & 0xff) + over_white,
                     b = (pixel & 0xff) + over_white;
      if (r >= 250 && g >= 250 && b >= 250) continue;
      ++histograms[0][std::min(r, 255u)];
      ++histograms[1][std::min(g, 255u)];
      ++histograms[2][std::min(b, 255u)];
    }
  }
  return histograms;
}

// WebPagetest's calculate_frame_progress: per channel, the difference of the final frame from
// the first in each bin is the target; the frame's own difference from the first (within kSlop
// bins) matches it. Completeness is what was matched over all targets; 1 when there is none.
double frame_completeness(const Histograms& frame, const Histograms& first, const Histograms& final_frame) {
  int64_t total = 0, matched = 0;
  for (size_t channel = 0; channel < 3; ++channel) {
    std::array<int64_t, 256> available;
    for (size_t i = 0; i < 256; ++i) available[i] = std::abs(frame[channel][i] - first[channel][i]);
    for (int i = 0; i < 256; ++i) {
      int64_t target = std::abs(final_frame[channel][static_cast<size_t>(i)] - first[channel][static_cast<size_t>(i)]);
      total += target;
      for (int j = std::max(0, i - kSlop); j < std::min(256, i + kSlop) && target > 0; ++j) {
        const int64_t match = std::min(target, available[static_cast<size_t>(j)]);
        available[static_cast<size_t>(j)] -= match;
        matched += match;
        target -= match;
      }
    }
  }
  if (total == 0) return 1;
  return std::clamp(static_cast<double>(matched) / static_cast<double>(total), 0.0, 1.0);
}
}  // namespace

std::vector<VisualProgress> visual_progress(const std::vector<CapturedFrame>& frames) {
  if (frames.empty()) throw UserError("speed index: no frames were captured during the load");
  std::vector<size_t> order(frames.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return frames[a].ms < frames[b].ms; });

  std::vector<double> times;
  std::vector<Histograms> histograms;
  std::string first_problem;
  for (size_t index : order) {
    std::string problem;
    auto h = frame_histograms(frames[index].png, problem);
    if (!h) {
      if (first_problem.empty())
        first_problem = "the frame at " + std::to_string(frames[index].ms) + " ms is " + problem;
      continue;
    }
    times.push_back(frames[index].ms);
    histograms.push_back(*h);
  }
  if (histograms.empty())
    throw UserError("speed index: none of the " + std::to_string(frames.size()) +
                    " captured frames decodes as an image (" + first_problem + ")");

  std::vector<VisualProgress> progress;
  progress.reserve(histograms.size());
  for (size_t i = 0; i < histograms.size(); ++i)
    progress.push_back({times[i], frame_completeness(histograms[i], histograms.front(), histograms.back())});
  return progress;
}

double speed_index(const std::vector<VisualProgress>& progress, double end_ms) {
  double si = 0, at = 0, completeness = 0;  // before the first point: blank, from time 0
  for (const auto& point : progress) {
    if (completeness >= 1 || at >= end_ms) break;
    const double until = std::min(point.ms, end_ms);
    if (until > at) si += (1 - completeness) * (until - at);
    at = std::max(at, until);
    completeness = std::clamp(point.completeness, 0.0, 1.0);
  }
  if (completeness < 1 && end_ms > at) si += (1 - completeness) * (end_ms - at);
  return si;
}
