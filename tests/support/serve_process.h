#pragma once

// The `tern serve` binary as a child process for e2e tests: started with its stderr in a log
// file, its port read from the "listening on" line (start it with --port 0), stopped by signal.
// The destructor kills a child that is still running.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

namespace tern::testing {

class ServeProcess {
 public:
  // Runs `binary serve ARGS...` with stderr (the log) going to a file of its own; with
  // `open_file_limit`, under that RLIMIT_NOFILE (soft and hard, so the server cannot raise it).
  ServeProcess(const std::string& binary, const std::vector<std::string>& arguments,
               std::optional<rlim_t> open_file_limit = std::nullopt) {
    static int instance = 0;
    log_path_ =
        std::filesystem::temp_directory_path() /
        ("tern-serve-" + std::to_string(::getpid()) + "-" + std::to_string(++instance) + ".log");
    std::vector<std::string> argv_storage{binary, "serve"};
    argv_storage.insert(argv_storage.end(), arguments.begin(), arguments.end());
    std::vector<char*> argv;
    for (std::string& argument : argv_storage) argv.push_back(argument.data());
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) dup2(fd, 2);
      if (open_file_limit) {
        const rlimit limit{*open_file_limit, *open_file_limit};
        if (setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(126);
      }
      execv(binary.c_str(), argv.data());
      _exit(127);
    }
  }
  ~ServeProcess() {
    if (running()) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status_, 0);
    }
    std::error_code ignored;
    std::filesystem::remove(log_path_, ignored);
  }
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  std::string log() const {
    std::ifstream in(log_path_);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }

  // The port from "listening on 127.0.0.1:PORT"; 0 when it does not show up within `timeout`.
  int wait_for_port(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const std::regex listening("listening on 127\\.0\\.0\\.1:(\\d+)");
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      std::smatch match;
      const std::string text = log();
      if (std::regex_search(text, match, listening)) return std::stoi(match[1]);
      if (reap()) return 0;  // it exited before listening
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return 0;
  }

  void signal(int signal_number) const { kill(pid_, signal_number); }

  // Waits for the child to exit; its exit code, or nullopt when it was killed by a signal or
  // did not exit within `timeout` (then it is killed).
  std::optional<int> wait_exit(std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (reap()) {
        if (WIFEXITED(status_)) return WEXITSTATUS(status_);
        return std::nullopt;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return std::nullopt;  // the destructor kills it
  }

 private:
  bool running() const { return pid_ > 0 && !exited_; }
  // True once the child has exited (its status is then in status_).
  bool reap() {
    if (running() && waitpid(pid_, &status_, WNOHANG) == pid_) exited_ = true;
    return exited_;
  }

  pid_t pid_ = -1;
  bool exited_ = false;
  int status_ = 0;
  std::filesystem::path log_path_;
};

}  // namespace tern::testing
