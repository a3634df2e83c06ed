#include "moonmq/kafka/compression.hpp"

#include <lz4frame.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <memory>

namespace moonmq::kafka {

namespace {

constexpr std::size_t step = 64u << 10;  ///< output grows by this much at a time, never past the limit

error too_large(std::size_t max_out) {
  return error{errc::resource_exhausted,
               "the batch decompresses to more than " + std::to_string(max_out) + " bytes (MaxRequestBytes)"};
}

error corrupt(const char* codec, const std::string& why) {
  return error{errc::corrupt, std::string(codec) + " data does not decompress: " + why};
}

/// Grows `out` by one step (at most to `max_out`); false when it is already there.
bool grow(std::string& out, std::size_t used, std::size_t max_out) {
  if (used >= max_out) return false;
  out.resize(std::min(max_out, used + step));
  return true;
}

result<std::string> gunzip(std::string_view in, std::size_t max_out) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return error{errc::internal, "zlib could not start"};
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&z, inflateEnd);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  std::string out;
  std::size_t used = 0;
  for (;;) {
    if (used == out.size() && !grow(out, used, max_out)) return too_large(max_out);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + used);
    z.avail_out = static_cast<uInt>(out.size() - used);
    const int rc = inflate(&z, Z_NO_FLUSH);
    used = out.size() - z.avail_out;
    if (rc == Z_STREAM_END) break;
    if (rc == Z_BUF_ERROR && z.avail_in == 0) return corrupt("gzip", "the stream is cut short");
    if (rc != Z_OK && rc != Z_BUF_ERROR) return corrupt("gzip", z.msg ? z.msg : "inflate failed");
  }
  if (z.avail_in != 0) return corrupt("gzip", "bytes after the end of the stream");
  out.resize(used);
  return out;
}

/// One raw snappy block appended to `out`.
status unsnappy_block(std::string_view block, std::string& out, std::size_t max_out) {
  std::size_t length = 0;
  if (snappy_uncompressed_length(block.data(), block.size(), &length) != SNAPPY_OK)
    return corrupt("snappy", "no block length");
  if (length > max_out - std::min(max_out, out.size())) return too_large(max_out);
  const std::size_t at = out.size();
  out.resize(at + length);
  if (snappy_uncompress(block.data(), block.size(), out.data() + at, &length) != SNAPPY_OK)
    return corrupt("snappy", "a block does not decode");
  out.resize(at + length);
  return {};
}

result<std::string> unsnappy(std::string_view in, std::size_t max_out) {
  // The Java client's xerial framing: a magic, two version words, then blocks each with a 4-byte length.
  static constexpr std::string_view xerial("\x82SNAPPY\x00", 8);
  std::string out;
  if (!in.starts_with(xerial)) {
    if (auto s = unsnappy_block(in, out, max_out); !s) return s.err();
    return out;
  }
  if (in.size() < 16) return corrupt("snappy", "the xerial header is cut short");
  std::size_t at = 16;
  while (at < in.size()) {
    if (in.size() - at < 4) return corrupt("snappy", "a block length is cut short");
    const std::uint32_t n = (static_cast<std::uint32_t>(static_cast<unsigned char>(in[at])) << 24) |
                            (static_cast<std::uint32_t>(static_cast<unsigned char>(in[at + 1])) << 16) |
                            (static_cast<std::uint32_t>(static_cast<unsigned char>(in[at + 2])) << 8) |
                            static_cast<unsigned char>(in[at + 3]);
    at += 4;
    if (n > in.size() - at) return corrupt("snappy", "a block is cut short");
    if (auto s = unsnappy_block(in.substr(at, n), out, max_out); !s) return s.err();
    at += n;
  }
  return out;
}

result<std::string> unlz4(std::string_view in, std::size_t max_out) {
  LZ4F_dctx* raw = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&raw, LZ4F_VERSION))) return error{errc::internal, "lz4 could not start"};
  std::unique_ptr<LZ4F_dctx, LZ4F_errorCode_t (*)(LZ4F_dctx*)> ctx(raw, LZ4F_freeDecompressionContext);
  std::string out;
  std::size_t used = 0, read = 0;
  for (;;) {
    if (used == out.size() && !grow(out, used, max_out)) return too_large(max_out);
    std::size_t out_size = out.size() - used, in_size = in.size() - read;
    const std::size_t hint = LZ4F_decompress(ctx.get(), out.data() + used, &out_size, in.data() + read, &in_size, nullptr);
    if (LZ4F_isError(hint)) return corrupt("lz4", LZ4F_getErrorName(hint));
    used += out_size;
    read += in_size;
    if (hint == 0) break;  // the frame is complete
    if (read == in.size() && out_size == 0 && in_size == 0) return corrupt("lz4", "the frame is cut short");
  }
  if (read != in.size()) return corrupt("lz4", "bytes after the end of the frame");
  out.resize(used);
  return out;
}

result<std::string> unzstd(std::string_view in, std::size_t max_out) {
  std::unique_ptr<ZSTD_DStream, std::size_t (*)(ZSTD_DStream*)> ds(ZSTD_createDStream(), ZSTD_freeDStream);
  if (!ds || ZSTD_isError(ZSTD_initDStream(ds.get()))) return error{errc::internal, "zstd could not start"};
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  std::string out;
  std::size_t used = 0;
  for (;;) {
    if (used == out.size() && !grow(out, used, max_out)) return too_large(max_out);
    ZSTD_outBuffer output{out.data() + used, out.size() - used, 0};
    const std::size_t hint = ZSTD_decompressStream(ds.get(), &output, &input);
    if (ZSTD_isError(hint)) return corrupt("zstd", ZSTD_getErrorName(hint));
    used += output.pos;
    if (hint == 0) break;  // a frame is complete
    if (input.pos == input.size && output.pos < output.size) return corrupt("zstd", "the frame is cut short");
  }
  if (input.pos != input.size) return corrupt("zstd", "bytes after the end of the frame");
  out.resize(used);
  return out;
}

}  // namespace

result<std::string> decompress(compression codec, std::string_view in, std::size_t max_out) {
  switch (codec) {
    case compression::gzip:
      return gunzip(in, max_out);
    case compression::snappy:
      return unsnappy(in, max_out);
    case compression::lz4:
      return unlz4(in, max_out);
    case compression::zstd:
      return unzstd(in, max_out);
    case compression::none:
      break;
  }
  return error{errc::invalid_argument, "compression codec " + std::to_string(static_cast<int>(codec)) + " is unknown"};
}

}  // namespace moonmq::kafka
