// SPDX-License-Identifier: GPL-3.0-or-later
// The deterministic script, where it goes in a page, and the response fields it changes.
#include "http/deterministic_page.hh"

#include <openssl/sha.h>

#include <algorithm>
#include <array>

#include "http/content_coding.hh"
#include "util/base64.hh"
#include "util/text.hh"

namespace {
// Mulberry32 (a 32-bit generator with a good spread for its size) for the random numbers; Date
// a function named Date (its expression's name: a declaration would be hoisted above the
// saving of the real one) that builds real Dates (Reflect.construct keeps subclasses working) from a clock
// of its own when called without arguments; crypto's values filled from the same generator
// after the real call has checked the argument (type, 64 KiB quota) as the browser does.
constexpr const char* kScriptTemplate =
    "(function(){"
    "var seed=@SEED@,clock=@START@,RealDate=Date;"
    "function random(){seed=seed+0x6D2B79F5|0;var t=Math.imul(seed^seed>>>15,seed|1);"
    "t^=t+Math.imul(t^t>>>7,t|61);return((t^t>>>14)>>>0)/4294967296}"
    "function now(){var t=clock;clock+=@STEP@;return t}"
    "Math.random=random;"
    "var FixedDate=function Date(){if(!new.target)return new RealDate(now()).toString();"
    "return Reflect.construct(RealDate,arguments.length?arguments:[now()],new.target)};"
    "FixedDate.prototype=RealDate.prototype;Object.setPrototypeOf(FixedDate,RealDate);FixedDate.now=now;"
    "Object.defineProperty(RealDate.prototype,'constructor',{value:FixedDate,writable:true,configurable:true});"
    "globalThis.Date=FixedDate;"
    "var c=globalThis.crypto;"
    "if(c&&c.getRandomValues){var real=c.getRandomValues;"
    "var fill=function(a){real.call(c,a);var b=new Uint8Array(a.buffer,a.byteOffset,a.byteLength);"
    "for(var i=0;i<b.length;i++)b[i]=random()*256|0;return a};"
    "Object.defineProperty(c,'getRandomValues',{value:fill,writable:true,configurable:true});"
    "if(c.randomUUID)Object.defineProperty(c,'randomUUID',{value:function(){"
    "var b=fill(new Uint8Array(16)),h='';b[6]=b[6]&15|64;b[8]=b[8]&63|128;"
    "for(var i=0;i<16;i++){h+=(b[i]+256).toString(16).slice(1);if(i==3||i==5||i==7||i==9)h+='-'}return h},"
    "writable:true,configurable:true})}"
    "})();";

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

// Where the tag that starts at `start` ('<') ends (after its '>', quoted values skipped), or npos.
size_t tag_end(std::string_view html, size_t start) {
  char quote = 0;
  for (size_t i = start + 1; i < html.size(); i++) {
    const char c = html[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '>') {
      return i + 1;
    }
  }
  return std::string::npos;
}

// The first start tag named `name` in `lower` (the page in lower case) from `from` on: "<name"
// followed by a blank, '>' or '/'.
size_t find_tag(std::string_view lower, std::string_view name, size_t from = 0) {
  const std::string open = "<" + std::string(name);
  for (size_t at = lower.find(open, from); at != std::string::npos; at = lower.find(open, at + 1)) {
    const size_t next = at + open.size();
    if (next < lower.size() && (is_blank(lower[next]) || lower[next] == '>' || lower[next] == '/')) return at;
  }
  return std::string::npos;
}

// The directives of one policy: name (lower case) and the text after it.
struct Directive {
  std::string name;
  std::string text;  // as written, trimmed
};

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (;;) {
    const size_t at = text.find(separator);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + 1);
  }
}

std::vector<std::string> source_list(std::string_view directive_text) {
  std::vector<std::string> sources;
  size_t i = 0;
  while (i < directive_text.size()) {
    while (i < directive_text.size() && is_blank(directive_text[i])) i++;
    const size_t start = i;
    while (i < directive_text.size() && !is_blank(directive_text[i])) i++;
    if (i > start) sources.push_back(ascii_lowercase(directive_text.substr(start, i - start)));
  }
  return sources;
}

// One policy (no commas) amended, or nullopt when it lets the script run already.
std::optional<std::string> policy_allowing(std::string_view policy, std::string_view source) {
  std::vector<Directive> directives;
  for (std::string_view part : split(policy, ';')) {
    const std::string_view text = trim_blanks(part);
    if (text.empty()) continue;
    size_t end = 0;
    while (end < text.size() && !is_blank(text[end])) end++;
    directives.push_back({ascii_lowercase(text.substr(0, end)), std::string(text)});
  }
  Directive* governing = nullptr;
  for (const char* name : {"script-src-elem", "script-src", "default-src"}) {
    for (Directive& d : directives) {
      if (d.name == name && !governing) governing = &d;  // the first of a repeated name counts
    }
    if (governing) break;
  }
  if (!governing) return std::nullopt;
  std::vector<std::string> sources = source_list(governing->text);
  sources.erase(sources.begin());  // the name
  const bool unsafe_inline = std::find(sources.begin(), sources.end(), "'unsafe-inline'") != sources.end();
  // 'unsafe-inline' counts only while no nonce, hash or 'strict-dynamic' is listed.
  const bool disables_unsafe_inline = std::any_of(sources.begin(), sources.end(), [](const std::string& s) {
    return s.starts_with("'nonce-") || s.starts_with("'sha256-") || s.starts_with("'sha384-") ||
           s.starts_with("'sha512-") || s == "'strict-dynamic'";
  });
  if (unsafe_inline && !disables_unsafe_inline) return std::nullopt;
  if (sources.size() == 1 && sources[0] == "'none'") {
    governing->text = governing->text.substr(0, governing->name.size()) + " " + std::string(source);
  } else {
    governing->text += " " + std::string(source);
  }
  std::string out;
  for (const Directive& d : directives) out += (out.empty() ? "" : "; ") + d.text;
  return out;
}

