// SPDX-License-Identifier: GPL-3.0-or-later
// One page load over DevTools (see page_load.hh).
#include "pageload/page_load.hh"

#include <poll.h>
#include <sys/signalfd.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "util/base64.hh"
#include "util/exception.hh"
#include "util/text.hh"
#include "util/time_text.hh"

using nlohmann::json;

namespace fs = std::filesystem;

namespace {
// Commands that set the page up answer in milliseconds; this much silence means a hung browser.
constexpr Nanos kCommandWait = 10 * kNanosPerSec;
// After a timeout: how long the browser process gets to show that it still answers, and the
// renderer to report the paint timings it has.
constexpr Nanos kHealthWait = 5 * kNanosPerSec;
constexpr Nanos kStartWait = 30 * kNanosPerSec;  // the browser's first answer
constexpr Nanos kLateMetricsWait = 2 * kNanosPerSec;
// After the load event, frames are captured until the page has not changed for this long, so
// that the last frame is the page's final state (images decoded and painted after onload) ...
constexpr Nanos kVisualSettle = 500 * kNanosPerMs;
// ... but no longer than this after it (a page with an animation never settles).
constexpr Nanos kMaxSettle = 5 * kNanosPerSec;
// The frames kept for the speed index: beyond either bound, each new frame replaces the last
// kept one (the final state always counts; an hour-long animation cannot exhaust memory).
constexpr size_t kMaxFrames = 3000;
constexpr size_t kMaxFrameBytes = 512 * 1024 * 1024;

double wall_ms_now() {
  timeval now{};
  ::gettimeofday(&now, nullptr);
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_usec) / 1e3;
}

std::string seconds_text(Nanos ns) {
  const double s = static_cast<double>(ns) / 1e9;
  char text[32];
  std::snprintf(text, sizeof text, "%g", s);
  return std::string(text) + " s";
}

// What the page reports of itself once loaded (or at a timeout): Navigation Timing, the paint
// timings, and the last largest-contentful-paint candidate, which only a buffered observer can
// read (its entries are not in the performance timeline). The observer's first callback brings
// the buffered entries a task later; a page with no candidate resolves after 100 ms.
constexpr char kPageMetrics[] = R"JS(
new Promise(resolve => {
  const nav = performance.getEntriesByType('navigation')[0];
  const fcp = performance.getEntriesByName('first-contentful-paint')[0];
  const out = {timeOrigin: performance.timeOrigin, url: location.href,
               start: nav ? nav.startTime : null, loadEventEnd: nav ? nav.loadEventEnd : 0,
               fcp: fcp ? fcp.startTime : null, lcp: null};
  const done = () => resolve(JSON.stringify(out));
  try {
    new PerformanceObserver(list => {
      const entries = list.getEntries();
      if (entries.length) out.lcp = entries[entries.length - 1].startTime;
      done();
    }).observe({type: 'largest-contentful-paint', buffered: true});
  } catch (e) {}
  setTimeout(done, 100);
}))JS";

// Resolves once Navigation Timing has loadEventEnd (set when the load event's handlers have
// run, just after Page.loadEventFired): checked at each animation frame, not on a fixed delay.
constexpr char kLoadEventEnd[] = R"JS(
new Promise(resolve => {
  const check = () => {
    const nav = performance.getEntriesByType('navigation')[0];
    if (nav && nav.loadEventEnd > 0) resolve(JSON.stringify({timeOrigin: performance.timeOrigin,
                                                              plt: nav.loadEventEnd - nav.startTime}));
    else requestAnimationFrame(check);
  };
  check();
}))JS";

