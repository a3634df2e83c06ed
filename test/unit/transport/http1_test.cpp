// The HTTP/1.1 framing of plain inter-broker connections: what it accepts, what it refuses and with which status.
#include <catch2/catch.hpp>

#include "transport/http1.hpp"

using namespace moonmq::transport;
using namespace moonmq::transport::http1;

namespace {

request_head accepted(std::string_view text) {
  auto parsed = parse_request_head(text);
  if (auto* r = std::get_if<refusal>(&parsed)) FAIL("refused " << r->status << ": " << r->message);
  return std::get<request_head>(parsed);
}

int refused(std::string_view text) {
  auto parsed = parse_request_head(text);
  return std::holds_alternative<refusal>(parsed) ? std::get<refusal>(parsed).status : 0;
}

}  // namespace

TEST_CASE("http1: a request head gives method, decoded path and query, fields case-insensitively", "[http1]") {
  auto h = accepted(
      "POST /cluster/append?topic=a%20b%2Bc&partition=3&mode=produce&flag HTTP/1.1\r\n"
      "Host: x\r\nx-cluster-TOKEN:  s3cret \r\nContent-Length: 12\r\ncontent-type: application/octet-stream\r\n\r\n");
  CHECK(h.method == "POST");
  CHECK(h.path == "/cluster/append");
  CHECK(h.params.at("topic") == "a b+c");
  CHECK(h.params.at("partition") == "3");
  CHECK(h.params.at("flag").empty());
  CHECK(*h.headers.find("X-Cluster-Token") == "s3cret");
  CHECK(*h.headers.find("Content-Type") == "application/octet-stream");
  CHECK(h.headers.find("X-Controller-Epoch") == nullptr);
  CHECK(h.content_length == 12);
  CHECK(h.keep_alive);
  CHECK_FALSE(h.expect_continue);
}

TEST_CASE("http1: keep-alive follows the version and the Connection field", "[http1]") {
  CHECK_FALSE(accepted("GET / HTTP/1.1\r\nConnection: close\r\n\r\n").keep_alive);
  CHECK_FALSE(accepted("GET / HTTP/1.1\r\nConnection: Upgrade, CLOSE\r\n\r\n").keep_alive);
  CHECK_FALSE(accepted("GET / HTTP/1.0\r\n\r\n").keep_alive);
  CHECK(accepted("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").keep_alive);
  CHECK(accepted("GET / HTTP/1.1\n\n").keep_alive);  // bare line feeds are accepted
  CHECK(accepted("POST / HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 5000\r\n\r\n").expect_continue);
}

TEST_CASE("http1: malformed or unsupported request heads are refused with their status", "[http1]") {
  CHECK(refused("GET /\r\n\r\n") == 400);
  CHECK(refused("GET / HTTP/2\r\n\r\n") == 400);
  CHECK(refused("GET http://x/ HTTP/1.1\r\n\r\n") == 400);
  CHECK(refused("GET / x HTTP/1.1\r\n\r\n") == 400);
  CHECK(refused("G(T / HTTP/1.1\r\n\r\n") == 400);
  CHECK(refused("GET /a%zz HTTP/1.1\r\n\r\n") == 400);
  CHECK(refused("GET /?a=%4 HTTP/1.1\r\n\r\n") == 400);
  CHECK(refused("GET / HTTP/1.1\r\nNo colon here\r\n\r\n") == 400);
  CHECK(refused("GET / HTTP/1.1\r\nA: b\r\n  folded\r\n\r\n") == 400);
  CHECK(refused("GET / HTTP/1.1\r\nBad Name: b\r\n\r\n") == 400);
  CHECK(refused("POST / HTTP/1.1\r\nContent-Length: 12x\r\n\r\n") == 400);
  CHECK(refused("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n") == 400);
  CHECK(refused("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n") == 400);
  CHECK(refused("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n") == 400);
  CHECK(refused("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n") == 0);
  CHECK(refused("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n") == 411);
  CHECK(refused("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n") == 501);
}

TEST_CASE("http1: the end of a head is found with CRLF or bare LF line ends", "[http1]") {
  CHECK(head_end("GET / HTTP/1.1\r\nA: b\r\n\r\nBODY") == 24);
  CHECK(head_end("GET / HTTP/1.1\nA: b\n\nBODY") == 21);
  CHECK(head_end("GET / HTTP/1.1\r\nA: b\r\n") == std::string_view::npos);
  CHECK(head_end("") == std::string_view::npos);
}

TEST_CASE("http1: a request head written by the client reads back the same", "[http1]") {
  request req;
  req.path = "/cluster/append";
  req.params = {{"topic", "orders/eu & more=ü"}, {"partition", "7"}};
  req.headers = {{header_token, "t"}, {header_epoch, "12"}};
  req.content_type = "application/octet-stream";
  const std::string text = request_head_text(req, "10.0.0.2:9093", 300);
  CHECK(text.find("Host: 10.0.0.2:9093\r\n") != std::string::npos);
  auto h = accepted(text);
  CHECK(h.method == "POST");
  CHECK(h.params == req.params);
  CHECK(*h.headers.find(header_epoch) == "12");
  CHECK(h.content_length == 300);
  CHECK(*h.headers.find("Content-Type") == "application/octet-stream");
  // A GET without a body carries no Content-Length or Content-Type.
  CHECK(request_head_text(get_request("/cluster/loads"), "h:1", 0).find("Content-") == std::string::npos);
}

TEST_CASE("http1: response heads give status, type and how the body ends", "[http1]") {
  auto r = parse_response_head(
      "HTTP/1.1 421 Misdirected Request\r\nContent-Type: application/json\r\n"
      "Content-Length: 40\r\n\r\n");
  REQUIRE(r);
  CHECK(r->status == 421);
  CHECK(r->content_type == "application/json");
  CHECK(r->content_length == 40u);
  CHECK(r->keep_alive);
  auto until_close = parse_response_head("HTTP/1.1 200 OK\r\n\r\n");
  REQUIRE(until_close);
  CHECK_FALSE(until_close->content_length);
  CHECK_FALSE(until_close->keep_alive);
  auto closing = parse_response_head("HTTP/1.1 200\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  REQUIRE(closing);
  CHECK_FALSE(closing->keep_alive);
  CHECK(parse_response_head("HTTP/1.1 204 No Content\r\n\r\n")->content_length == 0u);
  CHECK_FALSE(parse_response_head("HTTX/1.1 200 OK\r\n\r\n"));
  CHECK_FALSE(parse_response_head("HTTP/1.1 2x0 OK\r\n\r\n"));
  CHECK_FALSE(parse_response_head("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"));
  auto head = response_head_text(413, "application/json", 17, true);
  CHECK(head ==
        "HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\nContent-Length: 17\r\n"
        "Connection: close\r\n\r\n");
}

TEST_CASE("http1: percent-encoding round-trips every byte", "[http1]") {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  const auto encoded = percent_encode(all);
  CHECK(encoded.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~%") ==
        std::string::npos);
  CHECK(percent_decode(encoded, true) == all);
  CHECK(percent_decode("a+b", true) == "a b");
  CHECK(percent_decode("a+b", false) == "a+b");
  CHECK_FALSE(percent_decode("%", false));
  CHECK_FALSE(percent_decode("%g0", false));
}
