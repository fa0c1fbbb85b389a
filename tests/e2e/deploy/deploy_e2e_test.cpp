// The deployment of issue 7 on one machine: two `tern serve` processes with TinyStories behind
// real nginx running docker/nginx/nginx.conf (rewritten to loopback by render_nginx_conf.sh).
// Through nginx: routing spreads over both replicas, SSE is not buffered, a rolling restart under
// 40 streaming clients loses nothing, a killed replica is routed around, a replica whose model is
// missing gets no traffic; and a config error makes `tern serve` exit non-zero.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "tests/support/shared_data.h"

namespace tern::deploy {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr const char* kModelDir = "models/tinystories-656k";
constexpr const char* kNginx = "/usr/sbin/nginx";

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A port that was free a moment ago (the replicas must keep theirs across restarts, so the
// test picks them instead of asking for port 0).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

// --- a minimal HTTP/1.1 client: one request per connection, read to EOF ----------------------

// Decodes a chunked body; false when it is malformed or lacks the final zero-size chunk (a
// stream that was cut off).
bool dechunk(std::string_view body, std::string& out) {
  for (;;) {
    const std::size_t line_end = body.find("\r\n");
    if (line_end == std::string_view::npos) return false;
    std::size_t size = 0;
    try {
      size = std::stoul(std::string(body.substr(0, line_end)), nullptr, 16);
    } catch (...) {
      return false;
    }
    body.remove_prefix(line_end + 2);
    if (size == 0) return body.substr(0, 2) == "\r\n";
    if (body.size() < size + 2) return false;
    out.append(body.substr(0, size));
    body.remove_prefix(size + 2);
  }
}

struct HttpResult {
  int status = 0;             // 0: no response (connection refused or dropped before a status)
  std::string raw;            // status line, headers and body as received
  int reads_with_events = 0;  // socket reads that brought at least one SSE `data:` event
  double first_event_s = -1;  // since the request was sent
  double done_s = -1;         // the last read that brought data
  double elapsed_s = 0;       // until the connection closed
  // A 200 SSE stream whose chunked body ended properly and carried `data: [DONE]`.
  bool stream_complete() const {
    const std::size_t head_end = raw.find("\r\n\r\n");
    if (status != 200 || head_end == std::string::npos) return false;
    std::string body;
    return dechunk(std::string_view(raw).substr(head_end + 4), body) &&
           body.find("data: [DONE]\n\n") != std::string::npos;
  }
};

HttpResult http_request(int port, const std::string& method, const std::string& target,
                        const std::string& body = {}) {
  HttpResult result;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval timeout{60, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return result;
  }
  const std::string request = fmt::format(
      "{} {} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: "
      "application/json\r\nContent-Length: {}\r\n\r\n{}",
      method, target, body.size(), body);
  const auto start = Clock::now();
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    ::close(fd);
    return result;
  }
  char chunk[16384];
  for (;;) {
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) break;
    const std::string_view piece(chunk, static_cast<std::size_t>(n));
    result.raw.append(piece);
    if (piece.find("data: ") != std::string_view::npos) {
      ++result.reads_with_events;
      if (result.first_event_s < 0) result.first_event_s = seconds_since(start);
    }
    result.done_s = seconds_since(start);
  }
  ::close(fd);
  result.elapsed_s = seconds_since(start);
  if (result.raw.rfind("HTTP/1.", 0) == 0 && result.raw.size() > 12) {
    result.status = std::atoi(result.raw.c_str() + 9);
  }
  return result;
}

std::string stream_body(int max_tokens) {
  return fmt::format(
      R"({{"model":"tinystories","prompt":"Once upon a time","max_tokens":{},"temperature":1,"ignore_eos":true,"stream":true}})",
      max_tokens);
}

// tern_requests_total for 200 answers on /v1/completions, from one replica's /metrics.
long completions_answered(int port, int status) {
  const HttpResult metrics = http_request(port, "GET", "/metrics");
  const std::regex line(fmt::format(
      R"re(tern_requests_total\{{model="[^"]*",endpoint="/v1/completions",status="{}"\}} (\d+))re",
      status));
  long total = 0;
  for (auto it = std::sregex_iterator(metrics.raw.begin(), metrics.raw.end(), line);
       it != std::sregex_iterator(); ++it) {
    total += std::stol((*it)[1]);
  }
  return total;
}

