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
    const int line = docs[1].Mark().line;  // where the second document's content starts; -1 when it has none
    throw InputError(source + (line >= 0 ? ":" + std::to_string(line + 1) : "") +
                     ": invalid YAML: a second document; kvsim reads one document a file");
  }
  return docs.empty() ? YAML::Node() : docs.front();
}

}  // namespace kvsim
