// How sub-commands plug into main.cpp: each tool file adds its sub-command to the app and
// sets the action main runs when that sub-command was chosen. Actions return the exit code.
#pragma once

#include <strata/status.h>
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace strata::tools {

using Action = std::function<int()>;

// Prints "strata: <message>" to stderr; returns the exit code for a failed command: 1, or after
// a Ctrl-C or SIGTERM (base/interrupt.h) "strata: interrupted" and 128 + the signal's number,
// whatever the status says (the work stopped because of it, or was cut short by it anyway).
int report_failure(const Status& status);

// A line for stderr once the command line has parsed, before the command runs: what an option
// chose for the user (a random seed). Said after parsing so that a bad flag stays one line.
void say_after_parsing(std::string line);

// The process's arguments, for the provenance records of benchmarks.
const std::vector<std::string>& command_line();

void add_run_command(CLI::App& app, Action& action);
void add_chat_command(CLI::App& app, Action& action);
void add_logits_command(CLI::App& app, Action& action);
void add_tokenize_command(CLI::App& app, Action& action);
void add_inspect_command(CLI::App& app, Action& action);
void add_make_model_command(CLI::App& app, Action& action);
void add_bench_command(CLI::App& app, Action& action);
void add_trace_command(CLI::App& app, Action& action);
void add_fit_predictor_command(CLI::App& app, Action& action);
void add_cachesim_command(CLI::App& app, Action& action);
void add_eval_command(CLI::App& app, Action& action);
void add_quantize_command(CLI::App& app, Action& action);
void add_calibrate_command(CLI::App& app, Action& action);
void add_heal_command(CLI::App& app, Action& action);
void add_prune_command(CLI::App& app, Action& action);
void add_repack_command(CLI::App& app, Action& action);
void add_split_command(CLI::App& app, Action& action);
void add_serve_command(CLI::App& app, Action& action);

}  // namespace strata::tools
