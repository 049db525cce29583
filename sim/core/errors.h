#pragma once
// InputError: bad input from the user (a config, a trace line, a scenario key, a unit). The message
// names the file, line or key; the app prints it on one line and exits with code 2.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace kvsim {

// A NUL byte in a message (user text holding one) would end what() there: it is written as \x00.
std::string without_nul(std::string message);

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(without_nul(message)) {}
  explicit InputError(const char* message) : std::runtime_error(message) {}
};

// User text inside a message: quoted as 'text', control characters and bytes that are not valid
// UTF-8 escaped (\n, \t, \xNN), and cut after `max_bytes` of input with "... (N bytes)", so a key
// or value holding a newline or megabytes of text keeps the message on one short line.
std::string quote_for_message(std::string_view text, size_t max_bytes = 200);

// A whole message made printable on one line: control characters and invalid UTF-8 escaped, cut
// after `max_bytes` ("... (truncated)"). The app applies it to every error it prints.
std::string one_line(std::string_view message, size_t max_bytes = 4000);

}  // namespace kvsim