std::string sha256_base64(std::string_view text) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest.data());
  return base64_encode(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
}

void set_content_length(std::vector<HttpHeader>& headers, size_t length) {
  std::erase_if(headers, [](const HttpHeader& h) { return equals_ignoring_case(h.key, "Content-Length"); });
  headers.push_back({"Content-Length", std::to_string(length)});
}
}  // namespace

std::string deterministic_script(uint64_t start_ms) {
  std::string script = kScriptTemplate;
  replace_all(script, "@SEED@", std::to_string(kDeterministicSeed));
  replace_all(script, "@START@", std::to_string(start_ms));
  replace_all(script, "@STEP@", std::to_string(kDeterministicClockStepMs));
  return script;
}

bool is_html_response(const std::vector<HttpHeader>& headers) {
  for (const HttpHeader& h : headers) {
    if (!equals_ignoring_case(h.key, "Content-Type")) continue;
    const std::string type = ascii_lowercase(trim_blanks(std::string_view(h.value).substr(0, h.value.find(';'))));
    return type == "text/html" || type == "application/xhtml+xml";
  }
  return false;
}

size_t script_position(std::string_view html) {
  size_t start = 0;
  if (html.starts_with("\xEF\xBB\xBF")) start = 3;  // UTF-8 byte order mark
  if (html.starts_with("\xFE\xFF") || html.starts_with("\xFF\xFE")) return std::string::npos;
  size_t first = start;
  while (first < html.size() && is_blank(html[first])) first++;
  if (first == html.size() || html[first] != '<') return std::string::npos;

  // The elements that matter come first in any page: look at its beginning only.
  const std::string lower = ascii_lowercase(html.substr(0, std::min<size_t>(html.size(), 256 << 10)));
  const size_t script = std::min(find_tag(lower, "script"), find_tag(lower, "body"));
  const size_t head = find_tag(lower, "head");
  if (head != std::string::npos && head < script) {
    size_t at = tag_end(html, head);
    if (at == std::string::npos) return std::string::npos;
    const size_t head_end = std::min({lower.find("</head", at), script, lower.size()});
    for (size_t meta = find_tag(lower, "meta", at); meta < head_end; meta = find_tag(lower, "meta", meta + 1)) {
      const size_t end = tag_end(html, meta);
      if (end == std::string::npos || end > head_end) break;
      const std::string_view tag = std::string_view(lower).substr(meta, end - meta);
      if (tag.find("content-security-policy") != std::string_view::npos) break;  // it must not cover the script
      if (tag.find("charset") != std::string_view::npos || tag.find("content-type") != std::string_view::npos) {
        at = end;
        break;
      }
    }
    return at;
  }
  const size_t root = find_tag(lower, "html");
  if (root != std::string::npos && root < script) return tag_end(html, root);
  if (lower.compare(first, 9, "<!doctype") == 0) return tag_end(html, first);
  return start;
}

std::string csp_allowing(std::string_view policy, std::string_view source) {
  std::string out;
  bool changed = false;
  for (std::string_view one : split(policy, ',')) {
    std::optional<std::string> amended = policy_allowing(one, source);
    changed = changed || amended.has_value();
    out += (out.empty() ? "" : ", ") + (amended ? *amended : std::string(trim_blanks(one)));
  }
  return changed ? out : std::string(policy);
}

bool add_deterministic_script(std::vector<HttpHeader>& headers, std::string& body, uint64_t start_ms,
                              std::string* why) {
  if (why) why->clear();
  if (!is_html_response(headers) || body.empty()) return false;
  for (const HttpHeader& h : headers) {
    if (equals_ignoring_case(h.key, "Content-Type") && ascii_lowercase(h.value).find("utf-16") != std::string::npos)
      return false;
  }
  HttpMessage fields;
  fields.headers = headers;
  const std::vector<std::string> codings = content_codings(fields);
  std::optional<std::string> content = decode_content(body, codings, why, kMaxDeterministicPage);
  if (!content) return false;
  const size_t at = script_position(*content);
  if (at == std::string::npos) return false;
  const std::string script = deterministic_script(start_ms);
  content->insert(at, "<script>" + script + "</script>");
  std::optional<std::string> encoded = encode_content(*content, codings, why);
  if (!encoded) return false;

  body = std::move(*encoded);
  set_content_length(headers, body.size());
  const std::string hash = "'sha256-" + sha256_base64(script) + "'";
  for (HttpHeader& h : headers) {
    if (equals_ignoring_case(h.key, "Content-Security-Policy")) h.value = csp_allowing(h.value, hash);
  }
  return true;
}
