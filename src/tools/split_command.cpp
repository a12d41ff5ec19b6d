// strata split -m MODEL -o PREFIX (--max-size SIZE | --parts N) [--metadata-only-first-part]
// [--force]: the model as parts in gguf-split's layout, PREFIX-00001-of-0000N.gguf and so on
// (gguf/gguf_split_writer.h), for file systems or hosts that cap a file's size. Every command
// opens the parts by the first one's name.
#include <cstdio>
#include <memory>

#include "base/progress.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_split_writer.h"
#include "runtime/byte_size.h"
#include "tools/cli_checks.h"
#include "tools/command.h"

namespace strata::tools {
namespace {

struct SplitFlags {
  std::string input_path;
  std::string prefix;
  std::string max_size;
  int n_parts = 0;
  bool metadata_only_first_part = false;
  bool force = false;
};

int split(const SplitFlags& flags) {
  gguf::SplitOptions options{.n_parts = flags.n_parts,
                             .metadata_only_first_part = flags.metadata_only_first_part,
                             .overwrite = flags.force};
  if (!flags.max_size.empty()) {
    Result<uint64_t> bytes = parse_byte_size(flags.max_size);
    if (!bytes.ok()) return report_failure(bytes.status().with_prefix("--max-size"));
    options.max_part_bytes = bytes.value();
  }
  Result<std::shared_ptr<const gguf::GgufFile>> source = gguf::GgufFile::open(flags.input_path);
  if (!source.ok()) return report_failure(source.status());
  uint64_t tensor_bytes = 0;
  for (const gguf::TensorInfo& tensor : source.value()->tensors()) tensor_bytes += tensor.n_bytes;
  Result<std::vector<std::string>> parts = Status::error("not run");
  {
    ProgressBar progress("split", tensor_bytes);
    parts = gguf::write_split_model(*source.value(), flags.prefix, options, &progress);
    if (parts.ok()) progress.finish();
  }
  if (!parts.ok()) return report_failure(parts.status());
  std::fprintf(stderr, "wrote %zu parts: %s ... %s\n", parts.value().size(),
               parts.value().front().c_str(), parts.value().back().c_str());
  return 0;
}

}  // namespace

void add_split_command(CLI::App& app, Action& action) {
  auto* command = app.add_subcommand(
      "split",
      "write the model as parts in llama.cpp's gguf-split layout (PREFIX-00001-of-0000N.gguf, "
      "...), which every command opens by the first part's name; tensors are copied unchanged");
  auto flags = std::make_shared<SplitFlags>();
  command->add_option("-m,--model", flags->input_path, "input GGUF model")->required();
  command->add_option("-o,--output", flags->prefix, "parts' path before -00001-of-0000N.gguf")
      ->required();
  auto* max_size = command->add_option(
      "--max-size", flags->max_size,
      "end a part before the tensor that would take its tensor bytes past SIZE (e.g. 4G; the "
      "first part's metadata comes on top, and a larger tensor gets a part of its own)");
  auto* parts = command->add_option("--parts", flags->n_parts, "spread the tensors over N parts")
                    ->check(at_least(1));
  max_size->excludes(parts);
  command->add_flag("--metadata-only-first-part", flags->metadata_only_first_part,
                    "a first part of metadata only, before the parts of tensors (gguf-split "
                    "--no-tensor-first-split)");
  command->add_flag("--force", flags->force, "replace existing parts (never the input)");
  command->callback([&action, flags] { action = [flags] { return split(*flags); }; });
}

}  // namespace strata::tools
