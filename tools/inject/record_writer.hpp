// The trace file's records as JSON Lines, and the buffered writer that puts
// them into `$OVERLAP_TRACE_DIR/trace.<pid>.jsonl` (docs/trace-format.md).
//
// Pure C++ (no CUDA, no third-party library), so it is unit-tested on any
// machine. JsonLine builds one flat JSON object into a caller-owned string
// (a thread's reused scratch, so a record costs no allocation); RecordWriter
// collects finished lines in one mutex-protected in-memory buffer and appends
// it to the file when it passes 1 MiB, when asked to flush, and when the
// footer is written. It remembers the process that opened the file and never
// writes from another one (a forked child), and its footer path works from a
// signal handler (bounded try-lock, no allocation).
#pragma once

#include <sys/types.h>

#include <array>
#include <atomic>
#include <charconv>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

namespace overlap::inject {

/// Appends `text` to `out` as the inside of a JSON string: quotes, backslashes
/// and control characters escaped, and every byte that is not part of valid
/// UTF-8 replaced by U+FFFD, so a line parses whatever bytes a name held.
void append_json_escaped(std::string& out, std::string_view text);

/// Builds one record, a flat JSON object ending in a newline, at the end of
/// `out`. Keys are literals of this library and are written as they are.
class JsonLine {
 public:
  /// Starts `{"t":"<type>"`.
  JsonLine(std::string& out, std::string_view type);

  template <std::integral T>
  JsonLine& number(std::string_view key, T value) {
    if constexpr (std::same_as<T, bool>) {
      return boolean(key, value);
    } else {
      // Key and digits in one append: this runs several times per API call.
      std::array<char, max_key + 32> text;
      char* end = write_key(text.data(), key);
      end = std::to_chars(end, text.data() + text.size(), value).ptr;
      out_.append(text.data(), end);
      return *this;
    }
  }
  JsonLine& boolean(std::string_view key, bool value);
  JsonLine& string(std::string_view key, std::string_view value);
  JsonLine& numbers(std::string_view key, std::span<const std::uint64_t> values);
  JsonLine& triple(std::string_view key, std::uint64_t x, std::uint64_t y, std::uint64_t z);
  /// Closes the object and the line.
  void finish();

 private:
  /// Longer keys are cut (this library's keys are all much shorter).
  static constexpr std::size_t max_key = 32;
  /// Writes `,"key":` at `at`, returns the end.
  static char* write_key(char* at, std::string_view key) noexcept;
  void put_key(std::string_view key);

  std::string& out_;
};

/// The trace file of one process, written through an in-memory buffer.
class RecordWriter {
 public:
  /// Small enough that a reader following the file (an audit) gets records
  /// while the app runs; each write is one system call under the lock.
  static constexpr std::size_t default_flush_bytes = std::size_t{1} << 20;

  explicit RecordWriter(std::string path, std::size_t flush_bytes = default_flush_bytes);
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;
  RecordWriter(RecordWriter&&) = delete;
  RecordWriter& operator=(RecordWriter&&) = delete;

  /// `<directory>/trace.<pid>.jsonl`; an empty directory means the current one.
  static std::string path_for(std::string_view directory, long pid);

  /// Creates (or truncates) the file and makes the calling process its owner.
  /// False, with `error` saying why, when the file cannot be created.
  bool open(std::string& error);
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

  /// Appends `count` complete, newline-terminated records; writes the buffer
  /// out when it passes the flush size. Dropped once the footer is written or
  /// in a forked child.
  void append(std::string_view lines, std::uint64_t count = 1);
  /// Writes what is buffered to the file now. With `from_signal`, gives up
  /// if the lock does not free up within ~50 ms.
  void flush(bool from_signal = false);
  /// Writes the buffer and a footer `{"t":"footer","records":N,"dropped":D,
  /// "reason":R}` (D = `dropped_elsewhere` + the records this writer lost) and
  /// closes the file. Only the first call does anything; false if it could
  /// not. With `from_signal`, takes the lock only if it frees up within ~50 ms
  /// and allocates nothing.
  bool finish(std::string_view reason, std::uint64_t dropped_elsewhere, bool from_signal);

  /// Records that never reached the buffer (counted into the footer's `dropped`).
  void count_lost(std::uint64_t records) noexcept { lost_.fetch_add(records, std::memory_order_relaxed); }
  /// While set (by a signal handler that is flushing), appends only try the
  /// lock, so a thread interrupted while holding it cannot deadlock the flush.
  void set_signal_mode(bool on) noexcept { signal_mode_.store(on, std::memory_order_relaxed); }

  /// pthread_atfork hooks: the child discards the parent's records and never writes.
  void before_fork();
  void after_fork_in_parent();
  void after_fork_in_child();

  /// Records written to the file so far.
  [[nodiscard]] std::uint64_t records_written() const noexcept {
    return written_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint64_t records_lost() const noexcept { return lost_.load(std::memory_order_relaxed); }
  [[nodiscard]] bool finished() const noexcept { return finished_.load(std::memory_order_relaxed); }

 private:
  bool acquire(bool bounded);
  /// Writes the buffer out; called with the lock held.
  void write_buffer_locked();

  std::string path_;
  std::size_t flush_bytes_;
  std::mutex mutex_;
  std::string buffer_;                  // guarded by mutex_
  std::uint64_t buffered_records_ = 0;  // guarded by mutex_
  int fd_ = -1;                         // guarded by mutex_
  pid_t owner_ = 0;
  std::atomic<std::uint64_t> written_{0};
  std::atomic<std::uint64_t> lost_{0};
  std::atomic<bool> finished_{false};
  std::atomic<bool> disabled_{false};
  std::atomic<bool> signal_mode_{false};
};

}  // namespace overlap::inject
