// `strata inspect`: what a model file holds, rendered for people.
#pragma once

#include <strata/status.h>

#include <string>

namespace strata {

struct InspectOptions {
  bool list_tensors = true;
  bool list_metadata = false;
};

// Architecture and hyper-parameters, tensor table, expert unit sizes, and what a session needs
// in memory. Errors name the file and the problem.
Result<std::string> inspect_model(const std::string& path, const InspectOptions& options);

}  // namespace strata
