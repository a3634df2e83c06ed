#include "transport/http1.hpp"

#include <algorithm>
#include <charconv>

namespace moonmq::transport::http1 {

namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower(x) == lower(y); });
}

/// Whether the comma-separated `value` lists `token` (case-insensitively), as in "Connection: keep-alive, Upgrade".
bool lists(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    auto comma = value.find(',');
    auto item = value.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (same_name(item, token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

bool is_token_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

/// Splits the head into its first line and its fields; an error message on a malformed field line.
std::optional<std::string> split_head(std::string_view head, std::string_view& first, fields& out) {
  auto next_line = [&head]() {
    auto eol = head.find('\n');
    auto line = head.substr(0, eol);
    head.remove_prefix(eol == std::string_view::npos ? head.size() : eol + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return line;
  };
  first = next_line();
  for (;;) {
    auto line = next_line();
    if (line.empty()) return std::nullopt;
    if (line.front() == ' ' || line.front() == '\t') return "folded header lines are not supported";
    auto colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return "malformed header line";
    auto name = line.substr(0, colon);
    if (!std::all_of(name.begin(), name.end(), is_token_char)) return "malformed header name";
    auto value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    out.list.emplace_back(std::string(name), std::string(value));
  }
}

/// The Content-Length of `f`: nullopt when absent, an error message when malformed or repeated with other values.
std::variant<std::optional<std::size_t>, std::string> content_length(const fields& f) {
  std::optional<std::size_t> length;
  for (const auto& [name, value] : f.list) {
    if (!same_name(name, "Content-Length")) continue;
    std::size_t n = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (value.empty() || ec != std::errc() || end != value.data() + value.size())
      return std::string("malformed Content-Length");
    if (length && *length != n) return std::string("conflicting Content-Length fields");
    length = n;
  }
  return length;
}

bool keep_alive(std::string_view version, const fields& f) {
  const std::string* connection = f.find("Connection");
  if (connection && lists(*connection, "close")) return false;
  if (version == "HTTP/1.0") return connection && lists(*connection, "keep-alive");
  return true;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = lower(c);
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

const char* reason(int status) {
  static constexpr std::pair<int, const char*> reasons[] = {{100, "Continue"},
                                                            {200, "OK"},
                                                            {201, "Created"},
                                                            {202, "Accepted"},
                                                            {204, "No Content"},
                                                            {301, "Moved Permanently"},
                                                            {302, "Found"},
                                                            {304, "Not Modified"},
                                                            {400, "Bad Request"},
                                                            {401, "Unauthorized"},
                                                            {403, "Forbidden"},
                                                            {404, "Not Found"},
                                                            {405, "Method Not Allowed"},
                                                            {409, "Conflict"},
                                                            {411, "Length Required"},
                                                            {413, "Payload Too Large"},
                                                            {414, "URI Too Long"},
                                                            {416, "Range Not Satisfiable"},
                                                            {421, "Misdirected Request"},
                                                            {429, "Too Many Requests"},
                                                            {431, "Request Header Fields Too Large"},
                                                            {500, "Internal Server Error"},
                                                            {501, "Not Implemented"},
                                                            {502, "Bad Gateway"},
                                                            {503, "Service Unavailable"},
                                                            {504, "Gateway Timeout"}};
  for (const auto& [code, text] : reasons)
    if (code == status) return text;
  return "Status";
}

}  // namespace

const std::string* fields::find(std::string_view name) const {
  for (const auto& [n, v] : list)
    if (same_name(n, name)) return &v;
  return nullptr;
}

std::size_t head_end(std::string_view buffer) {
  // Lines end in CRLF; a bare LF is accepted too (RFC 9112 §2.2).
  for (std::size_t i = buffer.find('\n'); i != std::string_view::npos; i = buffer.find('\n', i + 1)) {
    if (i + 1 < buffer.size() && buffer[i + 1] == '\n') return i + 2;
    if (i + 2 < buffer.size() && buffer[i + 1] == '\r' && buffer[i + 2] == '\n') return i + 3;
  }
  return std::string_view::npos;
}

std::variant<request_head, refusal> parse_request_head(std::string_view head) {
  request_head out;
  std::string_view line;
  if (auto bad = split_head(head, line, out.headers)) return refusal{400, *bad};
  if (out.headers.list.size() > max_fields)
    return refusal{431, "more than " + std::to_string(max_fields) + " header fields"};
  auto sp1 = line.find(' ');
  auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return refusal{400, "malformed request line"};
  out.method = std::string(line.substr(0, sp1));
  const auto target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const auto version = line.substr(sp2 + 1);
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return refusal{400, "unsupported HTTP version"};
  if (out.method.empty() || !std::all_of(out.method.begin(), out.method.end(), is_token_char))
    return refusal{400, "malformed method"};
  if (target.empty() || target.front() != '/') return refusal{400, "the request target must be a path"};
  auto q = target.find('?');
  auto path = percent_decode(target.substr(0, q), false);
  if (!path) return refusal{400, "malformed percent-escape in the path"};
  out.path = std::move(*path);
  if (q != std::string_view::npos) {
    auto query = target.substr(q + 1);
    while (!query.empty()) {
      auto amp = query.find('&');
      auto pair = query.substr(0, amp);
      query.remove_prefix(amp == std::string_view::npos ? query.size() : amp + 1);
      if (pair.empty()) continue;
      auto eq = pair.find('=');
      auto key = percent_decode(pair.substr(0, eq), true);
      auto value = percent_decode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1), true);
      if (!key || !value) return refusal{400, "malformed percent-escape in the query"};
      out.params.emplace(std::move(*key), std::move(*value));
    }
  }
  if (const auto* te = out.headers.find("Transfer-Encoding"))
    return refusal{lists(*te, "chunked") ? 411 : 501, "Transfer-Encoding is not supported; send a Content-Length"};
  auto length = content_length(out.headers);
  if (auto* bad = std::get_if<std::string>(&length)) return refusal{400, *bad};
  out.content_length = std::get<std::optional<std::size_t>>(length).value_or(0);
  out.keep_alive = keep_alive(version, out.headers);
  const auto* expect = out.headers.find("Expect");
  out.expect_continue = expect && same_name(*expect, "100-continue");
  return out;
}

result<response_head> parse_response_head(std::string_view head) {
  response_head out;
  fields f;
  std::string_view line;
  if (auto bad = split_head(head, line, f)) return error{errc::unavailable, *bad};
  // HTTP/1.x SP 3DIGIT [SP reason]
  if (line.size() < 12 || !line.starts_with("HTTP/1.") || line[8] != ' ')
    return error{errc::unavailable, "malformed status line"};
  auto code = line.substr(9, 3);
  auto [end, ec] = std::from_chars(code.data(), code.data() + 3, out.status);
  if (ec != std::errc() || end != code.data() + 3 || out.status < 100)
    return error{errc::unavailable, "malformed status code"};
  if (const auto* te = f.find("Transfer-Encoding"); te && !same_name(*te, "identity"))
    return error{errc::unavailable, "chunked responses are not supported"};
  auto length = content_length(f);
  if (auto* bad = std::get_if<std::string>(&length)) return error{errc::unavailable, *bad};
  out.content_length = std::get<std::optional<std::size_t>>(length);
  if (out.status == 204 || out.status == 304) out.content_length = 0;
  out.keep_alive = keep_alive(line.substr(0, 8), f) && out.content_length.has_value();
  if (const auto* ct = f.find("Content-Type")) out.content_type = *ct;
  return out;
}

std::string request_head_text(const request& req, std::string_view host, std::size_t body_size) {
  std::string head;
  head.reserve(256);
  head += req.method;
  head += ' ';
  head += req.path;
  char sep = '?';
  for (const auto& [k, v] : req.params) {
    head += sep;
    head += percent_encode(k);
    head += '=';
    head += percent_encode(v);
    sep = '&';
  }
  head += " HTTP/1.1\r\nHost: ";
  head += host;
  for (const auto& [k, v] : req.headers) {
    head += "\r\n";
    head += k;
    head += ": ";
    head += v;
  }
  if (req.method != "GET" || body_size > 0) {
    head += "\r\nContent-Type: ";
    head += req.content_type;
    head += "\r\nContent-Length: ";
    head += std::to_string(body_size);
  }
  head += "\r\n\r\n";
  return head;
}

std::string response_head_text(int status, std::string_view content_type, std::size_t body_size, bool close,
                               const std::vector<std::pair<std::string, std::string>>& extra) {
  std::string head = "HTTP/1.1 " + std::to_string(status) + ' ' + reason(status) + "\r\nContent-Type: ";
  head += content_type;
  head += "\r\nContent-Length: ";
  head += std::to_string(body_size);
  if (close) head += "\r\nConnection: close";
  for (const auto& [name, value] : extra) {
    head += "\r\n";
    head += name;
    head += ": ";
    head += value;
  }
  head += "\r\n\r\n";
  return head;
}

std::string percent_encode(std::string_view text) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
        c == '.' || c == '~') {
      out += ch;
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::optional<std::string> percent_decode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%') {
      if (i + 2 >= text.size()) return std::nullopt;
      const int hi = hex_digit(text[i + 1]), lo = hex_digit(text[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (text[i] == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace moonmq::transport::http1
