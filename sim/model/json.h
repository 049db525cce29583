#pragma once
// A small JSON reader for Hugging Face config.json files and trace lines. It accepts HF's
// non-strict JSON (Infinity, -Infinity, NaN as numbers) and reports errors with line and column.
// Object keys keep their order of appearance; lookups are by name.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvsim {

class JsonValue {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

  JsonValue() = default;
  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }
  bool is_number() const { return type_ == Type::kNumber; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_bool() const { return type_ == Type::kBool; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_object() const { return type_ == Type::kObject; }

  double number() const { return number_; }
  // True when the number was written without fraction or exponent and fits an int64.
  bool is_integer() const { return type_ == Type::kNumber && integral_; }
  int64_t integer() const { return int_; }
  bool boolean() const { return bool_; }
  const std::string& str() const { return string_; }
  const std::vector<JsonValue>& array() const { return array_; }
  const std::vector<std::pair<std::string, JsonValue>>& object() const { return object_; }

  // Object member or nullptr.
  const JsonValue* find(std::string_view key) const;

  static JsonValue make_null() { return JsonValue(); }

 private:
  friend class JsonParser;
  Type type_ = Type::kNull;
  bool bool_ = false;
  bool integral_ = false;
  double number_ = 0.0;
  int64_t int_ = 0;
  std::string string_;
  std::vector<JsonValue> array_;
  std::vector<std::pair<std::string, JsonValue>> object_;
};

// At most this many values in a document read from a user's file (a config, a trace line): a value costs
// about 100 bytes parsed, and a 64 MiB array of zeros took 3.5 GB. kvsim's own files (a sweep manifest,
// 10 values a point) pass a larger bound.
inline constexpr int64_t kMaxJsonValues = int64_t{1} << 21;
// Parses `text`; on error throws InputError "<source>:<line>:<col>: <message>".
JsonValue parse_json(std::string_view text, const std::string& source, int64_t max_values = kMaxJsonValues);
// Reads and parses a file; a missing file is an InputError naming the path.
JsonValue parse_json_file(const std::string& path, int64_t max_values = kMaxJsonValues);

// Writes a JSON string literal with escapes.
std::string json_quote(std::string_view s);
// Formats a double the same way on every platform: integers without a fraction, others with up to
// 6 significant decimals after rounding ("%.6g" is locale-free here).
std::string json_number(double v);

}  // namespace kvsim