long completions_served(int port) {
  return completions_answered(port, 200);
}

// Polls `holds` every 20 ms until it is true or `limit` has passed; whether it became true.
template <typename Predicate>
bool eventually(Predicate holds, Clock::duration limit) {
  const auto deadline = Clock::now() + limit;
  while (!holds()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// A replica counts a request once its last byte is written, which is after the client has read
// the stream's end: wait for the counters to settle before comparing them.
long served_once_settled(const std::vector<int>& ports, long expected) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    long total = 0;
    for (const int port : ports) total += completions_served(port);
    if (total >= expected || std::chrono::steady_clock::now() > deadline) return total;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// --- processes --------------------------------------------------------------------------------

pid_t spawn(const std::vector<std::string>& argv, const fs::path& log) {
  const pid_t child = ::fork();
  if (child == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    _exit(127);
  }
  return child;
}

// Waits up to `limit` for the child to exit; its wait status, or -1 if it is still running.
int wait_exit(pid_t pid, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  int status = 0;
  while (Clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(10ms);
  }
  return -1;
}

struct Replica {
  std::string name;
  int port = 0;
  fs::path config;
  fs::path log;
  pid_t pid = -1;

  void start() { pid = spawn({TERN_BINARY, "serve", "--config", config.string()}, log); }
  int ready_status() const { return http_request(port, "GET", "/ready").status; }
  bool wait_ready(std::chrono::seconds limit) const {
    const auto deadline = Clock::now() + limit;
    while (Clock::now() < deadline) {
      if (ready_status() == 200) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }
  // SIGTERM, then the exit status once it has drained and exited.
  int terminate() {
    ::kill(pid, SIGTERM);
    const int status = wait_exit(pid, 40s);
    if (status != -1) pid = -1;
    return status;
  }
  void kill_now() {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    pid = -1;
  }
};

// What the streaming clients saw.
struct Tally {
  std::atomic<int> completed{0}, failed{0}, truncated{0};
  std::mutex mutex;
  std::vector<std::string> examples;
  void record(const HttpResult& result) {
    if (result.stream_complete()) {
      ++completed;
      return;
    }
    (result.status == 200 ? truncated : failed)++;
    std::lock_guard lock(mutex);
    if (examples.size() < 3) {
      const std::size_t head_end = result.raw.find("\r\n\r\n");
      examples.push_back(
          fmt::format("status {} after {:.3f} s, {} bytes; headers: {}; last bytes: {}",
                      result.status, result.elapsed_s, result.raw.size(),
                      result.raw.substr(0, std::min<std::size_t>(head_end, 300)),
                      result.raw.substr(result.raw.size() > 300 ? result.raw.size() - 300 : 0)));
    }
  }
  std::string describe() {
    std::lock_guard lock(mutex);
    std::string text = fmt::format("completed {}, failed {}, truncated {}", completed.load(),
                                   failed.load(), truncated.load());
    for (const std::string& example : examples) text += "\n--- " + example;
    return text;
  }
};

// Clients that each loop streaming requests through nginx until stopped.
class StreamingClients {
 public:
  StreamingClients(int port, int clients, int max_tokens) {
    for (int i = 0; i < clients; ++i) {
      threads_.emplace_back([this, port, max_tokens] {
        while (!stop_.load()) {
          const auto started = Clock::now();
          HttpResult result =
              http_request(port, "POST", "/v1/completions", stream_body(max_tokens));
          (started >= mark_.load() ? after_mark : before_mark).record(result);
        }
      });
    }
  }
  ~StreamingClients() { stop(); }
  // Requests that start from now on are tallied in `after_mark`.
  void mark() { mark_.store(Clock::now()); }
  void stop() {
    stop_.store(true);
    for (std::thread& thread : threads_) {
      if (thread.joinable()) thread.join();
    }
  }
  Tally before_mark, after_mark;

 private:
  std::atomic<bool> stop_{false};
  std::atomic<Clock::time_point> mark_{Clock::time_point::max()};
  std::vector<std::thread> threads_;
};

class DeployTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_dir_ = tern::testing::shared_path(kModelDir);
    if (!fs::exists(model_dir_)) {
      GTEST_SKIP() << "needs " << model_dir_.string() << " (../shared is absent or incomplete)";
    }
    if (!fs::exists(kNginx)) {
      GTEST_SKIP() << "needs " << kNginx << " (scripts/setup.sh installs Debian's nginx)";
    }
    dir_ = fs::temp_directory_path() /
           fmt::format("tern-deploy-{}-{}", ::getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // nginx run as root hands requests to workers running as 'nobody'.
    fs::permissions(dir_, fs::perms::all & ~(fs::perms::group_write | fs::perms::others_write));
  }

  void TearDown() override {
    if (nginx_pid_ > 0) {
      ::kill(nginx_pid_, SIGTERM);
      if (wait_exit(nginx_pid_, 10s) == -1) {
        ::kill(nginx_pid_, SIGKILL);
        ::waitpid(nginx_pid_, nullptr, 0);
      }
    }
    for (Replica& replica : replicas_) replica.kill_now();
    if (!HasFailure() && !dir_.empty()) fs::remove_all(dir_);
    if (HasFailure()) std::cerr << "logs kept in " << dir_ << "\n";
  }

  // `extra_model_keys` (YAML lines of the model entry) replace the default max_num_seqs: 64.
  Replica make_replica(const std::string& name, const std::string& model_path,
                       const std::string& extra_model_keys = {}) {
    Replica replica;
    replica.name = name;
    replica.port = free_port();
    replica.config = dir_ / (name + ".yaml");
    replica.log = dir_ / (name + ".log");
    std::ofstream(replica.config) << fmt::format(
        R"(server:
  host: 127.0.0.1
  port: {}
  timeouts:
    drain_s: 30
models:
  - name: tinystories
    path: {}
    threads: 1
    max_num_batched_tokens: 512
    kv_cache_bytes: 64MiB
{})",
        replica.port, model_path,
        extra_model_keys.empty() ? "    max_num_seqs: 64\n" : extra_model_keys);
    return replica;
  }

  // Replicas A and B (B's model path may be broken) and nginx in front of them.
  void start_cluster(const std::string& model_b, const std::string& model_keys_a = {}) {
    replicas_.push_back(make_replica("a", model_dir_.string(), model_keys_a));
    replicas_.push_back(make_replica("b", model_b));
    for (Replica& replica : replicas_) replica.start();
    ASSERT_TRUE(a().wait_ready(30s)) << read_file(a().log);
    if (model_b == model_dir_.string()) {
      ASSERT_TRUE(b().wait_ready(30s)) << read_file(b().log);
    }

    nginx_port_ = free_port();
    const fs::path prefix = dir_ / "nginx";
    fs::create_directories(prefix);
    const std::string render = fmt::format(
        "'{0}/tests/e2e/deploy/render_nginx_conf.sh' '{0}/docker/nginx/nginx.conf' '{1}' {2} {3} "
        "{4} > '{1}/nginx.conf'",
        TERN_SOURCE_DIR, prefix.string(), nginx_port_, a().port, b().port);
    ASSERT_EQ(std::system(render.c_str()), 0) << render;
    nginx_pid_ = spawn({kNginx, "-p", prefix.string(), "-e", (prefix / "error.log").string(), "-c",
                        (prefix / "nginx.conf").string(), "-g", "daemon off;"},
                       dir_ / "nginx.out");
    const auto deadline = Clock::now() + 10s;
    while (http_request(nginx_port_, "GET", "/nginx-health").status != 200) {
      ASSERT_LT(Clock::now(), deadline)
          << read_file(prefix / "error.log") << read_file(dir_ / "nginx.out");
      std::this_thread::sleep_for(20ms);
    }
  }

  Replica& a() { return replicas_[0]; }
  Replica& b() { return replicas_[1]; }

  fs::path model_dir_;
  fs::path dir_;
  std::vector<Replica> replicas_;
  int nginx_port_ = 0;
  pid_t nginx_pid_ = -1;
};

TEST_F(DeployTest, RoutesOverBothReplicasAndStreamsUnbuffered) {
  ASSERT_NO_FATAL_FAILURE(start_cluster(model_dir_.string()));
  // Routing: sequential requests alternate over idle replicas, concurrent ones go to the less
  // busy one; either way both serve some.
  for (int i = 0; i < 20; ++i) {
    const HttpResult result =
        http_request(nginx_port_, "POST", "/v1/completions",
                     R"({"model":"tinystories","prompt":"Once upon a time","max_tokens":8})");
    ASSERT_EQ(result.status, 200) << result.raw;
  }
  EXPECT_EQ(served_once_settled({a().port, b().port}, 20), 20);
  const long served_a = completions_served(a().port);
  const long served_b = completions_served(b().port);
  EXPECT_GT(served_a, 0) << "replica a served none of 20";
  EXPECT_GT(served_b, 0) << "replica b served none of 20";

  // Streaming: under load (so a stream takes long enough to time), the first event of a
  // 400-token stream arrives long before its end, over many separate reads. A buffering proxy
  // would hand over the stream in a few large pieces.
  StreamingClients load(nginx_port_, 16, 400);
  // Under load once the first of them has come through; the others are mid-stream by then.
  ASSERT_TRUE(eventually([&] { return load.before_mark.completed.load() > 0; }, 60s))
      << load.before_mark.describe();
  const HttpResult stream = http_request(nginx_port_, "POST", "/v1/completions", stream_body(400));
  load.stop();
  ASSERT_TRUE(stream.stream_complete()) << stream.raw.substr(0, 500);
  EXPECT_NE(stream.raw.find("Transfer-Encoding: chunked"), std::string::npos);
  EXPECT_GE(stream.reads_with_events, 50) << "events came in few pieces: buffered?";
  EXPECT_LT(stream.first_event_s, stream.done_s / 4)
      << "first event at " << stream.first_event_s << " s, [DONE] at " << stream.done_s << " s";
  EXPECT_EQ(load.before_mark.failed + load.before_mark.truncated, 0) << load.before_mark.describe();
}

TEST_F(DeployTest, RollingRestartUnderFortyStreamsLosesNothing) {
  ASSERT_NO_FATAL_FAILURE(start_cluster(model_dir_.string()));
  StreamingClients clients(nginx_port_, 40, 48);
  clients.mark();  // every request counts
  // Streams flow through nginx before the first replica goes.
  ASSERT_TRUE(eventually([&] { return clients.after_mark.completed.load() > 0; }, 30s))
      << clients.after_mark.describe();
  for (Replica* replica : {&a(), &b()}) {
    const int before = clients.after_mark.completed.load();
    const int status = replica->terminate();
    ASSERT_NE(status, -1) << replica->name << " did not exit within 40 s";
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << replica->name << ": " << read_file(replica->log);
    EXPECT_NE(read_file(replica->log).find("drained: every in-flight request finished"),
              std::string::npos)
        << read_file(replica->log);
    replica->start();
    ASSERT_TRUE(replica->wait_ready(30s)) << read_file(replica->log);
    // Before the next replica goes, this one must serve through nginx again: nginx's passive
    // checks marked it down while it was away and try it again only after fail_timeout.
    const auto deadline = Clock::now() + 15s;
    while (completions_served(replica->port) < 5) {
      ASSERT_LT(Clock::now(), deadline) << replica->name << " gets no traffic after its restart";
      std::this_thread::sleep_for(100ms);
    }
    EXPECT_GT(clients.after_mark.completed.load(), before);
  }
  clients.stop();
  Tally& tally = clients.after_mark;
  EXPECT_EQ(tally.failed.load(), 0) << tally.describe();
  EXPECT_EQ(tally.truncated.load(), 0) << tally.describe();
  EXPECT_GT(tally.completed.load(), 100) << tally.describe();
  // Both restarted processes served requests (their counters started from zero).
  EXPECT_GT(completions_served(a().port), 0);
  EXPECT_GT(completions_served(b().port), 0);
  std::cout << "rolling restart: " << tally.describe() << "\n";
}

TEST_F(DeployTest, KilledReplicaIsRoutedAround) {
  ASSERT_NO_FATAL_FAILURE(start_cluster(model_dir_.string()));
  StreamingClients clients(nginx_port_, 20, 48);
  ASSERT_TRUE(eventually([&] { return clients.before_mark.completed.load() > 0; }, 30s))
      << clients.before_mark.describe();
  a().kill_now();  // SIGKILL: its in-flight streams are cut mid-way
  clients.mark();
  Tally& after = clients.after_mark;
  EXPECT_TRUE(eventually([&] { return after.completed.load() > 20; }, 60s)) << after.describe();
  clients.stop();
  // Streams in flight on the killed replica end without `data: [DONE]`: nginx cannot retry a
  // response it has already started to send. Everything that started after the kill succeeds.
  EXPECT_EQ(after.failed.load() + after.truncated.load(), 0) << after.describe();
  EXPECT_GT(after.completed.load(), 20) << after.describe();
  std::cout << "in flight at the kill: " << clients.before_mark.describe() << "\n";
}

TEST_F(DeployTest, ReplicaWithMissingModelNeverTurnsReadyAndGetsNoTraffic) {
  ASSERT_NO_FATAL_FAILURE(start_cluster((dir_ / "no-such-model.gguf").string()));
  // It stays up (the model is not `required`) and live, but never ready.
  eventually(
      [&] {
        return read_file(b().log).find("no-such-model.gguf") != std::string::npos &&
               http_request(b().port, "GET", "/health").status == 200;
      },
      30s);
  EXPECT_EQ(http_request(b().port, "GET", "/health").status, 200);
  EXPECT_EQ(b().ready_status(), 503);
  EXPECT_NE(read_file(b().log).find("no-such-model.gguf"), std::string::npos) << read_file(b().log);
  for (int i = 0; i < 30; ++i) {
    const HttpResult result = http_request(nginx_port_, "POST", "/v1/completions", stream_body(8));
    ASSERT_TRUE(result.stream_complete()) << result.raw;
  }
  EXPECT_EQ(served_once_settled({a().port}, 30), 30);
  EXPECT_EQ(completions_served(b().port), 0);
  EXPECT_EQ(b().ready_status(), 503);
}

TEST_F(DeployTest, AReplicaAnswering429IsRetriedOnTheOther) {
  // Replica a runs one sequence and queues one more: two clients talking to it directly keep it
  // full, so whatever nginx sends it is answered 429.
  ASSERT_NO_FATAL_FAILURE(
      start_cluster(model_dir_.string(), "    max_num_seqs: 1\n    max_waiting_sequences: 1\n"));
  std::atomic<bool> busy{true};
  std::vector<std::thread> occupiers;
  for (int i = 0; i < 2; ++i) {
    occupiers.emplace_back([&] {
      while (busy.load()) http_request(a().port, "POST", "/v1/completions", stream_body(480));
    });
  }
  const auto deadline = Clock::now() + 10s;
  while (completions_answered(a().port, 429) == 0 && Clock::now() < deadline) {
    http_request(a().port, "POST", "/v1/completions", stream_body(4));
  }
  const long refused_before = completions_answered(a().port, 429);
  ASSERT_GT(refused_before, 0) << "replica a never filled up";
  for (int i = 0; i < 20; ++i) {
    const HttpResult result = http_request(nginx_port_, "POST", "/v1/completions", stream_body(8));
    EXPECT_TRUE(result.stream_complete()) << result.raw.substr(0, 400);
  }
  busy = false;
  for (std::thread& thread : occupiers) thread.join();
  // nginx did try replica a (it answered 429 more often) and the client never saw it.
  EXPECT_GT(completions_answered(a().port, 429), refused_before);
}

TEST_F(DeployTest, ConfigErrorExitsNonZeroWithTheErrorOnStderr) {
  const fs::path config = dir_ / "bad.yaml";
  std::ofstream(config) << "server:\n  port: 8000\nmodels:\n  - name: x\n    path: /models/x.gguf\n"
                           "    max_num_seq: 4\n";
  const fs::path log = dir_ / "bad.log";
  const pid_t child = spawn({TERN_BINARY, "serve", "--config", config.string()}, log);
  const int status = wait_exit(child, 10s);
  ASSERT_NE(status, -1) << "tern serve did not exit on a bad config";
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NE(WEXITSTATUS(status), 0);
  const std::string stderr_text = read_file(log);
  EXPECT_NE(stderr_text.find("max_num_seq"), std::string::npos) << stderr_text;
  EXPECT_NE(stderr_text.find("bad.yaml:6"), std::string::npos) << stderr_text;
}

}  // namespace
}  // namespace tern::deploy
