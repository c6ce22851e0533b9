#include "trace_follower.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>

namespace overlap::cli {

namespace {

/// How long the thread sleeps when the file has nothing new: short next to
/// any run worth auditing, long enough to cost no measurable CPU.
constexpr auto poll_interval = std::chrono::milliseconds(5);

/// A file descriptor closed on scope exit.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  FileDescriptor(FileDescriptor&&) = delete;
  FileDescriptor& operator=(FileDescriptor&&) = delete;
  [[nodiscard]] int get() const noexcept { return fd_; }

 private:
  int fd_;
};

}  // namespace

TraceFollower::TraceFollower(std::filesystem::path file)
    : file_(std::move(file)), reader_(file_.filename().string()), thread_([this] { follow(); }) {}

TraceFollower::~TraceFollower() {
  end();
}

void TraceFollower::end() {
  {
    const std::lock_guard lock(mutex_);
    app_ended_ = true;
  }
  ended_signal_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool TraceFollower::wait_for_footer(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return ended_signal_.wait_for(lock, timeout, [this] { return footer_read_; });
}

bool TraceFollower::wait() {
  std::unique_lock lock(mutex_);
  return ended_signal_.wait_for(lock, poll_interval, [this] { return app_ended_; });
}

bool TraceFollower::drain(int fd) {
  std::array<char, std::size_t{1} << 16> block{};
  for (;;) {
    const ssize_t got = ::read(fd, block.data(), block.size());
    if (got < 0 && errno == EINTR) continue;
    // At the end for now, or a read error: tried again after the next wait.
    if (got <= 0) return true;
    try {
      reader_.feed(std::string_view(block.data(), static_cast<std::size_t>(got)));
    } catch (...) {
      return false;  // the caller reads the file again and reports the problem
    }
  }
}

void TraceFollower::follow() {
  int fd = -1;
  // The file appears at the app's first CUDA call, if it makes one.
  for (bool ended = false; fd < 0;) {
    fd = ::open(file_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0 || ended) break;
    ended = wait();
  }
  if (fd < 0) return;
  const FileDescriptor closer(fd);
  opened_ = true;
  // Once the app has ended, one more drain reads all it wrote; nothing
  // follows a footer.
  for (bool ended = false;;) {
    if (!drain(fd)) {
      failed_ = true;
      return;
    }
    if (reader_.complete()) {
      {
        const std::lock_guard lock(mutex_);
        footer_read_ = true;
      }
      ended_signal_.notify_all();
      return;
    }
    if (ended) return;
    ended = wait();
  }
}

std::optional<trace::RawTrace> TraceFollower::finish() {
  end();
  if (!opened_ || failed_) return std::nullopt;
  try {
    return std::move(reader_).finish();
  } catch (...) {
    return std::nullopt;  // the caller's own read names the problem
  }
}

}  // namespace overlap::cli
