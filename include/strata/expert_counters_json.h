// Expert store counters as the JSON records write them (`strata run --stats`' "experts" and
// each step's, `strata eval run`'s "decode_experts"): every counter under its name, and
// "hit_rate". Scripts and committed records read these keys.
#pragma once

#include <strata/expert_counters.h>

#include <nlohmann/json.hpp>

namespace strata {

inline nlohmann::json expert_counters_json(const ExpertCounters& counters) {
  nlohmann::json json = nlohmann::json::object();
  for_each_expert_counter([&](const char* name, auto member) { json[name] = counters.*member; });
  json["hit_rate"] = counters.hit_rate();
  return json;
}

}  // namespace strata
