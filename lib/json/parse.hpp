// The one way this project parses JSON text: RapidJSON's iterative parser (no recursion, so no input can exhaust the
// stack), with limits. Everything that reads JSON (request bodies and answers between brokers, the client API,
// configuration, snapshots, state files, Raft messages) goes through parse_document. Internal to lib/ and daemon/.
//
// Refused, with an invalid_argument error naming where: text that is not JSON (with its byte offset), nesting deeper
// than `max_depth`, a key that appears twice in one object, and strings that are not valid UTF-8 (naming the field).
#pragma once

#include <rapidjson/document.h>

#include <cstddef>
#include <string_view>

#include "moonmq/core/result.hpp"

namespace moonmq::json {

/// How deep objects and arrays may nest. Every document this project reads is far shallower.
inline constexpr std::size_t max_depth = 64;

/// Parses `text` into `doc`; `what` names the text in errors ("body", a file's path).
status parse_document(std::string_view text, rapidjson::Document& doc, std::string_view what);

/// parse_document for text whose errors nobody needs to read (answers from peers): true when `doc` holds an object.
bool parse_object(std::string_view text, rapidjson::Document& doc);

}  // namespace moonmq::json
