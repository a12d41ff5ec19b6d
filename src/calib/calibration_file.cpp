#include "calib/calibration_file.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"

namespace strata {
namespace {

constexpr std::string_view kFormat = "strata-expert-calibration";
constexpr uint32_t kF32 = 0, kI32 = 26;
// Far above any model, small enough that sizes below cannot overflow.
constexpr uint64_t kLargestDimension = 1 << 20;

std::string key(std::string_view name) { return fmt::format("strata.calibration.{}", name); }
std::string tensor_name(int64_t layer, std::string_view what) {
  return fmt::format("calib.{}.{}", layer, what);
}

template <class T>
std::span<const uint8_t> bytes_of(const std::vector<T>& values) {
  return {reinterpret_cast<const uint8_t*>(values.data()), values.size() * sizeof(T)};
}

// The tensors of one layer, in file order: name, shape, type, and the layer's vector.
struct TensorSpec {
  std::string_view what;
  std::vector<int64_t> shape;
  uint32_t type;
};

std::vector<TensorSpec> layer_tensors(const CalibratedModel& m, int64_t n_samples) {
  return {{"input_mean_square", {m.n_embd, m.n_expert}, kF32},
          {"hidden_mean_square", {m.n_ff, m.n_expert}, kF32},
          {"tokens", {m.n_expert}, kI32},
          {"weighted_output_norm", {m.n_expert}, kF32},
          {"sample_inputs", {m.n_embd, n_samples}, kF32},
          {"sample_picks", {m.n_expert_used, n_samples}, kI32},
          {"sample_weights", {m.n_expert_used, n_samples}, kF32},
          {"sample_outputs", {m.n_embd, m.n_expert_used * n_samples}, kF32}};
}

std::vector<std::span<const uint8_t>> layer_bytes(const LayerCalibration& l,
                                                  std::vector<int32_t>& tokens) {
  tokens.assign(l.tokens.begin(), l.tokens.end());
  return {
      bytes_of(l.input_mean_square),    bytes_of(l.hidden_mean_square), bytes_of(tokens),
      bytes_of(l.weighted_output_norm), bytes_of(l.sample_inputs),      bytes_of(l.sample_picks),
      bytes_of(l.sample_weights),       bytes_of(l.sample_outputs)};
}

class Reader {
 public:
  Reader(const gguf::GgufFile& file, std::string name) : file_(file), name_(std::move(name)) {}

  Status error(std::string_view problem) const {
    return Status::errorf("{}: not a Strata expert calibration file ({})", name_, problem);
  }

  Result<uint64_t> dimension(std::string_view name) const {
    const auto value = file_.get_uint(key(name));
    if (!value.ok() || value.value() == 0 || value.value() > kLargestDimension)
      return error(fmt::format("{} missing or out of range", key(name)));
    return value.value();
  }

  template <class T>
  Status read(int64_t layer, const TensorSpec& spec, std::vector<T>& out) const {
    const std::string name = tensor_name(layer, spec.what);
    const gguf::TensorInfo* t = file_.find_tensor(name);
    if (t == nullptr) return error(fmt::format("tensor {} is missing", name));
    if (t->type_id != spec.type || t->shape != spec.shape)
      return error(fmt::format("tensor {} has another type or shape", name));
    out.resize(size_t(t->n_elements()));
    std::memcpy(out.data(), file_.tensor_data(*t), out.size() * sizeof(T));
    return Status();
  }

