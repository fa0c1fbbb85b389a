#pragma once

// A blocking HTTP/1.1 client over loopback for the e2e tests (Beast, one connection, keep-alive),
// and helpers for JSON and SSE bodies. Test binaries that include it link tern_asio.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <simdjson.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

namespace tern::testing {

class HttpClient {
 public:
  using Response = boost::beast::http::response<boost::beast::http::string_body>;
  using Verb = boost::beast::http::verb;
  using Headers = std::vector<std::pair<std::string, std::string>>;

  explicit HttpClient(int port) : socket_(io_) {
    socket_.connect(boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"),
                                                   static_cast<unsigned short>(port)));
  }
  // With a small receive buffer, set before connecting so that the TCP window stays small: a
  // client that stops reading then stalls the server's writes once the server's send buffer
  // (up to a few MiB) is full.
  HttpClient(int port, int receive_buffer_bytes) : socket_(io_) {
    socket_.open(boost::asio::ip::tcp::v4());
    socket_.set_option(boost::asio::socket_base::receive_buffer_size(receive_buffer_bytes));
    socket_.connect(boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"),
                                                   static_cast<unsigned short>(port)));
  }

  Response request(Verb method, std::string target, std::string body = {}, Headers headers = {}) {
    send(method, std::move(target), std::move(body), std::move(headers));
    return read();
  }
  Response post(std::string target, std::string body, Headers headers = {}) {
    return request(Verb::post, std::move(target), std::move(body), std::move(headers));
  }
  Response get(std::string target, Headers headers = {}) {
    return request(Verb::get, std::move(target), {}, std::move(headers));
  }

  void send(Verb method, std::string target, std::string body = {}, Headers headers = {}) {
    boost::beast::http::request<boost::beast::http::string_body> request{method, target, 11};
    request.set(boost::beast::http::field::host, "127.0.0.1");
    for (const auto& [name, value] : headers) request.set(name, value);
    if (!body.empty()) {
      request.set(boost::beast::http::field::content_type, "application/json");
    }
    request.body() = std::move(body);
    request.prepare_payload();
    boost::beast::http::write(socket_, request);
  }

  Response read() {
    Response response;
    boost::beast::error_code ec;
    boost::beast::http::read(socket_, buffer_, response, ec);
    EXPECT_FALSE(ec) << ec.message();
    return response;
  }

  // The last chunk of a chunked response: what a streamed response ends with, after [DONE].
  // Reading up to it leaves nothing of the response behind for the next one on the connection.
  static constexpr std::string_view kChunkedEnd = "\r\n0\r\n\r\n";

  // Reads raw bytes until `marker` shows up or the peer closes (streamed responses); returns
  // everything up to and including the marker, headers included. Bytes after it stay buffered
  // for the next read.
  std::string read_until(std::string_view marker) {
    std::string seen(static_cast<const char*>(buffer_.data().data()), buffer_.size());
    buffer_.consume(buffer_.size());
    char chunk[4096];
    std::size_t at = seen.find(marker);
    while (at == std::string::npos) {
      boost::beast::error_code ec;
      const std::size_t n = socket_.read_some(boost::asio::buffer(chunk), ec);
      if (ec) return seen;
      seen.append(chunk, n);
      at =
          seen.find(marker, seen.size() - n >= marker.size() ? seen.size() - n - marker.size() : 0);
    }
    const std::size_t end = at + marker.size();
    const std::string_view rest = std::string_view(seen).substr(end);
    boost::asio::buffer_copy(buffer_.prepare(rest.size()),
                             boost::asio::buffer(rest.data(), rest.size()));
    buffer_.commit(rest.size());
    seen.resize(end);
    return seen;
  }

  void close() {
    boost::beast::error_code ignored;
    socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

 private:
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
};

inline simdjson::dom::element parse_json(simdjson::dom::parser& parser, const std::string& json) {
  simdjson::dom::element element;
  EXPECT_EQ(parser.parse(json).get(element), simdjson::SUCCESS) << json;
  return element;
}

// The payloads of an SSE body's `data:` lines, in order.
inline std::vector<std::string> sse_data(const std::string& body) {
  std::vector<std::string> events;
  std::size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const std::size_t end = body.find("\n\n", at);
    if (end == std::string::npos) break;
    events.push_back(body.substr(at + 6, end - at - 6));
    at = end;
  }
  return events;
}

}  // namespace tern::testing
