// --cpu-experts: how many of a decode layer's misses an expert arena in a device's memory leaves
// in host memory for the host's CPU (experts/misses_on_host.h), and the CPU backend that
// computes them (model/host_experts.h), by rates measured once as the engine starts.
#pragma once

#include <strata/session_options.h>
#include <strata/status.h>

#include <functional>
#include <memory>

#include "backend/backend.h"
#include "experts/misses_on_host.h"
#include "model/host_experts.h"
#include "model/model.h"

namespace strata {

struct CpuExperts {
  MissesOnHost rule;                  // not enabled: every miss is copied
  std::unique_ptr<HostExperts> host;  // set when the rule is enabled
};

// For a device arena fed from host memory that holds every expert (the host tier), `model`
// loaded and its dense weights on `device` (whose bus is probed). What it chose goes to `note`.
Result<CpuExperts> plan_cpu_experts(const SessionOptions& options, Backend& device,
                                    const Model& model,
                                    const std::function<void(std::string_view)>& note);

}  // namespace strata
