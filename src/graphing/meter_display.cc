// SPDX-License-Identifier: GPL-3.0-or-later
// The live meters' windows and files (see meter_display.hh).
#include "graphing/meter_display.hh"

#include <cairo-xcb.h>
#include <cairo.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/ipc.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include <xcb/shm.h>
#include <xcb/xcb.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>

#include "util/exception.hh"

namespace {
constexpr uint16_t kWidth = 900, kHeight = 480;

xcb_atom_t intern(xcb_connection_t* c, const char* name) {
  xcb_intern_atom_reply_t* reply =
      xcb_intern_atom_reply(c, xcb_intern_atom(c, 0, static_cast<uint16_t>(std::strlen(name)), name), nullptr);
  const xcb_atom_t atom = reply ? reply->atom : static_cast<xcb_atom_t>(XCB_ATOM_NONE);
  std::free(reply);
  return atom;
}

// The snapshot thread runs at the ordinary priority (nice 0, or the caller's if lower), not at
// the ferry's raised one: a file can wait. (The windows' thread keeps the ferry's: on a busy
// machine it then keeps its 30 frames a second, and bench/meter shows the link's goodput
// unchanged.) Lowering one's own priority needs no right.
void leave_the_ferrys_priority() {
  const pid_t thread = static_cast<pid_t>(::syscall(SYS_gettid));
  errno = 0;
  const int current = ::getpriority(PRIO_PROCESS, static_cast<id_t>(thread));
  if (errno == 0 && current < 0) ::setpriority(PRIO_PROCESS, static_cast<id_t>(thread), 0);
}

// The y range a live chart's points call for: from 0 to a little over the highest (linear), or
// from the power of ten under the least positive value to twice the highest (logarithmic).
std::pair<double, double> target_range(const Chart& chart) {
  double lo = INFINITY, hi = 0;
  for (const Series& s : chart.series) {
    for (auto [x, y] : s.points) {
      if (std::isnan(y) || (chart.x_range && (x < chart.x_range->first || x > chart.x_range->second))) continue;
      hi = std::max(hi, y);
      if (y > 0) lo = std::min(lo, y);
    }
  }
  if (!chart.log_y) return {0, hi > 0 ? hi * 1.1 : 1};
  if (!std::isfinite(lo)) return {1, 100};
  lo = std::min(1.0, std::pow(10, std::floor(std::log10(lo))));
  return {lo, std::max(hi * 2, lo * 10)};
}
}  // namespace

// An image in memory shared with the X server (MIT-SHM): a frame is drawn into it and the
// server copies it to the window, with no copy through the socket. Only one frame is in
// flight: until the server says it has taken the last one, the next is not drawn.
class SharedImage {
 public:
  // nullptr where the server cannot share memory with us (a remote display, another IPC
  // namespace, a depth other than 24): frames then go through the socket.
  static std::unique_ptr<SharedImage> make(xcb_connection_t* c, int width, int height) {
    const size_t bytes = static_cast<size_t>(width) * static_cast<size_t>(height) * 4;
    const int id = ::shmget(IPC_PRIVATE, bytes, IPC_CREAT | 0600);
    if (id < 0) return nullptr;
    void* data = ::shmat(id, nullptr, 0);
    if (data == reinterpret_cast<void*>(-1)) {
      ::shmctl(id, IPC_RMID, nullptr);
      return nullptr;
    }
    const xcb_shm_seg_t segment = xcb_generate_id(c);
    xcb_generic_error_t* error = xcb_request_check(c, xcb_shm_attach_checked(c, segment, static_cast<uint32_t>(id), 0));
    ::shmctl(id, IPC_RMID, nullptr);  // gone once both sides detach (or exit)
    if (error) {
      std::free(error);
      ::shmdt(data);
      return nullptr;
    }
    return std::unique_ptr<SharedImage>(new SharedImage(c, segment, data, width, height));
  }
  ~SharedImage() {
    cairo_surface_destroy(surface_);
    xcb_shm_detach(connection_, segment_);
    ::shmdt(data_);
  }
  SharedImage(const SharedImage&) = delete;
  SharedImage& operator=(const SharedImage&) = delete;

