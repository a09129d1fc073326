// SPDX-License-Identifier: GPL-3.0-or-later
// x-probe: what the integration tests of the live graphs ask of an X server or of an image,
// through xcb and cairo (no window manager, no ImageMagick).
//   x-probe windows                       "ID<TAB>TITLE" for each top-level window with a name
//   x-probe close ID                      sends WM_DELETE_WINDOW, as a window manager's close button
//   x-probe grab ID FILE.png              the window's pixels as a PNG
//   x-probe resize ID WIDTH HEIGHT        resizes the window, as a user dragging its corner
//   x-probe frame FILE.png                the x of the plot frame's right edge (the rightmost
//                                         column with 100 pixels of dark grey in a row)
//   x-probe pixels FILE.png NAME=RRGGBB...
//       for each colour (within 24 per channel), in the plot area of a chart (one chart per
//       image, as a window or a --meter-output directory holds): "NAME count min_y median_y max_x"
#include <cairo.h>
#include <xcb/xcb.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {
int usage() {
  std::fprintf(stderr,
               "usage: x-probe windows | close ID | grab ID FILE.png | resize ID WIDTH HEIGHT | frame FILE.png |\n"
               "       pixels FILE.png NAME=RRGGBB...\n");
  return 2;
}

xcb_connection_t* connect_or_die() {
  xcb_connection_t* c = xcb_connect(nullptr, nullptr);
  if (xcb_connection_has_error(c)) {
    std::fprintf(stderr, "x-probe: cannot connect to DISPLAY\n");
    std::exit(1);
  }
  return c;
}

xcb_atom_t atom(xcb_connection_t* c, const char* name) {
  auto* r = xcb_intern_atom_reply(c, xcb_intern_atom(c, 0, static_cast<uint16_t>(std::strlen(name)), name), nullptr);
  const xcb_atom_t a = r ? r->atom : 0;
  std::free(r);
  return a;
}

int windows() {
  xcb_connection_t* c = connect_or_die();
  xcb_screen_t* screen = xcb_setup_roots_iterator(xcb_get_setup(c)).data;
  auto* tree = xcb_query_tree_reply(c, xcb_query_tree(c, screen->root), nullptr);
  if (!tree) return 1;
  xcb_window_t* children = xcb_query_tree_children(tree);
  for (int i = 0; i < xcb_query_tree_children_length(tree); i++) {
    auto* p = xcb_get_property_reply(
        c, xcb_get_property(c, 0, children[i], XCB_ATOM_WM_NAME, XCB_ATOM_STRING, 0, 1024), nullptr);
    if (p && xcb_get_property_value_length(p) > 0) {
      std::printf("0x%x\t%.*s\n", children[i], xcb_get_property_value_length(p),
                  static_cast<const char*>(xcb_get_property_value(p)));
    }
    std::free(p);
  }
  std::free(tree);
  xcb_disconnect(c);
  return 0;
}

// Waits for a checked request's answer and disconnects: 0, or 1 with "x-probe: cannot WHAT".
int finish_checked(xcb_connection_t* c, xcb_void_cookie_t cookie, const char* what, xcb_window_t id) {
  xcb_generic_error_t* error = xcb_request_check(c, cookie);
  xcb_disconnect(c);
  if (!error) return 0;
  std::fprintf(stderr, "x-probe: cannot %s 0x%x\n", what, id);
  std::free(error);
  return 1;
}

int close_window(xcb_window_t id) {
  xcb_connection_t* c = connect_or_die();
  xcb_client_message_event_t event{};
  event.response_type = XCB_CLIENT_MESSAGE;
  event.format = 32;
  event.window = id;
  event.type = atom(c, "WM_PROTOCOLS");
  event.data.data32[0] = atom(c, "WM_DELETE_WINDOW");
  event.data.data32[1] = XCB_CURRENT_TIME;
  return finish_checked(
      c, xcb_send_event_checked(c, 0, id, XCB_EVENT_MASK_NO_EVENT, reinterpret_cast<const char*>(&event)), "close",
      id);
}

int grab(xcb_window_t id, const char* file) {
  xcb_connection_t* c = connect_or_die();
  auto* g = xcb_get_geometry_reply(c, xcb_get_geometry(c, id), nullptr);
  if (!g) {
    std::fprintf(stderr, "x-probe: no window 0x%x\n", id);
    return 1;
  }
  auto* image = xcb_get_image_reply(
      c, xcb_get_image(c, XCB_IMAGE_FORMAT_Z_PIXMAP, id, 0, 0, g->width, g->height, ~0u), nullptr);
  if (!image || g->depth != 24) {
    std::fprintf(stderr, "x-probe: cannot read window 0x%x (depth %d)\n", id, g->depth);
    return 1;
  }
  // A 24-bit Z pixmap is 32 bits per pixel, as cairo's RGB24.
  cairo_surface_t* s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, g->width, g->height);
  cairo_surface_flush(s);
  const int stride = cairo_image_surface_get_stride(s);
  const uint8_t* from = xcb_get_image_data(image);
  for (int y = 0; y < g->height; y++)
    std::memcpy(cairo_image_surface_get_data(s) + y * stride, from + y * g->width * 4, g->width * 4);
  cairo_surface_mark_dirty(s);
  const cairo_status_t status = cairo_surface_write_to_png(s, file);
  cairo_surface_destroy(s);
  std::free(image);
  std::free(g);
  xcb_disconnect(c);
  return status == CAIRO_STATUS_SUCCESS ? 0 : 1;
}