// Evaluates one of the scripts above (a promise of a JSON text) in the page.
json evaluate_json(DevToolsPipe& pipe, const std::string& session, const char* script, Nanos deadline) {
  const json result = pipe.call(
      "Runtime.evaluate", {{"expression", script}, {"awaitPromise", true}, {"returnByValue", true}}, session, deadline);
  if (result.contains("exceptionDetails")) {
    throw DevToolsCommandError("the page's metrics script failed: " +
                               string_at(result, {"exceptionDetails", "exception", "description"}));
  }
  const std::string text = string_at(result, {"result", "value"});
  json parsed = json::parse(text, nullptr, false);
  if (!parsed.is_object()) throw DevToolsCommandError("the page's metrics script returned no object");
  return parsed;
}

// The state of one load while its events arrive.
class LoadRun {
 public:
  LoadRun(const LoadOptions& options, Browser& browser, LoadResult& result, int interrupt_fd = -1)
      : options_(options), browser_(browser), pipe_(browser.pipe()), result_(result), interrupt_fd_(interrupt_fd) {}

  void run();

 private:
  void set_up(Nanos deadline);
  void handle(const json& event);
  void keep_frame(const json& params);
  void read_load_timing(Nanos deadline);
  void read_page_metrics(Nanos deadline);
  void finish();
  std::string wait_for_url(Nanos deadline);

  const LoadOptions& options_;
  Browser& browser_;
  DevToolsPipe& pipe_;
  LoadResult& result_;
  int interrupt_fd_;
  std::string session_;
  std::string loader_id_;  // the navigation's, which is also its document request's id
  bool committed_ = false;
  bool loaded_ = false;
  std::optional<double> time_origin_ms_;
  NetworkTally network_;
  std::vector<ScreencastFrame> frames_;
  size_t frame_bytes_ = 0;
  Nanos loaded_at_ = 0, last_frame_at_ = 0;
  std::string crash_;
};

void LoadRun::set_up(Nanos deadline) {
  const json targets = pipe_.call("Target.getTargets", json::object(), "", deadline);
  std::string target;
  for (const json& info : targets.value("targetInfos", json::array())) {
    if (info.value("type", "") == "page") {
      target = info.value("targetId", "");
      break;
    }
  }
  if (target.empty()) target = pipe_.call("Target.createTarget", {{"url", "about:blank"}}, "", deadline)["targetId"];
  session_ = pipe_.call("Target.attachToTarget", {{"targetId", target}, {"flatten", true}}, "", deadline)["sessionId"];
  for (const char* domain : {"Page.enable", "Network.enable", "Runtime.enable", "Inspector.enable"}) {
    pipe_.call(domain, json::object(), session_, deadline);
  }
  // No cache and no service worker, as in the paper's loads: every object crosses the emulated
  // network, even one the page asks for twice.
  pipe_.call("Network.setCacheDisabled", {{"cacheDisabled", true}}, session_, deadline);
  pipe_.call("Network.setBypassServiceWorker", {{"bypass", true}}, session_, deadline);
  // The viewport exactly WxH (the window's size includes no browser frame in headless mode, but
  // the override makes it independent of the version).
  pipe_.call("Emulation.setDeviceMetricsOverride",
             {{"width", options_.browser.width},
              {"height", options_.browser.height},
              {"deviceScaleFactor", 1},
              {"mobile", false}},
             session_, deadline);
  if (!options_.screencast) return;
  pipe_.call("Page.startScreencast",
             {{"format", "png"},
              {"everyNthFrame", 1},
              {"maxWidth", options_.browser.width},
              {"maxHeight", options_.browser.height}},
             session_, deadline);
}

void LoadRun::keep_frame(const json& params) {
  pipe_.notify("Page.screencastFrameAck", {{"sessionId", params.value("sessionId", 0)}}, session_);
  last_frame_at_ = monotonic_now();
  const std::optional<double> seconds = number_at(params, {"metadata", "timestamp"});
  std::optional<std::string> png = base64_decode(string_at(params, {"data"}));
  if (!seconds || !png) return;
  ScreencastFrame frame{*seconds * 1e3, std::move(*png)};
  if (frames_.size() >= kMaxFrames || frame_bytes_ + frame.png.size() > kMaxFrameBytes) {
    if (frames_.size() < 2) return;
    frame_bytes_ -= frames_.back().png.size();
    frames_.pop_back();
  }
  frame_bytes_ += frame.png.size();
  frames_.push_back(std::move(frame));
}

