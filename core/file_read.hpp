#pragma once
/// @file file_read.hpp
/// Reading whole input files with errors that name the file and say why: a missing file, a
/// directory where a file is expected (which stream-based reading would take for a file of
/// absurd size), a permission problem, a failed read. Every reader of a whole file uses these.
#include <cstddef>
#include <string>
#include <vector>

namespace halognn {

/// Throws InputError(path, reason) unless `path` is an existing file that can be opened for
/// reading: "is a directory, not a file", "cannot open: No such file or directory", ...
void check_input_file(const std::string& path);

/// The whole file; errors as check_input_file, and "read failed: <reason>".
std::vector<std::byte> read_file_bytes(const std::string& path);

/// The whole file as text (bytes unchanged).
std::string read_file_text(const std::string& path);

}  // namespace halognn