  cairo_surface_t* surface() const { return surface_; }
  int width() const { return width_; }
  int height() const { return height_; }
  xcb_shm_seg_t segment() const { return segment_; }
  bool in_flight = false;  // sent, and the server has not said it is done with it

 private:
  SharedImage(xcb_connection_t* c, xcb_shm_seg_t segment, void* data, int width, int height)
      : connection_(c),
        segment_(segment),
        data_(data),
        width_(width),
        height_(height),
        surface_(cairo_image_surface_create_for_data(static_cast<unsigned char*>(data), CAIRO_FORMAT_RGB24, width,
                                                     height, width * 4)) {}
  xcb_connection_t* connection_;
  xcb_shm_seg_t segment_;
  void* data_;
  int width_, height_;
  cairo_surface_t* surface_;
};

// The connection and one window per graph, used by the drawing thread only once it runs.
struct MeterDisplay::Windows {
  struct Window {
    MeterGraph graph;
    xcb_window_t id;
    cairo_surface_t* surface;  // the window's
    int width = kWidth, height = kHeight;
    SmoothScale scale;
    cairo_surface_t* image = nullptr;     // without shared memory: drawn here, then sent whole
    std::unique_ptr<SharedImage> shared;  // with it
  };
  xcb_connection_t* connection = nullptr;
  bool shared_memory = false;  // the server takes frames from shared memory
  uint8_t shm_completion = 0;  // the response type of its "done with it" event
  xcb_gcontext_t gc = 0;
  xcb_atom_t protocols = XCB_ATOM_NONE, delete_window = XCB_ATOM_NONE;
  std::vector<Window> open;

  ~Windows() {
    for (Window& w : open) {
      cairo_surface_destroy(w.surface);
      if (w.image) cairo_surface_destroy(w.image);
      w.shared.reset();
    }
    if (connection) xcb_disconnect(connection);
  }
  void close(size_t i, bool destroy) {
    cairo_surface_destroy(open[i].surface);
    if (open[i].image) cairo_surface_destroy(open[i].image);
    open[i].shared.reset();
    if (destroy) xcb_destroy_window(connection, open[i].id);
    open.erase(open.begin() + static_cast<long>(i));
    xcb_flush(connection);
  }
  Window* find(xcb_window_t id) {
    for (Window& w : open) {
      if (w.id == id) return &w;
    }
    return nullptr;
  }
};