void LoadRun::handle(const json& event) {
  if (event.value("sessionId", "") != session_) return;
  const std::string method = event.value("method", "");
  const json& params = event.contains("params") ? event["params"] : json::object();
  if (method == "Page.screencastFrame") {
    keep_frame(params);
  } else if (method.starts_with("Network.")) {
    network_.add(event);
  } else if (method == "Page.frameNavigated") {
    // The main frame's document (the page was attached at about:blank, so any main-frame
    // navigation from now on is this load's); an error page has an unreachableUrl, and then
    // Page.navigate's reply says why.
    if (!find_path(params, {"frame", "parentId"}) && !find_path(params, {"frame", "unreachableUrl"})) {
      committed_ = true;
      loader_id_ = string_at(params, {"frame", "loaderId"});
    }
  } else if (method == "Page.loadEventFired") {
    if (committed_) loaded_ = true;
  } else if (method == "Inspector.targetCrashed") {
    crash_ = "the page's renderer crashed";
  }
}

void LoadRun::read_load_timing(Nanos deadline) {
  const json timing = evaluate_json(pipe_, session_, kLoadEventEnd, deadline);
  time_origin_ms_ = number_at(timing, {"timeOrigin"});
  result_.plt_ms = number_at(timing, {"plt"});
}

void LoadRun::read_page_metrics(Nanos deadline) {
  const json metrics = evaluate_json(pipe_, session_, kPageMetrics, deadline);
  if (!time_origin_ms_) time_origin_ms_ = number_at(metrics, {"timeOrigin"});
  result_.fcp_ms = number_at(metrics, {"fcp"});
  result_.lcp_ms = number_at(metrics, {"lcp"});
}

