#pragma once
// The one YAML document of a kvsim input file (scenario, sweep, topology, hardware catalog entry).
// yaml-cpp's Load keeps the first document of a stream and drops the rest without a word; a second
// document ("---") is an error here instead, naming the file and the line it starts on.
#include <yaml-cpp/yaml.h>

#include <string>

namespace kvsim {

// Parses `text`; throws InputError "<source>:<line>: invalid YAML: ..." for a syntax error or a second
// document. An empty text gives a null node.
YAML::Node load_yaml_document(const std::string& text, const std::string& source);

}  // namespace kvsim
