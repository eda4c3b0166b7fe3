// tools/json_reader.h
//
// Reads JSON text into a tree, for the CLI's own outputs read back (`tpusim
// compare` and `tpusim sweep` read each run's stats.json). Numbers are
// doubles (every number stats.json holds fits one exactly or is a measured
// float), strings are UTF-8 with \uXXXX escapes decoded (surrogate pairs
// joined; a lone \udcXX, json_writer's escape of an invalid byte, becomes
// that byte again).
//
//   absl::StatusOr<JsonValue> v = ParseJson(text);
//   double mean = v->Get("step_time_ms").Get("mean").number;

#ifndef TPUSIM_TOOLS_JSON_READER_H_
#define TPUSIM_TOOLS_JSON_READER_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tpusim::tools {

struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> items;
  std::map<std::string, JsonValue> members;

  bool Has(const std::string& key) const { return members.count(key) > 0; }
  // The member `key`, or a null value when absent (or not an object).
  const JsonValue& Get(const std::string& key) const;
};

// InvalidArgument naming the byte offset and what was expected; trailing
// text other than whitespace is an error; nesting deeper than 64 is one.
absl::StatusOr<JsonValue> ParseJson(absl::string_view text);

}  // namespace tpusim::tools

#endif  // TPUSIM_TOOLS_JSON_READER_H_