// Reads the line of --wait-for-url from standard input, waiting as long as it takes (an interrupt
// ends the wait), and presents its User-Agent and Accept-Language. Returns the URL.
std::string LoadRun::wait_for_url(Nanos deadline) {
  std::string line;
  for (;;) {
    pollfd fds[2] = {{0, POLLIN, 0}, {interrupt_fd_, POLLIN, 0}};
    if (::poll(fds, interrupt_fd_ >= 0 ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      throw SystemError("poll");
    }
    if (interrupt_fd_ >= 0 && (fds[1].revents & POLLIN)) {
      signalfd_siginfo info;
      if (::read(interrupt_fd_, &info, sizeof info) == sizeof info) throw Interrupted(static_cast<int>(info.ssi_signo));
    }
    if (!(fds[0].revents & (POLLIN | POLLHUP))) continue;
    char c;
    const ssize_t n = ::read(0, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || c == '\n') break;
    if (line.size() > 3 * kMaxWaitedLine) throw UsageError("--wait-for-url: the line on standard input is too long");
    line += c;
  }
  const WaitedUrl waited = parse_waited_url(line);
  (void)deadline;
  if (!waited.user_agent.empty() || !waited.accept_language.empty()) {
    json params = {{"userAgent", waited.user_agent}};
    if (!waited.accept_language.empty()) params["acceptLanguage"] = waited.accept_language;
    pipe_.call("Emulation.setUserAgentOverride", params, session_, monotonic_now() + kCommandWait);
  }
  return waited.url;
}

void LoadRun::run() {
  set_up(monotonic_now() + kCommandWait);
  std::string url = options_.url;
  if (options_.wait_for_url) {
    url = wait_for_url(monotonic_now() + kCommandWait);
    result_.url = url;
  }
  result_.started = iso8601_from_us(static_cast<uint64_t>(wall_ms_now() * 1e3));
  const Nanos start = monotonic_now();
  const Nanos deadline = start + options_.timeout;
  const int navigate = pipe_.send("Page.navigate", {{"url", url}}, session_);
  bool navigating = true;

  for (;;) {
    Nanos wake = deadline;
    if (loaded_)
      wake = std::min({deadline, loaded_at_ + kMaxSettle, std::max(loaded_at_, last_frame_at_) + kVisualSettle});
    const Nanos now = monotonic_now();
    if (loaded_ && now >= wake) break;
    if (!loaded_ && now >= deadline) {
      // The document's own request may have failed after the navigation committed (a reset).
      const std::string failure = loader_id_.empty() ? "" : network_.failure_of(loader_id_);
      if (!failure.empty()) {
        result_.status = LoadResult::Status::Error;
        result_.reason = navigation_error_reason(failure);
      } else {
        result_.status = LoadResult::Status::Timeout;
        result_.reason = "no load event within " + seconds_text(options_.timeout) +
                         (committed_ ? "" : " (the page's document never arrived)");
      }
      return finish();
    }
    std::optional<json> event = pipe_.next_event(wake, navigating ? navigate : 0);
    if (navigating) {
      if (std::optional<json> reply = pipe_.take_reply(navigate)) {
        navigating = false;
        if (reply->contains("error")) {
          result_.status = LoadResult::Status::Error;
          result_.reason = "the browser refused the URL: " + string_at(*reply, {"error", "message"});
          return finish();
        }
        const std::string error_text = string_at(*reply, {"result", "errorText"});
        if (!error_text.empty()) {
          result_.status = LoadResult::Status::Error;
          result_.reason = navigation_error_reason(error_text);
          return finish();
        }
        if (loader_id_.empty()) loader_id_ = string_at(*reply, {"result", "loaderId"});
      }
    }
    if (event) {
      handle(*event);
      if (!crash_.empty()) {
        result_.status = LoadResult::Status::Error;
        result_.reason = crash_;
        return finish();
      }
      if (loaded_ && loaded_at_ == 0) {
        try {
          read_load_timing(deadline);
        } catch (const DevToolsTimeout&) {
          loaded_ = false;  // its handlers did not finish in time: the check above reports it
          continue;
        }
        loaded_at_ = monotonic_now();
      }
    }
  }
  result_.status = LoadResult::Status::Ok;
  if (options_.browser.http3_forced) {
    if (std::string why = http3_shortfall(network_.https_not_h3()); !why.empty()) {
      result_.status = LoadResult::Status::Error;
      result_.reason = std::move(why);
    }
  }
  finish();
}

void LoadRun::finish() {
  const bool ok = result_.status == LoadResult::Status::Ok;
  if (result_.status == LoadResult::Status::Timeout) {
    // A browser that does not answer even this has hung, not the page.
    try {
      pipe_.call("Browser.getVersion", json::object(), "", monotonic_now() + kHealthWait);
    } catch (const DevToolsTimeout&) {
      result_.status = LoadResult::Status::Error;
      result_.reason = "browser hung: no answer to Browser.getVersion within " + seconds_text(kHealthWait) +
                       " after the load's timeout; killed it";
      browser_.close(false);
      return;
    }
  }
  if (committed_ && result_.status != LoadResult::Status::Error) {
    try {
      read_page_metrics(monotonic_now() + (ok ? kCommandWait : kLateMetricsWait));
    } catch (const DevToolsTimeout&) {
      if (ok) throw;
      // A page still busy at its timeout (a script in a loop) cannot report: its paints stay empty.
    } catch (const DevToolsCommandError&) {
      if (ok) throw;
    }
  }
  result_.bytes = network_.bytes();
  result_.requests = network_.requests();
  result_.origins = network_.origins();
  result_.protocols = network_.protocols();
  // The speed index's time axis: the frames carry DevTools' metadata.timestamp, wall-clock
  // seconds taken by the browser when it captured them; the page's times (PLT, FCP) count from
  // performance.timeOrigin, the navigation's start in wall-clock milliseconds of the same
  // machine. Both are the one system clock, so frame.wall_ms - timeOrigin puts frames on the
  // page's own axis; the document request's requestWillBeSent wallTime would be a few ms later
  // than the navigation start (after beforeunload), and the monotonic timestamps have no
  // counterpart in the page.
  if (ok && time_origin_ms_) {
    std::vector<CapturedFrame> frames = frames_since_navigation(std::move(frames_), *time_origin_ms_);
    result_.frames = static_cast<double>(frames.size());
    if (!frames.empty()) {
      const double end_ms = std::max(frames.back().ms, result_.plt_ms.value_or(0));
      try {
        result_.speed_index_ms = speed_index(visual_progress(frames), end_ms);
      } catch (const UserError&) {
        // No frame decoded: the speed index stays empty, the frame count says why.
      }
    }
  } else {
    result_.frames = static_cast<double>(frames_.size());
  }
}
}  // namespace