 private:
  const gguf::GgufFile& file_;
  std::string name_;
};

bool finite_non_negative(const std::vector<float>& values) {
  for (float v : values)
    if (!(v >= 0.0f) || !std::isfinite(v)) return false;
  return true;
}

bool all_finite(const std::vector<float>& values) {
  for (float v : values)
    if (!std::isfinite(v)) return false;
  return true;
}

Result<ExpertCalibration> decode(const gguf::GgufFile& file, const std::string& name) {
  const Reader reader(file, name);
  const auto format = file.get_string(key("format"));
  if (!format.ok() || format.value() != kFormat)
    return reader.error(fmt::format("no {} = \"{}\"", key("format"), kFormat));
  const auto version = file.get_uint(key("version"));
  if (!version.ok() || version.value() != kCalibrationVersion)
    return Status::errorf("{}: calibration file version {} (this build reads version {})", name,
                          version.ok() ? fmt::format("{}", version.value()) : "missing",
                          kCalibrationVersion);
  ExpertCalibration c;
  const auto architecture = file.get_string(key("architecture"));
  const auto routers = file.get_string(key("routers_sha256"));
  const auto documents = file.get_string_array(key("documents"));
  if (!architecture.ok() || !routers.ok() || !documents.ok())
    return reader.error("architecture, routers_sha256 or documents missing");
  c.model.architecture = architecture.value();
  c.model.routers_sha256 = routers.value();
  c.documents = documents.value();
  int64_t* dims[] = {&c.model.n_layer,       &c.model.n_embd, &c.model.n_ff, &c.model.n_expert,
                     &c.model.n_expert_used, &c.n_tokens,     &c.n_samples};
  const char* names[] = {"n_layer",       "n_embd",   "n_ff",     "n_expert",
                         "n_expert_used", "n_tokens", "n_samples"};
  for (size_t i = 0; i < std::size(dims); ++i) {
    const uint64_t limit = i == 5 ? uint64_t(1) << 40 : kLargestDimension;  // tokens
    const auto value = file.get_uint(key(names[i]));
    if (!value.ok() || value.value() == 0 || value.value() > limit)
      return reader.error(fmt::format("{} missing or out of range", key(names[i])));
    *dims[i] = int64_t(value.value());
  }
  if (c.model.n_expert_used > c.model.n_expert)
    return reader.error("more experts used per token than experts");
  const auto specs = layer_tensors(c.model, c.n_samples);
  c.layers.resize(size_t(c.model.n_layer));
  for (int64_t l = 0; l < c.model.n_layer; ++l) {
    LayerCalibration& layer = c.layers[size_t(l)];
    std::vector<int32_t> tokens;
    STRATA_RETURN_IF_ERROR(reader.read(l, specs[0], layer.input_mean_square));
    STRATA_RETURN_IF_ERROR(reader.read(l, specs[1], layer.hidden_mean_square));
    STRATA_RETURN_IF_ERROR(reader.read(l, specs[2], tokens));
    STRATA_RETURN_IF_ERROR(reader.read(l, specs[3], layer.weighted_output_norm));
    STRATA_RETURN_IF_ERROR(reader.read(l, specs[4], layer.sample_inputs));
    STRATA_RETURN_IF_ERROR(reader.read(l, specs[5], layer.sample_picks));
    STRATA_RETURN_IF_ERROR(reader.read(l, specs[6], layer.sample_weights));
    STRATA_RETURN_IF_ERROR(reader.read(l, specs[7], layer.sample_outputs));
    if (!finite_non_negative(layer.input_mean_square) ||
        !finite_non_negative(layer.hidden_mean_square) ||
        !finite_non_negative(layer.weighted_output_norm) ||
        !finite_non_negative(layer.sample_weights) || !all_finite(layer.sample_inputs) ||
        !all_finite(layer.sample_outputs))
      return reader.error(fmt::format("layer {}: a statistic is negative or not finite", l));
    for (int32_t t : tokens)
      if (t < 0) return reader.error(fmt::format("layer {}: a negative token count", l));
    for (int32_t e : layer.sample_picks)
      if (e < 0 || e >= c.model.n_expert)
        return reader.error(fmt::format("layer {}: a sample picks expert {}", l, e));
    layer.tokens.assign(tokens.begin(), tokens.end());
  }
  return c;
}

}  // namespace

Status write_calibration(const ExpertCalibration& c, const std::string& path) {
  gguf::GgufWriter writer(path);
  writer.set_string(key("format"), kFormat);
  writer.set_uint32(key("version"), kCalibrationVersion);
  writer.set_string(key("architecture"), c.model.architecture);
  writer.set_uint64(key("n_layer"), uint64_t(c.model.n_layer));
  writer.set_uint64(key("n_embd"), uint64_t(c.model.n_embd));
  writer.set_uint64(key("n_ff"), uint64_t(c.model.n_ff));
  writer.set_uint64(key("n_expert"), uint64_t(c.model.n_expert));
  writer.set_uint64(key("n_expert_used"), uint64_t(c.model.n_expert_used));
  writer.set_uint64(key("n_tokens"), uint64_t(c.n_tokens));
  writer.set_uint64(key("n_samples"), uint64_t(c.n_samples));
  writer.set_string(key("routers_sha256"), c.model.routers_sha256);
  writer.set_string_array(key("documents"), c.documents);
  const auto specs = layer_tensors(c.model, c.n_samples);
  for (int64_t l = 0; l < c.model.n_layer; ++l)
    for (const TensorSpec& spec : specs)
      STRATA_RETURN_IF_ERROR(
          writer.add_tensor(tensor_name(l, spec.what), spec.shape, spec.type).status());
  STRATA_RETURN_IF_ERROR(writer.begin());
  std::vector<int32_t> tokens;
  for (const LayerCalibration& layer : c.layers)
    for (const auto bytes : layer_bytes(layer, tokens))
      STRATA_RETURN_IF_ERROR(writer.write_tensor_data(bytes));
  return writer.finish();
}

Result<ExpertCalibration> read_calibration(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(auto file, gguf::GgufFile::open(path));
  return decode(*file, path);
}

Result<ExpertCalibration> parse_calibration(std::span<const uint8_t> bytes,
                                            const std::string& name) {
  STRATA_ASSIGN_OR_RETURN(auto file, gguf::GgufFile::parse(bytes, name));
  return decode(*file, name);
}

Status check_calibration_matches(const ExpertCalibration& calibration, const std::string& name,
                                 const CalibratedModel& model, const std::string& model_path) {
  if (calibration.model == model) return Status();
  const CalibratedModel& c = calibration.model;
  const std::string what =
      c.routers_sha256 != model.routers_sha256 && c.n_layer == model.n_layer &&
              c.n_expert == model.n_expert && c.n_embd == model.n_embd
          ? "its routers differ"
          : fmt::format("{} layers x {} experts of {} x {}, not {} x {} of {} x {}", c.n_layer,
                        c.n_expert, c.n_embd, c.n_ff, model.n_layer, model.n_expert, model.n_embd,
                        model.n_ff);
  return Status::errorf("{}: a calibration of another model than {} ({})", name, model_path, what);
}

}  // namespace strata
