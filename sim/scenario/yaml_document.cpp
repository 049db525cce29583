#include "sim/scenario/yaml_document.h"

#include <vector>

#include "sim/core/errors.h"

namespace kvsim {

YAML::Node load_yaml_document(const std::string& text, const std::string& source) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(text);
  } catch (const YAML::Exception& e) {
    throw InputError(source + ":" + std::to_string(e.mark.line + 1) + ": invalid YAML: " + e.msg);
  }
  if (docs.size() > 1) {
    // The line of the second document's start marker, for the message.
    size_t line = 1, at = 0;
    for (size_t pos = 0; pos < text.size();) {
      const size_t end = text.find('\n', pos);
      const std::string l = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
      if (l.rfind("---", 0) == 0 && at == 0 && pos > 0) at = line;
      if (end == std::string::npos) break;
      pos = end + 1;
      ++line;
    }
    throw InputError(source + (at > 0 ? ":" + std::to_string(at) : "") +
                     ": invalid YAML: a second document; kvsim reads one document a file");
  }
  return docs.empty() ? YAML::Node() : docs.front();
}

}  // namespace kvsim
