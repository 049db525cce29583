#include "sim/core/input_file.h"

#include <filesystem>

#include "sim/core/errors.h"

namespace kvsim {
namespace {

std::string mib(size_t bytes) {
  return bytes % (size_t{1} << 20) == 0 ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes) + " bytes";
}

void reject_directory(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(path + ": is a directory, not a file");
}

}  // namespace

std::string read_input_file(const std::string& path, const std::string& what, size_t max_bytes) {
  reject_directory(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open " + what);
  std::string out;
  char chunk[1 << 16];
  while (in) {
    in.read(chunk, sizeof chunk);
    const auto n = static_cast<size_t>(in.gcount());
    if (out.size() + n > max_bytes)
      throw InputError(path + ": larger than " + mib(max_bytes) + " (not a " + what + "?)");
    out.append(chunk, n);
  }
  if (in.bad()) throw InputError(path + ": read error");
  return out;
}

LineReader::LineReader(const std::string& path, const std::string& what, size_t max_line_bytes)
    : path_(path),
      in_(path, std::ios::binary),
      buf_size_(max_line_bytes + 1),
      buf_(std::make_unique_for_overwrite<char[]>(buf_size_)) {
  reject_directory(path);
  if (!in_) throw InputError(path + ": cannot open " + what);
}

bool LineReader::next(std::string_view& line) {
  if (!in_) return false;
  // istream::getline stores at most size - 1 characters and sets failbit (not eofbit) when the line
  // is longer.
  in_.getline(buf_.get(), static_cast<std::streamsize>(buf_size_));
  const auto n = static_cast<size_t>(in_.gcount());
  if (in_.bad()) throw InputError(path_ + ": read error");
  if (n == 0 && in_.eof()) return false;
  ++line_no_;
  if (in_.fail() && !in_.eof()) {
    throw InputError(path_ + ":" + std::to_string(line_no_) + ": line longer than " + mib(buf_size_ - 1) +
                     " (not a text file?)");
  }
  // gcount counts the '\n' when one was extracted (not at the end of the file).
  line = std::string_view(buf_.get(), in_.eof() ? n : n - 1);
  return true;
}

}  // namespace kvsim