MeterDisplay::MeterDisplay(std::vector<MeterGraph> graphs, const std::string& program)
    : windows_(std::make_unique<Windows>()), program_(program) {
  const char* display = std::getenv("DISPLAY");
  int screen_number = 0;
  xcb_connection_t* c = xcb_connect(nullptr, &screen_number);
  windows_->connection = c;
  if (xcb_connection_has_error(c)) {
    throw UserError("cannot open the X display \"" + std::string(display ? display : "") +
                    "\" for the live graphs (--meter-*); check DISPLAY and XAUTHORITY, or draw them "
                    "without a display with --meter-output=FILE.png (or .svg, or a directory)");
  }
  const xcb_setup_t* setup = xcb_get_setup(c);
  xcb_screen_iterator_t screens = xcb_setup_roots_iterator(setup);
  for (int i = 0; i < screen_number && screens.rem > 1; i++) xcb_screen_next(&screens);
  xcb_screen_t* screen = screens.data;
  xcb_visualtype_t* visual = nullptr;
  for (auto depths = xcb_screen_allowed_depths_iterator(screen); depths.rem && !visual; xcb_depth_next(&depths)) {
    for (auto v = xcb_depth_visuals_iterator(depths.data); v.rem; xcb_visualtype_next(&v)) {
      if (v.data->visual_id == screen->root_visual) {
        visual = v.data;
        break;
      }
    }
  }
  if (!visual) throw UserError("the X display has no visual for the live graphs' windows");
  windows_->protocols = intern(c, "WM_PROTOCOLS");
  windows_->delete_window = intern(c, "WM_DELETE_WINDOW");
  const xcb_atom_t net_wm_name = intern(c, "_NET_WM_NAME"), utf8 = intern(c, "UTF8_STRING");
  const std::string wm_class = program + std::string(1, '\0') + "Mahimahi" + std::string(1, '\0');
  for (size_t i = 0; i < graphs.size(); i++) {
    MeterGraph& graph = graphs[i];
    // Side by side, two to a row, so that none hides another (a window manager may move them).
    const auto x = static_cast<int16_t>((i % 2) * (kWidth + 8)), y = static_cast<int16_t>((i / 2) * (kHeight + 32));
    const xcb_window_t id = xcb_generate_id(c);
    const uint32_t values[] = {screen->white_pixel, XCB_EVENT_MASK_EXPOSURE | XCB_EVENT_MASK_STRUCTURE_NOTIFY};
    xcb_create_window(c, XCB_COPY_FROM_PARENT, id, screen->root, x, y, kWidth, kHeight, 0,
                      XCB_WINDOW_CLASS_INPUT_OUTPUT, screen->root_visual, XCB_CW_BACK_PIXEL | XCB_CW_EVENT_MASK,
                      values);
    const std::string title = graph.window_title();
    xcb_change_property(c, XCB_PROP_MODE_REPLACE, id, XCB_ATOM_WM_NAME, XCB_ATOM_STRING, 8,
                        static_cast<uint32_t>(title.size()), title.data());
    xcb_change_property(c, XCB_PROP_MODE_REPLACE, id, net_wm_name, utf8, 8, static_cast<uint32_t>(title.size()),
                        title.data());
    xcb_change_property(c, XCB_PROP_MODE_REPLACE, id, XCB_ATOM_WM_CLASS, XCB_ATOM_STRING, 8,
                        static_cast<uint32_t>(wm_class.size()), wm_class.data());
    xcb_change_property(c, XCB_PROP_MODE_REPLACE, id, windows_->protocols, XCB_ATOM_ATOM, 32, 1,
                        &windows_->delete_window);
    xcb_map_window(c, id);
    windows_->open.push_back({std::move(graph),
                              id,
                              cairo_xcb_surface_create(c, id, visual, kWidth, kHeight),
                              kWidth,
                              kHeight,
                              {},
                              nullptr,
                              nullptr});
  }
  // Shared memory, if the server has it and its pixels are cairo's RGB24 (24 bits deep in 32,
  // red in the third byte, least significant byte first); SharedImage::make finds out whether
  // it works for us.
  const xcb_query_extension_reply_t* shm = xcb_get_extension_data(c, &xcb_shm_id);
  const bool rgb24 = screen->root_depth == 24 && visual->red_mask == 0xff0000 && visual->green_mask == 0xff00 &&
                     visual->blue_mask == 0xff && setup->image_byte_order == XCB_IMAGE_ORDER_LSB_FIRST;
  if (shm && shm->present && rgb24) {
    windows_->shared_memory = true;
    windows_->shm_completion = static_cast<uint8_t>(shm->first_event + XCB_SHM_COMPLETION);
    windows_->gc = xcb_generate_id(c);
    xcb_create_gc(c, windows_->gc, screen->root, 0, nullptr);
  }
  // A round trip: the windows exist, or the connection says why not.
  std::free(xcb_get_input_focus_reply(c, xcb_get_input_focus(c), nullptr));
  if (xcb_connection_has_error(c)) throw UserError("the X display closed the connection while opening the live graphs");
  stop_fd_ = check_syscall("eventfd", ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  thread_ = std::thread([this] { run(); });
}

MeterDisplay::~MeterDisplay() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)!::write(stop_fd_, &one, sizeof one);
    thread_.join();
  }
  if (stop_fd_ >= 0) ::close(stop_fd_);
}

