// SPDX-License-Identifier: GPL-3.0-or-later
// Visual progress and speed index of frames drawn with cairo: blank, partly painted, complete.
#include <cairo.h>

#include <cstring>

#include "expect.hh"
#include "pageload/speed_index.hh"
#include "util/exception.hh"

namespace {
constexpr int kWidth = 200, kHeight = 100;

cairo_status_t append_png(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

std::string png_of(cairo_surface_t* surface) {
  std::string png;
  EXPECT_EQ(cairo_surface_write_to_png_stream(surface, append_png, &png), CAIRO_STATUS_SUCCESS);
  cairo_surface_destroy(surface);
  return png;
}

// A white viewport whose left `painted` share (0 to 1) is covered by a photo-like content: a
// horizontal gradient (many colours, as real pages have) over a dark text-like band.
std::string frame(double painted, int width = kWidth, int height = kHeight) {
  cairo_surface_t* surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height);
  cairo_t* cr = cairo_create(surface);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  // The content is laid out over the whole viewport, then revealed from the left.
  cairo_rectangle(cr, 0, 0, width * painted, height);
  cairo_clip(cr);
  cairo_pattern_t* gradient = cairo_pattern_create_linear(0, 0, width, 0);
  cairo_pattern_add_color_stop_rgb(gradient, 0, 0.9, 0.1, 0.1);
  cairo_pattern_add_color_stop_rgb(gradient, 1, 0.1, 0.2, 0.9);
  cairo_set_source(cr, gradient);
  cairo_paint(cr);
  cairo_pattern_destroy(gradient);
  cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
  cairo_rectangle(cr, 0, height * 0.4, width, height * 0.2);
  cairo_fill(cr);
  cairo_destroy(cr);
  return png_of(surface);
}

// Frames every 100 ms from 0 to end_ms: `painted(ms)` is the share painted at that time.
template <typename Painted>
std::vector<CapturedFrame> filmstrip(double end_ms, Painted painted) {
  std::vector<CapturedFrame> frames;
  for (double ms = 0; ms <= end_ms; ms += 100) frames.push_back({ms, frame(painted(ms))});
  return frames;
}

double si_of(const std::vector<CapturedFrame>& frames, double end_ms) {
  return speed_index(visual_progress(frames), end_ms);
}
}  // namespace

TEST(SpeedIndex, blank_half_and_fully_painted_frames_have_completeness_0_half_and_1) {
  const auto progress = visual_progress({{0, frame(0)}, {100, frame(0.5)}, {200, frame(1)}});
  ASSERT_EQ(progress.size(), 3u);
  EXPECT_EQ(progress[0].ms, 0);
  EXPECT_EQ(progress[0].completeness, 0);
  EXPECT_NEAR(progress[1].completeness, 0.5, 0.01);
  EXPECT_EQ(progress[2].completeness, 1);
}

TEST(SpeedIndex, frames_are_taken_in_time_order) {
  const auto progress = visual_progress({{200, frame(1)}, {0, frame(0)}, {100, frame(0.5)}});
  ASSERT_EQ(progress.size(), 3u);
  EXPECT_EQ(progress[0].ms, 0);
  EXPECT_EQ(progress[0].completeness, 0);
  EXPECT_EQ(progress[2].ms, 200);
  EXPECT_EQ(progress[2].completeness, 1);
}

TEST(SpeedIndex, a_page_painting_everything_at_t_has_si_t) {
  const auto frames = filmstrip(3000, [](double ms) { return ms < 1200 ? 0.0 : 1.0; });
  EXPECT_NEAR(si_of(frames, 3000), 1200, 1);
}

TEST(SpeedIndex, painting_half_at_t1_and_the_rest_at_t2_gives_t1_plus_half_the_gap) {
  const auto frames = filmstrip(3000, [](double ms) { return ms < 500 ? 0.0 : ms < 1500 ? 0.5 : 1.0; });
  // 500 + (1500 - 500) / 2 = 1000; the painted half is 100 of the 200 columns.
  EXPECT_NEAR(si_of(frames, 3000), 1000, 10);
}