int resize(xcb_window_t id, uint32_t width, uint32_t height) {
  xcb_connection_t* c = connect_or_die();
  const uint32_t size[] = {width, height};
  return finish_checked(
      c, xcb_configure_window_checked(c, id, XCB_CONFIG_WINDOW_WIDTH | XCB_CONFIG_WINDOW_HEIGHT, size), "resize", id);
}

// A PNG's pixels (exits with a message if it cannot be read).
class Png {
 public:
  explicit Png(const char* file) : surface_(cairo_image_surface_create_from_png(file)) {
    if (cairo_surface_status(surface_) != CAIRO_STATUS_SUCCESS) {
      std::fprintf(stderr, "x-probe: cannot read %s\n", file);
      std::exit(1);
    }
    width = cairo_image_surface_get_width(surface_);
    height = cairo_image_surface_get_height(surface_);
  }
  ~Png() { cairo_surface_destroy(surface_); }
  // Red, green and blue of the pixel at (x, y).
  void rgb(int x, int y, int& r, int& g, int& b) const {
    const uint8_t* data = cairo_image_surface_get_data(surface_);
    const uint32_t p =
        *reinterpret_cast<const uint32_t*>(data + y * cairo_image_surface_get_stride(surface_) + x * 4);
    r = (p >> 16) & 255, g = (p >> 8) & 255, b = p & 255;
  }
  int width, height;

 private:
  cairo_surface_t* surface_;
};

int frame(const char* file) {
  const Png png(file);
  int right = -1;
  for (int x = 0; x < png.width; x++) {
    int run = 0, longest = 0;
    for (int y = 0; y < png.height; y++) {
      int r, g, b;
      png.rgb(x, y, r, g, b);
      // The frame's grey, antialiased over two columns: grey darker than the grid lines.
      run = (std::abs(r - g) <= 3 && std::abs(g - b) <= 3 && r < 200) ? run + 1 : 0;
      longest = std::max(longest, run);
    }
    if (longest >= 100) right = x;
  }
  std::printf("%d\n", right);
  return 0;
}

int pixels(const char* file, int count, char** colours) {
  const Png png(file);
  const int width = png.width, height = png.height;
  // The plot area: chart.cc's margins (left 80, right 24, top 48, bottom 58, and a row of legend).
  auto in_plot = [&](int x, int y) { return x > 80 && x < width - 24 && y > 48 && y < height - 58 - 40; };
  for (int i = 0; i < count; i++) {
    const char* eq = std::strchr(colours[i], '=');
    if (!eq) return usage();
    const unsigned long rgb = std::strtoul(eq + 1, nullptr, 16);
    const int r = static_cast<int>(rgb >> 16), g = static_cast<int>((rgb >> 8) & 255), b = static_cast<int>(rgb & 255);
    std::vector<int> ys;
    int max_x = -1;
    for (int y = 0; y < height; y++) {
      for (int x = 0; x < width; x++) {
        int pr, pg, pb;
        png.rgb(x, y, pr, pg, pb);
        if (std::abs(pr - r) <= 24 && std::abs(pg - g) <= 24 && std::abs(pb - b) <= 24 && in_plot(x, y)) {
          ys.push_back(y);
          max_x = std::max(max_x, x);
        }
      }
    }
    std::sort(ys.begin(), ys.end());
    std::printf("%.*s %zu %d %d %d\n", static_cast<int>(eq - colours[i]), colours[i], ys.size(),
                ys.empty() ? -1 : ys.front(), ys.empty() ? -1 : ys[ys.size() / 2], max_x);
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string what = argv[1];
  if (what == "windows" && argc == 2) return windows();
  if (what == "close" && argc == 3) return close_window(static_cast<xcb_window_t>(std::strtoul(argv[2], nullptr, 0)));
  if (what == "grab" && argc == 4) return grab(static_cast<xcb_window_t>(std::strtoul(argv[2], nullptr, 0)), argv[3]);
  if (what == "pixels" && argc >= 4) return pixels(argv[2], argc - 3, argv + 3);
  if (what == "resize" && argc == 5)
    return resize(static_cast<xcb_window_t>(std::strtoul(argv[2], nullptr, 0)),
                  static_cast<uint32_t>(std::strtoul(argv[3], nullptr, 0)),
                  static_cast<uint32_t>(std::strtoul(argv[4], nullptr, 0)));
  if (what == "frame" && argc == 3) return frame(argv[2]);
  return usage();
}