// Draws one window's next frame; false if it had to be skipped (the server has not taken the
// last one yet).
bool MeterDisplay::draw(size_t index) {
  Windows& w = *windows_;
  Windows::Window& window = w.open[index];
  if (w.shared_memory && window.shared && window.shared->in_flight) return false;
  Chart chart = window.graph.chart(MeterScope::Live);
  const auto [lo, hi] = target_range(chart);
  chart.y_range = window.scale.next(lo, hi, chart.log_y);
  // Drawn here, into memory (thousands of small shapes: far cheaper than as many requests to
  // the X server), then handed over whole.
  if (w.shared_memory) {
    if (!window.shared || window.shared->width() != window.width || window.shared->height() != window.height) {
      window.shared.reset();
      window.shared = SharedImage::make(w.connection, window.width, window.height);
    }
    if (window.shared) {
      cairo_t* cr = cairo_create(window.shared->surface());
      paint_chart(cr, chart, window.width, window.height);
      cairo_destroy(cr);
      cairo_surface_flush(window.shared->surface());
      const auto width = static_cast<uint16_t>(window.width), height = static_cast<uint16_t>(window.height);
      xcb_shm_put_image(w.connection, window.id, w.gc, width, height, 0, 0, width, height, 0, 0, 24,
                        XCB_IMAGE_FORMAT_Z_PIXMAP, 1, window.shared->segment(), 0);
      window.shared->in_flight = true;
      return true;
    }
    w.shared_memory = false;  // refused: through the socket from now on
  }
  if (!window.image || cairo_image_surface_get_width(window.image) != window.width ||
      cairo_image_surface_get_height(window.image) != window.height) {
    if (window.image) cairo_surface_destroy(window.image);
    window.image = cairo_image_surface_create(CAIRO_FORMAT_RGB24, window.width, window.height);
  }
  cairo_t* cr = cairo_create(window.image);
  paint_chart(cr, chart, window.width, window.height);
  cairo_destroy(cr);
  cr = cairo_create(window.surface);
  cairo_set_source_surface(cr, window.image, 0, 0);
  cairo_set_operator(cr, CAIRO_OPERATOR_SOURCE);
  cairo_paint(cr);
  cairo_destroy(cr);
  cairo_surface_flush(window.surface);
  return true;
}

