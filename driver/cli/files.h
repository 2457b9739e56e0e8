// Reading and writing the command line's files with every failure reported
// by the file's name (a full disk, a folder in the way, a name too long), so
// that a write that did not happen fails the command instead of passing
// silently.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

namespace tessera::cli {

// "FILE: cannot write: No space left on device". The command's exit status
// for it is kExitBadInput.
class FileError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// The whole file; throws FileError when it cannot be read.
std::string read_file(const std::filesystem::path& file);

// Replaces the file's content; throws FileError unless every byte reached it.
void write_file(const std::filesystem::path& file, const std::string& text);

// Throws FileError unless `file` can be written: its folder exists and lets
// it be created, or it exists and is writable. Leaves no file behind.
void check_writable(const std::filesystem::path& file);

// Creates the folder and its parents; throws FileError naming it otherwise.
void make_dirs(const std::filesystem::path& dir);

// An output file a command will write later: creates its folder and checks
// that it can be written (make_dirs, check_writable).
void prepare_output(const std::filesystem::path& file);

}  // namespace tessera::cli
