// The compression codecs of Kafka's record batches (attributes & 0x07): gzip, snappy (raw, or in the xerial framing
// the Java client writes), lz4 (the LZ4 frame format) and zstd. Only decompression: a produced batch is stored as
// uncompressed records, and fetches return them uncompressed.
//
// Every decompression is bounded: it stops with errc::resource_exhausted as soon as the output would pass
// `max_out`, whatever the input claims, so a small batch cannot make the broker allocate a large buffer. A stream
// that does not decode, or has bytes after its end, is errc::corrupt.
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "moonmq/core/result.hpp"

namespace moonmq::kafka {

enum class compression : std::int8_t { none = 0, gzip = 1, snappy = 2, lz4 = 3, zstd = 4 };

/// `in`, decompressed with `codec` (not none), at most `max_out` bytes.
result<std::string> decompress(compression codec, std::string_view in, std::size_t max_out);

}  // namespace moonmq::kafka
