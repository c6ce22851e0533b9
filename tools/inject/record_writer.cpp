// JSON Lines records and the buffered trace file writer (see record_writer.hpp).
//
// The file is written with plain POSIX calls (open, write, close): they work
// inside a signal handler, after a fork and while the C++ runtime is being
// torn down at exit, which is when the last records and the footer go out.
#include "record_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "overlap/core/utf8.hpp"

namespace overlap::inject {

namespace {

constexpr std::string_view hex_digits = "0123456789abcdef";
constexpr std::string_view replacement_character = "\xEF\xBF\xBD";  // U+FFFD in UTF-8

/// Appends to a fixed array without allocating (the footer is built in a signal handler).
class FixedText {
 public:
  void append(std::string_view text) {
    const std::size_t n = std::min(text.size(), data_.size() - size_);
    std::memcpy(data_.data() + size_, text.data(), n);
    size_ += n;
  }
  void append(std::uint64_t value) {
    std::array<char, 24> digits{};
    const auto result = std::to_chars(digits.data(), digits.data() + digits.size(), value);
    append(std::string_view(digits.data(), static_cast<std::size_t>(result.ptr - digits.data())));
  }
  [[nodiscard]] const char* data() const noexcept { return data_.data(); }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  std::array<char, 256> data_{};
  std::size_t size_ = 0;
};

/// write() until all is written or it fails (EINTR is retried).
bool write_fully(int fd, const char* data, std::size_t size) noexcept {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

void append_json_escaped(std::string& out, std::string_view text) {
  // Runs of bytes that need no escaping are appended whole.
  std::size_t run = 0;
  std::size_t i = 0;
  const auto end_run = [&] {
    if (i > run) out.append(text.data() + run, i - run);
  };
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      if (const std::size_t length = overlap::utf8_sequence_length(text, i); length > 0) {
        i += length;
        continue;
      }
      end_run();
      out.append(replacement_character);
    } else {
      end_run();
      switch (c) {
        case '"': out.append("\\\""); break;
        case '\\': out.append("\\\\"); break;
        case '\b': out.append("\\b"); break;
        case '\f': out.append("\\f"); break;
        case '\n': out.append("\\n"); break;
        case '\r': out.append("\\r"); break;
        case '\t': out.append("\\t"); break;
        default: {
          const std::array<char, 6> escape{'\\', 'u', '0', '0', hex_digits[c >> 4], hex_digits[c & 0xF]};
          out.append(escape.data(), escape.size());
        }
      }
    }
    ++i;
    run = i;
  }
  end_run();
}

JsonLine::JsonLine(std::string& out, std::string_view type) : out_(out) {
  out_.append(R"({"t":")");
  append_json_escaped(out_, type);
  out_.push_back('"');
}

char* JsonLine::write_key(char* at, std::string_view key) noexcept {
  const std::size_t length = std::min(key.size(), max_key);
  *at++ = ',';
  *at++ = '"';
  std::memcpy(at, key.data(), length);
  at += length;
  *at++ = '"';
  *at++ = ':';
  return at;
}

void JsonLine::put_key(std::string_view key) {
  std::array<char, max_key + 4> text;
  out_.append(text.data(), write_key(text.data(), key));
}

JsonLine& JsonLine::boolean(std::string_view key, bool value) {
  std::array<char, max_key + 12> text;
  char* end = write_key(text.data(), key);
  const std::string_view word = value ? "true" : "false";
  std::memcpy(end, word.data(), word.size());
  out_.append(text.data(), end + word.size());
  return *this;
}

JsonLine& JsonLine::string(std::string_view key, std::string_view value) {
  std::array<char, max_key + 8> text;
  char* end = write_key(text.data(), key);
  *end++ = '"';
  out_.append(text.data(), end);
  append_json_escaped(out_, value);
  out_.push_back('"');
  return *this;
}

JsonLine& JsonLine::numbers(std::string_view key, std::span<const std::uint64_t> values) {
  put_key(key);
  out_.push_back('[');
  std::array<char, 24> digits{};
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out_.push_back(',');
    const auto result = std::to_chars(digits.data(), digits.data() + digits.size(), values[i]);
    out_.append(digits.data(), result.ptr);
  }
  out_.push_back(']');
  return *this;
}

JsonLine& JsonLine::triple(std::string_view key, std::uint64_t x, std::uint64_t y, std::uint64_t z) {
  const std::array<std::uint64_t, 3> values{x, y, z};
  return numbers(key, values);
}

void JsonLine::finish() {
  out_.append("}\n");
}

RecordWriter::RecordWriter(std::string path, std::size_t flush_bytes)
    : path_(std::move(path)), flush_bytes_(flush_bytes) {}

