// Reading a durable JSON document from a state_file: absent is fine, unparsable is `corrupt` naming the file.
// Internal to lib/.
#pragma once

#include <rapidjson/document.h>

#include "json/object_reader.hpp"
#include "moonmq/storage/state_file.hpp"

namespace moonmq::json {

/// Reads and parses `file` into `doc`; false when the file does not exist yet.
inline result<bool> read_state_document(const storage::state_file& file, rapidjson::Document& doc) {
  auto text = file.read();
  if (!text) return text.err();
  if (!*text) return false;
  if (auto s = parse_document(**text, doc, file.name()); !s) return error{errc::corrupt, s.message()};
  return true;
}

}  // namespace moonmq::json