void MeterDisplay::run() {
  Windows& w = *windows_;
  xcb_connection_t* c = w.connection;
  const int timer = ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  const long period_ns = static_cast<long>(1e9 / kFramesPerSecond);
  itimerspec every{{0, period_ns}, {0, 1}};
  ::timerfd_settime(timer, 0, &every, nullptr);
  pollfd fds[] = {{stop_fd_, POLLIN, 0}, {xcb_get_file_descriptor(c), POLLIN, 0}, {timer, POLLIN, 0}};
  while (!w.open.empty()) {
    if (::poll(fds, 3, -1) < 0 && errno != EINTR) break;
    if (fds[0].revents) break;
    while (xcb_generic_event_t* event = xcb_poll_for_event(c)) {
      switch (event->response_type & 0x7f) {
        case XCB_CONFIGURE_NOTIFY: {
          auto* e = reinterpret_cast<xcb_configure_notify_event_t*>(event);
          if (auto* window = w.find(e->window)) {
            window->width = e->width;
            window->height = e->height;
            cairo_xcb_surface_set_size(window->surface, e->width, e->height);
          }
          break;
        }
        case XCB_CLIENT_MESSAGE: {
          // The window manager's close button: this window goes, the shell and the others stay.
          auto* e = reinterpret_cast<xcb_client_message_event_t*>(event);
          if (e->type == w.protocols && e->data.data32[0] == w.delete_window) {
            for (size_t i = 0; i < w.open.size(); i++) {
              if (w.open[i].id == e->window) w.close(i, true);
            }
          }
          break;
        }
        case XCB_DESTROY_NOTIFY: {
          // Destroyed by another client (xdotool windowclose, xkill -id): stop drawing it.
          auto* e = reinterpret_cast<xcb_destroy_notify_event_t*>(event);
          for (size_t i = 0; i < w.open.size(); i++) {
            if (w.open[i].id == e->window) w.close(i, false);
          }
          break;
        }
        default:
          if (w.shared_memory && (event->response_type & 0x7f) == w.shm_completion) {
            auto* e = reinterpret_cast<xcb_shm_completion_event_t*>(event);
            for (auto& window : w.open) {
              if (window.shared && window.shared->segment() == e->shmseg) window.shared->in_flight = false;
            }
          }
          break;  // Expose: the next frame redraws everything; errors: a window just closed
      }
      std::free(event);
    }
    if (xcb_connection_has_error(c)) {
      std::cerr << program_ << ": the X display went away; the live graphs stop, the shell goes on\n";
      break;
    }
    if (fds[2].revents) {
      uint64_t ticks;
      (void)!::read(timer, &ticks, sizeof ticks);
      bool whole_frame = true;
      for (size_t i = 0; i < w.open.size(); i++) whole_frame &= draw(i);
      xcb_flush(c);
      if (whole_frame) frames_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  ::close(timer);
  timespec cpu;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
  final_cpu_seconds_ = static_cast<double>(cpu.tv_sec) + static_cast<double>(cpu.tv_nsec) / 1e9;
  finished_ = true;
}

double MeterDisplay::cpu_seconds() const {
  if (finished_) return final_cpu_seconds_;
  clockid_t clock;
  timespec cpu;
  if (pthread_getcpuclockid(const_cast<std::thread&>(thread_).native_handle(), &clock) != 0 ||
      clock_gettime(clock, &cpu) != 0)
    return final_cpu_seconds_;
  return static_cast<double>(cpu.tv_sec) + static_cast<double>(cpu.tv_nsec) / 1e9;
}

MeterFiles::MeterFiles(std::vector<MeterGraph> graphs, std::string output, double interval_s, std::string program)
    : graphs_(std::move(graphs)),
      output_(std::move(output)),
      directory_(!output_.ends_with(".png") && !output_.ends_with(".svg")),
      interval_s_(interval_s),
      program_(std::move(program)) {
  if (directory_) {
    // Made with the user's rights (this is the ferry, after the drop), if it is not there.
    if (::mkdir(output_.c_str(), 0777) != 0 && errno != EEXIST)
      throw UserError("cannot make the directory " + output_ + " for --meter-output: " + std::strerror(errno));
    struct stat st;
    if (::stat(output_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw UserError("--meter-output=" + output_ +
                      " is neither a directory nor a name ending in .png or .svg; give one of those");
  }
  // Fails now, not at the end, if the place cannot be written.
  write();
  if (interval_s_ > 0) thread_ = std::thread([this] { snapshots(); });
}

MeterFiles::~MeterFiles() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MeterFiles::write_final() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  write();
}

void MeterFiles::snapshots() {
  leave_the_ferrys_priority();
  std::unique_lock lock(mutex_);
  const auto period = std::chrono::duration<double>(interval_s_);
  while (!wake_.wait_for(lock, period, [this] { return stopping_; })) {
    lock.unlock();
    try {
      write();
    } catch (const std::exception& e) {
      std::cerr << program_ << ": " << e.what() << "\n";
    }
    lock.lock();
  }
}

void MeterFiles::write() {
  // Each file replaced whole: drawn to a hidden name beside it, then renamed over it.
  auto replace = [](const std::string& path, const std::vector<Chart>& charts) {
    const size_t slash = path.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
    const std::string base = path.substr(slash == std::string::npos ? 0 : slash + 1);
    const std::string ext = base.substr(base.size() - 4);
    const std::string temporary = dir + "." + base + "." + std::to_string(::getpid()) + ext;
    try {
      render_charts(charts, temporary);
    } catch (...) {
      ::unlink(temporary.c_str());
      throw;
    }
    if (::rename(temporary.c_str(), path.c_str()) != 0) {
      const int error = errno;
      ::unlink(temporary.c_str());
      throw UserError("cannot write " + path + ": " + std::strerror(error));
    }
  };
  if (directory_) {
    for (const MeterGraph& graph : graphs_)
      replace(output_ + "/" + graph.name + ".png", {graph.chart(MeterScope::WholeRun)});
  } else {
    std::vector<Chart> charts;
    for (const MeterGraph& graph : graphs_) charts.push_back(graph.chart(MeterScope::WholeRun));
    replace(output_, charts);
  }
}