// Closes without writing: the injection library never destroys its writer
// (CUPTI may call back during exit), and a test that does wants no surprise.
RecordWriter::~RecordWriter() {
  if (fd_ >= 0) ::close(fd_);
}

std::string RecordWriter::path_for(std::string_view directory, long pid) {
  std::string path(directory);
  if (!path.empty() && path.back() != '/') path.push_back('/');
  path.append("trace.");
  path.append(std::to_string(pid));
  path.append(".jsonl");
  return path;
}

bool RecordWriter::open(std::string& error) {
  const std::lock_guard lock(mutex_);
  // O_APPEND: a child that inherits the descriptor can never write into the
  // middle of the file; O_TRUNC: a reused pid starts a fresh file.
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    error = std::strerror(errno);
    return false;
  }
  owner_ = ::getpid();
  // Room for a full buffer plus the record that pushes it past the flush
  // size, so appends do not reallocate in the common case.
  buffer_.reserve(flush_bytes_ + (std::size_t{64} << 10));
  return true;
}

bool RecordWriter::acquire(bool bounded) {
  if (!bounded) {
    mutex_.lock();
    return true;
  }
  // ~50 ms: long enough for another thread to finish an append or a 1 MiB
  // write, short enough not to hang a process that is being killed.
  constexpr int attempts = 50;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    if (mutex_.try_lock()) return true;
    const timespec millisecond{0, 1'000'000};
    ::nanosleep(&millisecond, nullptr);
  }
  return false;
}

void RecordWriter::append(std::string_view lines, std::uint64_t count) {
  if (disabled_.load(std::memory_order_relaxed) || finished_.load(std::memory_order_relaxed)) return;
  if (signal_mode_.load(std::memory_order_relaxed)) {
    if (!mutex_.try_lock()) {  // its holder may be the very thread the signal interrupted
      count_lost(count);
      return;
    }
  } else {
    mutex_.lock();
  }
  const std::lock_guard lock(mutex_, std::adopt_lock);
  if (finished_.load(std::memory_order_relaxed) || disabled_.load(std::memory_order_relaxed)) return;
  // Write out first rather than grow the buffer: no allocation (this may
  // run in a signal handler), and the file still gets whole records.
  if (!buffer_.empty() && buffer_.size() + lines.size() > buffer_.capacity()) write_buffer_locked();
  buffer_.append(lines);
  buffered_records_ += count;
  if (buffer_.size() >= flush_bytes_) write_buffer_locked();
}

void RecordWriter::flush(bool from_signal) {
  if (disabled_.load(std::memory_order_relaxed)) return;
  if (!acquire(from_signal)) return;
  const std::lock_guard lock(mutex_, std::adopt_lock);
  write_buffer_locked();
}

void RecordWriter::write_buffer_locked() {
  if (buffer_.empty()) return;
  if (owner_ != ::getpid()) {  // a forked child: the parent's records are not ours to write
    buffer_.clear();
    buffered_records_ = 0;
    return;
  }
  if (fd_ >= 0 && write_fully(fd_, buffer_.data(), buffer_.size())) {
    written_.fetch_add(buffered_records_, std::memory_order_relaxed);
  } else {
    count_lost(buffered_records_);
  }
  buffer_.clear();
  buffered_records_ = 0;
}

bool RecordWriter::finish(std::string_view reason, std::uint64_t dropped_elsewhere, bool from_signal) {
  if (disabled_.load(std::memory_order_relaxed) || finished_.exchange(true)) return false;
  if (!acquire(from_signal)) return false;
  const std::lock_guard lock(mutex_, std::adopt_lock);
  if (owner_ != ::getpid()) return false;
  write_buffer_locked();
  FixedText footer;
  footer.append(R"({"t":"footer","records":)");
  footer.append(written_.load(std::memory_order_relaxed));
  footer.append(R"(,"dropped":)");
  footer.append(dropped_elsewhere + lost_.load(std::memory_order_relaxed));
  footer.append(R"(,"reason":")");
  constexpr std::size_t max_reason = 64;
  for (std::size_t i = 0; i < reason.size() && i < max_reason; ++i) {
    const char c = reason[i];  // our own short ASCII texts; anything else is left out
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') footer.append(std::string_view(&c, 1));
  }
  footer.append("\"}\n");
  const bool ok = fd_ >= 0 && write_fully(fd_, footer.data(), footer.size());
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  return ok;
}

void RecordWriter::before_fork() {
  mutex_.lock();
}

void RecordWriter::after_fork_in_parent() {
  mutex_.unlock();
}

void RecordWriter::after_fork_in_child() {
  // This thread took the lock in before_fork, so it may release it here.
  disabled_.store(true, std::memory_order_relaxed);
  buffer_.clear();
  buffered_records_ = 0;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  mutex_.unlock();
}

}  // namespace overlap::inject
