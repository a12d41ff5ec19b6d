// The page `strata serve` shows at / (web/index.html, compiled in: no build step, no files to
// find at run time): a chat box and a live view of the expert arena.
#pragma once

#include <string_view>

namespace strata::server {

std::string_view web_page();

}  // namespace strata::server
