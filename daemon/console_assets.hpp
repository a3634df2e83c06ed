// The web console's static files (daemon/console/), compiled into moonmqd: no CDN, no build step for a user.
// Served at GET /ui (index.html) and GET /ui/NAME.
#pragma once

#include <span>
#include <string_view>

namespace moonmq::daemon {

struct console_asset {
  std::string_view name;          ///< file name, e.g. "console.js"
  std::string_view content_type;
  std::string_view body;
};

std::span<const console_asset> console_assets();

}  // namespace moonmq::daemon