LoadResult load_page(const LoadOptions& options, BrowserProfileTemplate& profiles, int interrupt_fd) {
  LoadResult result;
  result.url = options.url;
  result.run = options.run;
  result.started = iso8601_from_us(static_cast<uint64_t>(wall_ms_now() * 1e3));
  // The browser's start is not part of the load, so the load's timeout does not bound it: a
  // loaded machine needs seconds (over 10 s was seen with both cores busy), and a browser that is
  // silent for 30 s will not answer.
  const Nanos ready_wait = kStartWait;
  std::unique_ptr<Browser> browser;
  try {
    const fs::path directory = profiles.new_load_directory();
    if (!options.http3_discovery) {
      browser = std::make_unique<Browser>(options.browser, directory, interrupt_fd, monotonic_now() + ready_wait);
      LoadRun(options, *browser, result, interrupt_fd).run();
      return result;
    }
    LoadOptions priming = options;
    priming.browser.http3_forced = true;
    LoadResult primed;
    browser = std::make_unique<Browser>(priming.browser, directory, interrupt_fd, monotonic_now() + ready_wait);
    LoadRun(priming, *browser, primed).run();
    browser->keep_directory();
    browser.reset();  // closes it, gracefully: the profile keeps what it learned (Alt-Svc)
    if (primed.status != LoadResult::Status::Ok) {
      std::error_code ignored;
      fs::remove_all(directory, ignored);
      result.status = LoadResult::Status::Error;
      result.reason = "the priming load (forced HTTP/3, to learn Alt-Svc) failed: " + primed.reason;
      return result;
    }
    for (const char* cache : {"Cache", "Code Cache"}) {
      std::error_code ignored;
      fs::remove_all(directory / "profile" / "Default" / cache, ignored);
    }
    LoadOptions measured = options;
    measured.browser.quic = true;
    measured.browser.quic_exempt_hosts = https_hosts(primed.protocols);
    result.started = iso8601_from_us(static_cast<uint64_t>(wall_ms_now() * 1e3));
    browser = std::make_unique<Browser>(measured.browser, directory, interrupt_fd, monotonic_now() + ready_wait);
    LoadRun(measured, *browser, result).run();
  } catch (const DevToolsTimeout& e) {
    const std::string started = result.started;
    result = LoadResult();
    result.url = options.url;
    result.run = options.run;
    result.started = started;
    result.status = LoadResult::Status::Error;
    result.reason = std::string("browser hung: ") + e.what() + "; killed it";
    if (browser) browser->close(false);
  } catch (const DevToolsClosed& e) {
    result.status = LoadResult::Status::Error;
    result.reason = std::string("the browser exited during the load (") + e.what() +
                    "): " + (browser ? browser->log_tail() : std::string());
  } catch (const DevToolsCommandError& e) {
    result.status = LoadResult::Status::Error;
    result.reason = std::string("the browser refused a command: ") + e.what();
  }
  return result;
}