TEST(SpeedIndex, an_early_painter_has_a_smaller_si_than_a_late_one) {
  const auto early = filmstrip(3000, [](double ms) { return ms < 300 ? 0.0 : ms < 2500 ? 0.9 : 1.0; });
  const auto late = filmstrip(3000, [](double ms) { return ms < 2500 ? 0.0 : 1.0; });
  const double early_si = si_of(early, 3000), late_si = si_of(late, 3000);
  EXPECT_GT(early_si, 300);
  EXPECT_LT(early_si, late_si);
  EXPECT_NEAR(late_si, 2500, 1);
}

TEST(SpeedIndex, a_page_identical_from_start_to_end_is_complete_at_once) {
  const auto progress = visual_progress({{0, frame(1)}, {100, frame(1)}});
  EXPECT_EQ(progress[0].completeness, 1);
  EXPECT_EQ(progress[1].completeness, 1);
  // Visually complete at the first frame, 0 ms: nothing to count.
  EXPECT_EQ(speed_index(progress, 100), 0);
}

TEST(SpeedIndex, speed_index_follows_its_definition) {
  // Blank until the first point at 100 ms, then 1 - 0.25 until 300 ms: 100 + 0.75 * 200.
  EXPECT_DOUBLE_EQ(speed_index({{100, 0.25}, {300, 1}, {900, 1}}, 1000), 250);
  // Cut at end_ms when the page is not complete by then.
  EXPECT_DOUBLE_EQ(speed_index({{100, 0.5}, {300, 1}}, 200), 150);
  // A page still incomplete at its last point counts until end_ms.
  EXPECT_DOUBLE_EQ(speed_index({{0, 0}, {100, 0.5}}, 300), 200);
  EXPECT_DOUBLE_EQ(speed_index({}, 400), 400);
}

TEST(SpeedIndex, frames_that_do_not_decode_are_skipped) {
  std::vector<CapturedFrame> frames = {{0, frame(0)}, {50, "not a png"}, {100, frame(0.5)}, {200, frame(1)}};
  frames[2].png.resize(frames[2].png.size() / 2);  // cut short
  const auto progress = visual_progress(frames);
  ASSERT_EQ(progress.size(), 2u);
  EXPECT_EQ(progress[0].ms, 0);
  EXPECT_EQ(progress[1].ms, 200);
}

TEST(SpeedIndex, no_decodable_frame_is_a_user_error) {
  EXPECT_THROW_WITH(UserError, visual_progress({}), "no frames were captured");
  EXPECT_THROW_WITH(UserError, visual_progress({{0, "GIF89a"}, {100, ""}}),
                    "none of the 2 captured frames decodes as an image");
}

TEST(SpeedIndex, absurd_dimensions_are_refused_before_decoding) {
  // A real PNG header claiming 100000 x 100000 pixels (40 GB decoded): refused from the header.
  std::string png = frame(1, 4, 4);
  const unsigned char huge[8] = {0x00, 0x01, 0x86, 0xa0, 0x00, 0x01, 0x86, 0xa0};
  std::memcpy(png.data() + 16, huge, sizeof huge);
  EXPECT_THROW_WITH(UserError, visual_progress({{0, png}}), "100000x100000 pixels, outside the bounds");
}

TEST(SpeedIndex, translucent_pngs_are_read_as_drawn_over_white) {
  // A fully transparent ARGB frame is a blank white page; the opaque one is complete.
  cairo_surface_t* transparent = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, kWidth, kHeight);
  const auto progress = visual_progress({{0, png_of(transparent)}, {100, frame(0.5)}, {200, frame(1)}});
  ASSERT_EQ(progress.size(), 3u);
  EXPECT_EQ(progress[0].completeness, 0);
  EXPECT_NEAR(progress[1].completeness, 0.5, 0.01);
}
