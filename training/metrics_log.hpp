#pragma once
/// @file metrics_log.hpp
/// The metrics file of a training run (--metrics): JSON lines, one appended as each epoch ends and
/// a final summary line, each written with one write() call straight to the file, so a run that is
/// killed keeps every epoch it finished (docs/training.md "Output"). Errors are InputError naming
/// the file and carrying the operating system's reason ("No space left on device").
#include <string>
#include <vector>

#include "core/json.hpp"

namespace halognn {

class MetricsLog {
 public:
  /// Checks, without creating or changing anything, that `path` can become the metrics file of a
  /// run that reads `inputs` (files, or directories read whole): it is not a directory, not one
  /// of the inputs nor inside an input directory, not an existing file of another kind (a regular
  /// file whose first line is not a halognn metrics line), and it can be written.
  static void check_path(const std::string& path, const std::vector<std::string>& inputs);

  /// Creates (or empties) the file; a FIFO or character device is opened for writing as is.
  explicit MetricsLog(const std::string& path);
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  /// Closes without reporting errors (call close() to hear of them).
  ~MetricsLog();

  /// Appends one line (compact JSON and a newline) in one write.
  void append(const Json& line);
  /// fsyncs (regular files) and closes; reports a failure, e.g. space that ran out late.
  void close();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  bool regular_ = false;
};

}  // namespace halognn
